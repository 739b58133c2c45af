"""The least deadwood after drawing a card and discarding best, for many (hand, card) pairs.

Why: a player weighing "draw card c, then discard best" (``agents.strong``'s expected
gain) needs ``melds.min_deadwood_after_discard(hand | c)`` for the live cards ``c`` that
can meld with each hand it considers, tens of thousands of (hand, card) pairs per
decision batch.  Here each pair costs a few table lookups and stays exact:

* **Set choices.**  A hand's own set choices (ranks held three or more times: no set,
  the whole rank, or for four cards each three of them) are its *columns*: the hand with
  those set cards taken out.  Per column and suit: the suit's run-only deadwood, the
  saving of its best single removal (``<= 0`` unless the suit is all runs; SENTINEL when
  empty), and their sums and minima over the other suits.  The columns of all the pairs'
  hands are computed once.
* **c outside any set.**  Adding ``c`` (suit ``s``, rank ``r``) changes suit ``s`` only:
  ``_RDP[(m << 4) | r]`` is its run-only deadwood with rank ``r`` added, ``_SVP`` its best
  removal's saving then; the best discard comes from suit ``s`` or from another suit
  (their savings, unchanged).  A pair reads its hand's columns, one row per column.
* **c in a set.**  Its set holds ``c`` and the hand's two or three cards of rank ``r``,
  so per column the value depends on the rank only: the rest with that rank taken out
  (``_RDM``/``_SVM``: a suit without rank ``r``), then its best removal.  Of three held
  cards either all three join ``c`` or two, the third left free (the best suit to keep).

Every arrangement of ``hand | c`` minus a discard is one of these, and each of these is
one, so the minimum over them is ``min_deadwood_after_discard(hand | c)``; the columns
alone give the hand's own best discard (no draw).  ``tests/hgin_env/test_draw_melds.py``
compares both with ``min_deadwood_after_discard`` and with the brute-force reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hgin_env import bitlanes as bl
from hgin_env.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS, unpack_masks
from hgin_env.melds import RUN_DEADWOOD, RUN_DEADWOOD_MINUS, SENTINEL, as_masks

__all__ = ["after_draws", "after_each_draw", "set_choices"]

_U64 = np.uint64
_ONE = _U64(1)
_ALL_CARDS = _U64((1 << NUM_CARDS) - 1)


def _suit_tables() -> tuple[np.ndarray, ...]:
    """Per 13-bit suit mask ``m``: run-only deadwood and best-removal saving; and at
    ``(m << 4) | r`` the same two with rank ``r`` added (``_RDP``, ``_SVP``) or taken out
    (``_RDM``, ``_SVM``).  Ranks 13-15 of a row are padding (the mask unchanged)."""
    masks = np.arange(1 << NUM_RANKS)
    rd = RUN_DEADWOOD.astype(np.int16)
    best_minus = RUN_DEADWOOD_MINUS.min(axis=1).astype(np.int16)
    # The saving of a suit's best single removal; SENTINEL for the empty suit, which has
    # nothing to remove and so never gives the minimum.
    save = np.where(masks == 0, SENTINEL, best_minus - rd).astype(np.int16)
    rank = np.arange(16)
    bit = np.where(rank < NUM_RANKS, 1 << rank, 0)[None, :]
    plus, minus = masks[:, None] | bit, masks[:, None] & ~bit
    return (rd, save, rd[plus].ravel(), (best_minus[plus] - rd[plus]).astype(np.int16).ravel(),
            rd[minus].ravel(), save[minus].ravel())


_RD, _SAVE, _RDP, _SVP, _RDM, _SVM = _suit_tables()


def _lowest(x: np.ndarray) -> np.ndarray:
    return x & (~x + _ONE)


def _suit_lanes(lanes: np.ndarray) -> list[np.ndarray]:
    return [(lanes >> _U64(16 * s)) & bl.SUIT_BITS for s in range(NUM_SUITS)]


def set_choices(lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every set choice of each hand (lane masks) except "no set": ``(hand, set_cards,
    extra)``, one entry per choice, each hand's choices contiguous and in hand order;
    ``extra`` (n,) counts each hand's.

    Per rank held three or more times the choices are: no set, the whole rank, and (for
    four cards) each three of them; a hand's choices are every combination, numbered in
    mixed radix, so one pass builds them all (``melds.expand_set_choices`` gives the same
    choices, "no set" included, one rank at a time).
    """
    n = lanes.shape[0]
    a, b, c, d = _suit_lanes(lanes)
    three_up = (a & b & (c | d)) | (c & d & (a | b))
    cand = np.flatnonzero(three_up)
    extra = np.zeros(n, np.intp)
    if cand.size == 0:
        return cand, np.zeros(0, _U64), extra
    sub, pending, four = lanes[cand], three_up[cand], (a & b & c & d)[cand]
    radix, options = [], []
    while pending.any():  # at most three ranks of three in ten or eleven cards
        low = _lowest(pending)
        pending ^= low
        column = bl.rank_columns(low) & sub
        option = np.zeros((cand.size, 6), _U64)
        option[:, 1] = column
        for s in range(NUM_SUITS):
            option[:, 2 + s] = column & ~(low << _U64(16 * s))
        radix.append(np.where(low == 0, 1, np.where((low & four) != 0, 6, 2)))
        options.append(option.ravel())
    count = np.prod(radix, axis=0)
    extra[cand] = count - 1
    # Choice q of a hand: digit q % radix of its first rank, and so on; q = 0 is "no set".
    local = np.repeat(np.arange(cand.size), count - 1)
    q = np.arange(1, local.size + 1) - np.repeat(np.cumsum(count - 1) - (count - 1), count - 1)
    cards = np.zeros(local.size, _U64)
    at = local * 6
    for k, option in zip(radix, options, strict=True):
        kk = k[local]
        cards |= option[at + q % kk]
        q //= kk
    return cand[local], cards, extra


@dataclass(frozen=True)
class _Columns:
    """Each hand's set choices (columns 0..n-1 the hands themselves, then each hand's
    ``extra`` other choices from ``start``) as flat suit-major tables: entry
    ``s * size + column`` of ``shift`` (suit mask << 4), ``rd``, ``save``, ``rest`` (the
    other suits' deadwood) and ``other`` (the other suits' least saving)."""

    size: int
    start: np.ndarray
    extra: np.ndarray
    shift: np.ndarray
    rd: np.ndarray
    save: np.ndarray
    rest: np.ndarray
    other: np.ndarray
    no_draw: np.ndarray


def _columns(lanes: np.ndarray) -> _Columns:
    """The columns of hands ``lanes`` and each hand's best discard with no draw."""
    n = lanes.shape[0]
    hand, set_cards, extra = set_choices(lanes)
    cols = np.concatenate([lanes, lanes[hand] ^ set_cards])
    size = cols.shape[0]
    start = np.cumsum(extra)
    start += n - extra
    masks = [m.astype(np.intp) for m in _suit_lanes(cols)]
    rd = [_RD[m] for m in masks]
    save = [_SAVE[m] for m in masks]
    total = rd[0] + rd[1] + rd[2] + rd[3]
    lo01, lo23 = np.minimum(save[0], save[1]), np.minimum(save[2], save[3])
    other = [np.minimum(save[1], lo23), np.minimum(save[0], lo23),
             np.minimum(lo01, save[3]), np.minimum(lo01, save[2])]
    best = total + np.minimum(lo01, lo23)
    no_draw = best[:n].copy()
    has = np.flatnonzero(extra)
    if has.size:
        no_draw[has] = np.minimum(no_draw[has], np.minimum.reduceat(best[n:], start[has] - n))
    np.minimum(no_draw, SENTINEL, out=no_draw)
    shift = np.concatenate(masks)
    shift <<= 4
    return _Columns(size, start, extra, shift, np.concatenate(rd), np.concatenate(save),
                    np.concatenate([total - x for x in rd]), np.concatenate(other), no_draw)


def _outside(cols: _Columns, at: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Least deadwood after adding rank ``rank`` of suit-column entry ``at`` (the card
    outside any set) and discarding best."""
    key = cols.shift[at]
    key |= rank
    out = cols.rest[at] + _RDP[key]
    out += np.minimum(_SVP[key], cols.other[at])
    return out


def _in_set(cols: _Columns, column: np.ndarray, rank: np.ndarray, three: np.ndarray
            ) -> np.ndarray:
    """Least deadwood after the card joins the held cards of its ``rank`` in a set, per
    column (``three``: three held, so two of them may join and the third stay free)."""
    rd, save = [], []
    for s in range(NUM_SUITS):
        key = cols.shift[column + s * cols.size]
        key |= rank
        rd.append(_RDM[key])
        save.append(_SVM[key])
    all_rd = rd[0] + rd[1]
    all_rd += rd[2]
    all_rd += rd[3]
    lo01, lo23 = np.minimum(save[0], save[1]), np.minimum(save[2], save[3])
    value = np.minimum(lo01, lo23)
    value += all_rd
    k = np.flatnonzero(three)
    if k.size:
        # Suit u's card kept free: its suit as held, the others without the rank.
        others = [np.minimum(save[1], lo23), np.minimum(save[0], lo23),
                  np.minimum(lo01, save[3]), np.minimum(lo01, save[2])]
        best, base, at = value[k], all_rd[k], column[k]
        for u in range(NUM_SUITS):
            held = at + u * cols.size
            keep = base - rd[u][k]
            keep += cols.rd[held]
            keep += np.minimum(others[u][k], cols.save[held])
            np.minimum(best, keep, out=best)
        value[k] = best
    return value


def _bit_positions(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, bits)``: every set bit of the (n,) unsigned ``masks``, row-major, low bit
    first."""
    width = masks.dtype.itemsize * 8
    as_bytes = np.ascontiguousarray(masks, dtype=masks.dtype.newbyteorder("<")).view(np.uint8)
    at = np.flatnonzero(np.unpackbits(as_bytes, bitorder="little").view(bool))
    shift = width.bit_length() - 1
    return at >> shift, at & (width - 1)


def _least_over_choices(cols: _Columns, rows: np.ndarray, values: np.ndarray,
                        value_at: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
                        ) -> None:
    """Lower ``values`` (one per entry, of hand ``rows``, at the hand's own column) to the
    least over the hand's other set choices.  ``value_at(sel, k, columns)`` gives the
    values of entries ``sel``, each repeated ``k`` times, at ``columns``: one row per
    (entry, choice)."""
    count = cols.extra[rows]
    sel = np.flatnonzero(count)
    if sel.size == 0:
        return
    k = count[sel]
    first = np.cumsum(k)
    first -= k
    column = np.repeat(cols.start[rows[sel]] - first, k)
    column += np.arange(column.size)
    least = np.minimum.reduceat(value_at(sel, k, column), first)
    values[sel] = np.minimum(values[sel], least)


def after_draws(masks: np.ndarray, draws: np.ndarray, slice_hands: int = 2048
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For hands ``masks`` (n,) of at most 10 cards and cards to draw ``draws`` (n,) (masks
    of cards not in the hands): ``(rows, after, no_draw)``.

    One entry per card of ``draws``, row-major and by card id within a row (the order of
    ``np.nonzero`` over the unpacked masks): ``rows`` (k,) its hand, ``after`` (k,) int16
    ``min_deadwood_after_discard(masks[row] | card)``.  ``no_draw`` (n,) int16 is
    ``min_deadwood_after_discard(masks)`` (>= SENTINEL for an empty hand).

    The hands' columns are computed at once; the (hand, card) pairs in slices of
    ``slice_hands`` hands (why: their working arrays then stay in the CPU's cache and in
    memory the allocator keeps, where a pass over tens of thousands of hands pays for fresh
    pages every call; the per-hand tables are too small for that and cost numpy's per-call
    overhead once).  Each pair's value depends on its hand only.
    """
    arr = as_masks(masks).reshape(-1)
    n = arr.shape[0]
    if n == 0:
        empty = np.zeros(0, np.int16)
        return np.zeros(0, np.intp), empty, empty
    lanes = bl.to_lanes(arr)
    live = bl.to_lanes(as_masks(draws).reshape(-1))
    cols = _columns(lanes)
    # The ranks a drawn card may join in a set: held twice or three times (of four held
    # there is no card to draw), and with a card drawn there.
    a, b, c, d = _suit_lanes(lanes)
    not_four = ~(a & b & c & d)
    settable = (a & (b | c | d)) | (b & (c | d)) | (c & d)
    settable &= not_four
    three = ((a & b & (c | d)) | (c & d & (a | b))) & not_four
    x = _suit_lanes(live)
    settable &= x[0] | x[1] | x[2] | x[3]
    step = max(1, -(-n // -(-n // max(1, slice_hands))))
    parts = [_slice_after(cols, live[lo:lo + step], settable[lo:lo + step], three, lo)
             for lo in range(0, n, step)]
    if len(parts) == 1:
        return (*parts[0], cols.no_draw)
    return (np.concatenate([r for r, _ in parts]), np.concatenate([v for _, v in parts]),
            cols.no_draw)


def _slice_after(cols: _Columns, live: np.ndarray, settable: np.ndarray, three: np.ndarray,
                 first_row: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`after_draws`' pairs of the hands ``first_row ..`` (``live`` and ``settable``
    are theirs; ``three`` every hand's)."""
    # Lane bit 16 s + r is card 13 s + r: the same order.
    rows, bit = _bit_positions(live)
    local = rows << 4
    local |= bit & 15  # hand (in the slice) and rank, for the set values below
    rows += first_row
    rank = bit & 15
    suit_at = (bit >> 4) * cols.size
    after = _outside(cols, suit_at + rows, rank)
    _least_over_choices(cols, rows, after, lambda sel, k, column: _outside(
        cols, np.repeat(suit_at[sel], k) + column, np.repeat(rank[sel], k)))
    # One entry per (hand, rank) a drawn card may join in a set.
    set_rows, set_rank = _bit_positions(settable.astype(np.uint16))
    if set_rows.size == 0:
        return rows, after
    table = np.full(settable.shape[0] << 4, SENTINEL, np.int16)
    table_at = set_rows << 4
    table_at |= set_rank
    set_rows += first_row
    is_three = ((three[set_rows] >> set_rank.astype(_U64)) & _ONE).astype(bool)
    value = _in_set(cols, set_rows, set_rank, is_three)
    _least_over_choices(cols, set_rows, value, lambda sel, k, column: _in_set(
        cols, column, np.repeat(set_rank[sel], k), np.repeat(is_three[sel], k)))
    # Each drawn card reads its (hand, rank) entry (SENTINEL: not in a set).
    table[table_at] = value
    np.minimum(after, table[local], out=after)
    return rows, after


def after_each_draw(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For 1-D ``masks`` of hands of at most 10 cards: ``(after, no_draw)``.

    ``after`` (n, 52) int16 is ``min_deadwood_after_discard(masks[i] | 1 << c)`` for every
    card ``c`` not in hand ``i``, ``SENTINEL`` for held cards; ``no_draw`` (n,) int16 is
    ``min_deadwood_after_discard(masks)`` (>= SENTINEL for an empty hand).
    """
    arr = as_masks(masks).reshape(-1)
    held = unpack_masks(arr).view(bool).reshape(-1, NUM_CARDS)
    _, values, no_draw = after_draws(arr, ~arr & _ALL_CARDS)
    after = np.full(held.shape, SENTINEL, np.int16)
    after[~held] = values
    return after, no_draw
