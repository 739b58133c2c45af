"""The least deadwood after drawing a card and discarding best, for many (hand, card) pairs.

Why: a player weighing "draw card c, then discard best" (``agents.strong``'s expected
gain) needs ``melds.min_deadwood_after_discard(hand | c)`` for the live cards ``c`` that
can meld with each hand it considers, tens of thousands of (hand, card) pairs per
decision batch.  Here each pair costs a few table lookups and stays exact:

* **Set choices.**  A hand's own set choices (ranks held three or more times: no set,
  the whole rank, or for four cards each three of them) are its *columns*: the hand with
  those set cards taken out, laid out right after the hand.  Per column and suit one
  int64 word: the other suits' run-only deadwood, that less their best single removal's
  saving, and the suit's mask.
* **c outside any set.**  Adding ``c`` (suit ``s``, rank ``r``) changes suit ``s`` only:
  ``_ADD[(m << 4) | r]`` holds its run-only deadwood with rank ``r`` added, with and
  without its own best removal, so one addition to the column's word gives both ways to
  discard (from suit ``s`` or from another) and the value is the lesser.  A hand with one
  set choice (most hands with any) reads two columns, one with several reads each.
* **c in a set.**  Its set holds ``c`` and the hand's two or three cards of rank ``r``,
  so per column the value depends on the rank only: the rest with that rank taken out
  (``_SUIT``: a suit's run-only deadwood and best removal's saving), then its best
  removal.  Of three held cards either all three join ``c`` or two, the third left free
  (the best suit to keep).  Three held make the rank one of the hand's set ranks; its
  choices that take the rank whole leave the same cards once it joins ``c`` as those
  that leave it, so only the latter are read.

Every arrangement of ``hand | c`` minus a discard is one of these, and each of these is
one, so the minimum over them is ``min_deadwood_after_discard(hand | c)``; the columns
alone give the hand's own best discard (no draw).  ``tests/hgin_env/test_draw_melds.py``
compares both with ``min_deadwood_after_discard`` and with the brute-force reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hgin_env import bitlanes as bl
from hgin_env import jit_melds
from hgin_env.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS, unpack_masks
from hgin_env.melds import RUN_DEADWOOD, RUN_DEADWOOD_MINUS, RUN_SAVING, SENTINEL, as_masks

__all__ = ["after_draws", "after_each_draw", "numpy_after_draws", "set_choices"]

_U64 = np.uint64
_ONE = _U64(1)
_ALL_CARDS = _U64((1 << NUM_CARDS) - 1)


def _suit_tables() -> tuple[np.ndarray, np.ndarray]:
    """``_SUIT`` per 13-bit suit mask and ``_ADD`` per ``(m << 4) | r`` (below); ranks
    13-15 of an ``_ADD`` row are padding (the mask unchanged)."""
    masks = np.arange(1 << NUM_RANKS)
    rd = RUN_DEADWOOD.astype(np.int64)
    best_minus = RUN_DEADWOOD_MINUS.min(axis=1).astype(np.int64)
    save = RUN_SAVING
    rank = np.arange(16)
    plus = (masks[:, None] | np.where(rank < NUM_RANKS, 1 << rank, 0)[None, :]).ravel()
    return rd | ((save + _BIAS) << 16), best_minus[plus] | (rd[plus] << 16)


#: Bias that keeps a suit's best-removal saving (>= -10, or SENTINEL) positive in a field.
_BIAS = 16
#: ``_SUIT`` per 13-bit suit mask: its run-only deadwood in bits 0-15 and its best
#: removal's saving plus ``_BIAS`` from bit 16 (four of them add without carries).
#: ``_ADD`` per ``(m << 4) | r``: the suit's run-only deadwood with rank ``r`` added and
#: its best removal then in bits 0-15, without the removal in bits 16-31.  Added to a
#: column's word (``rest | spare << 16``) the two fields are the two ways to discard:
#: from this suit or from the others.
_SUIT, _ADD = _suit_tables()
_LOW16 = 0xFFFF
_LANE_SHIFTS = (16 * np.arange(NUM_SUITS))[:, None]
_RANK_COLUMNS = np.int64(bl.RANK_COLUMNS)


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
    # The lowest set rank of every hand, then the others of the few hands with several.
    option, k = _set_options(sub, pending, four)
    count = k.copy()
    pending ^= _lowest(pending)
    many = np.flatnonzero(pending)
    radix, options = [], []
    if many.size:
        sub, pending, four = sub[many], pending[many], four[many]
        while pending.any():  # at most three ranks of three in ten or eleven cards
            more, kk = _set_options(sub, pending, four)
            pending ^= _lowest(pending)
            options.append(more)
            radix.append(kk)
            count[many] *= kk
    extra[cand] = count - 1
    # Choice q of a hand: digit q % radix of its first rank, and so on; q = 0 is "no set".
    local = np.repeat(np.arange(cand.size), count - 1)
    q = np.arange(1, local.size + 1) - np.repeat(np.cumsum(count - 1) - (count - 1), count - 1)
    kk = k[local]
    cards = option[local * 6 + q % kk]
    q //= kk
    rest = np.flatnonzero(q)
    if rest.size:
        # The digits of the other ranks (hands with several).
        q = q[rest]
        row = np.zeros(cand.size, np.intp)
        row[many] = np.arange(many.size)
        at = row[local[rest]]
        value = np.zeros(rest.size, _U64)
        for k, option in zip(radix, options, strict=True):
            kk = k[at]
            value |= option[at * 6 + q % kk]
            q //= kk
        cards[rest] |= value
    return cand[local], cards, extra


def _set_options(sub: np.ndarray, pending: np.ndarray, four: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The set cards of each option of the lowest ``pending`` rank of hands ``sub`` (flat,
    six per hand: no set, the whole rank, all but suit t) and its radix (1 without one,
    2, or 6 for four cards)."""
    low = _lowest(pending)
    column = bl.rank_columns(low) & sub
    option = np.zeros((sub.size, 6), _U64)
    option[:, 1] = column
    for s in range(NUM_SUITS):
        option[:, 2 + s] = column & ~(low << _U64(16 * s))
    return option.ravel(), np.where(low == 0, 1, np.where((low & four) != 0, 6, 2))


#: A suit-column word that no choice has: both ways to discard far above any deadwood.
_NONE = 0x7000 | (0x7000 << 16)
_FIELDS = 0xFFFF_FFFF
#: Flag of :class:`_Columns`' ``pair``: the hand has several set choices.
_SEVERAL = 1 << 31
_COLUMN = _SEVERAL - 1


@dataclass(frozen=True)
class _Columns:
    """Each hand followed by its ``extra`` set choices ("columns", the hand's from
    ``first``), then one column no hand has: ``lanes`` (size,) int64 each column's cards
    and ``words`` (4 (size + 1),) int64 per ``(size + 1) s + column``: the other suits'
    deadwood (``rest``, bits 0-15), that with their best removal (``spare``, bits 16-31)
    and the suit's mask << 4 (from bit 32); the last column's words are ``_NONE``.  ``pair``
    (n,) is each hand's column in bits 0-30, ``_SEVERAL`` when it has several set choices
    and from bit 32 its one choice (the last column when it has none or several)."""

    size: int
    first: np.ndarray
    extra: np.ndarray
    lanes: np.ndarray
    words: np.ndarray
    pair: np.ndarray
    no_draw: np.ndarray


def _columns(lanes: np.ndarray) -> _Columns:
    """The columns of hands ``lanes`` and each hand's best discard with no draw."""
    n = lanes.shape[0]
    hand, set_cards, extra = set_choices(lanes)
    first = np.cumsum(extra)
    first -= extra
    first += np.arange(n)
    # Choice j (of all) comes after hand[j] + 1 hands.
    cols = np.repeat(lanes.view(np.int64), extra + 1)
    cols[np.arange(hand.size) + hand + 1] ^= set_cards.view(np.int64)
    size = cols.shape[0]
    # Suit-major (4, size + 1): the last column is the one no hand has.
    masks = np.empty((NUM_SUITS, size + 1), np.int64)
    np.right_shift(cols, _LANE_SHIFTS, out=masks[:, :size])
    masks[:, size] = 0
    masks &= 0x1FFF
    suit = _SUIT[masks]
    total = suit.sum(axis=0)
    total &= _LOW16
    save = suit >> 16
    lo01, lo23 = np.minimum(save[0], save[1]), np.minimum(save[2], save[3])
    best = np.minimum(lo01, lo23)
    best += total
    best -= _BIAS
    no_draw = np.minimum.reduceat(best[:size], first) if hand.size else best[:n]
    no_draw = np.minimum(no_draw, SENTINEL).astype(np.int16)
    # The other suits' least saving, less the bias.
    spare = np.stack([np.minimum(save[1], lo23), np.minimum(save[0], lo23),
                      np.minimum(lo01, save[3]), np.minimum(lo01, save[2])])
    spare -= _BIAS
    suit &= _LOW16
    np.subtract(total, suit, out=suit)  # rest
    spare += suit
    spare <<= 16
    spare |= suit
    masks <<= 36
    spare |= masks
    words = spare
    words[:, size] = _NONE
    pair = np.where(extra == 1, first + 1, size)
    pair <<= 32
    pair |= first
    pair[extra > 1] |= _SEVERAL
    return _Columns(size, first, extra, cols, words.ravel(), pair, no_draw)


def _outside(word: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Least deadwood after adding rank ``rank`` to the suit-column ``word`` (the card
    outside any set) and discarding best, from this suit or from another."""
    key = word >> 32
    key &= 0x1FFFF
    key |= rank
    word = word & _FIELDS
    word += _ADD[key]
    out = word >> 16
    word &= _LOW16
    np.minimum(out, word, out=out)
    return out


def _in_set(cols: _Columns, column: np.ndarray, rank: np.ndarray, threes: int
            ) -> np.ndarray:
    """Least deadwood after the card joins the held cards of its ``rank`` in a set, at
    ``column``; of the first ``threes`` entries three cards are held, so two of them may
    join and the third stay free."""
    held = cols.lanes[column]
    cut = held & ~(_RANK_COLUMNS << rank)
    words = _SUIT[(cut >> _LANE_SHIFTS) & 0x1FFF]
    all_rd = words.sum(axis=0)
    all_rd &= _LOW16
    save = words >> 16
    lo01, lo23 = np.minimum(save[0], save[1]), np.minimum(save[2], save[3])
    value = np.minimum(lo01, lo23)
    value += all_rd
    if threes:
        # Suit u's card kept free: its suit as held, the others without the rank.
        lo01, lo23, save = lo01[:threes], lo23[:threes], save[:, :threes]
        others = np.stack([np.minimum(save[1], lo23), np.minimum(save[0], lo23),
                           np.minimum(lo01, save[3]), np.minimum(lo01, save[2])])
        kept = _SUIT[(held[:threes] >> _LANE_SHIFTS) & 0x1FFF]
        keep = kept & _LOW16
        keep -= words[:, :threes] & _LOW16
        keep += all_rd[:threes]
        kept >>= 16
        np.minimum(kept, others, out=kept)
        keep += kept
        np.minimum(value[:threes], keep.min(axis=0), out=value[:threes])
    value -= _BIAS
    return value


def _bit_positions(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, bits)``: every set bit of the (n,) unsigned ``masks``, row-major, low bit
    first."""
    width = masks.dtype.itemsize * 8
    as_bytes = np.ascontiguousarray(masks, dtype=masks.dtype.newbyteorder("<")).view(np.uint8)
    at = np.flatnonzero(np.unpackbits(as_bytes, bitorder="little").view(bool))
    shift = width.bit_length() - 1
    return at >> shift, at & (width - 1)


def _each_choice(first: np.ndarray, count: np.ndarray, weight: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sel, starts, at)``: the entries with ``count > 0``, where each one's rows start,
    and one row per (entry, choice i = 1 .. count): column ``first + i``, or with
    ``weight`` w, ``first + q`` where q is i with a 0 digit inserted at weight w."""
    sel = np.flatnonzero(count > 0)
    k = count[sel]
    starts = np.cumsum(k)
    starts -= k
    i = np.arange(1, int(k.sum()) + 1) - np.repeat(starts, k)
    if weight is not None:
        w = np.repeat(weight[sel], k)
        i = i % w + (i // w) * (w << 1)
    i += np.repeat(first[sel], k)
    return sel, starts, i


def after_draws(masks: np.ndarray, draws: np.ndarray, slice_hands: int = 2048
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For hands ``masks`` (n,) of at most 10 cards and cards to draw ``draws`` (n,) (masks
    of cards not in the hands): ``(rows, after, no_draw)``.

    One entry per card of ``draws``, row-major and by card id within a row (the order of
    ``np.nonzero`` over the unpacked masks): ``rows`` (k,) its hand, ``after`` (k,) int16
    ``min_deadwood_after_discard(masks[row] | card)``.  ``no_draw`` (n,) int16 is
    ``min_deadwood_after_discard(masks)`` (>= SENTINEL for an empty hand).

    The hands go in slices of ``slice_hands``, each with its own columns and pairs (why:
    the working arrays then stay in the CPU's cache and in memory the allocator keeps,
    where a pass over tens of thousands of hands pays for fresh pages every call; each
    slice pays numpy's per-call overhead once).  Each pair's value depends on its hand
    only.
    """
    arr = as_masks(masks).reshape(-1)
    n = arr.shape[0]
    if n == 0:
        empty = np.zeros(0, np.int16)
        return np.zeros(0, np.intp), empty, empty
    if jit_melds.AVAILABLE and int(np.bitwise_count(arr).max()) <= jit_melds.MAX_CARDS:
        return jit_melds.after_draws(arr, as_masks(draws).reshape(-1))
    return numpy_after_draws(arr, draws, slice_hands)


def numpy_after_draws(masks: np.ndarray, draws: np.ndarray, slice_hands: int = 2048
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`after_draws` in numpy (the pass used without numba, and its reference)."""
    arr = as_masks(masks).reshape(-1)
    n = arr.shape[0]
    if n == 0:
        empty = np.zeros(0, np.int16)
        return np.zeros(0, np.intp), empty, empty
    lanes = bl.to_lanes(arr)
    live = bl.to_lanes(as_masks(draws).reshape(-1))
    step = max(1, -(-n // -(-n // max(1, slice_hands))))
    parts = [_slice_after(lanes[lo:lo + step], live[lo:lo + step]) for lo in range(0, n, step)]
    if len(parts) == 1:
        return parts[0]
    for (rows, _, _), lo in zip(parts, range(0, n, step), strict=True):
        rows += lo
    return tuple(np.concatenate(part) for part in zip(*parts, strict=True))  # type: ignore[return-value]


def _slice_after(lanes: np.ndarray, live: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`after_draws` of the hands ``lanes`` (lane masks) and cards ``live``."""
    cols = _columns(lanes)
    # The ranks a drawn card may join in a set: held twice or three times (of four held
    # there is no card to draw), and with a card drawn there.
    a, b, c, d = _suit_lanes(lanes)
    four = a & b & c & d
    settable = (a & (b | c | d)) | (b & (c | d)) | (c & d)
    settable &= ~four
    set_ranks = (a & b & (c | d)) | (c & d & (a | b))
    x = _suit_lanes(live)
    settable &= x[0] | x[1] | x[2] | x[3]
    ranks = (set_ranks & ~four, set_ranks, four)
    # Lane bit 16 s + r is card 13 s + r: the same order.
    rows, bit = _bit_positions(live)
    local = rows << 4
    local |= bit & 15  # hand and rank, for the set values below
    rank = bit & 15
    suit = bit >> 4
    # Each hand's column and, with one set choice, that choice.
    both = cols.pair[rows]
    many = np.flatnonzero((both & _SEVERAL) != 0)
    suit *= cols.size + 1
    at = both & _COLUMN
    at += suit
    after = _outside(cols.words[at], rank)
    both >>= 32
    both += suit
    np.minimum(after, _outside(cols.words[both], rank), out=after)
    if many.size:
        # Hands with several set choices: each one.
        h = rows[many]
        _, starts, col = _each_choice(cols.first[h] + suit[many], cols.extra[h])
        value = _outside(cols.words[col], np.repeat(rank[many], cols.extra[h]))
        after[many] = np.minimum(after[many], np.minimum.reduceat(value, starts))
    # One entry per (hand, rank) a drawn card may join in a set.
    set_rows, set_rank = _bit_positions(settable.astype(np.uint16))
    if set_rows.size == 0:
        return rows, after.astype(np.int16), cols.no_draw
    table = np.full(settable.shape[0] << 4, SENTINEL, np.int64)
    table_at = set_rows << 4
    table_at |= set_rank
    # The entries with three of the rank held first.
    is_three = ((ranks[0][set_rows] >> set_rank.astype(_U64)) & _ONE).astype(bool)
    order = np.concatenate([np.flatnonzero(is_three), np.flatnonzero(~is_three)])
    table[table_at[order]] = _set_value(cols, set_rows[order], set_rank[order],
                                        int(np.count_nonzero(is_three)), ranks)
    # Each drawn card reads its (hand, rank) entry (SENTINEL: not in a set).
    np.minimum(after, table[local], out=after)
    return rows, after.astype(np.int16), cols.no_draw


#: ``_LEVEL_WEIGHT[4 b + f]``: the mixed-radix weight of a set rank with ``b`` set ranks
#: below it, ``f`` of them held four times (radix 6; the others 2).
_LEVEL_WEIGHT = np.array([(1 << b) * 3 ** f if f <= b else 0 for b in range(4)
                          for f in range(4)], np.int64)


def _set_value(cols: _Columns, rows: np.ndarray, rank: np.ndarray, threes: int,
               ranks: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """:func:`_in_set` at least over the set choices of hands ``rows`` (the first
    ``threes`` with three of the rank held).

    With three held, the rank is itself a set rank (digit 0: no set, 1: the whole rank);
    the choices taking it whole leave the same cards once it joins the drawn card as those
    leaving it, so only digit 0 is evaluated: choice number ``i`` with a 0 inserted at the
    rank's digit (weight ``w``); a hand with that set rank only has no other choice.
    """
    first = cols.first[rows]
    value = _in_set(cols, first, rank, threes)
    count = cols.extra[rows]
    weight = np.full(rows.size, 1 << 20, np.intp)
    if threes:
        count[:threes] += 1
        count[:threes] >>= 1
        count[:threes] -= 1
        below = (_ONE << rank[:threes].astype(_U64)) - _ONE
        h = rows[:threes]
        weight[:threes] = _LEVEL_WEIGHT[
            (np.bitwise_count(ranks[1][h] & below).astype(np.intp) << 2)
            + np.bitwise_count(ranks[2][h] & below)]
    sel, starts, col = _each_choice(first, count, weight)
    if sel.size:
        times = count[sel]
        more = _in_set(cols, col, np.repeat(rank[sel], times),
                       int(times[:np.searchsorted(sel, threes)].sum()))
        value[sel] = np.minimum(value[sel], np.minimum.reduceat(more, starts))
    return value


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
