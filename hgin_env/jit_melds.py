"""The draw-and-discard meld pass of :mod:`hgin_env.draw_melds`, compiled with numba.

Why: ``agents.strong`` needs the least deadwood after "draw card c, discard best" for
tens of thousands of (hand, card) pairs a batch.  In numpy each pair is a few table
lookups, but numpy's fancy indexing and per-call cost make those lookups several
hundred instructions a pair; one compiled loop over the hands does the same lookups
for a fraction of that (a whole ``strong`` call at B = 4096: 107 M instructions
instead of 189 M, docs/benchmarks.md).  The values are the numpy pass's, exactly (``tests/hgin_env/
test_draw_melds.py`` compares the two and the brute-force reference).

numba is optional (``pip install 'hgin[fast]'``): without it, or with the environment
variable ``HGIN_NO_JIT=1``, :func:`hgin_env.draw_melds.after_draws` runs the numpy pass.
The first call compiles the loop (a few seconds) and caches it beside this file, or in
the user's cache folder where that is not writable; the first call of a later process
imports numba and reads the cache (about a second).

Per hand, its *columns* are its set choices (ranks held three or more times: no set,
the whole rank, or for four cards each three of them), each the hand with those set
cards taken out.  A drawn card ``c`` of suit ``s`` and rank ``r`` either stays outside
every set (it joins suit ``s`` of a column: that suit's run-only deadwood with ``r``
added, the discard from that suit or the best of the others) or joins the held cards
of its rank in a set (all of them, or two of three with the third left free), in a
column with no set of that rank.  The least over these is
``min_deadwood_after_discard(hand | c)``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from importlib.util import find_spec

import numpy as np

from hgin_env.cards import NUM_RANKS, NUM_SUITS
from hgin_env.melds import RUN_DEADWOOD, RUN_SAVING, SENTINEL

__all__ = ["AVAILABLE", "MAX_CARDS", "after_draws"]

#: Whether the compiled pass is used: numba installed and ``HGIN_NO_JIT`` not set.
#: numba is imported on the first call, not here (importing it takes about half a
#: second, which every ``hgin`` command would pay).
AVAILABLE = find_spec("numba") is not None and os.environ.get("HGIN_NO_JIT", "") in ("", "0")


#: Per 13-bit suit mask: its run-only deadwood, and its best single removal's saving.
_RD, _SAVE = RUN_DEADWOOD.astype(np.int64), RUN_SAVING
#: The most cards a hand may hold (the pass is for hands before a draw).
MAX_CARDS = 10
#: Most columns a hand of ten cards has: two ranks held four times, 6 * 6.
_MAX_COLUMNS = 36


def _kernel(hands: np.ndarray, draws: np.ndarray, rd: np.ndarray, save: np.ndarray,
            rows: np.ndarray, after: np.ndarray, no_draw: np.ndarray
            ) -> None:  # pragma: no cover - compiled
    """Fills ``rows``, ``after`` (one entry per card of ``draws``, hand by hand, by card
    id) and ``no_draw``; the working arrays are made once, so a hand costs no memory."""
    suit_bits = (1 << NUM_RANKS) - 1
    # Per column and suit: the cards left out of sets, their run-only deadwood, and the
    # least removal saving among the other suits.
    rest = np.empty((_MAX_COLUMNS, NUM_SUITS), np.int64)
    rest_rd = np.empty((_MAX_COLUMNS, NUM_SUITS), np.int64)
    others = np.empty((_MAX_COLUMNS, NUM_SUITS), np.int64)
    total = np.empty(_MAX_COLUMNS, np.int64)
    in_set = np.empty(1 << NUM_RANKS, np.int64)
    suits = np.empty(NUM_SUITS, np.int64)
    sv = np.empty(NUM_SUITS, np.int64)
    k = 0
    for i in range(hands.shape[0]):
        hand = np.int64(hands[i])
        for s in range(NUM_SUITS):
            suits[s] = (hand >> (NUM_RANKS * s)) & suit_bits
            rest[0, s] = suits[s]
        a, b, c, d = suits[0], suits[1], suits[2], suits[3]
        # The columns: every combination of each set rank's choices (no set, the whole
        # rank, and for four cards each three), rank by rank.
        set_ranks = (a & b & (c | d)) | (c & d & (a | b))
        four = a & b & c & d
        n_cols = 1
        pending = set_ranks
        while pending:
            low = pending & -pending
            pending ^= low
            for j in range(n_cols):
                for s in range(NUM_SUITS):
                    rest[j + n_cols, s] = rest[j, s] & ~low
                if low & four:
                    for u in range(NUM_SUITS):
                        for s in range(NUM_SUITS):
                            keep = rest[j, s] if s == u else rest[j, s] & ~low
                            rest[j + (2 + u) * n_cols, s] = keep
            n_cols *= 6 if low & four else 2
        best = np.int64(SENTINEL)
        for j in range(n_cols):
            t = np.int64(0)
            for s in range(NUM_SUITS):
                m = rest[j, s]
                rest_rd[j, s] = rd[m]
                t += rd[m]
                sv[s] = save[m]
            total[j] = t
            lo01, lo23 = min(sv[0], sv[1]), min(sv[2], sv[3])
            best = min(best, t + min(lo01, lo23))
            others[j, 0] = min(sv[1], lo23)
            others[j, 1] = min(sv[0], lo23)
            others[j, 2] = min(lo01, sv[3])
            others[j, 3] = min(lo01, sv[2])
        no_draw[i] = min(best, SENTINEL)
        # Ranks a drawn card can join in a set: two or three held.
        settable = ((a & (b | c | d)) | (b & (c | d)) | (c & d)) & ~four
        done = np.int64(0)
        live = np.int64(draws[i])
        for s in range(NUM_SUITS):
            cards = (live >> (NUM_RANKS * s)) & suit_bits
            while cards:
                bit = cards & -cards
                cards ^= bit
                value = np.int64(1 << 30)
                for j in range(n_cols):
                    m = rest[j, s] | bit
                    v = total[j] - rest_rd[j, s] + rd[m] + min(others[j, s], save[m])
                    value = min(value, v)
                if bit & settable:
                    if not bit & done:
                        in_set[bit] = _joins_set(suits, rest, n_cols, bit, set_ranks, rd,
                                                 save)
                        done |= bit
                    value = min(value, in_set[bit])
                rows[k] = i
                after[k] = value
                k += 1


def _joins_set(suits: np.ndarray, rest: np.ndarray, n_cols: int, bit: np.int64,
               set_ranks: np.int64, rd: np.ndarray, save: np.ndarray
               ) -> np.int64:  # pragma: no cover - compiled
    """Least deadwood after a drawn card of the rank ``bit`` (two or three held) joins
    the hand's cards of that rank in a set, in every column with no set of that rank."""
    three = (set_ranks & bit) != 0
    best = np.int64(1 << 30)
    for j in range(n_cols):
        if three and _held(rest, j, bit) < 3:
            continue  # this column has the rank's set already
        t = np.int64(0)
        low = np.int64(SENTINEL)
        for s in range(NUM_SUITS):
            m = rest[j, s] & ~bit
            t += rd[m]
            low = min(low, save[m])
        best = min(best, t + low)
        if three:
            # Two of the three join the drawn card; suit u's card stays free.
            for u in range(NUM_SUITS):
                if not rest[j, u] & bit:
                    continue
                tu = np.int64(0)
                lu = np.int64(SENTINEL)
                for s in range(NUM_SUITS):
                    m = rest[j, s] if s == u else rest[j, s] & ~bit
                    tu += rd[m]
                    lu = min(lu, save[m])
                best = min(best, tu + lu)
    return best


def _held(rest: np.ndarray, j: int, bit: np.int64) -> int:  # pragma: no cover - compiled
    held = 0
    for s in range(NUM_SUITS):
        if rest[j, s] & bit:
            held += 1
    return held


_compiled: list[Callable[..., None]] = []


def _compile() -> Callable[..., None]:
    """The compiled kernel (compiled, or read from numba's cache, on the first call)."""
    global _held, _joins_set, _kernel
    if not _compiled:
        try:
            import numba
        except ImportError as error:
            raise RuntimeError("the compiled meld pass needs numba: "
                               "pip install 'hgin[fast]'") from error
        def jit(fn: Callable[..., object]) -> Callable[..., object]:
            try:
                return numba.njit(cache=True)(fn)
            except RuntimeError:  # numba finds no folder to cache in: compile each run
                return numba.njit(fn)

        # The kernel calls the helpers by these names, so they are compiled first.
        _held, _joins_set, _kernel = jit(_held), jit(_joins_set), jit(_kernel)
        _compiled.append(_kernel)
    return _compiled[0]


def after_draws(hands: np.ndarray, draws: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`hgin_env.draw_melds.after_draws` of the 1-D ``uint64`` ``hands`` and
    ``draws`` (valid: at most ten cards a hand, no drawn card held), compiled."""
    if draws.shape != hands.shape:
        raise ValueError(f"after_draws needs one draw mask a hand: {hands.shape[0]} hands, "
                         f"{draws.shape[0]} draw masks")
    if hands.size and int(np.bitwise_count(hands).max()) > MAX_CARDS:
        raise ValueError(f"the compiled meld pass takes hands of at most {MAX_CARDS} cards")
    kernel = _compile()
    pairs = int(np.bitwise_count(draws).sum())
    rows = np.empty(pairs, np.intp)
    after = np.empty(pairs, np.int16)
    no_draw = np.empty(hands.shape[0], np.int16)
    kernel(hands.view(np.int64), draws.view(np.int64), _RD, _SAVE, rows, after, no_draw)
    return rows, after, no_draw
