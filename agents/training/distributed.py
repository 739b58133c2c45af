"""Rollouts collected by Ray actors, one shard of the games each, for ``hgin train --workers N``.

Each worker is a Ray actor (:class:`_ShardHost`) that holds one shard (normally; more
after a loss, below): its games, a CPU copy of the policy and the opponents of its
blocks.  Per update the learner puts the behaviour weights into the object store once
(every worker reads that one object), sends the pool snapshots once each (a worker keeps
those it has), and gathers the shards' rollouts: the decisions to train as numpy arrays,
read zero-copy from the object store, and each shard's end state.

Faults: a worker that dies (its process killed, its node lost) loses nothing: the
learner holds the state every shard began its rollout from, so the lost shard's rollout
is collected again, from that state, by a new worker (while ``max_restarts`` allows and
the cluster has a free CPU) or by a surviving one.  The update waits for it, so it is
never learned from part of a batch, and since a shard's rollout is a function of its
state, the run goes on exactly as if nothing had happened.  With no worker left and none
to start, :class:`WorkersLostError` stops the run.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.evaluation.cluster import check_capacity, connect
from agents.model import PolicyValueNet
from agents.training.rollout import Rollout, RolloutBuffers, unpack_rollouts
from agents.training.shard import CollectPlan, Shard, build_critic, build_network, shard_bounds
from hgin_env.hidden import HIDDEN_DIM

__all__ = ["RayCollection", "WorkersLostError", "ckpt_files"]


class WorkersLostError(RuntimeError):
    """Every collection worker was lost and none could be started in its place."""


def ckpt_files(config: Mapping[str, Any]) -> dict[str, bytes]:
    """The checkpoint files the workers' agents read (``ckpt:PATH`` as the imitation
    teacher or in ``opponents.agents``), by spec: sent to the workers, whose machines
    need not have the learner's files."""
    specs = [config["imitation"]["teacher"], *config["opponents"]["agents"]]
    out = {}
    for spec in specs:
        if isinstance(spec, str) and spec.strip().lower().startswith("ckpt:"):
            out[spec] = Path(spec.strip()[len("ckpt:"):]).read_bytes()
    return out


def _numpy_weights(model: PolicyValueNet | Mapping[str, torch.Tensor]) -> dict[str, np.ndarray]:
    state = model.state_dict() if isinstance(model, PolicyValueNet) else model
    return {k: v.detach().cpu().numpy().copy() for k, v in state.items()}


def _torch_weights(arrays: Mapping[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(np.array(v)) for k, v in arrays.items()}


class _ShardHost:
    """A Ray actor collecting rollouts of the shards it holds, one call per shard."""

    def __init__(self, config: Mapping[str, Any], threads: int,
                 files: Mapping[str, bytes]) -> None:
        torch.set_num_threads(int(threads))
        self.config = config
        self.folder = tempfile.mkdtemp(prefix="hgin-worker-")
        self.spec_paths = {}
        for i, (spec, data) in enumerate(files.items()):
            path = Path(self.folder) / f"agent_{i}.pt"
            path.write_bytes(data)
            self.spec_paths[spec] = f"ckpt:{path}"
        self.actor = build_network(config).eval()
        self.critic = (build_critic(config, self.actor.in_dim).eval()
                       if config["model"]["critic"] != "shared" else None)
        self.version = -1
        self.shards: dict[int, Shard] = {}
        self.bufs: dict[int, RolloutBuffers] = {}
        self.snapshots: dict[int, dict[str, torch.Tensor]] = {}

    def where(self) -> dict[str, Any]:
        import ray

        return {"node": str(ray.get_runtime_context().get_node_id()), "pid": os.getpid()}

    def adopt(self, index: int, count: int, state: Mapping[str, Any] | None) -> dict[str, Any]:
        """Take shard ``index`` of ``count``: fresh from its seeds, or from ``state``."""
        shard = Shard(self.config, index, count, "cpu", actor=self.actor,
                      spec_paths=self.spec_paths, critic=self.critic)
        if state is not None:
            shard.load_state(state)
        self.shards[index] = shard
        self.bufs[index] = shard.buffers()
        return self.where()

    def state(self, index: int) -> dict[str, Any]:
        return self.shards[index].state()

    def collect(self, index: int, weights: Mapping[str, np.ndarray], version: int,
                pool: list[tuple[int, Any]], plan: CollectPlan) -> dict[str, Any]:
        """Shard ``index``'s rollout, packed, its end state, and how long it took."""
        import ray

        if version != self.version:
            self.actor.load_state_dict(_torch_weights(weights["actor"]))
            if self.critic is not None:
                self.critic.load_state_dict(_torch_weights(weights["critic"]))
            self.version = version
        wanted = {u for u, _ in pool}
        self.snapshots = {u: s for u, s in self.snapshots.items() if u in wanted}
        for upd, ref in pool:
            if upd not in self.snapshots:
                self.snapshots[upd] = _torch_weights(ray.get(ref))
        shard = self.shards[index]
        shard.set_pool([(u, self.snapshots[u]) for u, _ in pool])
        start = time.perf_counter()
        rollout = shard.collect(plan, self.bufs[index])
        seconds = time.perf_counter() - start
        return {"rollout": rollout.pack(), "state": shard.state(), "seconds": seconds,
                **self.where()}


def _lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """The exceptions that mean a worker (or its node, or the object it returned) is gone,
    as opposed to an error raised by the collection itself."""
    ex = ray.exceptions
    return (ex.RayActorError, ex.WorkerCrashedError, ex.ObjectLostError, ex.NodeDiedError,
            ex.ActorUnschedulableError)


class RayCollection:
    """``workers`` Ray actors collecting one shard of the run's games each.

    ``on_event(text)`` hears of every lost and replaced worker.  See the module's
    docstring for what happens on faults.
    """

    def __init__(self, config: Mapping[str, Any], workers: int, address: str | None,
                 cpus_per_worker: int = 1, max_restarts: int = 8,
                 on_event: Callable[[str], None] | None = None) -> None:
        ray = self.ray = connect(address, "training with workers (--workers)")
        check_capacity(ray, workers, cpus_per_worker)
        self.count = workers
        shard_bounds(int(config["env"]["num_games"]), workers)  # refuse too few games now
        self.cpus = int(cpus_per_worker)
        self._host_class = ray.remote(num_cpus=self.cpus, max_restarts=0)(_ShardHost)
        self._make_args = (dict(config), self.cpus, ckpt_files(config))
        self.restarts_left = int(max_restarts)
        self.on_event = on_event or (lambda text: None)
        self.hosts: list[Any] = []
        self.owner: list[Any] = []
        self.where: list[dict[str, Any]] = [{} for _ in range(workers)]
        self.lost = self.restarts = self.moved = self.recollected = 0
        self._version = 0
        self._weights_ref: Any = None
        self._pool_refs: dict[int, Any] = {}
        self._flying: dict[Any, int] = {}
        self._plan: CollectPlan | None = None
        self._bytes = 0
        self._actor_seconds: list[float] = [0.0] * workers
        b = int(config["env"]["num_games"])
        in_dim = build_network(config).in_dim
        hidden = HIDDEN_DIM if config["model"]["critic"] == "privileged" else 0  # its inputs
        self._bufs = RolloutBuffers(int(config["env"]["rollout_steps"]) * b + 2 * b, in_dim,
                                    hidden)
        try:
            for _ in range(workers):
                self.hosts.append(self._new_host())
            self.owner = list(self.hosts)
            placed = ray.get([h.adopt.remote(i, workers, None) for i, h in enumerate(self.owner)])
            self.where = list(placed)
            self.current = ray.get([h.state.remote(i) for i, h in enumerate(self.owner)])
        except BaseException:
            self.close()
            raise
        self._start_states = list(self.current)

    def _new_host(self) -> Any:
        return self._host_class.options(scheduling_strategy="SPREAD").remote(*self._make_args)

    @property
    def nodes(self) -> int:
        """The Ray nodes the shards' last rollouts ran on."""
        return len({w.get("node") for w in self.where if w})

    # ------------------------------------------------------------------ weights and pool
    def set_weights(self, model: PolicyValueNet, critic: torch.nn.Module | None = None
                    ) -> None:
        """Put the behaviour weights into the object store: one object for every worker."""
        self._version += 1
        weights = {"actor": _numpy_weights(model)}
        if critic is not None:
            weights["critic"] = _numpy_weights(critic.state_dict())
        self._weights_ref = self.ray.put(weights)

    def _pool(self, pool: list[tuple[int, Mapping[str, torch.Tensor]]]) -> list[tuple[int, Any]]:
        """The pool as ``(update, ref)``: each snapshot is put into the object store once."""
        keep = {u for u, _ in pool}
        self._pool_refs = {u: r for u, r in self._pool_refs.items() if u in keep}
        for upd, state in pool:
            if upd not in self._pool_refs:
                self._pool_refs[upd] = self.ray.put(_numpy_weights(state))
        return [(u, self._pool_refs[u]) for u, _ in pool]

    # ------------------------------------------------------------------ collection
    def start(self, plan: CollectPlan, pool: list[tuple[int, Mapping[str, torch.Tensor]]]
              ) -> None:
        if self._weights_ref is None:
            raise RuntimeError("set_weights must come before the first rollout")
        self._plan = plan
        self._pool_list = self._pool(pool)
        self._start_states = list(self.current)
        self._flying = {}
        for index in range(self.count):
            self._submit(index)

    def _submit(self, index: int) -> None:
        ref = self.owner[index].collect.remote(index, self._weights_ref, self._version,
                                               self._pool_list, self._plan)
        self._flying[ref] = index

    def finish(self) -> Rollout:
        ray = self.ray
        lost = _lost_errors(ray)
        results: list[dict[str, Any] | None] = [None] * self.count
        while self._flying:
            ready, _ = ray.wait(list(self._flying), num_returns=1)
            index = self._flying.pop(ready[0])
            try:
                results[index] = ray.get(ready[0])
            except lost as exc:
                self._replace(index, exc)
                self._submit(index)
            except ray.exceptions.RayTaskError as exc:  # the collection itself failed
                raise exc.as_instanceof_cause() from None
        done = [r for r in results if r is not None]
        self._bytes = sum(_nbytes(r["rollout"]) + _nbytes(r["state"]) for r in done)
        self._actor_seconds = [float(r["seconds"]) for r in done]
        self.where = [{"node": r["node"], "pid": r["pid"]} for r in done]
        self.current = [r["state"] for r in done]
        return unpack_rollouts([r["rollout"] for r in done], self._bufs)

    def _replace(self, index: int, exc: BaseException) -> None:
        """Give shard ``index`` (whose worker was lost) to a new worker, or else to a
        surviving one, starting from the state its rollout began from."""
        dead = self.owner[index]
        if any(h is dead for h in self.hosts):
            self.hosts = [h for h in self.hosts if h is not dead]
            self.lost += 1
            try:
                self.ray.kill(dead)
            except Exception:  # already gone
                pass
            reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
            self.on_event(f"worker of shard {index} lost ({type(exc).__name__}"
                          f"{': ' + reason if reason else ''})")
        host = None
        if self.restarts_left > 0 and self._cpu_free():
            host = self._new_host()
            self.hosts.append(host)
            self.restarts_left -= 1
            self.restarts += 1
            how = "a new worker"
        elif self.hosts:
            held = {id(h): sum(o is h for o in self.owner) for h in self.hosts}
            host = min(self.hosts, key=lambda h: held[id(h)])
            self.moved += 1
            how = "a surviving worker"
        else:
            raise WorkersLostError(
                f"every collection worker was lost (last: {type(exc).__name__}) and "
                + ("no restart is left (distributed.max_restarts)" if self.restarts_left <= 0
                   else "the Ray cluster has no free CPU to start another"))
        self.owner[index] = host
        self.recollected += 1
        host.adopt.remote(index, self.count, self._start_states[index])
        self.on_event(f"shard {index}'s rollout is collected again by {how}, from the "
                      "state it began from")

    def _cpu_free(self, wait_s: float = 10.0) -> bool:
        """Whether a worker's CPUs are free in the cluster (a dead worker's come back a
        moment after it is reported dead)."""
        deadline = time.monotonic() + wait_s
        while True:
            if self.ray.available_resources().get("CPU", 0) >= self.cpus:
                return True
            if time.monotonic() >= deadline or self.ray.cluster_resources().get("CPU", 0) \
                    < self.cpus:
                return False
            time.sleep(0.25)

    # ------------------------------------------------------------------ state
    def states(self, ahead: bool) -> list[dict[str, Any]]:
        return self._start_states if ahead else self.current

    def load_states(self, states: list[dict[str, Any]]) -> None:
        self.ray.get([self.owner[i].adopt.remote(i, self.count, s) for i, s in enumerate(states)])
        self.current = list(states)
        self._start_states = list(states)

    def report(self) -> dict[str, float]:
        """Scalars to log: the workers, the faults so far, the bytes and the actors' time."""
        secs = self._actor_seconds
        return {"workers/alive": float(len(self.hosts)), "workers/lost": float(self.lost),
                "workers/restarts": float(self.restarts),
                "workers/shards_moved": float(self.moved),
                "workers/rollouts_recollected": float(self.recollected),
                "workers/nodes": float(self.nodes),
                "perf/received_bytes": float(self._bytes),
                "perf/actor_collect_s": max(secs) if secs else 0.0}

    def close(self) -> None:
        for host in self.hosts:
            try:
                self.ray.kill(host)
            except Exception:  # already gone
                pass
        self.hosts = []
        self._flying = {}


def _nbytes(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, torch.Tensor):
        return int(value.numel() * value.element_size())
    if isinstance(value, Mapping):
        return sum(_nbytes(v) for v in value.values())
    return 0
