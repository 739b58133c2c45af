"""Random-policy throughput of VectorGame: decisions/s and matches/s per batch size.

Run: ``python bench/bench_engine.py``.  When OpenSpiel is importable, its C++
gin rummy driven from Python with random legal moves is timed in the same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import print_table

from agents.base import sample_uniform_legal
from hgin_env.actions import DRAW_STOCK, KNOCK
from hgin_env.engine import VectorGame


def knock_first(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random legal play that knocks whenever a knock is legal, so matches finish."""
    actions = sample_uniform_legal(mask, rng)
    knocks = mask[:, KNOCK:DRAW_STOCK]
    can = knocks.any(axis=1)
    actions[can] = KNOCK + np.argmax(knocks[can], axis=1)
    return actions


POLICIES = {"random": sample_uniform_legal, "random+knock": knock_first}


def engine_rate(
    batch: int, seconds: float, rules: str, policy: str
) -> tuple[float, float, float, int]:
    """(decisions/s, hands/s, matches/s, state bytes per game); the policy's time included."""
    game = VectorGame(batch, rules, seed=batch)
    rng = np.random.default_rng(batch)
    choose = POLICIES[policy]
    for _ in range(20):  # warm up
        game.step(choose(game.legal_action_mask(), rng))
    steps = hands = matches = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, info = game.step(choose(game.legal_action_mask(), rng))
        steps += 1
        hands += int(info["hand_over"].sum())
        matches += int(info["match_over"].sum())
    elapsed = time.perf_counter() - start
    return steps * batch / elapsed, hands / elapsed, matches / elapsed, game.state_bytes_per_game()


def openspiel_rate(seconds: float) -> float | None:
    """OpenSpiel gin_rummy decisions/s with random legal moves, or None without pyspiel."""
    try:
        import pyspiel  # type: ignore[import-not-found]
    except ImportError:
        return None
    game = pyspiel.load_game("gin_rummy")
    rng = np.random.default_rng(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(rng.choice(outcomes, p=probs)))
            else:
                legal = state.legal_actions()
                state.apply_action(legal[int(rng.integers(len(legal)))])
                steps += 1
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="timing budget per batch size")
    parser.add_argument("--rules", default="friendly")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64, 1024, 4096, 16384])
    args = parser.parse_args()
    rows, rates = [], {}
    for policy in POLICIES:
        for batch in args.batches:
            dps, hps, mps, size = engine_rate(batch, args.seconds, args.rules, policy)
            if policy == "random":
                rates[batch] = dps
            rows.append(
                [policy, f"{batch:,}", f"{dps:,.0f}", f"{hps:,.0f}", f"{mps:,.2f}", f"{size:,}"]
            )
    print_table(
        f"VectorGame throughput, policy time included ({args.rules})",
        ["policy", "batch", "decisions/s", "hands/s", "matches/s", "state bytes/game"],
        rows,
    )
    ospiel = openspiel_rate(args.seconds)
    if ospiel is None:
        print("OpenSpiel (pyspiel) not importable: no comparison in this run.")
    else:
        best = max(rates.values())
        print(
            f"OpenSpiel gin_rummy random play: {ospiel:,.0f} decisions/s; "
            f"hgin at its best batch is {best / ospiel:.1f}x faster"
        )


if __name__ == "__main__":
    main()
