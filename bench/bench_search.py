"""Speed of the ``search`` agent: decisions per second, and the time 400 matches take.

Run: ``python bench/bench_search.py [--matches 40] [--opponent strong]
[--spec search ...]``.  Each spec plays ``--matches`` duplicate matches
against the opponent exactly as ``evaluate.py`` plays them (one batched
arena, the public history kept for search), timed as a whole (CPU time of
this process and wall time).  The table gives search's decisions per second
(all its decisions, and the discard/knock decisions it searched), CPU
seconds per match, and the extrapolated wall time of 400 matches.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--matches", type=int, default=40)
    parser.add_argument("--opponent", default="strong")
    parser.add_argument("--spec", action="append", metavar="SPEC",
                        help="a search spec; repeat for more (default: search)")
    parser.add_argument("--rules", default="friendly")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    for spec in args.spec or ["search"]:
        agent = make_agent(spec, rules=args.rules, seed=args.seed)
        opponent = make_agent(args.opponent, rules=args.rules)
        wall, cpu = time.perf_counter(), time.process_time()
        stats = play_matches(agent, opponent, args.matches, args.rules, seed=args.seed)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        c = agent.counts
        rows.append([
            spec, str(stats.num_matches), f"{c['decisions'] / wall:.0f}",
            f"{c['searched'] / wall:.1f}", f"{c['deviations'] / max(c['searched'], 1):.1%}",
            f"{cpu / stats.num_matches:.2f}", f"{400 * wall / stats.num_matches / 60:.0f}",
        ])
    print_table(f"search vs {args.opponent}, {args.rules} rules (one process)",
                ["spec", "matches", "decisions/s", "searched/s", "changed", "CPU s/match",
                 "400 matches (min, wall)"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
