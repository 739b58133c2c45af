"""A tournament's matches spread over Ray actors, with the same results as in one process.

Every pairing's matches are cut into chunks of consecutive duplicate pairs (the slices
:func:`~agents.evaluation.arena.play_matches` plays with a ``batch_size``), and each
chunk is one job for a pool of actors.  Each actor builds the agents once, from the
same specs and seed as :func:`~agents.evaluation.tournament.run_tournament`, and plays a
job in an :class:`~agents.evaluation.arena.Arena` of its own.  No result depends on how
matches are chunked (each match draws from its own generator, dealt from its own seed),
and the chunks come back in order, so the statistics, the Elo ratings and the records
are the in-process tournament's to the digit, for any number of workers.

A worker that dies is replaced and its chunk played again; so is one that stops making
progress (its machine hung, a library deadlocked, the process stopped).  Chunks of
different pairings take times orders of magnitude apart (random against random, or two
search agents), so a chunk's running time says nothing about whether its worker is
stuck; its progress does.  Each actor answers :meth:`_MatchWorker.progress` from a second
thread while it plays, and a worker whose arena has not advanced one step for
:data:`DEADLINE_FACTOR` times the slowest step measured so far (at least
``stall_timeout`` seconds) is killed and its chunk played again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.evaluation.arena import Arena, MatchStats, seed_chunks
from agents.evaluation.cluster import check_capacity, connect
from hgin_env.agent import Agent
from hgin_env.rules import Rules

__all__ = ["Chunk", "chunks_for", "play_pairings"]

#: One job: (pairing index, first duplicate unit, the units' deal seeds).
Chunk = tuple[int, int, np.ndarray]

#: A worker is stuck once its arena has not advanced one step for this many times the
#: slowest step measured (at least ``stall_timeout``; this many times it before any step
#: is measured).
DEADLINE_FACTOR = 5.0
#: ``stall_timeout``'s default: the least time without a step before a worker is lost.
STALL_TIMEOUT_S = 60.0
#: The least time a new worker is given to start (build its agents) before it answers.
STARTUP_S = 300.0
#: How often a busy worker is asked for its progress, and the longest wait between checks.
PROBE_S = 1.0
POLL_S = 0.25


def chunks_for(pairings: int, matches: int, seed: int, duplicate: bool, workers: int,
               batch_size: int | None = None) -> list[Chunk]:
    """Every pairing's matches as chunks of consecutive units (a duplicate pair, or one
    match without ``duplicate``): ``batch_size`` matches each if given, else as few as
    keep every worker busy, since the engine plays a large batch faster per match than
    two halves (on two cores one pairing of 1000 matches takes 8.1 s as one batch, 11.9 s
    as two): a whole pairing per chunk, split only when there are fewer pairings than
    workers."""
    unit = 2 if duplicate else 1
    if batch_size is not None:
        per = int(batch_size) // unit
    else:
        units = -(-matches // unit)
        pieces = -(-workers // pairings)  # chunks per pairing: one unless workers outnumber
        per = -(-units // pieces)
    chunks = seed_chunks(seed, matches, duplicate, per)
    return [(p, start, seeds) for p in range(pairings) for start, seeds in chunks]


class _MatchWorker:
    """A Ray actor that plays chunks of one tournament's pairings."""

    def __init__(self, agent_specs: Sequence[str | Agent], seed: int, rules: Rules,
                 pairings: Sequence[tuple[int, int]], duplicate: bool, record: bool) -> None:
        from agents import make_agent

        self.agents = [make_agent(spec, seed=seed, rules=rules) for spec in agent_specs]
        self.rules = rules
        self.pairings = list(pairings)
        self.duplicate = duplicate
        self.record = record
        self.arena: Arena | None = None
        self.played = 0

    def progress(self) -> tuple[int, int]:
        """(chunks played, steps of the arena playing now): answered from the actor's
        second thread while :meth:`play` runs, so a count that stops moving means a stuck
        worker, however long its chunk takes."""
        arena = self.arena
        return self.played, (arena.steps if arena is not None else 0)

    def play(self, chunk: Chunk) -> tuple[MatchStats, list[dict[str, object]], str]:
        """The chunk's statistics, its recorded games, and the Ray node it ran on."""
        import ray

        pairing, _, seeds = chunk
        i, j = self.pairings[pairing]
        unit = 2 if self.duplicate else 1
        arena = Arena(self.agents[i], self.agents[j], seeds.size * unit, self.rules, seeds,
                      self.duplicate, record=self.record)
        self.arena = arena
        try:
            stats = arena.run()
        finally:
            self.played += 1
            self.arena = None
        return stats, arena.recorded(), str(ray.get_runtime_context().get_node_id())


@dataclass
class _Watch:
    """What the pool knows of a busy worker's progress."""

    job: int  # the job it plays
    seen: tuple[int, int] | None  # its last answer to ``progress``
    moved: float  # when that answer last changed (or the job was sent)
    fresh: bool  # it has not answered anything yet (it may still be starting)
    probe: Any = None  # the ``progress`` call in flight
    asked: float = 0.0  # when that call was sent


class _Pool:
    """Actors playing jobs, each job on whichever actor is free; a job whose actor died
    (its process killed, its node lost) is played again on a new actor.  A job is a pure
    function of its seeds, so playing it again gives the same result."""

    def __init__(self, ray: Any, make: Callable[[], Any], size: int,
                 max_restarts: int, stall_timeout: float = STALL_TIMEOUT_S) -> None:
        self.ray = ray
        self.make = make
        self.idle = [make() for _ in range(size)]
        self.actors = list(self.idle)
        self.restarts_left = max_restarts
        self.floor = float(stall_timeout)
        #: Jobs played again because their actor was lost; of those, actors found stuck.
        self.replayed = self.late = 0
        self._step_s: float | None = None  # the slowest step measured (seconds)
        self._proven: list[Any] = []  # the actors that have answered

    def run(self, jobs: Sequence[Chunk]) -> Iterator[tuple[Chunk, Any]]:
        """``(job, result)`` in the jobs' order, as soon as each is known."""
        ray = self.ray
        todo = list(range(len(jobs)))[::-1]
        flying: dict[Any, tuple[int, Any]] = {}
        watch: dict[Any, tuple[Any, _Watch]] = {}  # play ref: (actor, its progress)
        done: dict[int, Any] = {}
        nxt = 0
        while nxt < len(jobs):
            while todo and self.idle:
                index, actor = todo.pop(), self.idle.pop()
                ref = actor.play.remote(jobs[index])
                flying[ref] = (index, actor)
                watch[ref] = (actor, _Watch(index, None, time.monotonic(),
                                            not any(a is actor for a in self._proven)))
            probes = {w.probe: w for _, w in watch.values() if w.probe is not None}
            ready, _ = ray.wait([*flying, *probes], num_returns=1, timeout=POLL_S)
            if ready and ready[0] in probes:
                self._heard(probes[ready[0]], ready[0])
            elif ready:
                index, actor = flying.pop(ready[0])
                del watch[ready[0]]
                try:
                    done[index] = ray.get(ready[0])
                    self.idle.append(actor)
                    self._prove(actor)
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                    self._lost(actor, exc)
                    todo.append(index)
            for ref, (actor, w) in list(watch.items()):
                if self._check(actor, w):
                    flying.pop(ref)
                    del watch[ref]
                    todo.append(w.job)
            while nxt in done:
                yield jobs[nxt], done.pop(nxt)
                nxt += 1

    def _prove(self, actor: Any) -> None:
        if not any(a is actor for a in self._proven):
            self._proven.append(actor)

    def _heard(self, w: _Watch, ref: Any) -> None:
        """A worker's answer to ``progress``: when it moved, and how fast."""
        w.probe = None
        try:
            seen = self.ray.get(ref)
        except Exception:  # its actor is gone: its play call says so
            return
        now = time.monotonic()
        w.fresh = False
        if seen != w.seen:
            if w.seen is not None and seen[0] == w.seen[0] and seen[1] > w.seen[1]:
                step = (now - w.moved) / (seen[1] - w.seen[1])
                self._step_s = max(step, self._step_s or 0.0)
            w.seen, w.moved = seen, now

    def _limit(self, w: _Watch) -> float:
        """The seconds a worker may go without a step."""
        limit = max(self.floor, DEADLINE_FACTOR * (self.floor if self._step_s is None
                                                   else self._step_s))
        if w.fresh:
            limit += max(STARTUP_S, DEADLINE_FACTOR * self.floor)
        return limit

    def _check(self, actor: Any, w: _Watch) -> bool:
        """Ask a busy worker for its progress now and then; True (and the worker killed)
        once it has made none for longer than its limit."""
        now = time.monotonic()
        if now - w.moved > self._limit(w):
            self.late += 1
            try:
                self.ray.kill(actor)
            except Exception:  # already gone
                pass
            self._lost(actor, TimeoutError(
                f"a worker made no progress for {now - w.moved:.1f} s, past its limit of "
                f"{self._limit(w):.1f} s (stall_timeout = {self.floor:g})"))
            return True
        if w.probe is None and now - w.asked >= PROBE_S:
            w.probe, w.asked = actor.progress.remote(), now
        return False

    def _lost(self, actor: Any, exc: BaseException) -> None:
        if self.restarts_left <= 0:
            raise RuntimeError(f"tournament workers kept failing ({exc}); the "
                               "matches played so far are not reported") from None
        self.restarts_left -= 1
        self.replayed += 1
        self._replace(actor)

    def _replace(self, dead: Any) -> None:
        """A new actor for ``dead`` where a CPU is free (its node may be gone with it);
        otherwise the others play on without it."""
        self.actors.remove(dead)
        if self.ray.available_resources().get("CPU", 0) >= 1 or not self.actors:
            if not self.actors and self.ray.cluster_resources().get("CPU", 0) < 1:
                raise RuntimeError("every tournament worker was lost, and the Ray cluster "
                                   "has no CPU left to start another")
            fresh = self.make()
            self.actors.append(fresh)
            self.idle.append(fresh)

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)


def play_pairings(
    agent_specs: Sequence[str | Agent], pairings: Sequence[tuple[int, int]], matches: int,
    rules: Rules, seed: int, duplicate: bool, workers: int, address: str | None,
    batch_size: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    record: Callable[[int, dict[str, object]], None] | None = None,
    max_restarts: int | None = None,
    report: dict[str, int] | None = None,
    stall_timeout: float = STALL_TIMEOUT_S,
) -> list[MatchStats]:
    """Each pairing's :class:`MatchStats`, played by ``workers`` Ray actors.

    ``progress(pairing, matches_done_in_it)`` follows the chunks as they come back, in
    order; ``record(pairing, game)`` gets each recorded game (engine part, its ``pair``
    numbered within the pairing) in match order, as ``play_matches`` hands them out.
    A lost actor is replaced and its chunk played again, up to ``max_restarts`` times
    (default: twice the workers) before the tournament stops with ``RuntimeError``; a
    worker whose arena makes no step for ``stall_timeout`` seconds (or
    :data:`DEADLINE_FACTOR` times the slowest step measured, if longer) is lost too.
    ``report``, if given, receives ``workers``, ``nodes`` (the Ray nodes the chunks ran
    on), ``replayed`` (chunks played again after a lost worker) and ``late`` (of those,
    workers killed for making no progress).
    """
    if isinstance(stall_timeout, bool) or not isinstance(stall_timeout, int | float) \
            or not 0.1 <= stall_timeout <= 86_400:
        raise ValueError(f"stall_timeout must be a number of seconds in 0.1..86400, got "
                         f"{stall_timeout!r}")
    ray = connect(address, "a tournament with workers")
    check_capacity(ray, workers)
    # Two threads: one plays, the other answers ``progress`` meanwhile.
    actor = ray.remote(num_cpus=1, max_restarts=0, max_concurrency=2)(_MatchWorker)
    specs = list(agent_specs)

    def make() -> Any:
        return actor.remote(specs, seed, rules, list(pairings), duplicate, record is not None)

    pool = _Pool(ray, make, workers, 2 * workers if max_restarts is None else max_restarts,
                 stall_timeout)
    jobs = chunks_for(len(pairings), matches, seed, duplicate, workers, batch_size)
    totals: list[MatchStats | None] = [None] * len(pairings)
    nodes: set[str] = set()
    try:
        for (pairing, start, _), (stats, games, node) in pool.run(jobs):
            nodes.add(node)
            if record is not None:
                for game in games:
                    record(pairing, {**game, "pair": start + int(game["pair"])})
            done = totals[pairing]
            totals[pairing] = stats if done is None else done.concat(stats)
            if progress is not None:
                progress(pairing, int(totals[pairing].num_matches))  # type: ignore[union-attr]
    finally:  # the actors hold the agents (and a torch copy each): free them now
        pool.close()
    if report is not None:
        report.update(workers=workers, nodes=len(nodes), replayed=pool.replayed,
                      late=pool.late)
    return [t for t in totals if t is not None]
