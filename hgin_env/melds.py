"""Exact, batched meld minimisation over ``uint64`` hand masks.

Why it is fast and still exact: a set needs three or more cards of one rank,
so a 10- or 11-card hand has at most three ranks that could form a set.  Once
the set choice is fixed, each suit is an independent run problem, and within
one suit a maximal block of three or more consecutive ranks always melds
whole, so the run-only deadwood of a suit is a lookup in an 8192-entry table.
Hands with no set candidate (most of them) cost four lookups; the others are
expanded into one row per set choice (2 for a three-card rank, 6 for a
four-card rank) and reduced back with a segmented minimum.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hgin_env import bitlanes as bl
from hgin_env.cards import CARD_VALUES, NUM_CARDS

#: Returned by :func:`deadwood_after_discard` for cards that are not held.
SENTINEL = 1000

_U64 = np.uint64


def _suit_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    values = np.minimum(np.arange(13) + 1, 10)
    masks = np.arange(1 << 13)
    bits = (masks[:, None] >> np.arange(13)) & 1  # (8192, 13)
    # Length of the consecutive block each held card sits in: scan left and right.
    left = np.zeros_like(bits)
    right = np.zeros_like(bits)
    for r in range(13):
        left[:, r] = bits[:, r] * (1 + (left[:, r - 1] if r else 0))
    for r in reversed(range(13)):
        right[:, r] = bits[:, r] * (1 + (right[:, r + 1] if r < 12 else 0))
    block_len = np.where(bits == 1, left + right - 1, 0)
    deadwood_bits = (bits == 1) & (block_len < 3)
    run_deadwood = (deadwood_bits * values).sum(axis=1).astype(np.int16)
    value_sum = (bits * values).sum(axis=1).astype(np.int16)
    without = masks[:, None] & ~(1 << np.arange(13))
    minus_one = np.where(bits == 1, run_deadwood[without], SENTINEL).astype(np.int16)
    return run_deadwood, minus_one, value_sum


#: ``RUN_DEADWOOD[m]``: deadwood of one suit's 13-bit mask ``m`` using runs only.
#: ``RUN_DEADWOOD_MINUS[m, r]``: the same after removing rank ``r`` (SENTINEL if not held).
#: ``SUIT_VALUE[m]``: the summed card values of ``m``.
RUN_DEADWOOD, RUN_DEADWOOD_MINUS, SUIT_VALUE = _suit_tables()
#: ``RUN_SAVING[m]`` (int64): what the best single removal changes the run-only deadwood
#: of suit mask ``m`` by (<= 0); SENTINEL for the empty suit, which has nothing to remove
#: and so never gives a minimum.
RUN_SAVING = np.where(np.arange(1 << 13) == 0, SENTINEL,
                      RUN_DEADWOOD_MINUS.min(axis=1).astype(np.int64)
                      - RUN_DEADWOOD.astype(np.int64))


def as_masks(masks: np.ndarray | int) -> np.ndarray:
    arr = np.asarray(masks)
    if arr.dtype != np.uint64:
        if arr.dtype.kind not in "iu":
            raise ValueError(f"hand masks must be integers, got dtype {arr.dtype}")
        if arr.size and (arr.min() < 0 or arr.max() >= 1 << NUM_CARDS):
            raise ValueError("hand masks must be non-negative 52-bit integers")
        arr = arr.astype(np.uint64)
    elif arr.size and (arr >> _U64(NUM_CARDS)).any():
        raise ValueError("hand masks have bits set above the 52 cards")
    return arr


def lane_value(lanes: np.ndarray) -> np.ndarray:
    """Summed card values of lane masks."""
    total = SUIT_VALUE[bl.lane(lanes, 0)].astype(np.int32)
    for suit in range(1, 4):
        total += SUIT_VALUE[bl.lane(lanes, suit)]
    return total


def lane_run_deadwood(lanes: np.ndarray) -> np.ndarray:
    """Run-only deadwood of lane masks (sets not considered)."""
    total = RUN_DEADWOOD[bl.lane(lanes, 0)].astype(np.int32)
    for suit in range(1, 4):
        total += RUN_DEADWOOD[bl.lane(lanes, suit)]
    return total


def expand_set_choices(lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every way to choose the sets of each hand, one row per choice.

    Returns ``(origin, set_cards)``: ``origin[j]`` is the hand row ``j`` came
    from (ascending, each hand contiguous) and ``set_cards[j]`` the lane mask
    of the cards placed in sets.  Per candidate rank the choices are: no set,
    the whole rank, and (for four cards) each set of three leaving one suit
    out for a run.
    """
    n = lanes.shape[0]
    origin = np.arange(n)
    set_cards = np.zeros(n, dtype=_U64)
    pending = bl.ranks_with_at_least(lanes, 3)
    while pending.any():
        low = bl.lowest_bit(pending)
        column = bl.rank_columns(low) & lanes[origin]
        four = (low & bl.ranks_with_at_least(lanes[origin], 4)) != 0
        has = low != 0
        counts = np.where(has, np.where(four, 6, 2), 1)
        options = np.zeros((origin.shape[0], 6), dtype=_U64)
        options[:, 1] = column
        for suit in range(4):
            options[:, 2 + suit] = column & ~(low << _U64(16 * suit))
        rows = np.repeat(np.arange(origin.shape[0]), counts)
        starts = np.cumsum(counts) - counts
        choice = np.arange(rows.shape[0]) - starts[rows]
        set_cards = set_cards[rows] | options[rows, choice]
        pending = pending[rows] & ~low[rows]
        origin = origin[rows]
    return origin, set_cards


def segment_starts(origin: np.ndarray) -> np.ndarray:
    """Index of the first row of each hand in a contiguous ``origin`` array."""
    if origin.size == 0:
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.r_[True, origin[1:] != origin[:-1]])


def split_candidates(lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hands with a set candidate: ``(single, single_set_cards, general)``.

    Most candidate hands have exactly one rank of exactly three cards, whose
    only choices are "set" or "no set"; those skip the general expansion.
    """
    threes = bl.ranks_with_at_least(lanes, 3)
    candidates = np.flatnonzero(threes)
    if candidates.size == 0:
        empty = np.zeros(0, np.int64)
        return empty, np.zeros(0, _U64), empty
    sub = lanes[candidates]
    ranks = threes[candidates]
    single = (np.bitwise_count(ranks) == 1) & (bl.ranks_with_at_least(sub, 4) == 0)
    set_cards = bl.rank_columns(ranks[single]) & sub[single]
    return candidates[single], set_cards, candidates[~single]


def _min_over_set_choices(
    lanes: np.ndarray,
    evaluate: Callable[[np.ndarray], np.ndarray],
    segment_min: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """``evaluate`` (a run-only quantity of lane masks) minimised over every set choice.

    Each choice removes its set cards from the hand and evaluates the rest;
    ``segment_min(rows, origin)`` reduces the rows of the general expansion
    per hand.  Shared by every minimiser so the set logic lives in one place.
    """
    out = evaluate(lanes)
    single, set_cards, general = split_candidates(lanes)
    if single.size:
        out[single] = np.minimum(out[single], evaluate(lanes[single] & ~set_cards))
    if general.size:
        sub = lanes[general]
        origin, choice_cards = expand_set_choices(sub)
        out[general] = segment_min(evaluate(sub[origin] & ~choice_cards), origin)
    return out


def _segment_min_scalar(values: np.ndarray, origin: np.ndarray) -> np.ndarray:
    return np.minimum.reduceat(values, segment_starts(origin))


def _min_deadwood_lanes(lanes: np.ndarray) -> np.ndarray:
    return _min_over_set_choices(lanes, lane_run_deadwood, _segment_min_scalar)


def min_deadwood(masks: np.ndarray | int) -> np.ndarray:
    """Exact minimum deadwood of every hand in ``masks`` (any shape)."""
    arr = as_masks(masks)
    flat = bl.to_lanes(arr.reshape(-1))
    return _min_deadwood_lanes(flat).reshape(arr.shape)


_NOT_HELD_U8 = 128
_BYTES = _U64(0x0101_0101_0101_0101)


def _discard_table() -> np.ndarray:
    """Per suit mask, the run-only deadwood after removing each rank, as 16 bytes.

    Bytes 0..12 hold the value (``_NOT_HELD_U8`` for ranks not held), bytes
    13..15 are padding; one 16-byte item per mask lets a single ``take`` fetch a
    whole suit's row, and two ``uint64`` adds update all sixteen bytes at once.
    """
    table = np.full((1 << 13, 16), _NOT_HELD_U8, dtype=np.uint8)
    held = RUN_DEADWOOD_MINUS < SENTINEL
    table[:, :13] = np.where(held, RUN_DEADWOOD_MINUS, _NOT_HELD_U8)
    return table.view("V16").reshape(-1)


_DISCARD_ROWS = _discard_table()
_TOP_BITS = _U64(0x8080_8080_8080_8080)
_SENTINEL_LOW = _U64(0x0101_0101_0101_0101 * (SENTINEL & 0xFF))
_SENTINEL_HIGH = _U64(0x0101_0101_0101_0101 * (SENTINEL >> 8))


def _bytes_to_output(out: np.ndarray) -> np.ndarray:
    """(n, 64) lane-ordered bytes to (n, 52) int16 with ``SENTINEL`` for cards not held.

    The low and high bytes of each int16 are built eight at a time in
    ``uint64`` words (a not-held byte becomes SENTINEL's two bytes), then
    interleaved; a plain widening cast plus a masked fix-up costs about half
    as much again.
    """
    n = out.shape[0]
    words = out.view(_U64)
    not_held = ((words & _TOP_BITS) >> _U64(7)) * _U64(0xFF)
    low = words ^ ((words ^ _SENTINEL_LOW) & not_held)
    high = not_held & _SENTINEL_HIGH
    result = np.empty((n, 4, 13, 2), np.uint8)
    low_at = 0 if np.little_endian else 1
    result[..., low_at] = low.view(np.uint8).reshape(n, 4, 16)[:, :, :13]
    result[..., 1 - low_at] = high.view(np.uint8).reshape(n, 4, 16)[:, :, :13]
    return result.view(np.int16).reshape(n, NUM_CARDS)


def _after_discard_bytes(lanes: np.ndarray) -> np.ndarray:
    """(n, 64) uint8 in lane order: deadwood after removing each card, sets not
    considered; entries of cards not held are >= ``_NOT_HELD_U8``."""
    n = lanes.shape[0]
    idx = np.stack([bl.lane(lanes, suit) for suit in range(4)], axis=1)
    suit_dw = RUN_DEADWOOD[idx]
    offset = suit_dw.sum(axis=1, dtype=np.int16)[:, None] - suit_dw  # other suits' deadwood
    words = np.take(_DISCARD_ROWS, idx).view(_U64).reshape(n, 4, 2)
    words += (offset.astype(_U64) * _BYTES)[:, :, None]
    return words.view(np.uint8).reshape(n, 64)


def _min_by_segment(rows: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """Row-wise minimum of ``rows`` grouped by the contiguous ``origin`` labels.

    Groups come in a few sizes (2, 4, 6, 12, ... set choices); for each size
    the k-th rows of all its groups are combined with one ``np.minimum``,
    far cheaper than ``minimum.reduceat`` on 2-D rows.
    """
    starts = segment_starts(origin)
    sizes = np.diff(np.r_[starts, origin.shape[0]])
    result = rows[starts]
    for size in np.unique(sizes):
        if size == 1:
            continue
        groups = np.flatnonzero(sizes == size)
        first = starts[groups]
        acc = result[groups]
        for k in range(1, int(size)):
            np.minimum(acc, rows[first + k], out=acc)
        result[groups] = acc
    return result


def deadwood_after_discard(masks: np.ndarray | int) -> np.ndarray:
    """Minimum deadwood after discarding each card: shape ``masks.shape + (52,)``.

    Entries for cards not held are ``SENTINEL``.  Intended for 11-card hands
    (the decision after a draw) but exact for any hand of at most 11 cards.
    """
    arr = as_masks(masks)
    return discard_table_unchecked(arr.reshape(-1)).reshape((*arr.shape, NUM_CARDS))


#: ``_RUN_BEST_MINUS[m]``: one suit's least run-only deadwood after removing one of
#: its cards (SENTINEL for the empty suit).
_RUN_BEST_MINUS = RUN_DEADWOOD_MINUS.min(axis=1).astype(np.int32)


def _lane_best_discard(lanes: np.ndarray) -> np.ndarray:
    """Run-only deadwood after the best single removal, per lane mask (>= SENTINEL: empty).

    Removing a card touches one suit only, so the best removal is the total
    minus the suit whose own best removal saves the most.
    """
    # Elementwise over the four suits: axis-1 reductions over 4 columns are slow in numpy.
    total = best = None
    for suit in range(4):
        idx = bl.lane(lanes, suit)
        dw = RUN_DEADWOOD[idx].astype(np.int32)
        saving = _RUN_BEST_MINUS[idx] - dw
        total = dw if total is None else total + dw
        best = saving if best is None else np.minimum(best, saving)
    return total + best


def min_deadwood_after_discard(masks: np.ndarray | int) -> np.ndarray:
    """Least deadwood after the best discard of each hand (``masks.shape``, int16).

    ``deadwood_after_discard(masks).min(axis=-1)`` at a fraction of the cost:
    per set choice one scalar (the run-only deadwood after the best removal
    among the cards not in sets) instead of a row per card.  What a player
    weighing "draw this card, then discard best" needs for many candidate
    hands at once.  Every hand must hold at least one card.
    """
    arr = as_masks(masks)
    flat = arr.reshape(-1)
    if (flat == 0).any():
        raise ValueError("min_deadwood_after_discard needs hands of at least one card")
    # Set cards are never a choice's discard; a choice that puts every card in
    # sets reads >= SENTINEL and loses the minimum.
    best = _min_over_set_choices(bl.to_lanes(flat), _lane_best_discard, _segment_min_scalar)
    return best.astype(np.int16).reshape(arr.shape)


def discard_table_unchecked(masks: np.ndarray) -> np.ndarray:
    """:func:`deadwood_after_discard` for a 1-D ``uint64`` array known to be valid (engine path)."""
    return _bytes_to_output(_discard_bytes(bl.to_lanes(masks)))


def _discard_bytes(lanes: np.ndarray) -> np.ndarray:
    """(n, 64) lane-ordered bytes of the deadwood after each discard (>= 128: not held)."""
    # Set cards are removed from each choice's hand, so they already read as
    # "not held" there: a card placed in a set is never that choice's discard.
    return _min_over_set_choices(lanes, _after_discard_bytes, _min_by_segment)


def split_melds(set_cards: int, run_cards: int) -> list[int]:
    """Meld masks (card ids) from the cards placed in sets and in runs.

    Sets are grouped by rank; runs are the maximal blocks of each suit (a
    long block is one run).  Both arguments are card-id masks.
    """
    melds = []
    for rank in range(13):
        column = sum(1 << (suit * 13 + rank) for suit in range(4))
        if set_cards & column:
            melds.append(set_cards & column)
    for suit in range(4):
        current = 0
        for rank in range(14):
            card = suit * 13 + rank
            if rank < 13 and run_cards >> card & 1:
                current |= 1 << card
            elif current:
                melds.append(current)
                current = 0
    return melds


def best_melds(mask: int) -> tuple[list[int], int]:
    """One minimum-deadwood arrangement: ``(meld masks, deadwood mask)``."""
    arr = as_masks(np.array([mask]))
    lanes = bl.to_lanes(arr)
    origin, set_cards = expand_set_choices(lanes)
    rest = lanes[origin] & ~set_cards
    values = lane_run_deadwood(rest)
    best = int(np.argmin(values))
    runs = bl.run_cards(rest[best : best + 1])
    sets_mask = int(bl.from_lanes(set_cards[best : best + 1])[0])
    runs_mask = int(bl.from_lanes(runs)[0])
    melds = split_melds(sets_mask, runs_mask)
    return melds, int(mask) & ~(sets_mask | runs_mask)


def hand_values(masks: np.ndarray | int) -> np.ndarray:
    """Summed card values of every hand (no melds)."""
    arr = as_masks(masks)
    return lane_value(bl.to_lanes(arr.reshape(-1))).reshape(arr.shape)


#: Everything other modules use (the engine, showdown, the one-game fast path, agents).
__all__ = [
    "CARD_VALUES",
    "RUN_DEADWOOD",
    "RUN_DEADWOOD_MINUS",
    "RUN_SAVING",
    "SENTINEL",
    "arrange",
    "as_masks",
    "best_melds",
    "deadwood_after_discard",
    "discard_table_unchecked",
    "expand_set_choices",
    "hand_values",
    "lane_value",
    "min_deadwood",
    "min_deadwood_after_discard",
    "segment_starts",
    "split_candidates",
    "split_melds",
]


def arrange(masks: np.ndarray | int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Batched minimum arrangement: ``(deadwood, set_cards, run_cards)`` per hand.

    Both card masks are card-id ``uint64`` masks of one minimum-deadwood
    arrangement; :func:`split_melds` turns them into meld lists.
    """
    arr = as_masks(masks)
    if arr.size == 0:
        empty = np.zeros(arr.shape, _U64)
        return np.zeros(arr.shape, np.int32), empty, empty.copy()
    lanes = bl.to_lanes(arr.reshape(-1))
    origin, set_cards = expand_set_choices(lanes)
    rest = lanes[origin] & ~set_cards
    values = lane_run_deadwood(rest)
    starts = segment_starts(origin)
    best_value = np.minimum.reduceat(values, starts)
    hits = np.flatnonzero(values == best_value[origin])
    chosen = hits[np.unique(origin[hits], return_index=True)[1]]
    sets = bl.from_lanes(set_cards[chosen]).reshape(arr.shape)
    runs = bl.from_lanes(bl.run_cards(rest[chosen])).reshape(arr.shape)
    return best_value.reshape(arr.shape), sets, runs
