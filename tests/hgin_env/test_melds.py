"""``hgin_env.melds`` against the brute-force references (docs/rules.md §2).

The fast module is imported inside each test so this file collects even
before it exists.  Counterexamples print as card text.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hgin_env.cards import format as fmt
from hgin_env.cards import parse
from tests.helpers.reference import (
    cards_of,
    deadwood_after_discard_ref,
    is_meld,
    min_deadwood_ref,
    union,
    value,
)
from tests.helpers.strategies import fast_settings, hands, meld_dense_hands, slow_settings


def _melds():
    from hgin_env import melds

    return melds


def _u64(masks) -> np.ndarray:
    return np.array(masks, dtype=np.uint64)


def _check_min_deadwood(masks: list[int]) -> None:
    got = _melds().min_deadwood(_u64(masks))
    assert got.shape == (len(masks),)
    for mask, g in zip(masks, got.tolist(), strict=True):
        want = min_deadwood_ref(mask)
        assert g == want, f"min_deadwood({fmt(mask)!r}) = {g}, reference {want}"


def _check_after_discard(masks: list[int]) -> None:
    got = np.asarray(_melds().deadwood_after_discard(_u64(masks)))
    assert got.shape == (len(masks), 52)
    for mask, row in zip(masks, got, strict=True):
        want = deadwood_after_discard_ref(mask)
        for c in range(52):
            if c in want:
                assert row[c] == want[c], (
                    f"deadwood_after_discard({fmt(mask)!r})[{fmt(1 << c)}] = {row[c]}, "
                    f"reference {want[c]}"
                )
            else:
                assert row[c] >= 1000, f"card {fmt(1 << c)} not held in {fmt(mask)!r}: {row[c]}"


def _check_best_melds(mask: int) -> None:
    melds, dead = _melds().best_melds(mask)
    melds = [int(m) for m in melds]
    dead = int(dead)
    ctx = f"best_melds({fmt(mask)!r}) = {[fmt(m) for m in melds]}, dead {fmt(dead)!r}"
    for m in melds:
        assert is_meld(m), ctx
        assert m & mask == m, ctx
    assert sum(m.bit_count() for m in melds) == union(melds).bit_count(), f"overlap: {ctx}"
    assert dead == mask & ~union(melds), ctx
    assert value(dead) == min_deadwood_ref(mask), ctx


# ------------------------------------------------------------ known hands


KNOWN = [
    ("", 0),
    ("KS", 10),
    ("4H 5H 6H", 0),
    ("QS KS AS", 21),
    ("4H 5H 6H 6C 6D", 9),
    ("5H 6H 7H 7C 7D 7S", 0),
    ("AC 2C 3C 4C AD 2D 3D 4D AH 2H", 2),
    ("4H 5H 6H 9C 9D 9S AC 2C 3C KD", 10),
    ("4H 5H 6H 7H 9C 9D 9S AC 2C 3C", 0),
    ("2S 4S 5S 6S 2C 5C 6D 3H 4H 5H 6H", 15),
]


@pytest.mark.parametrize("text, expected", KNOWN)
def test_known_min_deadwood(text, expected):
    mask = parse(text)
    assert min_deadwood_ref(mask) == expected
    assert int(_melds().min_deadwood(_u64([mask]))[0]) == expected
    _check_best_melds(mask)


def test_openspiel_mistake_after_discard():
    hand = parse("2S 4S 5S 6S 2C 5C 6D 3H 4H 5H 6H")
    got = np.asarray(_melds().deadwood_after_discard(_u64([hand])))[0]
    assert int(got.min()) == 9
    _check_after_discard([hand])


def test_rules_example_2_discard_kd_is_gin():
    hand = parse("4H 5H 6H 9C 9D 9S AC 2C 3C KD 7H")
    got = np.asarray(_melds().deadwood_after_discard(_u64([hand])))[0]
    assert int(got[cards_of(parse("KD"))[0]]) == 0
    _check_after_discard([hand])


def test_scalar_and_shapes():
    melds = _melds()
    rng = np.random.default_rng(7)
    masks = []
    for _ in range(12):
        cs = rng.choice(52, size=10, replace=False)
        masks.append(sum(1 << int(c) for c in cs))
    arr = _u64(masks).reshape(3, 4)
    got = np.asarray(melds.min_deadwood(arr))
    assert got.shape == (3, 4)
    assert np.issubdtype(got.dtype, np.integer)
    assert got.reshape(-1).tolist() == [min_deadwood_ref(m) for m in masks]
    assert np.asarray(melds.min_deadwood(_u64([]))).shape == (0,)
    # 11-card batches keep their shape too
    masks11 = []
    for _ in range(6):
        cs = rng.choice(52, size=11, replace=False)
        masks11.append(sum(1 << int(c) for c in cs))
    dad = np.asarray(melds.deadwood_after_discard(_u64(masks11).reshape(2, 3)))
    assert dad.shape == (2, 3, 52)
    flat = dad.reshape(6, 52)
    for mask, row in zip(masks11, flat, strict=True):
        want = deadwood_after_discard_ref(mask)
        assert all(row[c] == v for c, v in want.items())


def test_zero_and_full_cardinality_edge():
    # 0-card hand and a hand that is entirely melds
    _check_min_deadwood([0, parse("AC 2C 3C 4C 5C 6C 7C 8C 9C TC")])


# ------------------------------------------------------------- properties


@fast_settings()
@given(st.lists(hands(10), min_size=1, max_size=8))
def test_min_deadwood_random_10(masks):
    _check_min_deadwood(masks)


@fast_settings()
@given(st.lists(hands(11), min_size=1, max_size=8))
def test_min_deadwood_random_11(masks):
    _check_min_deadwood(masks)


@fast_settings()
@given(st.lists(st.one_of(meld_dense_hands(10), meld_dense_hands(11)), min_size=1, max_size=8))
def test_min_deadwood_meld_dense(masks):
    _check_min_deadwood(masks)


@fast_settings()
@given(st.lists(st.integers(0, 11).flatmap(hands), min_size=1, max_size=8))
def test_min_deadwood_small_hands(masks):
    _check_min_deadwood(masks)


@fast_settings()
@given(st.integers(0, 11).flatmap(meld_dense_hands), st.integers(0, 3))
def test_min_deadwood_array_shapes(mask, ndim_choice):
    shape = [(), (1,), (3, 4), (2, 1, 3)][ndim_choice]
    arr = np.full(shape, mask, dtype=np.uint64)
    got = np.asarray(_melds().min_deadwood(arr))
    assert got.shape == arr.shape
    assert np.all(got == min_deadwood_ref(mask)), fmt(mask)


@fast_settings()
@given(st.lists(st.one_of(hands(11), meld_dense_hands(11)), min_size=1, max_size=6))
def test_deadwood_after_discard(masks):
    _check_after_discard(masks)


@fast_settings()
@given(st.lists(st.one_of(hands(10), hands(11), meld_dense_hands(11),
                          st.integers(1, 11).flatmap(hands)), min_size=1, max_size=6))
def test_min_deadwood_after_discard(masks):
    got = _melds().min_deadwood_after_discard(_u64(masks))
    assert got.shape == (len(masks),)
    for mask, g in zip(masks, got.tolist(), strict=True):
        want = min(deadwood_after_discard_ref(mask).values())
        assert g == want, f"min_deadwood_after_discard({fmt(mask)!r}) = {g}, reference {want}"


def test_min_deadwood_after_discard_edges():
    m = _melds()
    assert m.min_deadwood_after_discard(_u64([])).shape == (0,)
    assert m.min_deadwood_after_discard(int(parse("KS"))) == 0
    with pytest.raises(ValueError, match="at least one card"):
        m.min_deadwood_after_discard(_u64([0]))


@fast_settings()
@given(st.one_of(hands(10), hands(11), meld_dense_hands(10), meld_dense_hands(11)))
def test_best_melds(mask):
    _check_best_melds(mask)


@fast_settings()
@given(st.integers(0, 11).flatmap(meld_dense_hands))
def test_best_melds_small(mask):
    _check_best_melds(mask)


# ------------------------------------------------------------ slow forms


@pytest.mark.slow
@slow_settings()
@given(st.lists(st.one_of(hands(10), hands(11), meld_dense_hands(11)), min_size=1, max_size=16))
def test_min_deadwood_slow(masks):
    _check_min_deadwood(masks)


@pytest.mark.slow
@slow_settings()
@given(st.one_of(hands(11), meld_dense_hands(11)))
def test_deadwood_after_discard_and_best_melds_slow(mask):
    _check_after_discard([mask])
    _check_best_melds(mask)
    for c in cards_of(mask):
        _check_best_melds(mask & ~(1 << c))


@pytest.mark.parametrize(
    "text",
    [
        "5C 5D 5H 5S 3H 4H 6H 7H 4S 6S",  # 4-card rank inside two runs
        "AC 2C 3C 4C AD 2D 3D 4D AH 2H",  # sets of A/2 vs runs
        "9H TH JH QH KH JC JD JS QC QD",  # high runs vs sets of J and Q
    ],
)
def test_every_subset_of_dense_hands(text):
    base = parse(text)
    cs = cards_of(base)
    subsets = [
        sum(1 << c for i, c in enumerate(cs) if bits >> i & 1) for bits in range(1 << len(cs))
    ]
    _check_min_deadwood(subsets)
