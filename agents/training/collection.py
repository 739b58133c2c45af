"""Where a run's rollouts are collected: in the learner's process (this module) or by Ray
actors (:mod:`agents.training.distributed`).  Both keep the same small interface, so the
trainer does not know which one it has:

* ``start(plan, pool)`` begins one rollout of every shard, played by the weights last
  given to ``set_weights``; ``finish()`` waits for it and returns one
  :class:`~agents.training.rollout.Rollout` (shard 0's decisions first).
* ``states(ahead)`` are the shards' states: those the rollout started last began from
  (``ahead``: a pipelined trainer holds that rollout, not yet learned from), or the
  current ones; ``load_states`` continues from saved ones.
* ``count`` is the number of shards, ``report()`` scalars to log (the collection's own
  time; what happened to the workers), ``close()`` frees them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import torch

from agents.model import PolicyValueNet
from agents.training.rollout import Rollout
from agents.training.shard import CollectPlan, Shard

__all__ = ["LocalCollection"]


class LocalCollection:
    """One shard in the learner's process; with ``pipeline`` its rollouts are collected in
    a second thread while the learner learns from the previous one (two buffers, used in
    turn), so both CPU cores work."""

    def __init__(self, shard: Shard, pipeline: bool) -> None:
        self.shard = shard
        self.pipeline = pipeline
        self.count = 1
        self._bufs = [shard.buffers() for _ in range(2 if pipeline else 1)]
        self._buf_index = 0
        self._thread: threading.Thread | None = None
        self._box: dict[str, Any] = {}
        self._start_states: list[dict[str, Any]] | None = None

    def set_weights(self, model: PolicyValueNet, critic: torch.nn.Module | None = None) -> None:
        """The weights that play the next rollouts (the trainer's own copies here, shared
        with the shard: nothing to do unless they are other modules)."""
        if model is not self.shard.actor:
            self.shard.actor.load_state_dict(model.state_dict())
        if critic is not None and critic is not self.shard.critic:
            self.shard.critic.load_state_dict(critic.state_dict())

    def start(self, plan: CollectPlan, pool: list[tuple[int, Mapping[str, torch.Tensor]]]
              ) -> None:
        self.shard.set_pool(pool)
        # Only a pipelined trainer can be saved while a rollout is ahead of it.
        self._start_states = [self.shard.state()] if self.pipeline else None
        self._buf_index = (self._buf_index + 1) % len(self._bufs)
        bufs = self._bufs[self._buf_index]
        box: dict[str, Any] = {}
        self._box = box

        def work() -> None:
            start = time.perf_counter()
            try:
                box["batch"] = self.shard.collect(plan, bufs)
            except BaseException as exc:  # re-raised in the learner's thread
                box["error"] = exc
            box["seconds"] = time.perf_counter() - start

        if not self.pipeline:
            work()
            return
        self._thread = threading.Thread(target=work, name="hgin-collect", daemon=True)
        self._thread.start()

    def finish(self) -> Rollout:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if "error" in self._box:
            raise self._box["error"]
        return self._box["batch"]

    def states(self, ahead: bool) -> list[dict[str, Any]]:
        if ahead and self._start_states is not None:
            return self._start_states
        return [self.shard.state()]

    def load_states(self, states: list[dict[str, Any]]) -> None:
        self.shard.load_state(states[0])

    def report(self) -> dict[str, float]:
        """The collection's own time for the last rollout (overlapped with learning when
        pipelined)."""
        return {"perf/actor_collect_s": float(self._box.get("seconds", 0.0))}

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
