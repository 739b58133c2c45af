"""The meld minimiser for one hand held as a Python int: the one-game fast path's tables.

At one hand per call, numpy's per-call overhead dwarfs the work, so the
one-game engine (:mod:`hgin_env.engine.single`) looks up the same per-suit tables
as the batched minimiser (``melds.RUN_DEADWOOD`` and ``RUN_DEADWOOD_MINUS``)
turned into Python lists.  :func:`discard_table` is
``melds.discard_table_unchecked`` for one hand (per-suit run-only lookups,
minimised over the set choices of the ranks held three or four times);
``tests/hgin_env/engine/test_single.py`` compares both on random and meld-dense hands.
"""

from __future__ import annotations

from hgin_env.cards import NUM_CARDS, NUM_RANKS
from hgin_env.melds import RUN_DEADWOOD, RUN_DEADWOOD_MINUS, SENTINEL

__all__ = ["discard_table", "min_deadwood"]

_SUIT = (1 << NUM_RANKS) - 1

#: Run-only deadwood of each 13-bit suit mask (``melds.RUN_DEADWOOD``).
_RD: list[int] = RUN_DEADWOOD.tolist()


class _HeldMinus(dict):  # type: ignore[type-arg]
    """Per suit mask: ``(rank, run-only deadwood of the suit without that rank)`` for
    each held rank (``melds.RUN_DEADWOOD_MINUS``), built on first use."""

    def __missing__(self, m: int) -> tuple[tuple[int, int], ...]:
        row = RUN_DEADWOOD_MINUS[m].tolist()
        value = tuple((r, v) for r, v in enumerate(row) if v < SENTINEL)
        self[m] = value
        return value


_HELD_MINUS = _HeldMinus()
#: Per suit mask: the smallest of those values (SENTINEL for an empty suit).
_MIN_MINUS: list[int] = RUN_DEADWOOD_MINUS.min(axis=1).tolist()
#: All four cards of rank r: ``_COLUMN << r``.
_COLUMN = 1 | 1 << 13 | 1 << 26 | 1 << 39


def _set_choices(h: int, candidates: int) -> list[int]:
    """Every way to place cards of ``h`` in sets (``melds.expand_set_choices``).

    Per rank held three or more times: no set, the whole rank, and for a
    four-card rank each set of three leaving one suit out for a run.
    """
    choices = [0]
    while candidates:
        low = candidates & -candidates
        candidates ^= low
        column = h & (_COLUMN * low)
        options = [0, column]
        if column == _COLUMN * low:
            options += [column & ~(low << (13 * s)) for s in range(4)]
        choices = [x | o for x in choices for o in options]
    return choices


def _candidates(h: int) -> int:
    """13-bit mask of the ranks held at least three times."""
    a, b, c, d = h & _SUIT, h >> 13 & _SUIT, h >> 26 & _SUIT, h >> 39 & _SUIT
    return (a & b & (c | d)) | (c & d & (a | b))


def min_deadwood(h: int) -> int:
    """Exact minimum deadwood of the hand mask ``h`` (``melds.min_deadwood`` for one int)."""
    rd = _RD
    candidates = _candidates(h)
    if not candidates:
        return rd[h & _SUIT] + rd[h >> 13 & _SUIT] + rd[h >> 26 & _SUIT] + rd[h >> 39 & _SUIT]
    best = 1 << 30
    for chosen in _set_choices(h, candidates):
        x = h & ~chosen
        total = rd[x & _SUIT] + rd[x >> 13 & _SUIT] + rd[x >> 26 & _SUIT] + rd[x >> 39]
        if total < best:
            best = total
    return best


def discard_table(h: int, limit: int = -1) -> tuple[int, list[int], int]:
    """For a hand of at most 11 cards: ``(min deadwood, after, knocks)``.

    ``after[c]`` is the minimum deadwood after discarding card ``c`` (``SENTINEL``
    for cards not held), exactly ``melds.deadwood_after_discard``; ``knocks`` is
    the mask of held cards whose ``after`` is at most ``limit``.
    """
    rd, held_minus = _RD, _HELD_MINUS
    after = [SENTINEL] * NUM_CARDS
    knocks = 0
    candidates = _candidates(h)
    if not candidates:
        a, b, c, d = h & _SUIT, h >> 13 & _SUIT, h >> 26 & _SUIT, h >> 39
        ra, rb, rc, rdd = rd[a], rd[b], rd[c], rd[d]
        total = ra + rb + rc + rdd
        lowest = _MIN_MINUS
        for base, m, off in ((0, a, total - ra), (13, b, total - rb), (26, c, total - rc),
                             (39, d, total - rdd)):
            if off + lowest[m] <= limit:
                for r, v in held_minus[m]:
                    v += off
                    after[base + r] = v
                    if v <= limit:
                        knocks |= 1 << (base + r)
            else:
                for r, v in held_minus[m]:
                    after[base + r] = v + off
        return total, after, knocks
    best = 1 << 30
    for chosen in _set_choices(h, candidates):
        x = h & ~chosen
        a, b, c, d = x & _SUIT, x >> 13 & _SUIT, x >> 26 & _SUIT, x >> 39
        ra, rb, rc, rdd = rd[a], rd[b], rd[c], rd[d]
        total = ra + rb + rc + rdd
        if total < best:
            best = total
        for base, m, off in ((0, a, total - ra), (13, b, total - rb), (26, c, total - rc),
                             (39, d, total - rdd)):
            for r, v in held_minus[m]:
                v += off
                if v < after[base + r]:
                    after[base + r] = v
    if limit >= 0 and min(after) <= limit:
        x = h
        while x:
            low = x & -x
            x ^= low
            if after[low.bit_length() - 1] <= limit:
                knocks |= low
    return best, after, knocks
