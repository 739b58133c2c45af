"""Decisions per second of each agent by batch size, on positions from real matches.

Run: ``python bench/bench_agents.py [--agents simple strong ginhunter pretrained]
[--sizes 1 256 4096] [--seconds 1.0] [--threads 1]``.  The positions are every
observation the seats of ``strong`` vs ``simple`` matches (seed 0) saw, both draw and
discard phases, so each agent is timed on the mix of decisions it meets in play; a
batch of B is the first B of them.  Each cell is the best of five rounds; the last
column is the agent's cost per decision at the largest batch over the network's
(``pretrained``) in the same run, which is what an opponent costs a training step
beside the learner's own forward pass.  The heuristics' meld pass is the compiled one
where numba is installed; ``HGIN_NO_JIT=1`` times the numpy pass (the title says which).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import torch

from agents import make_agent
from agents.evaluation.arena import play_matches
from bench.common import best_time, print_table
from hgin_env import jit_melds


class _Collector:
    """Passes ``strong``'s moves through and keeps a copy of every observation."""

    name = "strong"

    def __init__(self) -> None:
        self.agent = make_agent("strong")
        self.seen: list[dict[str, np.ndarray]] = []

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None
            ) -> np.ndarray:
        self.seen.append({key: np.array(value) for key, value in obs.items()})
        return self.agent.act(obs, rng)


def positions(count: int) -> dict[str, np.ndarray]:
    """At least ``count`` observations from strong-vs-simple matches, in play order."""
    collector, matches = _Collector(), 8
    while True:
        collector.seen.clear()
        play_matches(collector, make_agent("simple", seed=0), matches, "friendly", seed=0)
        rows = sum(o["action_mask"].shape[0] for o in collector.seen)
        if rows >= count:
            break
        matches *= 2
    keys = collector.seen[0].keys()
    return {key: np.concatenate([o[key] for o in collector.seen])[:count] for key in keys}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", nargs="+",
                        default=["random", "simple", "strong", "ginhunter", "pretrained"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[1, 256, 4096])
    parser.add_argument("--seconds", type=float, default=1.0, help="per cell, over 5 rounds")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    obs = positions(max(args.sizes))
    rng = np.random.default_rng(0)
    per: dict[str, dict[int, float]] = {}
    for spec in args.agents:
        agent = make_agent(spec, seed=0)
        per[spec] = {}
        for size in args.sizes:
            batch = {key: value[:size] for key, value in obs.items()}
            per[spec][size] = best_time(lambda a=agent, b=batch: a.act(b, rng),
                                        min_seconds=args.seconds) / size
    top = max(args.sizes)
    network = per.get("pretrained", {}).get(top)
    rows = []
    for spec in args.agents:
        cells = [f"{1 / per[spec][s]:,.0f} ({1e6 * per[spec][s]:.1f} us)" for s in args.sizes]
        ratio = f"{per[spec][top] / network:.2f}" if network else "n/a"
        rows.append([spec, *cells, ratio])
    melds = "compiled (numba)" if jit_melds.AVAILABLE else "numpy"
    print_table(f"decisions/s (us per decision), {args.threads} torch thread(s), "
                f"meld pass: {melds}",
                ["agent", *[f"B = {s}" for s in args.sizes], f"cost / network's at B = {top}"],
                rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
