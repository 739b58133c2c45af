"""SingleGame: one Hollywood match, with a per-step fast path on Python ints.

At one game numpy's per-call overhead dominates the batched engine, so the AEC
and single-agent environments step this class.  Only the per-step part of a
turn is written here (legality, the deadwood-after-discard table, the turn
order, the observation bytes).  The state is a one-game
:class:`~hgin_env.state.GameState`; dealing, showdowns, posting, rewards and
the next deal are :mod:`hgin_env.engine.hand`'s shared functions applied to it, the
per-step fields mirrored as Python ints in between (:meth:`SingleGame.sync`).
``tests/hgin_env/engine/test_single.py`` checks every step against ``VectorGame`` row 0.
Return types differ: ``step`` gives Python scalars (float64 rewards, so
returns add up exactly), ``observe`` unbatched arrays.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS
from hgin_env.engine.hand import (
    REWARD_MODES,
    HandOutcome,
    HandRecord,
    empty_info,
    end_hands,
    game_seeds,
    next_matches,
    resolve_big_gins,
    resolve_knocks,
    restart,
)
from hgin_env.engine.vector import copy_record, reset_arguments
from hgin_env.hollywood import Sheet, SheetBatch
from hgin_env.int_melds import discard_table, min_deadwood
from hgin_env.obs_bytes import (
    BYTE_ACTION_IDS,
    FLAG,
    FLOAT_BITS,
    HUNDREDTHS,
    LIMIT_FLOATS,
    NO_DISCARD,
    PHASE_FLOATS,
    STOCK_FLOATS,
    mask_bytes,
    sheet_floats,
)
from hgin_env.rules import Rules, load_rules
from hgin_env.state import DEAD_HAND_POS, FIELD_NAMES, GameState

__all__ = ["SingleGame", "SingleGameArrays", "discard_table", "mask_bytes", "min_deadwood"]

_FULL = (1 << NUM_CARDS) - 1

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


# ----------------------------------------------------------------------------- game

#: Fields that change once per match stay in ``state``; the rest are mirrored as Python
#: ints/lists while a hand runs.
_PER_MATCH = ("deal_number", "match_number", "hands_in_match", "seeds")
_MIRRORED = tuple(name for name in FIELD_NAMES if name not in _PER_MATCH)


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
        # Per-step rules tabulated once from Rules: the forbidden discard's bit after
        # taking each card; whether the pile is open after each number of takes.
        self._banned_bits = [1 << b if (b := r.forbidden_discard(c)) >= 0 else 0
                             for c in range(NUM_CARDS)]
        self._open_after = [bool(r.pile_open(t)) for t in range(r.max_discard_takes + 1)]
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
            setattr(self, name, getattr(st, name).tolist()[0])
        self._deadwood = [min_deadwood(self.hands[0]), min_deadwood(self.hands[1])]
        self._banned_bit = self._banned_bits[self.taken_card] if self.taken_card >= 0 else 0
        self._pile_open = self._open_after[self.takes]
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
    def seed(self) -> int:
        return int(self._state.seeds[0])

    @property
    def stock_size(self) -> int:
        return NUM_CARDS - self.stock_pos

    @property
    def top_discard(self) -> int:
        """Card on top of the discard pile, -1 if it is empty."""
        return self.pile[self.pile_size - 1] if self.pile_size else -1

    @property
    def match_over(self) -> bool:
        """The match has ended (decided or truncated) and waits for :meth:`reset`
        (only with ``autoreset=False``)."""
        return self.phase == A.PHASE_MATCH_OVER

    @property
    def truncated(self) -> bool:
        """The match waiting for :meth:`reset` was cut off undecided by the match bound
        (``hand.MAX_HANDS_PER_MATCH``), so it has no winner."""
        return self.phase == A.PHASE_MATCH_OVER and not self._state.sheets.match_over[0]

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
        decks = None if deck is None else np.asarray(deck)[None, :]
        restart(st, *reset_arguments(st.seeds, seed, decks, None if dealer is None else [dealer]))
        self.last_match.reset_rows(self._row)
        self.last_hand = HandRecord.empty(1)
        self._refresh_sheet()
        self._load()

    def next_match(self) -> None:
        """Start the next match of this game's seed stream (``VectorGame.reset_games([0])``)."""
        next_matches(self.sync(), self._row)
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
        """The legal action ids, ascending (read a byte of the mask at a time)."""
        out: list[int] = []
        for ids, byte in zip(BYTE_ACTION_IDS, self.legal.to_bytes(14, "little"), strict=False):
            if byte:
                out += ids[byte]
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
        return A.illegal_message(a, self.phase, self.current_player, self.legal_actions())

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
            self._banned_bit = self._banned_bits[card]
            self._pile_open = self._open_after[self.takes]
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
        out = {key: value.item() for key, value in info.items() if key != "final_scores"}
        ended = out["match_over"] or out["truncated"]
        out["final_scores"] = info["final_scores"][0] if ended else self._quiet_scores
        if st.phase[0] == A.PHASE_MATCH_OVER:
            self.phase = A.PHASE_MATCH_OVER
            self.sync()
        if outcome is not None:
            self._refresh_sheet()
        self._load()
        r0, r1 = rewards[0].tolist()
        return (r0, r1), out

    def _refresh_sheet(self) -> None:
        self._sheet_bytes = (sheet_floats(self.sheets, self._target, 0),
                             sheet_floats(self.sheets, self._target, 1))

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
        parts = [FLOAT_BITS[x] for x in planes.to_bytes(39, "little")]
        if discarding:
            after = self._after_bytes
            if after is None:
                hundredths = HUNDREDTHS
                after = b"".join([hundredths[v] for v in self.discard_deadwood])
                self._after_bytes = after
            parts.append(after)
        else:
            parts.append(NO_DISCARD)
        parts += (PHASE_FLOATS[self.phase], FLAG[to_move], FLAG[self.dealer == seat],
                  STOCK_FLOATS[NUM_CARDS - self.stock_pos], LIMIT_FLOATS[self.knock_limit],
                  HUNDREDTHS[self._deadwood[seat]], self._sheet_bytes[seat])
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


def _counter(name: str) -> property:
    return property(lambda self: int(getattr(self._state, name)[0]), doc=f"``state.{name}[0]``")


for _name in _PER_MATCH[:3]:
    setattr(SingleGame, _name, _counter(_name))
for _name in ("seeds", "sheets"):
    setattr(SingleGame, _name, property(lambda self, n=_name: getattr(self._state, n),
                                        doc=f"``state.{_name}``"))
del _name


class SingleGameArrays:
    """A :class:`SingleGame` seen through the ``VectorGame`` attribute layout (one game).

    Each array is read from the synced state when asked for, and is a new
    array (a copy of the game's, or computed): the game writes its own in
    place, so what a caller keeps never changes after a step, while the view
    itself stays current.  Enough of ``VectorGame`` for the renderer, the
    terminal game and ``encode``.
    """

    _FROM_STATE = frozenset({"stock_size", "top_discard", "sheet"})

    def __init__(self, game: SingleGame) -> None:
        self._g = game
        self.num_games = 1

    def __getattr__(self, name: str) -> Any:
        # ``self._g`` only in the branches: an unpickled view asks for names (such as
        # ``__setstate__``) before ``_g`` is set.
        if name in FIELD_NAMES:
            return getattr(self._g.state, name).copy()
        if name in ("rules", "state_dict"):  # immutable rules; state_dict() copies
            return getattr(self._g, name)
        if name in ("sheets", "last_match"):
            return getattr(self._g, name).copy()
        if name == "last_hand":
            return copy_record(self._g.last_hand)
        if name in self._FROM_STATE:  # stock_size, top_discard() and sheet() build new arrays
            return getattr(self._g.state, name)
        if name in ("scores", "wins", "column_winner"):
            return getattr(self._g.sheets, name).copy()
        raise AttributeError(name)

    def legal_action_mask(self) -> np.ndarray:
        """(1, 108) int8, a new array."""
        return self._g.legal_action_mask()[None, :]

    def observe(self, player: int | None = None) -> dict[str, np.ndarray]:
        """``VectorGame.observe`` of the one game: new (1, OBS_DIM) and (1, 108) arrays."""
        return {key: value[None, :] for key, value in self._g.observe(player).items()}
