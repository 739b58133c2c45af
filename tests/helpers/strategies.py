"""Hypothesis strategies for hands (masks are Python ints).

* ``hands(n)`` — uniformly random ``n``-card hands.
* ``meld_dense_hands(n)`` — 1..3 melds first (often overlapping a card
  already drawn, to create set-vs-run conflicts and 4-card ranks), then
  random fill up to ``n`` cards.
* ``knock_pairs()`` — disjoint (knocker, defender) 10-card hands where the
  knocker can knock (min deadwood <= 10), the defender often holding cards
  that can be laid off onto the knocker's melds.
* ``knock_cases()`` — ``(knocker, defender, knock_limit)`` with the limit in
  ``min_deadwood(knocker)..10``.

Example counts: property tests use ``FAST_EXAMPLES`` (150) by default;
tests marked ``slow`` use ``SLOW_EXAMPLES`` = ``$HGIN_SLOW_EXAMPLES``
(default 300), so CI can run them short, e.g. ``HGIN_SLOW_EXAMPLES=50``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st

from tests.helpers.reference import (
    DECK_MELDS,
    NUM_RANKS,
    card,
    cards_of,
    is_set,
    mask_of,
    min_deadwood_ref,
)

FAST_EXAMPLES = 150
SLOW_EXAMPLES = int(os.environ.get("HGIN_SLOW_EXAMPLES", "300"))


def fast_settings(n: int = FAST_EXAMPLES):
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def slow_settings(n: int | None = None):
    return settings(
        max_examples=SLOW_EXAMPLES if n is None else n,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def hands(n: int, exclude: int = 0):
    """Random ``n``-card hands avoiding the cards of ``exclude``."""
    pool = [c for c in range(52) if not exclude >> c & 1]
    return st.lists(st.sampled_from(pool), min_size=n, max_size=n, unique=True).map(mask_of)


def _fill(draw, hand: int, n: int, exclude: int = 0) -> int:
    """Add random cards (not in ``exclude``) until ``hand`` has ``n`` cards."""
    order = draw(st.permutations(range(52)))
    for c in order:
        if hand.bit_count() >= n:
            break
        if not (hand | exclude) >> c & 1:
            hand |= 1 << c
    return hand


def _add_melds(draw, hand: int, n: int, count: int, exclude: int = 0) -> int:
    """Add up to ``count`` melds, keeping ``hand`` within ``n`` cards.

    Each meld is either any meld of the deck or one through a card already in
    the hand (so sets and runs compete for cards).
    """
    for _ in range(count):
        if hand and draw(st.booleans()):
            through = draw(st.sampled_from(cards_of(hand)))
            pool = [m for m in DECK_MELDS if m >> through & 1]
        else:
            pool = list(DECK_MELDS)
        pool = [m for m in pool if not m & exclude and (hand | m).bit_count() <= n]
        if not pool:
            break
        hand |= draw(st.sampled_from(pool))
    return hand


@st.composite
def meld_dense_hands(draw, n: int):
    hand = _add_melds(draw, 0, n, draw(st.integers(1, 3)))
    return _fill(draw, hand, n)


def _layoff_candidates(melds, taken: int) -> list[int]:
    """Cards one or two beyond each meld's reach (4th of a set, run ends)."""
    out = set()
    for m in melds:
        cs = cards_of(m)
        if is_set(m):
            out.update(card(cs[0] % NUM_RANKS, s) for s in range(4))
        else:
            suit = cs[0] // NUM_RANKS
            lo, hi = min(c % NUM_RANKS for c in cs), max(c % NUM_RANKS for c in cs)
            for r in (lo - 2, lo - 1, hi + 1, hi + 2):
                if 0 <= r < NUM_RANKS:
                    out.add(card(r, suit))
            # a set through a run card competes with the run (e.g. 6s vs 4-5-6)
            out.update(card(hi, s) for s in range(4))
            out.update(card(lo, s) for s in range(4))
    return sorted(c for c in out if not taken >> c & 1)


@st.composite
def knock_pairs(draw):
    """(knocker, defender): disjoint 10-card hands, knocker deadwood <= 10."""
    melds: list[int] = []
    knocker = 0
    for _ in range(draw(st.integers(1, 4))):
        pool = [m for m in DECK_MELDS if not m & knocker and (knocker | m).bit_count() <= 10]
        if not pool:
            break
        m = draw(st.sampled_from(pool))
        melds.append(m)
        knocker |= m
    # fill with low cards (A..4), sometimes with anything
    low = [c for c in range(52) if c % NUM_RANKS <= 3 and not knocker >> c & 1]
    if draw(st.integers(0, 4)) == 0:
        knocker = _fill(draw, knocker, 10)
    else:
        for c in draw(st.permutations(low)):
            if knocker.bit_count() >= 10:
                break
            knocker |= 1 << c
        knocker = _fill(draw, knocker, 10)
    assume(min_deadwood_ref(knocker) <= 10)

    defender = 0
    cands = _layoff_candidates(melds, knocker)
    if cands:
        k = draw(st.integers(0, min(6, len(cands))))
        for c in draw(st.permutations(cands))[:k]:
            defender |= 1 << c
    if draw(st.booleans()):
        defender = _add_melds(draw, defender, 10, draw(st.integers(1, 3)), exclude=knocker)
    defender = _fill(draw, defender, 10, exclude=knocker)
    assert knocker & defender == 0
    assert knocker.bit_count() == 10 and defender.bit_count() == 10
    return knocker, defender


@st.composite
def knock_cases(draw):
    """(knocker, defender, knock_limit) with the knocker able to knock."""
    knocker, defender = draw(knock_pairs())
    lo = min_deadwood_ref(knocker)
    limit = draw(st.one_of(st.just(10), st.integers(lo, 10)))
    return knocker, defender, limit
