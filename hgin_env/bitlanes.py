"""Bit tricks on hands laid out as four 16-bit suit lanes.

The card-id layout packs suits 13 bits apart, so a shift or a carry runs
from one suit straight into the next.  Spreading each suit into its own
16-bit lane leaves three zero bits above every suit; shifts and carries then
stop inside their own suit, and a whole hand's runs, run ends and layoff
chains come out of a handful of whole-array integer operations.
"""

from __future__ import annotations

import numpy as np

U64 = np.uint64
SUIT_BITS = U64(0x1FFF)
#: The 13 card bits of every lane (zero in the three gap bits above each suit).
LANE_CARDS = U64(0x1FFF_1FFF_1FFF_1FFF)
#: Bit ``r`` of each lane: multiply a 13-bit rank mask by it to select that rank in all suits.
RANK_COLUMNS = U64(0x0001_0001_0001_0001)
ONE = U64(1)


def to_lanes(masks: np.ndarray) -> np.ndarray:
    """Card-id masks (suit * 13 + rank) to lane masks (suit * 16 + rank)."""
    m = np.asarray(masks, dtype=U64)
    out = m & SUIT_BITS
    out |= ((m >> U64(13)) & SUIT_BITS) << U64(16)
    out |= ((m >> U64(26)) & SUIT_BITS) << U64(32)
    out |= ((m >> U64(39)) & SUIT_BITS) << U64(48)
    return out


def from_lanes(lanes: np.ndarray) -> np.ndarray:
    """Lane masks back to card-id masks."""
    x = np.asarray(lanes, dtype=U64)
    out = x & SUIT_BITS
    out |= ((x >> U64(16)) & SUIT_BITS) << U64(13)
    out |= ((x >> U64(32)) & SUIT_BITS) << U64(26)
    out |= ((x >> U64(48)) & SUIT_BITS) << U64(39)
    return out


def lane(x: np.ndarray, suit: int) -> np.ndarray:
    """The 13-bit suit mask of ``suit`` as an index array for table lookups."""
    return ((x >> U64(16 * suit)) & SUIT_BITS).astype(np.intp)


def lowest_bit(x: np.ndarray) -> np.ndarray:
    return x & (~x + ONE)


def run_cards(x: np.ndarray) -> np.ndarray:
    """Cards of ``x`` lying in a block of three or more consecutive ranks of one suit."""
    starts = x & (x >> ONE) & (x >> U64(2))
    return starts | (starts << ONE) | (starts << U64(2))


def block_low_ends(x: np.ndarray) -> np.ndarray:
    return x & ~(x << ONE)


def block_high_ends(x: np.ndarray) -> np.ndarray:
    return x & ~(x >> ONE)


def fill_up(seeds: np.ndarray, avail: np.ndarray) -> np.ndarray:
    """Cards of ``avail`` reached from ``seeds`` by climbing ranks one at a time.

    Each seed must be the lowest card of its block in ``avail``; the carry of
    ``avail + seeds`` then runs through exactly that block.
    """
    return avail & ~(avail + seeds)


def fill_down(seeds: np.ndarray, avail: np.ndarray) -> np.ndarray:
    """Cards of ``avail`` reached from ``seeds`` by descending ranks (occluded fill)."""
    gen = seeds & avail
    pro = avail
    gen = gen | (pro & (gen >> ONE))
    pro = pro & (pro >> ONE)
    gen = gen | (pro & (gen >> U64(2)))
    pro = pro & (pro >> U64(2))
    gen = gen | (pro & (gen >> U64(4)))
    pro = pro & (pro >> U64(4))
    gen = gen | (pro & (gen >> U64(8)))
    return gen


def ranks_with_at_least(x: np.ndarray, count: int) -> np.ndarray:
    """13-bit mask of the ranks held in at least ``count`` suits (count 3 or 4)."""
    a = x & SUIT_BITS
    b = (x >> U64(16)) & SUIT_BITS
    c = (x >> U64(32)) & SUIT_BITS
    d = (x >> U64(48)) & SUIT_BITS
    if count == 4:
        return a & b & c & d
    if count == 3:
        return (a & b & (c | d)) | (c & d & (a | b))
    raise ValueError("count must be 3 or 4")


def rank_columns(rank_mask: np.ndarray) -> np.ndarray:
    """Lane mask of every card whose rank is in the 13-bit ``rank_mask``."""
    return np.asarray(rank_mask, dtype=U64) * RANK_COLUMNS
