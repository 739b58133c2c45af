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

from collections.abc import Callable, Sequence

import numpy as np

from agents.evaluation.arena import Arena, MatchStats, match_seeds
from agents.evaluation.cluster import check_capacity, connect
from hgin_env.agent import Agent
from hgin_env.rules import Rules

__all__ = ["Chunk", "chunks_for", "play_pairings"]

#: One job: (pairing index, first duplicate unit, the units' deal seeds).
Chunk = tuple[int, int, np.ndarray]


def chunks_for(pairings: int, matches: int, seed: int, duplicate: bool, workers: int,
               batch_size: int | None = None) -> list[Chunk]:
    """Every pairing's matches as chunks of consecutive units (a duplicate pair, or one
    match without ``duplicate``): ``batch_size`` matches each if given, else about two
    chunks per worker and pairing, so that the pool stays busy to the end."""
    unit = 2 if duplicate else 1
    units = -(-matches // unit)
    if batch_size is not None:
        per = max(1, int(batch_size) // unit)
    else:
        per = max(1, -(-units // (2 * workers)))
    seeds = match_seeds(seed, units)
    return [(p, start, seeds[start : start + per]) for p in range(pairings)
            for start in range(0, units, per)]


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

    def play(self, chunk: Chunk) -> tuple[MatchStats, list[dict[str, object]]]:
        pairing, _, seeds = chunk
        i, j = self.pairings[pairing]
        unit = 2 if self.duplicate else 1
        arena = Arena(self.agents[i], self.agents[j], seeds.size * unit, self.rules, seeds,
                      self.duplicate, record=self.record)
        stats = arena.run()
        return stats, arena.recorded()


def play_pairings(
    agent_specs: Sequence[str | Agent], pairings: Sequence[tuple[int, int]], matches: int,
    rules: Rules, seed: int, duplicate: bool, workers: int, address: str | None,
    batch_size: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    record: Callable[[int, dict[str, object]], None] | None = None,
) -> list[MatchStats]:
    """Each pairing's :class:`MatchStats`, played by ``workers`` Ray actors.

    ``progress(pairing, matches_done_in_it)`` follows the chunks as they come back, in
    order; ``record(pairing, game)`` gets each recorded game (engine part, its ``pair``
    numbered within the pairing) in match order, as ``play_matches`` hands them out.
    """
    ray = connect(address, "a tournament with workers")
    check_capacity(ray, workers)
    actor = ray.remote(num_cpus=1)(_MatchWorker)
    handles = [actor.remote(list(agent_specs), seed, rules, list(pairings), duplicate,
                            record is not None) for _ in range(workers)]
    pool = ray.util.ActorPool(handles)
    jobs = chunks_for(len(pairings), matches, seed, duplicate, workers, batch_size)
    totals: list[MatchStats | None] = [None] * len(pairings)
    try:
        for (pairing, start, _), (stats, games) in zip(
                jobs, pool.map(lambda a, job: a.play.remote(job), jobs), strict=True):
            if record is not None:
                for game in games:
                    record(pairing, {**game, "pair": start + int(game["pair"])})
            done = totals[pairing]
            totals[pairing] = stats if done is None else done.concat(stats)
            if progress is not None:
                progress(pairing, int(totals[pairing].num_matches))  # type: ignore[union-attr]
    finally:  # the actors hold the agents (and a torch copy each): free them now
        for handle in handles:
            ray.kill(handle)
    return [t for t in totals if t is not None]
