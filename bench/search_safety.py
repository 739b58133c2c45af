"""Is ``search`` ever clearly weaker than its blueprint?  Paired on the same deals.

Run: ``python bench/search_safety.py [--specs search search:uncertain=0.6 ...]
[--opponent strong] [--matches 400] [--seed 0]``.  The blueprint (``--blueprint``,
default ``pretrained``) and every search spec play the same ``--matches`` seeded
duplicate matches (friendly rules) against the opponent.  Since the deals are the
same, the difference of match win rates is measured per duplicate pair
(:func:`agents.evaluation.stats.paired_difference`), an interval far narrower than
two separate ones.  A spec is safe at this size when the interval of its difference
is not all below zero.  The table also gives how many decisions search searched and
changed, how many of the changes were to knock or not to knock (only with ``knocks``),
and the CPU seconds per match.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.progress import Progress

from agents import make_agent
from agents.evaluation.arena import play_matches
from agents.evaluation.stats import paired_difference
from bench.common import print_table


def _play(spec: str, args: argparse.Namespace, progress: Progress):
    built = spec
    if spec != args.blueprint and spec.startswith("search") and "blueprint=" not in spec:
        # Search around the same network the paired row plays.
        built = f"{spec}{',' if ':' in spec else ':'}blueprint={args.blueprint}"
    agent = make_agent(built, rules=args.rules, seed=args.seed)
    agent.name = spec
    task = progress.add_task(spec, total=args.matches)
    cpu = time.process_time()
    stats = play_matches(agent, make_agent(args.opponent, rules=args.rules, seed=args.seed),
                         args.matches, rules=args.rules, seed=args.seed,
                         progress=lambda k: progress.update(task, completed=k))
    return agent, stats, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--specs", nargs="+", default=["search"])
    parser.add_argument("--blueprint", default="pretrained")
    parser.add_argument("--opponent", default="strong")
    parser.add_argument("--matches", type=int, default=400)
    parser.add_argument("--rules", default="friendly")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    with Progress(transient=True) as progress:
        _, base, cpu = _play(args.blueprint, args, progress)
        rate = base.a_won.mean()
        rows.append([args.blueprint, str(base.num_matches), f"{100 * rate:.1f}%", "—", "—", "—",
                     "—", f"{cpu / base.num_matches:.2f}"])
        progress.console.print(" | ".join(rows[-1]), soft_wrap=True)
        for spec in args.specs:
            agent, stats, cpu = _play(spec, args, progress)
            d = paired_difference(stats.a_won, base.a_won, stats.pair)
            counts = agent.counts
            rows.append([spec, str(stats.num_matches), f"{100 * d['a_rate']:.1f}%",
                         f"{100 * d['diff']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]",
                         f"{counts['searched'] / max(counts['decisions'], 1):.1%}",
                         f"{counts['deviations'] / max(counts['decisions'], 1):.2%}",
                         f"{counts['knock_changes']} of {counts['deviations']}",
                         f"{cpu / stats.num_matches:.2f}"])
            progress.console.print(" | ".join(rows[-1]), soft_wrap=True)
    print_table(f"search vs its blueprint {args.blueprint}, paired on the same deals, against "
                f"{args.opponent} ({args.rules} rules, seed {args.seed})",
                ["agent", "matches", "match win", "minus blueprint (95%)",
                 "decisions searched", "decisions changed", "changes of knock or not",
                 "CPU s/match"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
