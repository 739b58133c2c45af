"""``hgin_env.draw_melds.after_each_draw`` and ``after_draws`` against
``min_deadwood_after_discard`` of every ``hand | card`` (itself checked against the brute
force in test_melds.py) and, on fewer hands, against the brute-force reference directly;
its set choices against ``melds.expand_set_choices``.  Each test runs both passes: numpy's
and the compiled one of :mod:`hgin_env.jit_melds` (skipped without numba)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hgin_env import bitlanes as bl
from hgin_env import jit_melds
from hgin_env.cards import format as fmt
from hgin_env.cards import unpack_masks
from hgin_env.draw_melds import after_each_draw, numpy_after_draws, set_choices
from hgin_env.melds import SENTINEL, expand_set_choices, min_deadwood_after_discard
from tests.helpers.reference import cards_of, deadwood_after_discard_ref
from tests.helpers.strategies import fast_settings, hands, meld_dense_hands, slow_settings

HAS_NUMBA = find_spec("numba") is not None
NEEDS_NUMBA = pytest.mark.skipif(
    not HAS_NUMBA, reason="the compiled pass needs numba (pip install 'hgin[fast]')")
PASSES = pytest.mark.parametrize("kind", ["numpy", pytest.param("compiled", marks=NEEDS_NUMBA)])


@contextmanager
def _using(kind: str) -> Iterator[None]:
    """``draw_melds.after_draws`` (and so ``after_each_draw``) runs the ``kind`` pass."""
    was = jit_melds.AVAILABLE
    jit_melds.AVAILABLE = kind == "compiled"
    try:
        yield
    finally:
        jit_melds.AVAILABLE = was


def after_draws_of(kind: str, masks: np.ndarray, draws: np.ndarray, slice_hands: int = 2048
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``after_draws`` by the ``kind`` pass."""
    from hgin_env.draw_melds import after_draws
    with _using(kind):
        return after_draws(masks, draws, slice_hands)


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


@PASSES
@fast_settings()
@given(st.lists(_ANY_HAND, min_size=1, max_size=8))
def test_after_each_draw_matches_the_minimiser(kind, masks):
    with _using(kind):
        after, no_draw = after_each_draw(np.array(masks, np.uint64))
    assert after.shape == (len(masks), 52) and no_draw.shape == (len(masks),)
    for i, mask in enumerate(masks):
        assert after[i].tolist() == _slow_after_each_draw(mask), fmt(mask)
        if mask:
            assert no_draw[i] == min_deadwood_after_discard(mask), fmt(mask)
        else:
            assert no_draw[i] >= SENTINEL


@PASSES
@slow_settings(60)
@given(st.one_of(hands(10), meld_dense_hands(10)), st.data())
def test_after_each_draw_matches_the_brute_force(kind, mask, data):
    with _using(kind):
        after, _ = after_each_draw(np.array([mask], np.uint64))
    free = [c for c in range(52) if not mask >> c & 1]
    for card in data.draw(st.lists(st.sampled_from(free), min_size=1, max_size=6, unique=True)):
        want = min(deadwood_after_discard_ref(mask | 1 << card).values())
        assert after[0, card] == want, (fmt(mask), card)
    assert all(after[0, c] == SENTINEL for c in cards_of(mask))


@PASSES
def test_after_each_draw_empty_batch(kind):
    with _using(kind):
        after, no_draw = after_each_draw(np.zeros(0, np.uint64))
    assert after.shape == (0, 52) and no_draw.shape == (0,)


@PASSES
@fast_settings()
@given(st.lists(st.tuples(_ANY_HAND, st.integers(0, (1 << 52) - 1)), min_size=1, max_size=8),
       st.sampled_from([1, 2, 3, 2048]))
def test_after_draws_of_some_cards_in_slices(kind, pairs, slice_hands):
    """The pairs of any cards to draw, in slices of any size: the minimiser of each hand
    plus card, in np.nonzero's order; the hands' own best discard."""
    masks = np.array([m for m, _ in pairs], np.uint64)
    draws = np.array([d & ~m for m, d in pairs], np.uint64)
    rows, after, no_draw = after_draws_of(kind, masks, draws, slice_hands)
    want_rows, want_cards = np.nonzero(unpack_masks(draws).view(bool))
    assert rows.tolist() == want_rows.tolist() and after.dtype == np.int16
    want = [int(min_deadwood_after_discard(int(masks[r]) | 1 << int(c)))
            for r, c in zip(want_rows, want_cards, strict=True)]
    assert after.tolist() == want
    for i, (mask, _) in enumerate(pairs):
        if mask:
            assert no_draw[i] == min_deadwood_after_discard(mask), fmt(mask)


@fast_settings()
@given(st.lists(st.one_of(meld_dense_hands(10), meld_dense_hands(11), hands(11)),
                min_size=1, max_size=8))
def test_set_choices_are_melds_expansion(masks):
    """Every set choice but "no set", once each, as ``melds.expand_set_choices`` has them."""
    lanes = bl.to_lanes(np.array(masks, np.uint64))
    hand, cards, extra = set_choices(lanes)
    origin, want = expand_set_choices(lanes)
    assert extra.tolist() == (np.bincount(origin, minlength=len(masks)) - 1).tolist()
    assert hand.tolist() == sorted(hand.tolist())
    for i in range(len(masks)):
        got = sorted(cards[hand == i].tolist())
        assert got == sorted(c for c in want[origin == i].tolist() if c), fmt(masks[i])


@PASSES
def test_after_draws_empty(kind):
    rows, after, no_draw = after_draws_of(kind, np.zeros(0, np.uint64), np.zeros(0, np.uint64))
    assert rows.shape == after.shape == no_draw.shape == (0,)
    rows, after, no_draw = after_draws_of(kind, np.array([0b111], np.uint64),
                                          np.zeros(1, np.uint64))
    assert rows.shape == after.shape == (0,) and no_draw.tolist() == [3]  # A 2 3, less the 3


@st.composite
def _set_heavy_hands(draw):
    """Up to 10 cards with one to three ranks held three or four times, then any cards:
    hands with one set choice, with several (a rank of four, two or three set ranks), and
    draws of the fourth card of a set rank among several."""
    mask = 0
    for rank in draw(st.lists(st.integers(0, 12), min_size=1, max_size=3, unique=True)):
        suits = draw(st.lists(st.integers(0, 3), min_size=3, max_size=4, unique=True))
        if mask.bit_count() + len(suits) <= 10:
            mask |= sum(1 << (13 * s + rank) for s in suits)
    size = draw(st.integers(mask.bit_count(), 10))
    for card in draw(st.permutations(range(52))):
        if mask.bit_count() >= size:
            break
        mask |= 1 << card
    return mask


@PASSES
@fast_settings()
@given(st.lists(_set_heavy_hands(), min_size=1, max_size=8), st.sampled_from([1, 3, 2048]))
def test_after_draws_with_several_set_choices(kind, masks, slice_hands):
    """Every card not held, for hands rich in set choices: the minimiser of each hand plus
    card; the hands' own best discard."""
    arr = np.array(masks, np.uint64)
    draws = ~arr & np.uint64((1 << 52) - 1)
    rows, after, no_draw = after_draws_of(kind, arr, draws, slice_hands)
    want_rows, want_cards = np.nonzero(unpack_masks(draws).view(bool))
    assert rows.tolist() == want_rows.tolist()
    want = [int(min_deadwood_after_discard(masks[r] | 1 << int(c)))
            for r, c in zip(want_rows, want_cards, strict=True)]
    assert after.tolist() == want
    assert no_draw.tolist() == [int(min_deadwood_after_discard(m)) for m in masks]


def _many_hands(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` hands of 0 to 10 cards, half of them drawn from four ranks (rich in sets:
    fours, several set ranks, two fours)."""
    out = np.zeros(n, np.uint64)
    for i in range(n):
        size = int(rng.integers(0, 11))
        if i % 2:
            ranks = rng.choice(13, size=4, replace=False)
            pool = [13 * s + int(r) for r in ranks for s in range(4)]
        else:
            pool = list(range(52))
        out[i] = sum(1 << int(c) for c in rng.choice(pool, size=size, replace=False))
    return out


@NEEDS_NUMBA
def test_compiled_pass_is_the_numpy_pass_on_many_hands():
    """40 000 hands, any cards to draw: the two passes give the same rows and values."""
    rng = np.random.default_rng(11)
    masks = _many_hands(rng, 40_000)
    draws = ~masks & rng.integers(0, 1 << 52, masks.size, dtype=np.uint64)
    draws &= np.uint64((1 << 52) - 1)
    want = numpy_after_draws(masks, draws)
    got = jit_melds.after_draws(masks, draws)
    for a, b in zip(want, got, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@NEEDS_NUMBA
def test_compiled_pass_refuses_eleven_cards_and_unpaired_draws():
    eleven = np.array([(1 << 11) - 1], np.uint64)
    with pytest.raises(ValueError, match="at most 10 cards"):
        jit_melds.after_draws(eleven, np.zeros(1, np.uint64))
    with pytest.raises(ValueError, match="one draw mask a hand: 1 hands, 2 draw masks"):
        jit_melds.after_draws(np.ones(1, np.uint64), np.zeros(2, np.uint64))


@pytest.mark.parametrize(("value", "used"), [("1", False), ("0", HAS_NUMBA), ("", HAS_NUMBA)])
def test_hgin_no_jit_turns_the_compiled_pass_off(value, used):
    env = {**os.environ, "HGIN_NO_JIT": value}
    out = subprocess.run([sys.executable, "-c",
                          "from hgin_env import jit_melds; print(jit_melds.AVAILABLE)"],
                         env=env, capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == str(used)
