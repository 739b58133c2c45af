"""A tournament's matches spread over Ray actors, with the same results as in one process.

Every pairing's matches are cut into chunks of consecutive duplicate pairs (the slices
:func:`~agents.evaluation.arena.play_matches` plays with a ``batch_size``), and each
chunk is one job for a pool of actors.  Each actor builds the agents once, from the
same specs and seed as :func:`~agents.evaluation.tournament.run_tournament`, and plays a
job in an :class:`~agents.evaluation.arena.Arena` of its own.  No result depends on how
matches are chunked (each match draws from its own generator, dealt from its own seed),
and the chunks come back in order, so the statistics, the Elo ratings and the records
are the in-process tournament's to the digit, for any number of workers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from agents.evaluation.arena import Arena, MatchStats, seed_chunks
from agents.evaluation.cluster import check_capacity, connect
from hgin_env.agent import Agent
from hgin_env.rules import Rules

__all__ = ["Chunk", "chunks_for", "play_pairings"]

#: One job: (pairing index, first duplicate unit, the units' deal seeds).
Chunk = tuple[int, int, np.ndarray]


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

    def play(self, chunk: Chunk) -> tuple[MatchStats, list[dict[str, object]], str]:
        """The chunk's statistics, its recorded games, and the Ray node it ran on."""
        import ray

        pairing, _, seeds = chunk
        i, j = self.pairings[pairing]
        unit = 2 if self.duplicate else 1
        arena = Arena(self.agents[i], self.agents[j], seeds.size * unit, self.rules, seeds,
                      self.duplicate, record=self.record)
        stats = arena.run()
        return stats, arena.recorded(), str(ray.get_runtime_context().get_node_id())


class _Pool:
    """Actors playing jobs, each job on whichever actor is free; a job whose actor died
    (its process killed, its node lost) is played again on a new actor.  A job is a pure
    function of its seeds, so playing it again gives the same result."""

    def __init__(self, ray: Any, make: Callable[[], Any], size: int,
                 max_restarts: int) -> None:
        self.ray = ray
        self.make = make
        self.idle = [make() for _ in range(size)]
        self.actors = list(self.idle)
        self.restarts_left = max_restarts
        #: Jobs played again because their actor was lost.
        self.replayed = 0

    def run(self, jobs: Sequence[Chunk]) -> Iterator[tuple[Chunk, Any]]:
        """``(job, result)`` in the jobs' order, as soon as each is known."""
        ray = self.ray
        todo = list(range(len(jobs)))[::-1]
        flying: dict[Any, tuple[int, Any]] = {}
        done: dict[int, Any] = {}
        nxt = 0
        while nxt < len(jobs):
            while todo and self.idle:
                index, actor = todo.pop(), self.idle.pop()
                flying[actor.play.remote(jobs[index])] = (index, actor)
            ready, _ = ray.wait(list(flying), num_returns=1)
            index, actor = flying.pop(ready[0])
            try:
                done[index] = ray.get(ready[0])
                self.idle.append(actor)
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                if self.restarts_left <= 0:
                    raise RuntimeError(f"tournament workers kept failing ({exc}); the "
                                       "matches played so far are not reported") from None
                self.restarts_left -= 1
                self.replayed += 1
                self._replace(actor)
                todo.append(index)
            while nxt in done:
                yield jobs[nxt], done.pop(nxt)
                nxt += 1

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
) -> list[MatchStats]:
    """Each pairing's :class:`MatchStats`, played by ``workers`` Ray actors.

    ``progress(pairing, matches_done_in_it)`` follows the chunks as they come back, in
    order; ``record(pairing, game)`` gets each recorded game (engine part, its ``pair``
    numbered within the pairing) in match order, as ``play_matches`` hands them out.
    A lost actor is replaced and its chunk played again, up to ``max_restarts`` times
    (default: twice the workers) before the tournament stops with ``RuntimeError``.
    ``report``, if given, receives ``workers``, ``nodes`` (the Ray nodes the chunks ran
    on) and ``replayed`` (chunks played again after a lost worker).
    """
    ray = connect(address, "a tournament with workers")
    check_capacity(ray, workers)
    actor = ray.remote(num_cpus=1, max_restarts=0)(_MatchWorker)
    specs = list(agent_specs)

    def make() -> Any:
        return actor.remote(specs, seed, rules, list(pairings), duplicate, record is not None)

    pool = _Pool(ray, make, workers, 2 * workers if max_restarts is None else max_restarts)
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
        report.update(workers=workers, nodes=len(nodes), replayed=pool.replayed)
    return [t for t in totals if t is not None]
