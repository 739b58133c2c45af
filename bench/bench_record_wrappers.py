"""Cost of the recording wrappers (``RecordMatches``, ``RecordGymMatches``) on an env loop.

Run: ``python bench/bench_record_wrappers.py [--matches 3] [--rules friendly]
[--repeats 3]``.  Each loop plays the same whole matches (same seeds, same
random legal moves) unwrapped, wrapped writing ``.jsonl`` and wrapped writing
``.jsonl.gz``; runs alternate so a busy machine slows every variant alike, and
the best of ``--repeats`` is reported.  Times are the process's CPU seconds
(the bench is single-threaded), wall seconds beside them.  Loops:

* ``AEC env()``: the documented PettingZoo loop (``last()``,
  ``action_space(agent).sample(mask)``, ``step``), both seats random: the
  cheapest step there is, so the largest relative cost of recording;
* ``Gym vs random`` / ``Gym vs simple``: ``HollywoodGinEnv`` with a random
  legal learner against that opponent (every opponent move is recorded too).

The limit (the issue's, for evaluations) is recording at most 20% slower.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import hgin_env
from bench.common import print_table, print_verdict, random_legal
from hgin_env.envs.gym_env import HollywoodGinEnv
from hgin_env.envs.wrappers import RecordGymMatches, RecordMatches

LIMIT = 0.20


def aec_loop(rules: str, matches: int, seed: int, path: Path | None) -> int:
    """Play ``matches`` whole matches in ``env()``; the number of steps."""
    env = hgin_env.env(rules=rules)
    if path is not None:
        env = RecordMatches(env, path)
    steps = 0
    for k in range(matches):
        env.reset(seed=seed if k == 0 else None)
        if k == 0:
            for i, agent in enumerate(env.possible_agents):
                env.action_space(agent).seed(seed + i)
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else env.action_space(agent).sample(
                obs["action_mask"]))
            steps += 1
    env.close()
    return steps


def gym_loop(opponent: str) -> Callable[[str, int, int, Path | None], int]:
    def run(rules: str, matches: int, seed: int, path: Path | None) -> int:
        """Play ``matches`` whole matches against ``opponent``; the learner's steps."""
        env = HollywoodGinEnv(opponent=opponent, rules=rules)
        if path is not None:
            env = RecordGymMatches(env, path)
        rng = np.random.default_rng(seed)
        steps = 0
        for k in range(matches):
            obs, _ = env.reset(seed=seed if k == 0 else None)
            done = False
            while not done:
                obs, _, done, _, _ = env.step(random_legal(obs["action_mask"], rng))
                steps += 1
        env.close()
        return steps

    return run


def _timed(loop: Callable[..., int], args: argparse.Namespace,
           path: Path | None) -> tuple[float, float, int]:
    start, cpu = time.perf_counter(), time.process_time()
    steps = loop(args.rules, args.matches, args.seed, path)
    return time.process_time() - cpu, time.perf_counter() - start, steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--matches", type=int, default=3, help="whole matches per loop")
    parser.add_argument("--rules", default="friendly")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="report the best of N runs")
    args = parser.parse_args()
    loops = {"AEC env()": aec_loop, "Gym vs random": gym_loop("random"),
             "Gym vs simple": gym_loop("simple")}
    rows, worst = [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        variants = {"off": None, "jsonl": Path(tmp) / "m.jsonl",
                    "jsonl.gz": Path(tmp) / "m.jsonl.gz"}
        for label, loop in loops.items():
            best = dict.fromkeys(variants, float("inf"))
            wall = dict.fromkeys(variants, float("inf"))
            steps = {}
            for _ in range(args.repeats):
                for name, path in variants.items():
                    seconds, wall_s, steps[name] = _timed(loop, args, path)
                    best[name] = min(best[name], seconds)
                    wall[name] = min(wall[name], wall_s)
            if len(set(steps.values())) != 1:
                raise AssertionError(f"{label}: recording changed the games played")
            overhead = max(best["jsonl"], best["jsonl.gz"]) / best["off"] - 1
            worst = max(worst, overhead)
            sizes = {name: path.stat().st_size for name, path in variants.items() if path}
            rows.append([label, f"{steps['off']:,}",
                         *(f"{best[v]:.2f} ({wall[v]:.2f})" for v in variants),
                         f"{100 * overhead:+.1f}%",
                         f"{sizes['jsonl'] / 1e3 / args.matches:.0f}",
                         f"{sizes['jsonl.gz'] / 1e3 / args.matches:.0f}"])
    print_table(f"Recording wrappers ({args.rules}, {args.matches} matches a loop, "
                f"best of {args.repeats})",
                ["loop", "steps", "off: CPU s (wall)", "jsonl", "jsonl.gz", "CPU overhead",
                 "kB/match", "kB/match gz"], rows)
    print_verdict(worst, LIMIT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
