"""``cards.pack_masks`` is the exact inverse of ``unpack_masks`` for every dtype it takes
(bool and uint8 packed as they are, others through uint8), and keeps leading shapes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hgin_env.cards import NUM_CARDS, pack_masks, unpack_masks

_MASKS = st.lists(st.integers(0, (1 << NUM_CARDS) - 1), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(_MASKS)
def test_pack_inverts_unpack_for_every_dtype(values: list[int]) -> None:
    masks = np.array(values, np.uint64)
    bits = unpack_masks(masks)
    for dtype in (np.uint8, np.bool_, np.int64, np.float32):
        assert np.array_equal(pack_masks(bits.astype(dtype)), masks)
    # One card at a time: bit c is card c.
    one = np.eye(NUM_CARDS, dtype=bool)
    assert np.array_equal(pack_masks(one), np.uint64(1) << np.arange(NUM_CARDS, dtype=np.uint64))


def test_pack_keeps_leading_shapes() -> None:
    masks = np.arange(24, dtype=np.uint64).reshape(2, 3, 4) * np.uint64(0x9E3779B97F4A7)
    masks &= np.uint64((1 << NUM_CARDS) - 1)
    assert np.array_equal(pack_masks(unpack_masks(masks)), masks)
    assert pack_masks(np.zeros((0, NUM_CARDS), bool)).shape == (0,)
