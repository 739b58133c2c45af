"""The least deadwood after drawing each card and discarding best, for many hands at once.

Why: a player weighing "draw card c, then discard best" (``agents.strong``'s expected
gain) needs ``melds.min_deadwood_after_discard(hand | c)`` for every live card ``c`` of
every hand it considers, tens of 11-card hands per decision.  Here one pass gives all
52 cards of a hand at once, from per-suit tables, and stays exact:

* **c outside any set.**  Fix the hand's own set choices (``melds``' expansion: ranks
  held three or more times).  Adding ``c`` changes one suit's run-only deadwood, a
  lookup in ``ADD[m, 0, r]`` (suit mask ``m`` plus rank ``r``); the best discard then
  comes from that suit (``ADD[m, 1, r]``: its best removal's saving) or from another suit
  (their savings, without ``c``).  So each suit's 13 cards are one table row plus two
  scalars.
* **c in a set.**  Its set holds ``c`` and two or three held cards of its rank, so
  per set choice the value depends on the rank only: the rest without those cards of
  the rank, then its best removal (``MINUS``: a suit without rank ``r``).  A pair joins
  ``c`` whole; of three of a kind either all three or two, the third left free.

The set choices of the hand itself are ``melds``' (``expand_set_choices``), so every
arrangement of ``hand | c`` minus a discard is one of these, and each of these is one.
The same pass gives the hand's own best discard (no draw), ``min_deadwood_after_discard``.

``tests/hgin_env/test_draw_melds.py`` compares it with ``min_deadwood_after_discard``
of every ``hand | c`` and with the brute-force reference.
"""

from __future__ import annotations

import numpy as np

from hgin_env import bitlanes as bl
from hgin_env.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS, unpack_masks
from hgin_env.melds import (
    RUN_DEADWOOD,
    RUN_DEADWOOD_MINUS,
    SENTINEL,
    as_masks,
    expand_set_choices,
    segment_starts,
    split_candidates,
)

__all__ = ["ADD", "MINUS", "after_each_draw", "after_each_draw_by_card"]


def _suit_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    masks = np.arange(1 << NUM_RANKS)
    rd = RUN_DEADWOOD.astype(np.int16)
    best_minus = RUN_DEADWOOD_MINUS.min(axis=1).astype(np.int16)
    # The saving of a suit's best single removal (<= 0); SENTINEL for the empty suit,
    # which has nothing to remove and so never gives the minimum.
    save = np.where(masks == 0, SENTINEL, best_minus - rd).astype(np.int16)
    bit = 1 << np.arange(NUM_RANKS)
    plus = masks[:, None] | bit  # (8192, 13): m with rank r added
    minus = masks[:, None] & ~bit  # ... and with rank r taken out
    add = np.stack([rd[plus], best_minus[plus] - rd[plus]], axis=1).astype(np.int16)
    return add, np.stack([rd[minus], save[minus]], axis=1), rd, save


#: ``ADD[m, 0, r]``: run-only deadwood of suit mask ``m`` with rank ``r`` added;
#: ``ADD[m, 1, r]``: the saving (<= 0) of that suit's best single removal then.
#: ``MINUS[m, :, r]``: the same two (SENTINEL saving: empty) with rank ``r`` taken out.
ADD, MINUS, _RD16, _SAVE = _suit_tables()
#: The four tables suit-major for :func:`_evaluate`: rows 0-12 ``ADD[:, 0]``, 13-25
#: ``ADD[:, 1]``, 26-38 ``MINUS[:, 0]``, 39-51 ``MINUS[:, 1]``; one column per suit mask.
_TABLE = np.ascontiguousarray(np.concatenate([ADD, MINUS], axis=1).reshape(1 << NUM_RANKS, -1).T)
#: Rows of :func:`_evaluate`'s (7, 13, n) result.
_OUT, _SET_ALL, _SET_PAIR, _NO_DRAW = slice(0, 4), 4, 5, 6


def _min_other(x: list[np.ndarray]) -> list[np.ndarray]:
    """For four arrays, per position ``i`` the minimum of the other three."""
    lo01, lo23 = np.minimum(x[0], x[1]), np.minimum(x[2], x[3])
    return [np.minimum(x[1], lo23), np.minimum(x[0], lo23),
            np.minimum(lo01, x[3]), np.minimum(lo01, x[2])]


def _evaluate(lanes: np.ndarray) -> np.ndarray:
    """(91, n) int16 for hands whose set cards are already taken out (one set choice).

    As (7, 13, n): rows 0-3 the run-only deadwood after adding card (suit, rank) outside
    any set and the best removal; row 4 after adding rank r in a set with every card of
    that rank here; row 5 the same keeping one of them free (the best suit to keep);
    row 6 the best removal with no card added (every column).  Hands run along the last
    axis so that every operation is one long loop (a (n, 13) layout pays numpy's
    per-row overhead, several times the arithmetic).
    """
    n = lanes.shape[0]
    idx = [bl.lane(lanes, suit) for suit in range(NUM_SUITS)]
    rows = [np.take(_TABLE, i, axis=1) for i in idx]  # (52, n) per suit
    rds, saves = [_RD16[i] for i in idx], [_SAVE[i] for i in idx]
    total = rds[0] + rds[1] + rds[2] + rds[3]
    out = np.empty((7, NUM_RANKS, n), np.int16)
    for t, other in enumerate(_min_other(saves)):
        np.minimum(rows[t][13:26], other, out=out[t])
        out[t] += rows[t][0:13]
        out[t] += total - rds[t]
    # c in a set: every card of its rank leaves the rest (row 4), or all but suit u's.
    m_rd = [r[26:39] for r in rows]
    m_save = [r[39:52] for r in rows]
    all_rd = m_rd[0] + m_rd[1] + m_rd[2] + m_rd[3]
    lowest = np.minimum(np.minimum(m_save[0], m_save[1]), np.minimum(m_save[2], m_save[3]))
    np.add(all_rd, lowest, out=out[_SET_ALL])
    keep = out[_SET_PAIR]
    for u, other_save in enumerate(_min_other(m_save)):
        value = all_rd - m_rd[u]
        value += rds[u]
        value += np.minimum(other_save, saves[u])
        if u:
            np.minimum(keep, value, out=keep)
        else:
            keep[...] = value
    lowest_now = np.minimum(np.minimum(saves[0], saves[1]), np.minimum(saves[2], saves[3]))
    out[_NO_DRAW] = total + lowest_now
    return out.reshape(-1, n)


def _min_over_set_choices(lanes: np.ndarray) -> np.ndarray:
    """:func:`_evaluate` minimised over every set choice of each hand
    (``melds._min_over_set_choices`` with hands along the last axis)."""
    n = lanes.shape[0]
    single, set_cards, general = split_candidates(lanes)
    if single.size == 0 and general.size == 0:
        return _evaluate(lanes)
    # The general hands' choices, regrouped by how many a hand has and laid out
    # choice-major within a group, so the minimum over a hand's choices is a reduction
    # over contiguous blocks (no gathers).  A hand's first choice is "no set" (the hand
    # itself, already evaluated with every hand): it is left out when it is.
    sub = lanes[general]
    origin, choice_cards = expand_set_choices(sub)
    starts = segment_starts(origin)
    sizes = np.diff(np.r_[starts, origin.shape[0]])
    skip = int(not choice_cards[starts].any())
    groups = [(np.flatnonzero(sizes == size), int(size) - skip) for size in np.unique(sizes)]
    order = np.concatenate([np.zeros(0, np.intp)] + [
        (starts[g][None, :] + np.arange(skip, skip + k)[:, None]).ravel() for g, k in groups])
    # Every hand, the single set choices and the general ones in one _evaluate call
    # (one pass of numpy calls instead of three: the calls' overhead rules small batches).
    every = _evaluate(np.concatenate([lanes, lanes[single] & ~set_cards,
                                      (sub[origin] & ~choice_cards)[order]]))
    out = every[:, :n]
    if single.size:
        out[:, single] = np.minimum(out[:, single], every[:, n:n + single.size])
    col = n + single.size
    for g, k in groups:  # k choices of each hand of group g
        block = every[:, col:col + k * g.size].reshape(-1, k, g.size)
        out[:, general[g]] = np.minimum(out[:, general[g]], block.min(axis=1))
        col += k * g.size
    return out


def after_each_draw(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For 1-D ``masks`` of hands of at most 10 cards: ``(after, no_draw)``.

    ``after`` (n, 52) int16 is ``min_deadwood_after_discard(masks[i] | 1 << c)`` for every
    card ``c`` not in hand ``i``, ``SENTINEL`` for held cards; ``no_draw`` (n,) int16 is
    ``min_deadwood_after_discard(masks)`` (>= SENTINEL for an empty hand).
    """
    arr = as_masks(masks).reshape(-1)
    by_card, no_draw = after_each_draw_by_card(arr)
    after = by_card.T.copy()
    np.putmask(after, unpack_masks(arr).view(bool), SENTINEL)
    return after, no_draw


def after_each_draw_by_card(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`after_each_draw` card-major: ``after`` is (52, n), and its entries for held
    cards are left unspecified (a caller reads only cards not held).

    Why: the hands run along the last axis here, as in the whole pass, so a caller that
    sums over cards (``agents.strong``'s expected gain) skips a transposing copy.
    """
    arr = as_masks(masks).reshape(-1)
    n = arr.shape[0]
    if n == 0:
        return np.zeros((NUM_CARDS, 0), np.int16), np.zeros(0, np.int16)
    lanes = bl.to_lanes(arr)
    best = _min_over_set_choices(lanes).reshape(7, NUM_RANKS, n)
    # Which ranks may take c into a set: held twice (the pair joins it), three times (all
    # three, or two with the third free); a rank held four times has no card to draw.
    a, b, c, d = (bl.lane(lanes, s) for s in range(NUM_SUITS))
    two_up = (a & (b | c | d)) | (b & (c | d)) | (c & d)
    three_up = (a & b & (c | d)) | (c & d & (a | b))
    ranks = np.arange(NUM_RANKS)[:, None]
    pair = (((two_up & ~three_up)[None, :] >> ranks) & 1).astype(bool)
    three = (((three_up & ~(a & b & c & d))[None, :] >> ranks) & 1).astype(bool)
    in_set = np.where(pair | three, best[_SET_ALL], SENTINEL)
    in_set = np.where(three, np.minimum(in_set, best[_SET_PAIR]), in_set)
    after = np.minimum(best[_OUT], in_set[None]).reshape(NUM_CARDS, n)
    return after, np.minimum(best[_NO_DRAW, 0], SENTINEL)
