"""``hgin_env.draw_melds.after_each_draw`` against ``min_deadwood_after_discard`` of every
``hand | card`` (itself checked against the brute force in test_melds.py) and, on fewer
hands, against the brute-force reference directly."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from hgin_env.cards import format as fmt
from hgin_env.draw_melds import after_each_draw
from hgin_env.melds import SENTINEL, min_deadwood_after_discard
from tests.helpers.reference import cards_of, deadwood_after_discard_ref
from tests.helpers.strategies import fast_settings, hands, meld_dense_hands, slow_settings

_ANY_HAND = st.one_of(hands(10), meld_dense_hands(10), st.integers(0, 10).flatmap(hands),
                      st.integers(1, 10).flatmap(meld_dense_hands))


def _slow_after_each_draw(mask: int) -> list[int]:
    """The obvious loop: per card not held, the fast minimiser of the hand with it."""
    out = []
    for card in range(52):
        if mask >> card & 1:
            out.append(SENTINEL)
        else:
            out.append(int(min_deadwood_after_discard(mask | 1 << card)))
    return out


@fast_settings()
@given(st.lists(_ANY_HAND, min_size=1, max_size=8))
def test_after_each_draw_matches_the_minimiser(masks):
    after, no_draw = after_each_draw(np.array(masks, np.uint64))
    assert after.shape == (len(masks), 52) and no_draw.shape == (len(masks),)
    for i, mask in enumerate(masks):
        assert after[i].tolist() == _slow_after_each_draw(mask), fmt(mask)
        if mask:
            assert no_draw[i] == min_deadwood_after_discard(mask), fmt(mask)
        else:
            assert no_draw[i] >= SENTINEL


@slow_settings(60)
@given(st.one_of(hands(10), meld_dense_hands(10)), st.data())
def test_after_each_draw_matches_the_brute_force(mask, data):
    after, _ = after_each_draw(np.array([mask], np.uint64))
    free = [c for c in range(52) if not mask >> c & 1]
    for card in data.draw(st.lists(st.sampled_from(free), min_size=1, max_size=6, unique=True)):
        want = min(deadwood_after_discard_ref(mask | 1 << card).values())
        assert after[0, card] == want, (fmt(mask), card)
    assert all(after[0, c] == SENTINEL for c in cards_of(mask))


def test_after_each_draw_empty_batch():
    after, no_draw = after_each_draw(np.zeros(0, np.uint64))
    assert after.shape == (0, 52) and no_draw.shape == (0,)
