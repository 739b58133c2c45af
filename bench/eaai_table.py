"""The EAAI comparison table and the size of the differences hgin keeps (docs/eaai.md).

Reads the match records of ``hgin evaluate --rules eaai ... --record FILE`` runs:

* ``summary``: per pairing, the first agent's game win rate with the 95% interval on the
  pair-clustered effective sample size (as the tournament prints it), over the
  duplicate pairs that finished; ``--batch-size`` drops a partly played last batch (a
  run stopped early finishes its short games first, which would bias the rate).
* ``showdowns``: every non-gin knock re-scored (a) with ``layoff = "optimal"``: the
  effect of the referee's procedure, as the knocker's mean gain per knock; (b) where
  ``simple`` is a party, with the melds the Java ``SimpleGinRummyPlayer`` declares (a
  random least-deadwood maximal meld set, runs first), which hgin does not model: the
  mean change of the award to the hgin agent's side per knock.  Both also give the
  share of hands whose winner changes.

    python bench/eaai_table.py summary outputs/eaai/table.jsonl
    python bench/eaai_table.py showdowns outputs/eaai/table.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
from collections import defaultdict
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from agents.evaluation.stats import clustered_wilson
from hgin_env.cards import CARD_VALUES, NUM_RANKS
from hgin_env.rules import load_rules
from hgin_env.showdown import showdown_batch

#: hgin suit (C, D, H, S) -> the Java framework's suit index (C, H, S, D).
JAVA_SUIT = (0, 3, 1, 2)


def read_records(paths: list[Path]) -> Iterator[dict[str, Any]]:
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield json.loads(line)


def summary(paths: list[Path], batch_size: int | None) -> list[dict[str, Any]]:
    """One row per pairing: games, rate, interval, truncated games, the most takes in a hand."""
    pairs: dict[tuple[str, str], dict[tuple[int, int], list[int]]] = defaultdict(dict)
    truncated: dict[tuple[str, str], int] = defaultdict(int)
    max_takes, hands = 0, defaultdict(list)
    for rec in read_records(paths):
        pairing = tuple(rec["context"]["pairing"])
        first = rec["agents"].index(pairing[0])
        winner = rec["result"]["winner"]
        truncated[pairing] += winner not in (0, 1)
        key = (rec["context"]["tournament_seed"], rec["context"]["pair"])  # runs may differ
        pairs[pairing].setdefault(key, []).append(int(winner == first))
        hands[pairing].append(len(rec["hands"]))
        for hand in rec["hands"]:
            max_takes = max(max_takes, sum(a == 105 for _, a in hand["actions"]))
    rows = []
    for pairing, by_pair in pairs.items():
        done = sorted(p for p, wins in by_pair.items() if len(wins) == 2)
        if batch_size:  # whole batches of matches only (a batch holds batch_size / 2 pairs)
            per = max(1, batch_size // 2)
            count: dict[tuple[int, int], int] = defaultdict(int)
            for seed, pair in done:
                count[seed, pair // per] += 1
            done = [p for p in done if count[p[0], p[1] // per] == per]
        wins = np.array([sum(by_pair[p]) for p in done], float)
        trials = np.full(len(done), 2.0)
        low, high, _ = clustered_wilson(wins, trials)
        rows.append({"a": pairing[0], "b": pairing[1], "games": int(trials.sum()),
                     "rate": float(wins.sum() / trials.sum()) if done else float("nan"),
                     "low": low, "high": high, "truncated": truncated[pairing],
                     "hands_per_game": float(np.mean(hands[pairing])), "max_takes": max_takes})
    return rows


# ------------------------------------------------------ the Java player's declarations


def java_id(card: int) -> int:
    return JAVA_SUIT[card // NUM_RANKS] * NUM_RANKS + card % NUM_RANKS


def _java_melds() -> list[int]:
    """Every meld in ``GinRummyUtil.meldBitstrings`` order: runs by Java suit, start rank
    and length, then sets by rank (each 3-set, then the 4-set)."""
    out = []
    for js in range(4):
        suit = JAVA_SUIT.index(js)
        for start in range(NUM_RANKS - 2):
            for end in range(start + 2, NUM_RANKS):
                out.append(sum(1 << (suit * NUM_RANKS + r) for r in range(start, end + 1)))
    for rank in range(NUM_RANKS):
        column = [JAVA_SUIT.index(js) * NUM_RANKS + rank for js in range(4)]
        for missing in range(5):
            out.append(sum(1 << c for i, c in enumerate(column) if i != missing))
    return out


JAVA_MELDS = _java_melds()
MELD_SET = frozenset(JAVA_MELDS)


def value(mask: int) -> int:
    return sum(int(CARD_VALUES[c]) for c in range(52) if mask >> c & 1)


@lru_cache(maxsize=1 << 16)
def simple_declarations(hand: int) -> tuple[tuple[int, ...], ...]:
    """``cardsToBestMeldSets``: the maximal meld sets of least deadwood, each in Java
    meld-index order (a HashSet of small indices iterates in ascending order)."""
    melds = [m for m in JAVA_MELDS if m & hand == m]
    best: list[tuple[int, ...]] = []
    low = None

    def grow(start: int, chosen: tuple[int, ...], used: int) -> None:
        nonlocal low
        extended = False
        for i in range(len(melds)):
            if melds[i] & used == 0:
                extended = True
                if i >= start:
                    grow(i + 1, (*chosen, i), used | melds[i])
        if not extended:  # maximal
            dead = value(hand & ~used)
            if low is None or dead < low:
                low, best[:] = dead, []
            if dead == low:
                best.append(tuple(melds[i] for i in chosen))

    grow(0, (), 0)
    return tuple(best) or ((),)


@lru_cache(maxsize=1 << 16)
def greedy_layoff(melds: tuple[int, ...], cards: int) -> int:
    """The Java referee's layoff loop (``GinRummyGame.play``): the laid-off cards."""
    grown = list(melds)
    order = sorted((c for c in range(52) if cards >> c & 1), key=java_id)
    laid = 0
    while True:
        move = next(((c, i) for c in order for i, m in enumerate(grown)
                     if (m | 1 << c) in MELD_SET and not m >> c & 1), None)
        if move is None:
            return laid
        c, i = move
        grown[i] |= 1 << c
        order.remove(c)
        laid |= 1 << c


def _arrangements(hand: int) -> list[tuple[int, ...]]:
    """Every collection of disjoint melds of ``hand`` (the defender's free choice)."""
    melds = [m for m in JAVA_MELDS if m & hand == m]
    out: list[tuple[int, ...]] = []

    def rec(start: int, chosen: tuple[int, ...], used: int) -> None:
        out.append(chosen)
        for i in range(start, len(melds)):
            if melds[i] & used == 0:
                rec(i + 1, (*chosen, melds[i]), used | melds[i])

    rec(0, (), 0)
    return out


def _defender_best(orders: list[tuple[int, ...]], defender: int) -> int:
    """hgin's defender: its least deadwood over its declarations, against the knocker's
    best order (the knocker maximises)."""
    arrs = _arrangements(defender)
    return max(min(value(defender & ~sum(a) & ~greedy_layoff(o, defender & ~sum(a)))
                   for a in arrs) for o in orders)


def _award(k: int, d: int, undercut_bonus: int = 25) -> tuple[int, int]:
    """(winner 0 = knocker / 1 = defender, award) of a non-gin knock."""
    return (0, d - k) if k < d else (1, undercut_bonus + k - d)


def showdowns(paths: list[Path]) -> dict[str, Any]:
    """The effect of the layoff procedure and of Simple's own declarations, per knock."""
    eaai = load_rules("eaai")
    optimal = eaai.replace(layoff="optimal")
    knocks = []
    for rec in read_records(paths):
        for hand in rec["hands"]:
            sd = hand["showdown"]
            if sd["dead"] or sd["gin"]:
                continue
            k = sd["knocker"]
            masks = [sum(1 << c for c in cards) for cards in sd["hands"]]
            knocks.append((rec["agents"], k, masks[k], masks[1 - k], sd))
    kn = np.array([x[2] for x in knocks], np.uint64)
    de = np.array([x[3] for x in knocks], np.uint64)
    got = showdown_batch(kn, de, 10, eaai)
    opt = showdown_batch(kn, de, 10, optimal)

    def signed(b: Any) -> np.ndarray:  # the knocker's net award
        return np.where(b.winner == 0, 1, -1) * b.award.astype(np.int64)

    out: dict[str, Any] = {"knocks": len(knocks), "layoff": {
        "mean_knocker_gain": float(np.mean(signed(got) - signed(opt))),
        "winner_changed": float(np.mean(got.winner != opt.winner)),
        "award_changed": float(np.mean(got.award != opt.award))}}
    changes, flips, n = [], [], 0
    for i, (agents, k, kmask, dmask, _) in enumerate(knocks):
        if "simple" not in agents:
            continue
        n += 1
        here = (int(got.winner[i]), int(got.award[i]))
        if agents[k] == "simple":  # Simple knocks: its random declaration, runs first
            decls = simple_declarations(kmask)
            outcomes = [_award(value(kmask & ~sum(m)), _defender_best([m], dmask))
                        for m in decls]
        else:  # Simple defends: its own best maximal melds, then the referee's layoff
            k_melds = [sum(1 << c for c in m) for m in knocks[i][4]["melds"][k]]
            orders = list(itertools.permutations(k_melds))
            k_dead = value(kmask & ~sum(k_melds))
            outcomes = []
            for decl in simple_declarations(dmask):
                rest = dmask & ~sum(decl)
                d = max(value(rest & ~greedy_layoff(o, rest)) for o in orders)
                outcomes.append(_award(k_dead, d))
        s = 1 if agents[k] != "simple" else -1
        value_here = s * (here[1] if here[0] == 0 else -here[1])
        for w, a in outcomes:
            changes.append((s * (a if w == 0 else -a) - value_here) / len(outcomes))
            flips.append((w != here[0]) / len(outcomes))
    out["simple_declares"] = {"knocks": n, "mean_award_change": float(sum(changes) / max(n, 1)),
                              "winner_changed": float(sum(flips) / max(n, 1))}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("summary", "showdowns"))
    parser.add_argument("records", nargs="+", type=Path)
    parser.add_argument("--batch-size", type=int, default=None,
                        help="the run's --batch-size: count whole batches only")
    args = parser.parse_args()
    if args.what == "summary":
        for r in summary(args.records, args.batch_size):
            print(f"{r['a']} vs {r['b']}: {100 * r['rate']:.1f}% "
                  f"[{100 * r['low']:.1f}, {100 * r['high']:.1f}] over {r['games']} games; "
                  f"{r['hands_per_game']:.1f} hands/game, {r['truncated']} truncated, "
                  f"most takes in a hand {r['max_takes']}")
    else:
        print(json.dumps(showdowns(args.records), indent=2))


if __name__ == "__main__":
    main()
