"""paired_difference against a direct per-pair computation and known cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.evaluation.stats import Z95, paired_difference


def _reference(a: list[int], b: list[int], pair: list[int]) -> tuple[float, float]:
    """Mean and standard error of the per-pair differences, one pair at a time."""
    diffs = []
    for p in sorted(set(pair)):
        idx = [i for i, q in enumerate(pair) if q == p]
        diffs.append(sum(a[i] - b[i] for i in idx) / len(idx))
    mean = sum(diffs) / len(diffs)
    var = sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)
    return mean, math.sqrt(var / len(diffs))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 1),
                          st.integers(0, 1)), min_size=2, max_size=40))
def test_matches_the_per_pair_reference(rows: list[tuple[int, int, int, int]]) -> None:
    a = [r[k] for r in rows for k in (0, 1)]
    b = [r[k] for r in rows for k in (2, 3)]
    pair = [i for i in range(len(rows)) for _ in (0, 1)]
    out = paired_difference(np.array(a), np.array(b), np.array(pair))
    mean, se = _reference(a, b, pair)
    assert out["diff"] == pytest.approx(mean)
    assert out["low"] == pytest.approx(mean - Z95 * se)
    assert out["high"] == pytest.approx(mean + Z95 * se)
    assert out["pairs"] == len(rows)
    assert out["a_rate"] == pytest.approx(sum(a) / len(a))


def test_same_results_give_zero_with_a_zero_width_interval() -> None:
    won = np.array([1, 0, 1, 1, 0, 0])
    out = paired_difference(won, won, np.array([0, 0, 1, 1, 2, 2]))
    assert out["diff"] == out["low"] == out["high"] == 0.0


def test_pairing_narrows_the_interval() -> None:
    """B wins every deal A wins, plus one in ten more: the difference is clearly negative
    although the two rates alone would overlap."""
    rng = np.random.default_rng(0)
    n = 400
    a = (rng.random(n) < 0.6).astype(int)
    b = a.copy()
    b[np.flatnonzero(a == 0)[: n // 10]] = 1
    out = paired_difference(a, b, np.repeat(np.arange(n // 2), 2))
    assert out["high"] < 0
    assert out["diff"] == pytest.approx(-0.1)


def test_shapes_must_agree() -> None:
    with pytest.raises(ValueError, match="one shape"):
        paired_difference(np.zeros(4), np.zeros(3), np.zeros(4, int))
