"""Learning curves of training runs: match win rate over environment steps.

    hgin plot RUN [RUN ...] [--out curves] [--title TEXT]

Each RUN is a log folder of ``hgin train`` (its ``eval.jsonl`` and
``final_eval.json``); the figure has one panel per evaluation opponent and one line
per run, with the 95% interval of every evaluation, and is written as OUT.png and
OUT.svg.  Give the seeds of one recipe to see their spread.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

PROG = "hgin plot"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0],
                                epilog="exit codes:\n  0 written, 2 a folder without "
                                       "evaluations, a bad log line or a bad option",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="RUN", help="log folders of hgin train")
    p.add_argument("--out", default="learning_curves",
                   help="the figure's path without extension (default: learning_curves); "
                        "OUT.png and OUT.svg are written")
    p.add_argument("--title", help="the figure's title")
    return p


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Exit codes: 0 written, 2 a folder without evaluations or a bad log line."""
    args = build_parser(prog).parse_args(argv)
    from agents.training.curves import plot_runs, read_run

    try:
        runs = [read_run(folder) for folder in args.runs]
        paths = plot_runs(runs, args.out, args.title)
    except (ValueError, OSError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    print("wrote " + " and ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
