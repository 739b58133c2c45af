"""Throughput of the meld minimiser: hands/s at batch 1, 1 000 and 100 000.

Run: ``python bench/bench_melds.py``.  When OpenSpiel is importable, its C++
``GinRummyUtils.min_deadwood`` is timed on the same hands in the same run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import best_time, print_table, random_hands

from hgin_env import melds
from hgin_env.cards import mask_to_cards


def openspiel_rate(hands: np.ndarray) -> float | None:
    """OpenSpiel 10-card min deadwood hands/s, or None when pyspiel is missing."""
    try:
        import pyspiel  # type: ignore[import-not-found]
    except ImportError:
        return None
    utils = pyspiel.gin_rummy.GinRummyUtils(13, 4, 10)
    # OpenSpiel card ids: suit-major like ours (suit * 13 + rank).
    lists = [mask_to_cards(int(h)) for h in hands]

    def run() -> None:
        for cards in lists:
            utils.min_deadwood(cards)

    return len(lists) / best_time(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=1.0, help="timing budget per cell")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    rates = {}
    for batch in (1, 1_000, 100_000):
        ten = random_hands(rng, batch, 10)
        eleven = random_hands(rng, batch, 11)
        t10 = best_time(lambda h=ten: melds.min_deadwood(h), args.seconds)
        t11 = best_time(lambda h=eleven: melds.deadwood_after_discard(h), args.seconds)
        t11m = best_time(lambda h=eleven: melds.min_deadwood_after_discard(h), args.seconds)
        rates[batch] = batch / t10
        rows.append([f"{batch:,}", f"{batch / t10:,.0f}", f"{batch / t11:,.0f}",
                     f"{batch / t11m:,.0f}"])
    print_table(
        "hgin meld minimiser (hands/s, this machine)",
        ["batch", "min_deadwood (10 cards)", "deadwood_after_discard (11 cards)",
         "min_deadwood_after_discard (11 cards)"],
        rows,
    )
    ospiel = openspiel_rate(random_hands(rng, 20_000, 10))
    if ospiel is None:
        print("OpenSpiel (pyspiel) not importable: no comparison in this run.")
    else:
        print(
            f"OpenSpiel GinRummyUtils.min_deadwood: {ospiel:,.0f} hands/s; "
            f"hgin at batch 100 000 is {rates[100_000] / ospiel:.1f}x faster"
        )


if __name__ == "__main__":
    main()
