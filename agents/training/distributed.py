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

A worker that stops answering (its machine hung, a library deadlocked, the process
stopped) is lost too: every call has a deadline, and a shard's rollout that has taken
:data:`DEADLINE_FACTOR` times as long as the slowest shard measured so far (at least
``distributed.shard_timeout`` seconds) has its worker killed and its share collected again,
as for a killed one (a new worker started for it counts toward ``max_restarts``).  Once the
run is asked to stop (:attr:`RayCollection.stopping`), a late shard is given up after twice
the slowest shard's time (2 s at least) and goes to a surviving worker, so the update
ends, and the run saves, within seconds of the signal.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.evaluation.cluster import check_capacity, connect
from agents.model import PolicyValueNet
from agents.training.config import SCHEMA
from agents.training.rollout import Rollout, RolloutBuffers, unpack_rollouts
from agents.training.shard import CollectPlan, Shard, build_critic, build_network, shard_bounds
from hgin_env.hidden import HIDDEN_DIM

__all__ = ["DEADLINE_FACTOR", "STARTUP_S", "RayCollection", "WorkerLateError",
           "WorkersLostError", "ckpt_files"]

#: A shard's rollout is late once it has taken this many times as long as the slowest shard
#: measured (the last rollout's and this one's so far); before any is measured, this many
#: times ``distributed.shard_timeout``.  Shard times move with the opponents' schedule
#: between updates, by far less than this.
DEADLINE_FACTOR = 5.0
#: Once the run is asked to stop: late after this many times the slowest shard measured,
#: and at least :data:`STOPPING_MIN_S` seconds (if the deadline was not shorter already).
STOPPING_FACTOR = 2.0
STOPPING_MIN_S = 2.0
#: The least time a worker is given to start (import torch, build its network and games)
#: before it answers its first call; at least :data:`DEADLINE_FACTOR` x the floor.
STARTUP_S = 300.0
#: How often a wait wakes up to check the deadlines and a stop request.
POLL_S = 0.25


class WorkersLostError(RuntimeError):
    """Every collection worker was lost and none could be started in its place."""


class WorkerLateError(TimeoutError):
    """A worker did not answer within its deadline: it is treated as lost."""


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
        """Shard ``index``'s state, and where it is held."""
        return {"state": self.shards[index].state(), **self.where()}

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


@dataclass
class _Job:
    """A call sent to a worker, waited for by :meth:`RayCollection._wait`."""

    index: int  # the shard it is for
    kind: str  # "collect", "state" or "where"
    since: float  # when it was sent (time.monotonic)
    ahead: int  # calls queued on the same worker before it
    fresh: bool  # its worker has not answered any call yet (it may still be starting)


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
        self.lost = self.restarts = self.moved = self.recollected = self.late = 0
        #: Set by the run: true once it has been asked to stop (SIGTERM, Ctrl-C); a late
        #: shard is then given up sooner, so the update ends and the run can save.
        self.stopping: Callable[[], bool] = lambda: False
        self.floor = float(config["distributed"].get(  # configs saved before the key
            "shard_timeout", SCHEMA["distributed"]["shard_timeout"][1]))
        self._slowest: float | None = None  # the last rollout's slowest shard (seconds)
        self._round_slowest: float | None = None  # the rollout's under way, so far
        self._startup: float | None = None  # the slowest worker's start measured
        self._proven: list[Any] = []  # the hosts that have answered a call
        self._version = 0
        self._weights_ref: Any = None
        self._pool_refs: dict[int, Any] = {}
        self._flying: dict[Any, _Job] = {}
        self._plan: CollectPlan | None = None
        self._bytes = 0
        self._actor_seconds: list[float] = [0.0] * workers
        b = int(config["env"]["num_games"])
        in_dim = build_network(config).in_dim
        hidden = HIDDEN_DIM if config["model"]["critic"] == "privileged" else 0  # its inputs
        self._bufs = RolloutBuffers(int(config["env"]["rollout_steps"]) * b + 2 * b, in_dim,
                                    hidden)
        self._start_states: list[dict[str, Any] | None] = [None] * workers  # fresh
        try:
            began = time.monotonic()
            for _ in range(workers):
                self.hosts.append(self._new_host())
            self.owner = list(self.hosts)
            jobs: dict[Any, _Job] = {}
            for i, host in enumerate(self.owner):
                host.adopt.remote(i, workers, None)
                self._send(i, "state", jobs)
            placed = self._wait(jobs)
            self._startup = time.monotonic() - began
        except BaseException:
            self.close()
            raise
        self.where = [{"node": r["node"], "pid": r["pid"]} for r in placed]
        self.current = [r["state"] for r in placed]
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
        self._round_slowest = None
        for index in range(self.count):
            self._send(index, "collect", self._flying)

    def _send(self, index: int, kind: str, jobs: dict[Any, _Job]) -> None:
        """Send shard ``index``'s owner the call ``kind`` and add it to ``jobs``."""
        job = self._job(index, kind, jobs)
        jobs[self._call(index, kind)] = job

    def _call(self, index: int, kind: str) -> Any:
        """Send shard ``index``'s owner the call ``kind``: ``collect`` (its rollout),
        ``state`` (its state) or ``where`` (that it holds the shard)."""
        host = self.owner[index]
        if kind == "collect":
            return host.collect.remote(index, self._weights_ref, self._version,
                                       self._pool_list, self._plan)
        if kind == "state":
            return host.state.remote(index)
        return host.where.remote()

    def _job(self, index: int, kind: str, jobs: dict[Any, _Job]) -> _Job:
        host = self.owner[index]
        ahead = sum(self.owner[j.index] is host for j in jobs.values())
        return _Job(index, kind, time.monotonic(), ahead,
                    not any(p is host for p in self._proven))

    def _budget(self, job: _Job) -> float:
        """The seconds ``job`` may take from when it was sent: a shard's deadline for every
        call queued on its worker before it and for itself, and the time to start if its
        worker has not answered yet."""
        measured = [t for t in (self._slowest, self._round_slowest) if t is not None]
        slowest = max(measured) if measured else None
        each = max(self.floor, DEADLINE_FACTOR * (self.floor if slowest is None or
                                                  job.kind != "collect" else slowest))
        if job.kind == "collect" and slowest is not None and self.stopping():
            each = min(each, max(STOPPING_MIN_S, STOPPING_FACTOR * slowest))
        start = 0.0
        if job.fresh:
            start = (max(STARTUP_S, DEADLINE_FACTOR * self.floor) if self._startup is None
                     else max(self.floor, DEADLINE_FACTOR * self._startup))
        return start + each * (1 + job.ahead)

    def finish(self) -> Rollout:
        flying, self._flying = self._flying, {}
        done = self._wait(flying)
        self._bytes = sum(_nbytes(r["rollout"]) + _nbytes(r["state"]) for r in done)
        self._actor_seconds = [float(r["seconds"]) for r in done]
        self._slowest, self._round_slowest = max(self._actor_seconds), None
        self.where = [{"node": r["node"], "pid": r["pid"]} for r in done]
        self.current = [r["state"] for r in done]
        return unpack_rollouts([r["rollout"] for r in done], self._bufs)

    def _wait(self, jobs: dict[Any, _Job]) -> list[dict[str, Any]]:
        """Every shard's answer to the calls ``jobs`` (one a shard), in shard order.  A
        call whose worker is lost, or that is late, is sent again to the shard's new owner
        (:meth:`_replace`); each wait is :data:`POLL_S` at most, so the deadlines and a
        stop request are seen while waiting."""
        ray = self.ray
        lost = _lost_errors(ray)
        results: list[dict[str, Any] | None] = [None] * self.count
        while jobs:
            ready, _ = ray.wait(list(jobs), num_returns=1, timeout=POLL_S)
            if ready:
                self._take(ready[0], jobs, results, lost)
            now = time.monotonic()
            for ref, job in list(jobs.items()):
                if ref in jobs and now - job.since > self._budget(job):
                    self._give_up(job, jobs, now - job.since)
        return [r for r in results if r is not None]

    def _take(self, ref: Any, jobs: dict[Any, _Job], results: list[dict[str, Any] | None],
              lost: tuple[type[BaseException], ...]) -> None:
        """The answer of the finished call ``ref`` into ``results``; its call sent again
        elsewhere if its worker was lost."""
        job = jobs.pop(ref)
        try:
            answer = self.ray.get(ref)
        except lost as exc:
            self._replace(job.index, exc)
            self._send(job.index, job.kind, jobs)
            return
        except self.ray.exceptions.RayTaskError as exc:  # the collection itself failed
            raise exc.as_instanceof_cause() from None
        results[job.index] = answer
        host = self.owner[job.index]
        if not any(p is host for p in self._proven):
            self._proven.append(host)
        if job.kind == "collect":  # this rollout's shards count as measured at once
            self._round_slowest = max(float(answer["seconds"]), self._round_slowest or 0.0)

    def _give_up(self, job: _Job, jobs: dict[Any, _Job], waited: float) -> None:
        """Treat ``job``'s worker as lost: kill it and send the call again, with every other
        call it held, to the shards' new owners."""
        dead = self.owner[job.index]
        what = {"collect": "its rollout", "state": "its first state",
                "where": "the state to continue from"}[job.kind]
        why = ("shortened, the run is stopping" if self.stopping() else
               f"distributed.shard_timeout = {self.floor:g}")
        exc = WorkerLateError(f"no answer with {what} after {waited:.1f} s, past its "
                              f"deadline of {self._budget(job):.1f} s ({why})")
        self.late += 1
        held = [(r, j) for r, j in jobs.items() if self.owner[j.index] is dead]
        for r, _ in held:
            del jobs[r]
        for _, j in held:
            self._replace(j.index, exc)
            self._send(j.index, j.kind, jobs)

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
        hurry = self.stopping() and bool(self.hosts)  # a surviving worker needs no start
        if self.restarts_left > 0 and not hurry and self._cpu_free():
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
        self._start_states = list(states)
        jobs: dict[Any, _Job] = {}
        for i, state in enumerate(states):
            self.owner[i].adopt.remote(i, self.count, state)
            self._send(i, "where", jobs)
        placed = self._wait(jobs)
        self.where = list(placed)
        self.current = list(states)

    def report(self) -> dict[str, float]:
        """Scalars to log: the workers, the faults so far, the bytes and the actors' time."""
        secs = self._actor_seconds
        return {"workers/alive": float(len(self.hosts)), "workers/lost": float(self.lost),
                "workers/restarts": float(self.restarts),
                "workers/shards_moved": float(self.moved),
                "workers/rollouts_recollected": float(self.recollected),
                "workers/late": float(self.late),
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
