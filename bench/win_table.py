"""Build the win table of a game to ``target`` from a blueprint's self-play.

Run: ``python bench/win_table.py [--blueprint pretrained-eaai] [--rules eaai]
[--hands 20000] [--seed 0] --out outputs/eaai/win_table.npz``.

Counts the outcomes of ``--hands`` finished hands of the blueprint on both seats
(:func:`agents.game_value.hand_outcomes`), solves the win probability of every score
(:func:`agents.game_value.win_table`) and saves both; ``search:game_value=FILE`` reads
the file.  Prints a few entries so the table can be judged at a glance.  Bad input (an
unknown blueprint, rules with more than one column, a searching agent) is one line on
stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from agents import make_agent
from agents.game_value import hand_outcomes, save_win_table, win_table
from hgin_env.rules import load_rules


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blueprint", default="pretrained-eaai")
    parser.add_argument("--rules", default="eaai")
    parser.add_argument("--hands", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        rules = load_rules(args.rules)
        agent = make_agent(args.blueprint, seed=args.seed, rules=rules)
        start = time.perf_counter()
        counts = hand_outcomes(agent, rules, args.hands, seed=args.seed)
        table = win_table(counts, rules.target)
    except ValueError as exc:
        print(f"win_table: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_win_table(args.out, table, counts, {"blueprint": args.blueprint, "rules": args.rules,
                                             "hands": int(counts.sum()), "seed": args.seed})
    awards = np.arange(counts.shape[1])
    dealer_share = counts[0].sum() / counts.sum()
    print(f"{int(counts.sum())} hands in {time.perf_counter() - start:.0f} s; the dealer won "
          f"{dealer_share:.1%}; mean award {(counts.sum(axis=0) @ awards) / counts.sum():.1f}")
    print("| my score | their score | I deal next | P(I win) |\n|---|---|---|---|")
    for a, b in ((0, 0), (50, 50), (80, 80), (90, 60), (60, 90), (95, 95)):
        for d in (1, 0):
            print(f"| {a} | {b} | {'yes' if d else 'no'} | {table[a, b, d]:.3f} |")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
