"""Learning curves of training runs: match win rate over environment steps.

    hgin plot RUN [RUN ...] [--out curves] [--title TEXT] [--scalars TAG ...]

Each RUN is a log folder of ``hgin train`` (its ``eval.jsonl`` and
``final_eval.json``); the figure has one panel per evaluation opponent and one line
per run, with the 95% interval of every evaluation, and is written as OUT.png and
OUT.svg.  Give the seeds of one recipe to see their spread; it also prints each run's final match
win rate per opponent with their mean and range.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROG = "hgin plot"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0],
                                epilog="exit codes:\n  0 written, 2 a folder without "
                                       "evaluations, a bad log line or a bad option, 141 "
                                       "output closed",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="RUN", help="log folders of hgin train")
    p.add_argument("--out", default="learning_curves",
                   help="the figure's path without extension (default: learning_curves); "
                        "OUT.png and OUT.svg are written")
    p.add_argument("--title", help="the figure's title")
    p.add_argument("--scalars", nargs="+", default=[], metavar="TAG",
                   help="TensorBoard scalars of the runs to draw below the win rates, e.g. "
                        "loss/value loss/explained_variance (averaged over --smooth updates)")
    p.add_argument("--smooth", type=int, default=10, metavar="N",
                   help="updates each scalar point averages (default: 10)")
    return p


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Exit codes: 0 written, 2 a folder without evaluations or a bad log line, 141 output
    closed (the figure is written)."""
    args = build_parser(prog).parse_args(argv)
    from agents.training.curves import final_summary, plot_runs, read_run, read_scalars

    if args.smooth < 1:
        print(f"{prog}: error: --smooth must be at least 1, got {args.smooth}", file=sys.stderr)
        return 2
    try:
        runs = [read_run(folder) for folder in args.runs]
        for run, folder in zip(runs, args.runs, strict=True):
            read_scalars(run, folder, args.scalars)
        paths = plot_runs(runs, args.out, args.title, args.smooth)
    except (ValueError, OSError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    try:
        _print_summary(paths, final_summary(runs), sum(r.final is not None for r in runs))
    except BrokenPipeError:  # `hgin plot ... | head`: the figure is written; stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141
    return 0


def _print_summary(paths: list[Path], rows: list[dict[str, Any]], shown: int) -> None:
    print("wrote " + " and ".join(str(p) for p in paths))
    if rows:
        print(f"final evaluation, match win % over {shown} run(s): mean [lowest, highest]")
        for row in rows:
            each = ", ".join(f"{100 * x:.1f}" for x in row["rates"])
            print(f"  vs {row['opponent']:<12} {100 * row['mean']:5.1f} "
                  f"[{100 * row['low']:.1f}, {100 * row['high']:.1f}]   ({each})")


if __name__ == "__main__":
    sys.exit(main())
