"""SingleGame: one Hollywood match on Python ints, for the one-game interfaces.

At one game, numpy's per-call overhead dominates the batched engine
(:class:`~hgin_env.engine.VectorGame`): a step there is a few hundred
microseconds whatever the batch size.  The AEC and single-agent Gymnasium
environments run one match, so they use this class instead: the same state,
held in Python ints (52-bit hand masks, the deal's card order as a list, the
discard pile as a list), stepped in pure Python.

It is not a second rules implementation in any sense that matters:

* everything that happens once per hand calls the batched code itself: the
  shuffles and dealer draws (``engine.shuffled_decks`` / ``random_dealers``,
  so ``SingleGame(seed=s)`` deals exactly like ``VectorGame(1, seed=s)``), the
  showdown (``showdown.showdown_unchecked``, ``melds.arrange``), the sheet
  (``hollywood.post``) and the rewards (``VectorGame._reward``);
* the per-step part (turn order, legality, the deadwood after each discard
  for the knock test and the observation) mirrors :class:`VectorGame` line by
  line and is checked against it after every step of thousands of random
  matches in every profile (``tests/test_single.py``): state, legal mask,
  observations of both seats, rewards and info must be identical.

The deadwood tables are the batched ones (``melds.RUN_DEADWOOD`` and
``RUN_DEADWOOD_MINUS``) turned into Python lists; :func:`discard_table` is
``melds.discard_table_unchecked`` for one hand (per-suit run-only lookups,
minimised over the set choices of the ranks held three or four times).

Differences from ``VectorGame`` row 0, all in the return types: ``step``
returns ``((reward_seat0, reward_seat1), info)`` with Python floats and an
info dict of Python scalars (``final_scores`` a (2, C) int32 array);
``observe`` returns unbatched arrays.  :attr:`SingleGame.arrays` is a live,
read-only view with the ``VectorGame`` array layout (``hands[0, seat]`` …) for
code written against the engine (rendering, the terminal game).
"""

from __future__ import annotations

import operator
import struct
from typing import Any

import numpy as np

from . import actions as A
from .cards import NUM_CARDS, NUM_RANKS
from .engine import (
    REWARD_MODES,
    HandRecord,
    VectorGame,
    _check_decks,
    game_seeds,
    random_dealers,
    shuffled_decks,
)
from .hollywood import Sheet, SheetBatch, post
from .melds import RUN_DEADWOOD, RUN_DEADWOOD_MINUS, SENTINEL, arrange
from .observation import MAX_COLUMNS, OBS_DIM, observation_spec
from .rules import Rules, load_rules
from .showdown import showdown_unchecked

__all__ = ["SingleGame", "discard_table", "min_deadwood"]

_FULL = (1 << NUM_CARDS) - 1
_SUIT = (1 << NUM_RANKS) - 1
_U64 = np.uint64

# ----------------------------------------------------------------------------- deadwood

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


# ----------------------------------------------------------------------------- encoding

_SPEC = observation_spec()
_F32 = struct.Struct("<f")


def _f32(x: float) -> bytes:
    return _F32.pack(x)


_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")
#: Byte value -> the 8 float32 0/1 flags of its bits (LSB first), as 32 bytes.
_BITS_F32 = [row.tobytes() for row in _BYTE_BITS.astype(np.float32)]
#: Byte value -> its 8 int8 0/1 flags (LSB first).
_BITS_I8 = [row.tobytes() for row in _BYTE_BITS]
_ZERO_F = _f32(0.0)
_ONE_F = _f32(1.0)
_FLAG = (_ZERO_F, _ONE_F)
#: ``value / 100`` as float32, index SENTINEL (cards not held) gives 0.
_HUNDREDTHS = [_f32(v / 100.0) for v in range(SENTINEL)] + [_ZERO_F]
_STOCK = [_f32(s / 31.0) for s in range(NUM_CARDS + 1)]
_LIMIT = [_f32(k / 10.0) for k in range(11)]
_PHASE = [b"".join(_FLAG[p == q] for q in range(A.NUM_PHASES)) for p in range(A.NUM_PHASES)]
_PHASE.append(_ZERO_F * A.NUM_PHASES)  # PHASE_MATCH_OVER: no live phase
_NO_DISCARD = _ZERO_F * NUM_CARDS
_SHEET_START = _SPEC["column_exists"].start
assert _SPEC["deadwood_after_discard"].start == 6 * NUM_CARDS
assert _SPEC["phase"].start == 7 * NUM_CARDS and _SHEET_START == _SPEC["deadwood"].stop
assert OBS_DIM - _SHEET_START == 8 * MAX_COLUMNS

_OFFER = 1 << A.TAKE_DISCARD | 1 << A.PASS
_LEGAL_BY_PHASE = {
    A.PHASE_OFFER_NONDEALER: _OFFER,
    A.PHASE_OFFER_DEALER: _OFFER,
    A.PHASE_DRAW_STOCK: 1 << A.DRAW_STOCK,
    A.PHASE_DRAW: 1 << A.DRAW_STOCK | 1 << A.TAKE_DISCARD,
    A.PHASE_MATCH_OVER: 0,
}
_ROW0 = np.zeros(1, np.int64)


def _mask_bytes(legal: int) -> bytes:
    return b"".join([_BITS_I8[x] for x in legal.to_bytes(14, "little")])[: A.NUM_ACTIONS]


_PHASE_MASKS = {legal: _mask_bytes(legal) for legal in set(_LEGAL_BY_PHASE.values())}


def mask_bytes(legal: int) -> bytes:
    """The 108 int8 flags of the action bit mask ``legal``."""
    cached = _PHASE_MASKS.get(legal)
    return _mask_bytes(legal) if cached is None else cached


def _sheet_floats(sheets: SheetBatch, target: int, seat: int) -> bytes:
    """The sheet part of ``observation.encode`` (``column_exists`` … ``open_to_opponent``)."""
    c = sheets.columns
    opp = 1 - seat
    scores = sheets.scores[0].tolist()
    decided = sheets.decided[0].tolist()
    winner = sheets.column_winner[0].tolist()
    wins = sheets.wins[0].tolist()
    t = float(target)
    groups = (
        [1.0] * c,
        [s / t for s in scores[seat]],
        [s / t for s in scores[opp]],
        [float(d) for d in decided],
        [float(w == seat) for w in winner],
        [float(w == opp) for w in winner],
        [float(wins[seat] > j) for j in range(c)],
        [float(wins[opp] > j) for j in range(c)],
    )
    pad = [0.0] * (MAX_COLUMNS - c)
    values = [v for g in groups for v in (*g, *pad)]
    return struct.pack(f"<{len(values)}f", *values)


# ----------------------------------------------------------------------------- game


class SingleGame:
    """One Hollywood match, ``VectorGame(1, rules, seed, reward, autoreset)`` on Python ints.

    State (read-only by convention, named as in :class:`VectorGame`):
    ``hands``/``known`` ``[seat0, seat1]`` masks, ``deck`` (52 card ids of this
    deal), ``stock_pos``, ``pile`` (52 slots, the first ``pile_size`` in use,
    top last), ``pile_mask``, ``phase``, ``current_player``, ``dealer``,
    ``taken_card``, ``knock_limit``, ``discard_deadwood`` (52 ints, valid in
    the discard phase), ``big_gin_ready``, ``deal_number``, ``match_number``,
    ``hands_in_match``, ``seed``; ``sheets``/``last_match``/``last_hand`` are
    the engine's one-row :class:`SheetBatch` and :class:`HandRecord`.
    """

    def __init__(
        self,
        rules: Rules | str | None = None,
        seed: int | np.ndarray | None = None,
        reward: str = "columns",
        autoreset: bool = True,
    ) -> None:
        if reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        self.rules = load_rules(rules)
        self.reward_mode = reward
        self.autoreset = bool(autoreset)
        self.num_games = 1
        r = self.rules
        self._forbid = r.forbid_discard_of_taken
        self._big_gin = r.big_gin
        self._same_dealer_after_dead = r.dead_hand_dealer == "same"
        self._winner_deals = r.next_dealer == "winner"
        self._target = r.target
        self._max_takes = r.max_discard_takes
        c = r.columns
        self._quiet_scores = np.zeros((2, c), np.int32)
        self._quiet_scores.flags.writeable = False
        self._quiet_info: dict[str, Any] = {
            "hand_over": False, "dead_hand": False, "hand_winner": -1, "award": 0, "gin": False,
            "big_gin": False, "undercut": False, "knocker": -1, "knocker_deadwood": -1,
            "defender_deadwood": -1, "match_over": False, "match_winner": -1,
            "final_scores": self._quiet_scores,
        }
        # Mirrors of the engine arrays that keep stale values between uses.
        self.pile = [0] * NUM_CARDS
        self.discard_deadwood = [0] * NUM_CARDS
        self.hands = [0, 0]
        self.known = [0, 0]
        self.deck: list[int] = []
        self.stock_pos = 0
        self.pile_size = 0
        self.pile_mask = 0
        self.phase = 0
        self.current_player = 0
        self.dealer = 0
        self.taken_card = -1
        self.takes = 0
        self.knock_limit = 0
        self.big_gin_ready = False
        self.deal_number = 0
        self.match_number = 0
        self.hands_in_match = 0
        self.legal = 0  #: bit mask of the legal action ids
        self._deadwood = [0, 0]  # each seat's current minimum deadwood
        self._after_bytes: bytes | None = None  # deadwood_after_discard plane, once per draw
        self._obs: list[bytes | None] = [None, None]
        self._mask: bytes | None = None
        self._sheet_bytes: tuple[bytes, bytes] = (b"", b"")
        self.seeds = game_seeds(seed, 1)
        self.sheets = SheetBatch.new(1, r)
        self.last_match = SheetBatch.new(1, r)
        self.last_hand = HandRecord.empty(1)
        self._arrays: SingleGameArrays | None = None
        self.reset(seed=None if seed is None else self.seeds)

    # ------------------------------------------------------------------ views
    @property
    def seed(self) -> int:
        return int(self.seeds[0])

    @property
    def stock_size(self) -> int:
        return NUM_CARDS - self.stock_pos

    @property
    def top_discard(self) -> int:
        """Card on top of the discard pile, -1 if it is empty."""
        return self.pile[self.pile_size - 1] if self.pile_size else -1

    @property
    def match_over(self) -> bool:
        """The match has ended and waits for :meth:`reset` (only with ``autoreset=False``)."""
        return self.phase == A.PHASE_MATCH_OVER

    @property
    def arrays(self) -> SingleGameArrays:
        """A live read-only view in the ``VectorGame`` array layout (built on access)."""
        if self._arrays is None:
            self._arrays = SingleGameArrays(self)
        return self._arrays

    def sheet(self, i: int = 0) -> Sheet:
        return self.sheets.sheet(i)

    # ------------------------------------------------------------------ reset
    def reset(
        self,
        seed: int | np.ndarray | None = None,
        deck: Any = None,
        dealer: int | None = None,
    ) -> None:
        """Start a fresh match, as ``VectorGame.reset`` does for its one game.

        ``deck`` (52 card ids) fixes the first deal, ``dealer`` (0 or 1) the
        first dealer; later deals are shuffled from the seed.
        """
        # Validate everything before touching any state (as VectorGame.reset).
        seeds = self.seeds if seed is None else game_seeds(seed, 1)
        cards = None if deck is None else _check_decks(np.asarray(deck)[None, :], 1)[0]
        if dealer is None:
            first = int(random_dealers(seeds, np.zeros(1, np.int64))[0])
        else:
            if isinstance(dealer, bool) or dealer not in (0, 1):
                raise ValueError(f"dealer must be 0 or 1, got {dealer!r}")
            first = int(dealer)
        self.seeds = seeds
        self.deal_number = 0
        self.match_number = 0
        self.sheets.reset_rows(_ROW0)
        self.last_match.reset_rows(_ROW0)
        self.last_hand = HandRecord.empty(1)
        if cards is None:
            cards = shuffled_decks(self.seeds, np.zeros(1, np.int64))[0]
        self.hands_in_match = 0
        self._refresh_sheet()
        self._deal(cards.tolist(), first)

    def next_match(self) -> None:
        """Start the next match of this game's seed stream (``VectorGame.reset_games([0])``)."""
        self._new_match(keep_sheet=False)
        self._deal(self._shuffled(), int(random_dealers(self.seeds, self._match_numbers())[0]))

    def _match_numbers(self) -> np.ndarray:
        return np.array([self.match_number], np.int64)

    def _shuffled(self) -> list[int]:
        return shuffled_decks(self.seeds, np.array([self.deal_number], np.int64))[0].tolist()

    def _new_match(self, keep_sheet: bool = True) -> None:
        if keep_sheet:
            _copy_sheet(self.sheets, self.last_match)
        self.sheets.reset_rows(_ROW0)
        self.match_number += 1
        self.hands_in_match = 0
        self._refresh_sheet()

    def _deal(self, deck: list[int], dealer: int) -> None:
        self.deck = deck
        first = second = 0
        for c in deck[0:20:2]:
            first |= 1 << c
        for c in deck[1:20:2]:
            second |= 1 << c
        nondealer = 1 - dealer
        hands = [0, 0]
        hands[nondealer] = first
        hands[dealer] = second
        self.hands = hands
        self.known = [0, 0]
        upcard = deck[20]
        self.pile[0] = upcard
        self.pile_size = 1
        self.pile_mask = 1 << upcard
        self.stock_pos = 21
        self.phase = A.PHASE_OFFER_NONDEALER
        self.dealer = dealer
        self.current_player = nondealer
        self.taken_card = -1
        self.takes = 0
        self.big_gin_ready = False
        self.knock_limit = self.rules.knock_limit_for_upcard(upcard % NUM_RANKS)
        self.deal_number += 1
        self.hands_in_match += 1
        self._deadwood = [min_deadwood(hands[0]), min_deadwood(hands[1])]
        self.legal = _OFFER
        self._obs = [None, None]
        self._mask = None

    # ------------------------------------------------------------------ legality
    def legal_actions(self) -> list[int]:
        legal, out = self.legal, []
        while legal:
            low = legal & -legal
            out.append(low.bit_length() - 1)
            legal ^= low
        return out

    def legal_action_mask(self) -> np.ndarray:
        """(108,) int8: 1 exactly for the legal actions of the player to move."""
        return np.frombuffer(bytearray(self.legal_mask_bytes()), np.int8)

    def legal_mask_bytes(self) -> bytes:
        """The 108 int8 flags of :meth:`legal_action_mask` as bytes (cached per step)."""
        cached = self._mask
        if cached is None:
            cached = self._mask = mask_bytes(self.legal)
        return cached

    def is_legal(self, action: Any) -> bool:
        """Whether ``action`` (an integer id) is legal now."""
        try:
            a = operator.index(action)
        except TypeError:
            return False
        return 0 <= a < A.NUM_ACTIONS and bool(self.legal >> a & 1) and not isinstance(action, bool)

    def illegal_message(self, action: Any) -> str:
        try:
            a = operator.index(action)
        except TypeError:
            return f"action {action!r} is not an integer action id"
        what = A.action_name(a) if 0 <= a < A.NUM_ACTIONS else "out of range 0..107"
        return (f"action {a} ({what}) is illegal in phase '{A.PHASE_NAMES[self.phase]}' "
                f"for player {self.current_player}; legal actions: {self.legal_actions()}")

    # ------------------------------------------------------------------ step
    def step(self, action: Any) -> tuple[tuple[float, float], dict[str, Any]]:
        """Apply ``action`` for the player to move.

        Returns ``((reward seat 0, reward seat 1), info)``; ``info`` has the keys
        of ``VectorGame.step``'s info as Python scalars (``final_scores`` a
        (2, C) array).  An illegal action raises ``ValueError`` and changes
        nothing.
        """
        if type(action) is not int:
            if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
                raise ValueError(f"actions must be integers, got {action!r}")
            action = int(action)
        a = action
        if a < 0 or not self.legal >> a & 1:
            raise ValueError(self.illegal_message(a))
        p = self.current_player
        self._obs = [None, None]
        self._mask = None
        if a == A.DRAW_STOCK:
            card = self.deck[self.stock_pos]
            self.stock_pos += 1
            self.hands[p] |= 1 << card
            self.taken_card = -1
            self._after_draw(p)
        elif a == A.TAKE_DISCARD:
            self.pile_size -= 1
            card = self.pile[self.pile_size]
            bit = 1 << card
            self.pile_mask &= ~bit
            self.hands[p] |= bit
            self.known[p] |= bit
            self.taken_card = card
            self.takes += 1
            self._after_draw(p)
        elif a == A.PASS:
            if self.phase == A.PHASE_OFFER_NONDEALER:
                self.phase = A.PHASE_OFFER_DEALER
                self.current_player = self.dealer
                self.legal = _OFFER
            else:
                self.phase = A.PHASE_DRAW_STOCK
                self.current_player = 1 - self.dealer
                self.legal = 1 << A.DRAW_STOCK
        elif a < A.KNOCK:
            self._put_on_pile(p, a)
            self.phase = A.PHASE_DRAW
            self.current_player = 1 - p
            self.legal = (_LEGAL_BY_PHASE[A.PHASE_DRAW] if self.takes < self._max_takes
                          else 1 << A.DRAW_STOCK)
            if self.stock_pos == NUM_CARDS - 2:
                return self._end_hand(-1, 0, dead=True)
        elif a < A.DRAW_STOCK:
            return self._knock(p, a - A.KNOCK)
        else:  # BIG_GIN
            return self._big_gin_out(p)
        return (0.0, 0.0), self._quiet_info.copy()

    def _after_draw(self, p: int) -> None:
        hand = self.hands[p]
        allowed = hand
        if self._forbid and self.taken_card >= 0:
            allowed &= ~(1 << self.taken_card)
        best, after, knocks = discard_table(hand, self.knock_limit)
        self.discard_deadwood = after
        self._after_bytes = None
        self._deadwood[p] = best
        self.phase = A.PHASE_DISCARD
        legal = allowed | (knocks & allowed) << A.KNOCK
        if self._big_gin:
            self.big_gin_ready = best == 0
            if best == 0:
                legal |= 1 << A.BIG_GIN
        self.legal = legal

    def _put_on_pile(self, p: int, card: int) -> None:
        bit = 1 << card
        self.hands[p] &= ~bit
        self.known[p] &= ~bit
        self.pile[self.pile_size] = card
        self.pile_size += 1
        self.pile_mask |= bit
        self.taken_card = -1
        self._deadwood[p] = self.discard_deadwood[card]

    # ------------------------------------------------------------------ hand end
    def _knock(self, p: int, card: int) -> tuple[tuple[float, float], dict[str, Any]]:
        # The knock discard goes face down; it joins the pile only to keep all
        # 52 cards accounted for until the next deal (as in the engine).
        self._put_on_pile(p, card)
        k_hand, d_hand = self.hands[p], self.hands[1 - p]
        sd = showdown_unchecked(np.array([k_hand], _U64), np.array([d_hand], _U64),
                                np.array([self.knock_limit], np.int8), self.rules)
        seat = p if int(sd.winner[0]) == 0 else 1 - p
        gin = bool(sd.gin[0])
        self._record(p, k_hand, d_hand, seat, sd.award, gin, False,
                     (not gin) and int(sd.winner[0]) == 1)
        rec = self.last_hand
        rec.knocker_meld_mask[0] = sd.knocker_meld_mask[0]
        rec.knocker_set_mask[0] = sd.knocker_set_mask[0]
        rec.defender_meld_mask[0] = sd.defender_meld_mask[0]
        rec.defender_set_mask[0] = sd.defender_set_mask[0]
        rec.layoffs[0] = sd.layoffs[0]
        rec.knocker_deadwood[0] = sd.knocker_deadwood[0]
        rec.defender_deadwood[0] = sd.defender_deadwood[0]
        return self._end_hand(seat, int(sd.award[0]))

    def _big_gin_out(self, p: int) -> tuple[tuple[float, float], dict[str, Any]]:
        k_hand, d_hand = self.hands[p], self.hands[1 - p]
        d_dead, d_sets, d_runs = arrange(np.array([d_hand], _U64))
        award = (self.rules.big_gin_bonus + d_dead).astype(np.int32)
        self._record(p, k_hand, d_hand, p, award, True, True, False)
        rec = self.last_hand
        rec.knocker_meld_mask[0] = k_hand
        rec.knocker_set_mask[0] = 0
        rec.defender_meld_mask[0] = d_sets[0] | d_runs[0]
        rec.defender_set_mask[0] = d_sets[0]
        rec.layoffs[0] = 0
        rec.knocker_deadwood[0] = 0
        rec.defender_deadwood[0] = d_dead[0]
        return self._end_hand(p, int(award[0]))

    def _record(self, p: int, k_hand: int, d_hand: int, seat: int, award: Any, gin: bool,
                big: bool, undercut: bool) -> None:
        rec = self.last_hand
        rec.knocker[0] = p
        rec.knocker_hand[0] = k_hand
        rec.defender_hand[0] = d_hand
        rec.winner[0] = seat
        rec.award[0] = award[0]
        rec.gin[0] = gin
        rec.big_gin[0] = big
        rec.undercut[0] = undercut
        rec.dead[0] = False
        rec.valid[0] = True

    def _end_hand(
        self, seat: int, award: int, dead: bool = False
    ) -> tuple[tuple[float, float], dict[str, Any]]:
        """``VectorGame._end_hands`` for this game: record, post, reward, next deal."""
        rec = self.last_hand
        info = self._quiet_info.copy()
        info["hand_over"] = True
        rewards = (0.0, 0.0)
        if dead:
            rec.knocker[0] = -1
            rec.knocker_hand[0] = self.hands[0]
            rec.defender_hand[0] = self.hands[1]
            rec.winner[0] = -1
            rec.award[0] = 0
            rec.gin[0] = rec.big_gin[0] = rec.undercut[0] = False
            rec.dead[0] = True
            rec.valid[0] = True
            info["dead_hand"] = True
            next_dealer = self.dealer if self._same_dealer_after_dead else 1 - self.dealer
        else:
            info["hand_winner"] = seat
            info["award"] = award
            info["gin"] = bool(rec.gin[0])
            info["big_gin"] = bool(rec.big_gin[0])
            info["undercut"] = bool(rec.undercut[0])
            info["knocker"] = int(rec.knocker[0])
            info["knocker_deadwood"] = int(rec.knocker_deadwood[0])
            info["defender_deadwood"] = int(rec.defender_deadwood[0])
            next_dealer = seat if self._winner_deals else 1 - self.dealer
            seats = np.array([seat], np.int64)
            result = post(self.rules, self.sheets, _ROW0, seats, np.array([award], np.int64))
            reward_arr = np.zeros((1, 2), np.float32)
            # The engine's own reward code, on this one game.
            VectorGame._reward(self, _ROW0, seats, result, reward_arr)  # type: ignore[arg-type]
            r0, r1 = reward_arr[0].tolist()
            rewards = (r0, r1)
            if bool(result.match_over[0]):
                info["match_over"] = True
                info["match_winner"] = int(result.match_winner[0])
                info["final_scores"] = self.sheets.scores[0].copy()
                if not self.autoreset:
                    _copy_sheet(self.sheets, self.last_match)
                    self.phase = A.PHASE_MATCH_OVER
                    self.legal = 0
                    self._refresh_sheet()
                    return rewards, info
                self._new_match()
                next_dealer = int(random_dealers(self.seeds, self._match_numbers())[0])
            else:
                self._refresh_sheet()
        self._deal(self._shuffled(), next_dealer)
        return rewards, info

    def _refresh_sheet(self) -> None:
        self._sheet_bytes = (_sheet_floats(self.sheets, self._target, 0),
                             _sheet_floats(self.sheets, self._target, 1))
        self._obs = [None, None]

    # ------------------------------------------------------------------ observe
    def observation_bytes(self, seat: int) -> bytes:
        """``observation.encode`` of ``seat``'s view as raw float32 bytes (cached per step)."""
        cached = self._obs[seat]
        if cached is not None:
            return cached
        own = self.hands[seat]
        size = self.pile_size
        top = 1 << self.pile[size - 1] if size else 0
        pile_mask = self.pile_mask
        opp_known = self.known[1 - seat]
        to_move = self.current_player == seat
        discarding = to_move and self.phase == A.PHASE_DISCARD
        forbidden = 0
        if discarding and self._forbid and self.taken_card >= 0:
            forbidden = 1 << self.taken_card
        planes = (own | top << 52 | (pile_mask & ~top) << 104 | opp_known << 156
                  | (_FULL & ~(own | pile_mask | opp_known)) << 208 | forbidden << 260)
        parts = [_BITS_F32[x] for x in planes.to_bytes(39, "little")]
        if discarding:
            after = self._after_bytes
            if after is None:
                hundredths = _HUNDREDTHS
                after = b"".join([hundredths[v] for v in self.discard_deadwood])
                self._after_bytes = after
            parts.append(after)
        else:
            parts.append(_NO_DISCARD)
        parts += (_PHASE[self.phase], _FLAG[to_move], _FLAG[self.dealer == seat],
                  _STOCK[NUM_CARDS - self.stock_pos], _LIMIT[self.knock_limit],
                  _HUNDREDTHS[self._deadwood[seat]], self._sheet_bytes[seat])
        out = b"".join(parts)
        self._obs[seat] = out
        return out

    def observation(self, seat: int) -> np.ndarray:
        """(OBS_DIM,) float32: ``observation.encode`` for ``seat`` (a fresh, writable array)."""
        return np.frombuffer(bytearray(self.observation_bytes(seat)), np.float32)

    def observe(self, player: int | None = None) -> dict[str, np.ndarray]:
        """``VectorGame.observe`` for this game, unbatched: (OBS_DIM,) and (108,)."""
        if player is None:
            seat = self.current_player
            mask = self.legal
        else:
            if player not in (0, 1) or isinstance(player, bool):
                raise ValueError(f"player must be 0, 1 or None, got {player!r}")
            seat = int(player)
            mask = self.legal if self.current_player == seat else 0
        return {"observation": self.observation(seat),
                "action_mask": np.frombuffer(bytearray(mask_bytes(mask)), np.int8)}

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, np.ndarray]:
        """``VectorGame.state_dict()`` of the equivalent one-game engine."""
        return self.arrays.state_dict()


def _copy_sheet(src: SheetBatch, dst: SheetBatch) -> None:
    for name in ("scores", "decided", "column_winner", "wins", "boxes", "match_winner"):
        getattr(dst, name)[...] = getattr(src, name)


class SingleGameArrays:
    """A :class:`SingleGame` seen through the ``VectorGame`` array layout (one game).

    Every attribute is built from the live game when read, so a view kept
    across steps stays current.  Enough of ``VectorGame`` for the renderer,
    the terminal game and ``observation.encode``.
    """

    def __init__(self, game: SingleGame) -> None:
        self._g = game
        self.num_games = 1

    @property
    def rules(self) -> Rules:
        return self._g.rules

    @property
    def hands(self) -> np.ndarray:
        return np.array([self._g.hands], _U64)

    @property
    def known(self) -> np.ndarray:
        return np.array([self._g.known], _U64)

    @property
    def deck(self) -> np.ndarray:
        return np.array([self._g.deck], np.int8)

    @property
    def pile(self) -> np.ndarray:
        return np.array([self._g.pile], np.int8)

    @property
    def discard_deadwood(self) -> np.ndarray:
        return np.array([self._g.discard_deadwood], np.int16)

    @property
    def stock_pos(self) -> np.ndarray:
        return np.array([self._g.stock_pos], np.int16)

    @property
    def stock_size(self) -> np.ndarray:
        return np.array([self._g.stock_size], np.int16)

    @property
    def pile_size(self) -> np.ndarray:
        return np.array([self._g.pile_size], np.int16)

    @property
    def pile_mask(self) -> np.ndarray:
        return np.array([self._g.pile_mask], _U64)

    @property
    def phase(self) -> np.ndarray:
        return np.array([self._g.phase], np.int8)

    @property
    def current_player(self) -> np.ndarray:
        return np.array([self._g.current_player], np.int8)

    @property
    def dealer(self) -> np.ndarray:
        return np.array([self._g.dealer], np.int8)

    @property
    def taken_card(self) -> np.ndarray:
        return np.array([self._g.taken_card], np.int8)

    @property
    def knock_limit(self) -> np.ndarray:
        return np.array([self._g.knock_limit], np.int8)

    @property
    def takes(self) -> np.ndarray:
        return np.array([self._g.takes], np.int16)

    @property
    def big_gin_ready(self) -> np.ndarray:
        return np.array([self._g.big_gin_ready], bool)

    @property
    def deal_number(self) -> np.ndarray:
        return np.array([self._g.deal_number], np.int64)

    @property
    def match_number(self) -> np.ndarray:
        return np.array([self._g.match_number], np.int64)

    @property
    def hands_in_match(self) -> np.ndarray:
        return np.array([self._g.hands_in_match], np.int32)

    @property
    def seeds(self) -> np.ndarray:
        return self._g.seeds.copy()

    @property
    def sheets(self) -> SheetBatch:
        return self._g.sheets

    @property
    def last_match(self) -> SheetBatch:
        return self._g.last_match

    @property
    def last_hand(self) -> HandRecord:
        return self._g.last_hand

    @property
    def scores(self) -> np.ndarray:
        return self._g.sheets.scores

    @property
    def wins(self) -> np.ndarray:
        return self._g.sheets.wins

    @property
    def column_winner(self) -> np.ndarray:
        return self._g.sheets.column_winner

    def sheet(self, i: int = 0) -> Sheet:
        return self._g.sheets.sheet(i)

    def top_discard(self) -> np.ndarray:
        return np.array([self._g.top_discard], np.int16)

    def legal_action_mask(self) -> np.ndarray:
        return self._g.legal_action_mask()[None, :]

    def observe(self, player: int | None = None) -> dict[str, np.ndarray]:
        obs = self._g.observe(player)
        return {key: value[None, :] for key, value in obs.items()}

    _STATE = VectorGame._STATE

    def state_dict(self) -> dict[str, np.ndarray]:
        state = {name: getattr(self, name) for name in self._STATE}
        for name in ("scores", "decided", "column_winner", "wins", "boxes", "match_winner"):
            state[f"sheet_{name}"] = getattr(self._g.sheets, name).copy()
        return state
