"""Slow, brute-force reference implementations of melds and the showdown.

This module is the test oracle for ``hgin_env.melds`` and
``hgin_env.showdown`` (docs/rules.md §2, §7, §8).  It favours being obviously
correct over being fast: every function enumerates all possibilities.  Masks
are plain Python ints (bit ``card`` set, ``card = suit * 13 + rank``).

Public API
----------
* ``all_melds(mask) -> list[int]`` — every meld contained in ``mask``.
* ``all_arrangements(mask) -> list[list[int]]`` — every collection of
  pairwise-disjoint melds of ``mask`` (the empty one included).
* ``min_deadwood_ref(mask) -> int``
* ``deadwood_after_discard_ref(mask11) -> dict[card, int]``
* ``is_meld(mask) -> bool``, ``value(mask) -> int``
* ``layoff_search(knocker_melds, cards) -> (deadwood, layoff_mask)`` —
  best way to lay ``cards`` off onto the knocker's melds.
* ``layoffs_feasible(knocker_melds, layoff_mask) -> bool`` — can every card
  of ``layoff_mask`` be laid off at once?
* ``defender_best_ref(knocker_melds, defender_mask, allow_layoff=True)
  -> (deadwood, defender_melds, layoff_mask)`` — the defender's optimal
  answer against fixed knocker melds.
* ``showdown_ref(knocker_mask, defender_mask, knock_limit, gin_bonus,
  undercut_bonus) -> dict``.
* ``java_greedy_layoff(knocker_melds, cards) -> layoff_mask`` — the EAAI Java
  referee's layoff loop, transcribed (``layoff = "declared-greedy"``).
* ``showdown_greedy_ref(knocker_mask, defender_mask, knock_limit, gin_bonus,
  undercut_bonus) -> dict`` — the showdown under that referee: the knocker picks its
  melds and their declaration order, the defender its declared melds, both best for
  themselves.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import permutations
from typing import Any

NUM_RANKS = 13
NUM_SUITS = 4
# A = 1, 2..10 face value, J/Q/K = 10 (docs/rules.md §1), written out independently
# of hgin_env.cards so the oracle does not share code with the engine.
RANK_VALUES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10)


def card(rank: int, suit: int) -> int:
    return suit * NUM_RANKS + rank


def cards_of(mask: int) -> list[int]:
    return [c for c in range(52) if mask >> c & 1]


def value(mask: int) -> int:
    """Sum of deadwood values of the cards in ``mask``."""
    return sum(RANK_VALUES[c % NUM_RANKS] for c in cards_of(mask))


def mask_of(cards) -> int:
    mask = 0
    for c in cards:
        mask |= 1 << c
    return mask


def _build_all_deck_melds() -> tuple[int, ...]:
    melds = []
    # sets: each rank, every 3-subset of the 4 suits, and the 4-set
    for rank in range(NUM_RANKS):
        suits = range(NUM_SUITS)
        for missing in suits:
            melds.append(mask_of(card(rank, s) for s in suits if s != missing))
        melds.append(mask_of(card(rank, s) for s in suits))
    # runs: every block of >= 3 consecutive ranks in one suit, ace low, no wrap
    for suit in range(NUM_SUITS):
        for lo in range(NUM_RANKS):
            for hi in range(lo + 2, NUM_RANKS):
                melds.append(mask_of(card(r, suit) for r in range(lo, hi + 1)))
    return tuple(melds)


#: Every meld in the whole deck (65 sets + 264 runs).
DECK_MELDS = _build_all_deck_melds()
_DECK_MELD_SET = frozenset(DECK_MELDS)


def is_meld(mask: int) -> bool:
    return mask in _DECK_MELD_SET


def is_set(meld: int) -> bool:
    return len({c % NUM_RANKS for c in cards_of(meld)}) == 1


def all_melds(mask: int) -> list[int]:
    """Every valid meld whose cards are all in ``mask``."""
    mask = int(mask)
    return [m for m in DECK_MELDS if m & mask == m]


def all_arrangements(mask: int) -> list[list[int]]:
    """Every collection of pairwise-disjoint melds inside ``mask``.

    Enumerated once each: take the lowest card still undecided; it is either
    left out of every meld, or it is in exactly one meld drawn from the
    undecided cards.
    """
    mask = int(mask)
    melds = all_melds(mask)
    out: list[list[int]] = []

    def rec(undecided: int, chosen: list[int]) -> None:
        if undecided == 0:
            out.append(list(chosen))
            return
        low = undecided & -undecided
        rec(undecided ^ low, chosen)  # lowest card is not in a meld
        for m in melds:
            if m & low and m & undecided == m:
                chosen.append(m)
                rec(undecided & ~m, chosen)
                chosen.pop()

    rec(mask, [])
    return out


def union(melds) -> int:
    u = 0
    for m in melds:
        u |= m
    return u


@lru_cache(maxsize=1 << 16)
def min_deadwood_ref(mask: int) -> int:
    """Minimum, over all arrangements, of the value of the unmelded cards."""
    mask = int(mask)
    return min(value(mask & ~union(arr)) for arr in all_arrangements(mask))


def deadwood_after_discard_ref(mask11: int) -> dict[int, int]:
    """For each held card, the minimum deadwood of the hand without it."""
    mask11 = int(mask11)
    return {c: min_deadwood_ref(mask11 & ~(1 << c)) for c in cards_of(mask11)}


# ---------------------------------------------------------------- layoffs


def can_lay_off(meld: int, c: int) -> bool:
    """Can card ``c`` be added to the (possibly already extended) ``meld``?"""
    if meld >> c & 1:
        return False
    cs = cards_of(meld)
    ranks = [x % NUM_RANKS for x in cs]
    suits = [x // NUM_RANKS for x in cs]
    if len(set(ranks)) == 1:  # a set: only the 4th card of that rank
        return len(cs) == 3 and c % NUM_RANKS == ranks[0]
    # a run: same suit, one rank beyond either end
    if c // NUM_RANKS != suits[0]:
        return False
    r = c % NUM_RANKS
    return r == min(ranks) - 1 or r == max(ranks) + 1


@lru_cache(maxsize=1 << 16)
def _layoff_rec(melds: tuple[int, ...], cards: int) -> tuple[int, int]:
    """(min deadwood of ``cards`` after layoffs, the laid-off mask)."""
    best = (value(cards), 0)
    for c in cards_of(cards):
        for i, m in enumerate(melds):
            if can_lay_off(m, c):
                grown = (*melds[:i], m | 1 << c, *melds[i + 1 :])
                d, laid = _layoff_rec(grown, cards & ~(1 << c))
                if d < best[0]:
                    best = (d, laid | 1 << c)
    return best


def layoff_search(knocker_melds, cards: int) -> tuple[int, int]:
    """Exhaustive layoff of ``cards`` onto ``knocker_melds``.

    Tries every order of every (card, meld) choice, laid-off cards extending
    their meld (chains). Returns (deadwood left, mask of laid-off cards).
    """
    return _layoff_rec(tuple(sorted(int(m) for m in knocker_melds)), int(cards))


def layoffs_feasible(knocker_melds, layoff_mask: int) -> bool:
    """Can every card of ``layoff_mask`` be laid off together?"""
    _, laid = layoff_search(knocker_melds, int(layoff_mask))
    # the search keeps improving while a card can still go, and the values are
    # positive, so all cards go iff the best leaves nothing.
    return laid == int(layoff_mask)


def defender_best_ref(
    knocker_melds, defender_mask: int, allow_layoff: bool = True
) -> tuple[int, list[int], int]:
    """Defender's optimal answer to fixed knocker melds.

    Tries every arrangement of the defender's own melds (non-maximal ones too,
    so a card may be kept back for a layoff), then lays off the rest by
    exhaustive search. Returns (deadwood, defender melds, layoff mask).
    """
    defender_mask = int(defender_mask)
    best: tuple[int, list[int], int] | None = None
    for arr in all_arrangements(defender_mask):
        rest = defender_mask & ~union(arr)
        if allow_layoff:
            d, laid = layoff_search(knocker_melds, rest)
        else:
            d, laid = value(rest), 0
        if best is None or d < best[0]:
            best = (d, arr, laid)
    assert best is not None
    return best


# ---------------------------------------------------------------- showdown


def _knock_result(k: int, d: int, k_melds: Any, d_melds: Any, laid: Any,
                  undercut_bonus: int) -> dict[str, Any]:
    """The award of a non-gin knock (rules §8): the lower deadwood wins the difference; a
    defender at or below the knocker scores it plus the undercut bonus."""
    winner, award = (0, d - k) if k < d else (1, undercut_bonus + (k - d))
    return {"knocker_deadwood": k, "defender_deadwood": d, "gin": False, "winner": winner,
            "award": award, "knocker_melds": k_melds, "defender_melds": d_melds,
            "layoffs": laid}


def showdown_ref(
    knocker_mask: int,
    defender_mask: int,
    knock_limit: int,
    gin_bonus: int,
    undercut_bonus: int,
) -> dict:
    """The whole showdown of docs/rules.md §7-8, by brute force.

    Raises ``ValueError`` when the knocker's minimum deadwood exceeds
    ``knock_limit``.
    """
    knocker_mask = int(knocker_mask)
    defender_mask = int(defender_mask)
    if knocker_mask & defender_mask:
        raise ValueError("knocker and defender hands overlap")
    k_arrs = all_arrangements(knocker_mask)
    k_min = min(value(knocker_mask & ~union(a)) for a in k_arrs)
    if k_min > knock_limit:
        raise ValueError(f"knocker deadwood {k_min} exceeds knock limit {knock_limit}")

    if k_min == 0:  # gin: always taken, no layoff
        k_melds = next(a for a in k_arrs if union(a) == knocker_mask)
        d, d_melds, laid = defender_best_ref(k_melds, defender_mask, allow_layoff=False)
        return {
            "knocker_deadwood": 0,
            "defender_deadwood": d,
            "gin": True,
            "winner": 0,
            "award": gin_bonus + d,
            "knocker_melds": k_melds,
            "defender_melds": d_melds,
            "layoffs": 0,
        }

    best = None
    for arr in k_arrs:
        k = value(knocker_mask & ~union(arr))
        if k > knock_limit:
            continue
        d, d_melds, laid = defender_best_ref(arr, defender_mask)
        if best is None or d - k > best[0]:
            best = (d - k, k, d, arr, d_melds, laid)
    assert best is not None
    _, k, d, k_melds, d_melds, laid = best
    return _knock_result(k, d, k_melds, d_melds, laid, undercut_bonus)


def best_margin_ref(knocker_mask: int, defender_mask: int, knock_limit: int) -> int:
    """max over knocker arrangements (k <= limit) of d - k (gin: d)."""
    r = showdown_ref(knocker_mask, defender_mask, knock_limit, 0, 0)
    return r["defender_deadwood"] - r["knocker_deadwood"]


# ------------------------------------------------- the Java referee's layoff

#: hgin suit (clubs, diamonds, hearts, spades) -> the Java framework's suit index
#: (``Card.suitNames = {"C", "H", "S", "D"}``); a Java card id is ``suit * 13 + rank``.
JAVA_SUIT = (0, 3, 1, 2)


def java_id(c: int) -> int:
    return JAVA_SUIT[c // NUM_RANKS] * NUM_RANKS + c % NUM_RANKS


@lru_cache(maxsize=1 << 16)
def java_greedy_layoff(knocker_melds: tuple[int, ...], cards: int) -> int:
    """The laid-off cards, by the loop of ``GinRummyGame.play`` word for word.

    ``knocker_melds`` in declaration order.  Repeat: scan the unmelded cards in Java
    card-id order and, for each, the melds in order; the first (card, meld) whose union
    is a meld is laid off (the meld grows), and the scan starts again; stop when a full
    scan lays nothing off.
    """
    melds = list(knocker_melds)
    unmelded = sorted(cards_of(int(cards)), key=java_id)
    laid = 0
    while True:
        move = next(((c, i) for c in unmelded for i, m in enumerate(melds)
                     if is_meld(m | 1 << c)), None)
        if move is None:
            return laid
        c, i = move
        melds[i] |= 1 << c
        unmelded.remove(c)
        laid |= 1 << c


def showdown_greedy_ref(
    knocker_mask: int,
    defender_mask: int,
    knock_limit: int,
    gin_bonus: int,
    undercut_bonus: int,
) -> dict:
    """The showdown under the Java referee's layoff, by brute force.

    The knocker tries every arrangement within the limit and every declaration order of
    its melds; against each, the defender tries every arrangement of its own melds and
    the referee lays the rest off (``java_greedy_layoff``).  The knocker maximises
    d - k, the defender minimises d.  Gin as in ``showdown_ref`` (no layoff).
    """
    knocker_mask = int(knocker_mask)
    defender_mask = int(defender_mask)
    k_arrs = all_arrangements(knocker_mask)
    k_min = min(value(knocker_mask & ~union(a)) for a in k_arrs)
    if k_min > knock_limit:
        raise ValueError(f"knocker deadwood {k_min} exceeds knock limit {knock_limit}")
    if k_min == 0:
        return showdown_ref(knocker_mask, defender_mask, knock_limit, gin_bonus, undercut_bonus)
    d_arrs = all_arrangements(defender_mask)
    best = None
    for arr in k_arrs:
        k = value(knocker_mask & ~union(arr))
        if k > knock_limit:
            continue
        for order in permutations(arr):
            answer = None
            for d_arr in d_arrs:
                rest = defender_mask & ~union(d_arr)
                laid = java_greedy_layoff(tuple(order), rest)
                d = value(rest & ~laid)
                if answer is None or d < answer[0]:
                    answer = (d, d_arr, laid)
            assert answer is not None
            d, d_melds, laid = answer
            if best is None or d - k > best[0]:
                best = (d - k, k, d, list(order), d_melds, laid)
    assert best is not None
    _, k, d, k_melds, d_melds, laid = best
    return _knock_result(k, d, k_melds, d_melds, laid, undercut_bonus)
