"""SingleGame: one Hollywood match with a per-step fast path on Python ints.

At one game, numpy's per-call overhead dominates the batched engine
(:class:`~hgin_env.engine.VectorGame`); the AEC and single-agent Gymnasium
environments run one match, so they step this class instead.

Only the per-step part of a turn is written here, because it must be fast:
the legal actions, the deadwood-after-discard table (for the knock test and
the observation), the turn order of draw/take/pass/discard, and the
observation bytes.  Everything else is the shared code, called for this one
game: the state is a one-game :class:`~hgin_env.state.GameState`
(``self.state``), and dealing, showdowns, posting, rewards, the next dealer
and the next match are :mod:`hgin_env.hand`'s functions applied to it.  The
per-step fields are mirrored as Python ints between hand ends and written
back (:meth:`SingleGame.sync`) before any shared code or reader sees the
state.  ``tests/test_single.py`` checks it against ``VectorGame`` row 0 after
every step of thousands of random matches in every profile.

Differences from ``VectorGame`` row 0, all in the return types: ``step``
returns ``((reward_seat0, reward_seat1), info)`` with Python scalars
(``final_scores`` a (2, C) int32 array); ``observe`` returns unbatched arrays.
"""

from __future__ import annotations

import operator
import struct
from typing import Any

import numpy as np

from . import actions as A
from .cards import NUM_CARDS, NUM_RANKS
from .engine import check_decks
from .hand import (
    REWARD_MODES,
    HandOutcome,
    HandRecord,
    deal,
    deal_next,
    empty_info,
    end_hands,
    game_seeds,
    random_dealers,
    resolve_big_gins,
    resolve_knocks,
    shuffled_decks,
    start_new_matches,
)
from .hollywood import Sheet, SheetBatch
from .melds import RUN_DEADWOOD, RUN_DEADWOOD_MINUS, SENTINEL
from .observation import (
    DEADWOOD_SCALE,
    KNOCK_LIMIT_SCALE,
    MAX_COLUMNS,
    OBS_DIM,
    STOCK_SCALE,
    observation_spec,
)
from .rules import Rules, load_rules
from .state import DEAD_HAND_POS, FIELD_NAMES, GameState

__all__ = ["SingleGame", "SingleGameArrays", "discard_table", "mask_bytes", "min_deadwood"]

_FULL = (1 << NUM_CARDS) - 1
_SUIT = (1 << NUM_RANKS) - 1

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
_HUNDREDTHS = [_f32(v / DEADWOOD_SCALE) for v in range(SENTINEL)] + [_ZERO_F]
_STOCK = [_f32(s / STOCK_SCALE) for s in range(NUM_CARDS + 1)]
_LIMIT = [_f32(k / KNOCK_LIMIT_SCALE) for k in range(11)]
_PHASE = [b"".join(_FLAG[p == q] for q in range(A.NUM_PHASES)) for p in range(A.NUM_PHASES)]
_PHASE.append(_ZERO_F * A.NUM_PHASES)  # PHASE_MATCH_OVER: no live phase
_NO_DISCARD = _ZERO_F * NUM_CARDS
_SHEET_START = _SPEC["column_exists"].start
assert _SPEC["deadwood_after_discard"].start == 6 * NUM_CARDS
assert _SPEC["phase"].start == 7 * NUM_CARDS and _SHEET_START == _SPEC["deadwood"].stop
assert OBS_DIM - _SHEET_START == 8 * MAX_COLUMNS

_OFFER = 1 << A.TAKE_DISCARD | 1 << A.PASS
_STOCK_ONLY = 1 << A.DRAW_STOCK
_DRAW_ANY = 1 << A.DRAW_STOCK | 1 << A.TAKE_DISCARD  # while the pile is open (§5 take limit)
_LEGAL_BY_PHASE = {
    A.PHASE_OFFER_NONDEALER: _OFFER,
    A.PHASE_OFFER_DEALER: _OFFER,
    A.PHASE_DRAW_STOCK: _STOCK_ONLY,
    A.PHASE_DRAW: _DRAW_ANY,
    A.PHASE_MATCH_OVER: 0,
}
_BYTE_BITS_SET = [[i for i in range(8) if v >> i & 1] for v in range(256)]
#: Per byte k of a legal-action mask: byte value -> the action ids its set bits stand for.
_BYTE_POSITIONS = [[[8 * k + i for i in bits] for bits in _BYTE_BITS_SET] for k in range(14)]


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

#: Fields mirrored as Python ints/lists while a hand runs (the rest stay in ``state``).
_MIRRORED = ("hands", "known", "deck", "stock_pos", "pile", "pile_size", "pile_mask", "phase",
             "current_player", "dealer", "taken_card", "takes", "knock_limit",
             "discard_deadwood", "big_gin_ready")


class SingleGame:
    """One Hollywood match, ``VectorGame(1, rules, seed, reward, autoreset)`` on Python ints.

    ``state`` is the game as a one-game :class:`~hgin_env.state.GameState`
    (synced on access).  The per-step fields are also plain attributes
    (``hands``/``known`` ``[seat0, seat1]`` masks, ``deck`` and ``pile`` lists,
    ``stock_pos``, ``phase``, ``current_player`` …), read-only by convention.
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
        self.rules = r = load_rules(rules)
        self.reward_mode = reward
        self.autoreset = bool(autoreset)
        self.num_games = 1
        self._target = r.target
        self._quiet_info = {key: value[0].item() for key, value in
                            empty_info(1, r.columns).items() if key != "final_scores"}
        self._quiet_scores = np.zeros((2, r.columns), np.int32)
        self._quiet_scores.flags.writeable = False
        self._quiet_info["final_scores"] = self._quiet_scores
        self._state = GameState.zeros(1, r)
        self._state.seeds[:] = game_seeds(seed, 1)
        self.last_match = SheetBatch.new(1, r)
        self.last_hand = HandRecord.empty(1)
        self._row = np.zeros(1, np.int64)
        self._arrays: SingleGameArrays | None = None
        self.reset(seed=None if seed is None else self._state.seeds)

    # ------------------------------------------------------------------ state
    def sync(self) -> GameState:
        """Write the per-step mirrors into ``state`` and return it (live, one game)."""
        st = self._state
        for name in _MIRRORED:
            getattr(st, name)[0] = getattr(self, name)
        return st

    def _load(self) -> None:
        """Read the mirrors back from ``state`` after shared code changed it."""
        st = self._state
        for name in _MIRRORED:
            value = getattr(st, name)[0]
            setattr(self, name, value.tolist())
        self._deadwood = [min_deadwood(self.hands[0]), min_deadwood(self.hands[1])]
        self._banned_bit = 0
        if self.taken_card >= 0:
            self._on_take(self.taken_card)
        self._pile_open = self.rules.pile_open(self.takes)
        self.legal = self._legal_now()
        self._after_bytes = None
        self._obs = [None, None]
        self._mask = None

    @property
    def state(self) -> GameState:
        """The game as a one-game ``GameState`` (synced; shared by later reads until a step)."""
        return self.sync()

    def state_dict(self) -> dict[str, np.ndarray]:
        """``VectorGame.state_dict()`` of the equivalent one-game engine."""
        return self.sync().to_dict()

    @property
    def seeds(self) -> np.ndarray:
        return self._state.seeds

    @property
    def seed(self) -> int:
        return int(self._state.seeds[0])

    @property
    def deal_number(self) -> int:
        return int(self._state.deal_number[0])

    @property
    def match_number(self) -> int:
        return int(self._state.match_number[0])

    @property
    def hands_in_match(self) -> int:
        return int(self._state.hands_in_match[0])

    @property
    def sheets(self) -> SheetBatch:
        return self._state.sheets

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
        """A live read-only view in the ``VectorGame`` array layout."""
        if self._arrays is None:
            self._arrays = SingleGameArrays(self)
        return self._arrays

    def sheet(self, i: int = 0) -> Sheet:
        return self._state.sheets.sheet(i)

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | np.ndarray | None = None, deck: Any = None,
              dealer: int | None = None) -> None:
        """Start a fresh match, as ``VectorGame.reset`` does for its one game.

        ``deck`` (52 card ids) fixes the first deal, ``dealer`` (0 or 1) the
        first dealer; later deals are shuffled from the seed.  Without any
        argument, the game continues its seed stream with its next match.
        """
        st = self._state
        if seed is None and deck is None and dealer is None and st.deal_number[0] > 0:
            self.last_match.reset_rows(self._row)
            self.last_hand = HandRecord.empty(1)
            self.next_match()
            return
        seeds = st.seeds.copy() if seed is None else game_seeds(seed, 1)
        cards = None if deck is None else check_decks(np.asarray(deck)[None, :], 1)
        if dealer is None:
            first = random_dealers(seeds, np.zeros(1, np.int64))
        else:
            if isinstance(dealer, bool) or dealer not in (0, 1):
                raise ValueError(f"dealer must be 0 or 1, got {dealer!r}")
            first = np.array([dealer], np.int8)
        st.seeds[:] = seeds
        st.deal_number[:] = 0
        st.match_number[:] = 0
        st.hands_in_match[:] = 0
        st.sheets.reset_rows(self._row)
        self.last_match.reset_rows(self._row)
        self.last_hand = HandRecord.empty(1)
        deal(st, self._row, shuffled_decks(seeds, st.deal_number) if cards is None else cards,
             first)
        self._refresh_sheet()
        self._load()

    def next_match(self) -> None:
        """Start the next match of this game's seed stream (``VectorGame.reset_games([0])``)."""
        st = self.sync()
        start_new_matches(st, self._row)
        deal_next(st, self._row, random_dealers(st.seeds, st.match_number))
        self._refresh_sheet()
        self._load()

    # ------------------------------------------------------------------ legality
    def _legal_now(self) -> int:
        """The legal-action bit mask from the mirrors (after a deal or a load)."""
        phase = self.phase
        if phase == A.PHASE_DISCARD:
            return self._discard_legal(self.current_player)
        legal = _LEGAL_BY_PHASE[phase]
        if not self._pile_open:
            legal &= ~(1 << A.TAKE_DISCARD)
        return legal

    def legal_actions(self) -> list[int]:
        """The legal action ids, ascending (read byte by byte from a table)."""
        out: list[int] = []
        for positions, byte in zip(_BYTE_POSITIONS, self.legal.to_bytes(14, "little"), strict=True):
            if byte:
                out += positions[byte]
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
            self._banned_bit = 0
            self.phase = A.PHASE_DISCARD
            self.legal = self._discard_legal(p)
        elif a == A.TAKE_DISCARD:
            self.pile_size -= 1
            card = self.pile[self.pile_size]
            bit = 1 << card
            self.pile_mask &= ~bit
            self.hands[p] |= bit
            self.known[p] |= bit
            self.taken_card = card
            self.takes += 1
            self._on_take(card)
            self.phase = A.PHASE_DISCARD
            self.legal = self._discard_legal(p)
        elif a == A.PASS:
            if self.phase == A.PHASE_OFFER_NONDEALER:
                self.phase = A.PHASE_OFFER_DEALER
                self.current_player = self.dealer
                self.legal = _OFFER  # the pile cannot be closed before the first draw
            else:
                self.phase = A.PHASE_DRAW_STOCK
                self.current_player = 1 - self.dealer
                self.legal = _STOCK_ONLY
        elif a < A.KNOCK:
            self._put_on_pile(p, a)
            self.phase = A.PHASE_DRAW
            self.current_player = 1 - p
            self.legal = _DRAW_ANY if self._pile_open else _STOCK_ONLY
            if self.stock_pos == DEAD_HAND_POS:  # hand.stock_exhausted, inlined per step
                return self._end_hand(None)
        elif a < A.DRAW_STOCK:
            # The knock discard goes face down; it joins the pile only to keep all
            # 52 cards accounted for until the next deal (as in the engine).
            self._put_on_pile(p, a - A.KNOCK)
            return self._end_hand(resolve_knocks)
        else:  # BIG_GIN
            return self._end_hand(resolve_big_gins)
        return (0.0, 0.0), self._quiet_info.copy()

    def _on_take(self, card: int) -> None:
        """Once per take: the rules' forbidden discard and take limit, kept as flags."""
        banned = self.rules.forbidden_discard(card)
        self._banned_bit = 1 << banned if banned >= 0 else 0
        self._pile_open = self.rules.pile_open(self.takes)

    def _discard_legal(self, p: int) -> int:
        best, after, knocks = discard_table(self.hands[p], self.knock_limit)
        self.discard_deadwood = after
        self._after_bytes = None
        self._deadwood[p] = best
        allowed = self.hands[p] & ~self._banned_bit
        legal = allowed | (knocks & allowed) << A.KNOCK
        if self.rules.big_gin:
            self.big_gin_ready = best == 0
            if best == 0:
                legal |= 1 << A.BIG_GIN
        return legal

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
    def _end_hand(self, resolve: Any) -> tuple[tuple[float, float], dict[str, Any]]:
        """The shared end of hand (``hand.end_hands``) on this game; None: a dead hand."""
        st = self._state
        # What the end of a hand reads, or keeps (stale slots) through the next deal; the
        # deal rewrites the rest, and a match parked without autoreset is synced whole below.
        st.hands[0] = self.hands
        st.pile[0] = self.pile
        st.discard_deadwood[0] = self.discard_deadwood
        row = self._row
        outcome: HandOutcome | None = None
        if resolve is not None:
            outcome = resolve(st, self.last_hand, row, np.array([self.current_player], np.int64))
        # float64, so that an episode's returns add up exactly (VectorGame's are float32).
        rewards = np.zeros((1, 2), np.float64)
        info = empty_info(1, self.rules.columns)
        end_hands(st, row if outcome is None else row[:0], outcome, record=self.last_hand,
                  last_match=self.last_match, reward_mode=self.reward_mode,
                  autoreset=self.autoreset, rewards=rewards, info=info)
        out = {key: value[0].item() for key, value in info.items() if key != "final_scores"}
        out["final_scores"] = info["final_scores"][0] if out["match_over"] else self._quiet_scores
        if st.phase[0] == A.PHASE_MATCH_OVER:
            self.phase = A.PHASE_MATCH_OVER
            self.sync()
        if outcome is not None:
            self._refresh_sheet()
        self._load()
        r0, r1 = rewards[0].tolist()
        return (r0, r1), out

    def _refresh_sheet(self) -> None:
        self._sheet_bytes = (_sheet_floats(self.sheets, self._target, 0),
                             _sheet_floats(self.sheets, self._target, 1))

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
        forbidden = self._banned_bit if discarding else 0
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


class SingleGameArrays:
    """A :class:`SingleGame` seen through the ``VectorGame`` attribute layout (one game).

    Every state array (:data:`hgin_env.state.FIELDS`) is read from the synced
    state when asked for, so a view kept across steps stays current; enough
    of ``VectorGame`` for the renderer, the terminal game and ``encode``.
    """

    def __init__(self, game: SingleGame) -> None:
        self._g = game
        self.num_games = 1

    def __getattr__(self, name: str) -> Any:
        if name in FIELD_NAMES:
            return getattr(self._g.state, name).copy()
        if name in ("rules", "sheets", "last_match", "last_hand"):
            return getattr(self._g, name)
        raise AttributeError(name)

    @property
    def stock_size(self) -> np.ndarray:
        return self._g.state.stock_size

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
        return self._g.state.top_discard()

    def legal_action_mask(self) -> np.ndarray:
        return self._g.legal_action_mask()[None, :]

    def observe(self, player: int | None = None) -> dict[str, np.ndarray]:
        return {key: value[None, :] for key, value in self._g.observe(player).items()}

    def state_dict(self) -> dict[str, np.ndarray]:
        return self._g.state_dict()
