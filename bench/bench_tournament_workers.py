"""A tournament in one process and on Ray workers: wall time, matches/s, same results.

Run: ``python bench/bench_tournament_workers.py [--agents random simple strong]
[--matches 200] [--workers 0 1 2]`` (the ``ray`` extra).  Each row plays the same round
robin (duplicate matches, seeded); workers > 0 start one local Ray first (its start-up
is timed apart, in the ``ray start s`` column, and not counted in the tournament's wall
time).  The last column checks that the results equal the in-process run's, to the
digit.  On a machine with C cores, up to C workers play C chunks at once; the driver
only collects results, so its CPU time stays small.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.evaluation.tournament import run_tournament
from bench.common import print_table


def _summary(result: object) -> list[object]:
    return [{k: v for k, v in result.pair(p.a, p.b).items() if k != "seconds"}  # type: ignore[attr-defined]
            for p in result.pairs]  # type: ignore[attr-defined]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", nargs="+", default=["random", "simple", "strong"])
    parser.add_argument("--matches", type=int, default=200, help="matches per pairing")
    parser.add_argument("--rules", default="friendly")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    rows, reference = [], None
    ray_start = 0.0
    for workers in args.workers:
        if workers and ray_start == 0.0:
            import ray

            t0 = time.perf_counter()
            ray.init(include_dashboard=False, configure_logging=False, log_to_driver=False)
            ray_start = time.perf_counter() - t0
        cpu0, t0 = time.process_time(), time.perf_counter()
        result = run_tournament(args.agents, matches=args.matches, rules=args.rules,
                                seed=args.seed, workers=workers)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        summary = _summary(result)
        reference = summary if reference is None else reference
        total = sum(p.stats.num_matches for p in result.pairs)
        rows.append([str(workers), str(total), f"{wall:.1f}", f"{total / wall:.1f}",
                     f"{cpu:.1f}", f"{ray_start:.1f}" if workers else "-",
                     "yes" if summary == reference else "NO"])
    print_table(f"round robin of {', '.join(args.agents)}, {args.matches} matches per "
                f"pairing ({args.rules})",
                ["workers", "matches", "wall s", "matches/s", "driver CPU s", "ray start s",
                 "same results"], rows)
    return 0 if all(row[-1] == "yes" for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
