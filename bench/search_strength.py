"""Strength of ``search`` as a function of its belief samples.

Run: ``python bench/search_strength.py [--samples 2 4 8 16] [--opponent strong]
[--matches 100] [--seed 0]``.  For each number of samples, ``search:samples=N``
plays ``--matches`` duplicate matches (friendly rules) against the opponent,
and the table gives its match, column and hand win rates with 95% intervals,
how often search left the blueprint's action, and the CPU seconds per match.
The blueprint itself (``pretrained``) is the row with 0 samples.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import make_agent
from agents.evaluation.arena import duplicate_rates
from bench.common import print_table


def _pct(r: dict[str, float]) -> str:
    return f"{100 * r['rate']:.1f}% [{100 * r['low']:.1f}, {100 * r['high']:.1f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--opponent", default="strong")
    parser.add_argument("--matches", type=int, default=100)
    parser.add_argument("--rules", default="friendly")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    for samples in [0, *args.samples]:
        spec = "pretrained" if samples == 0 else f"search:samples={samples}"
        agent = make_agent(spec, rules=args.rules, seed=args.seed)
        cpu = time.process_time()
        r = duplicate_rates(agent, make_agent(args.opponent, rules=args.rules), args.matches,
                            rules=args.rules, seed=args.seed)
        cpu = time.process_time() - cpu
        counts = getattr(agent, "counts", None)
        changed = f"{counts['deviations'] / max(counts['searched'], 1):.1%}" if counts else "-"
        rows.append([spec, str(r["matches"]), _pct(r["match"]), _pct(r["column"]),
                     _pct(r["hand"]), changed, f"{cpu / r['matches']:.1f}"])
        print(" | ".join(rows[-1]), flush=True)
    print_table(f"search by samples vs {args.opponent} ({args.rules} rules, seed {args.seed})",
                ["agent", "matches", "match win", "column win", "hand win",
                 "searched decisions changed", "CPU s/match"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
