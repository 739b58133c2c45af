"""Evaluation throughput: 1 000 simple-vs-simple Hollywood matches (the issue's target: <= 60 s).

Run: ``python bench/bench_evaluate.py [--matches 1000] [--agents simple simple]...
[--rules friendly] [--batch-size N] [--repeats 1]``.  ``--agents`` may be
repeated, one row per pairing; by default simple-simple and random-simple (the
random agent takes the per-match-generator path, which keeps results
independent of batching).  The matches are played the way ``evaluate.py``
plays them (duplicate pairs, all matches of the pairing in one ``VectorGame``,
finished games compacted away); the wall time includes the engine, the
observations and both agents.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import make_agent
from agents.evaluation.arena import play_matches
from bench.common import print_table

TARGET_SECONDS = 60.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--matches", type=int, default=1000)
    parser.add_argument("--agents", nargs=2, action="append", metavar="SPEC",
                        help="one pairing; repeat for more (default: simple simple, "
                             "random simple)")
    parser.add_argument("--rules", default="friendly")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=1, help="report the best of N runs")
    args = parser.parse_args()
    pairings = args.agents or [["simple", "simple"], ["random", "simple"]]
    rows, verdict = [], None
    for specs in pairings:
        a, b = (make_agent(spec, rules=args.rules) for spec in specs)
        best, stats = float("inf"), None
        for _ in range(args.repeats):
            start = time.perf_counter()
            stats = play_matches(a, b, args.matches, args.rules, seed=args.seed,
                                 batch_size=args.batch_size)
            best = min(best, time.perf_counter() - start)
        assert stats is not None
        hands = int(stats.hands.sum())
        rows.append([f"{specs[0]}-{specs[1]}", args.rules, str(stats.num_matches), str(hands),
                     str(stats.steps), f"{best:.1f}", f"{stats.num_matches / best:.1f}",
                     f"{hands / best:.0f}"])
        if specs == ["simple", "simple"] and args.matches == 1000:
            verdict = "PASS" if best <= TARGET_SECONDS else "FAIL"
    print_table("evaluate.py throughput", ["pairing", "rules", "matches", "hands", "steps",
                                           "seconds", "matches/s", "hands/s"], rows)
    if verdict is not None:
        print(f"target: 1000 simple-vs-simple matches in <= {TARGET_SECONDS:.0f} s: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
