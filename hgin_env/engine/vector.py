"""VectorGame: B complete Hollywood matches at once, stepped as whole arrays.

The state is one value, a :class:`~hgin_env.state.GameState` (struct of
arrays, game index first); this class steps it.  The per-step part of a turn
(draw, take, pass, discard, the legal mask) is written here as whole-array
numpy over the games taking the same kind of action, with no Python loop
over games.  Everything that happens once per hand (deal, showdown, posting,
rewards, next dealer, autoreset) lives in :mod:`hgin_env.engine.hand`, shared with
the one-game fast path :class:`~hgin_env.engine.single.SingleGame`.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS, unpack_masks
from hgin_env.engine.hand import (
    MAX_HANDS_PER_MATCH,
    REWARD_MODES,
    HandOutcome,
    HandRecord,
    empty_info,
    end_hands,
    game_seeds,
    next_matches,
    random_dealers,
    resolve_big_gins,
    resolve_knocks,
    restart,
    shuffled_decks,
    stock_exhausted,
)
from hgin_env.hollywood import Sheet, SheetBatch
from hgin_env.melds import discard_table_unchecked, min_deadwood
from hgin_env.rules import Rules, load_rules
from hgin_env.state import FIELD_NAMES, GameState, validate

__all__ = [
    "MAX_HANDS_PER_MATCH",
    "REWARD_MODES",
    "HandRecord",
    "VectorGame",
    "check_dealers",
    "check_decks",
    "copy_record",
    "game_seeds",
    "legal_mask",
    "random_dealers",
    "reset_arguments",
    "shuffled_decks",
]

_U64 = np.uint64
_ONE = _U64(1)


def _bits(cards: np.ndarray) -> np.ndarray:
    return _ONE << cards.astype(_U64)


def _frozen_copy(array: np.ndarray) -> np.ndarray:
    """A read-only copy: it never changes after a later step, and a write into it (which
    would change nothing in the game) fails loudly instead of silently."""
    out = array.copy()
    out.flags.writeable = False
    return out


def _state_copy(name: str) -> property:
    # A copy: the engine writes these arrays in place every step, so a view would change
    # under the caller.  Internal code reads ``self.state`` and pays for no copy.
    def get(self: VectorGame) -> np.ndarray:
        return _frozen_copy(getattr(self.state, name))

    return property(get, doc=f"A copy of ``state.{name}`` (see :data:`hgin_env.state.FIELDS`)")


def copy_record(record: HandRecord) -> HandRecord:
    """A copy of every array of ``record``, which the engine goes on writing in place."""
    return HandRecord(**{f.name: getattr(record, f.name).copy() for f in fields(record)})


class VectorGame:
    """B independent Hollywood matches stepped together.

    ``state`` is the whole game (:class:`~hgin_env.state.GameState`), live: the
    engine writes its arrays in place.  Every array the engine hands out
    (the state fields as attributes, ``game.hands``, ``game.phase`` … as read-only copies,
    ``sheets``, ``scores``, ``last_hand``, ``last_match``, the legal mask,
    ``observe`` and ``step``'s results) never changes after later steps or
    resets: a copy, or a read-only array the engine replaces instead of
    writing into it (the legal mask).  To change the game, write ``state``.
    ``last_hand`` and ``last_match`` keep the last finished hand and match of
    each game for display.

    With ``autoreset=True`` (the default) a finished match is replaced by a
    fresh one in the same step; ``last_match`` keeps its final sheet.  With
    ``autoreset=False`` the game stays in ``PHASE_MATCH_OVER`` (no legal
    action, final position and sheet kept) until :meth:`reset_games`.  A match
    still undecided after :data:`MAX_HANDS_PER_MATCH` hands ends the same way,
    truncated: ``info["truncated"]`` (not ``match_over``), no winner, no reward
    (docs/rules.md Appendix C).
    """

    def __init__(
        self,
        num_games: int,
        rules: Rules | str | None = None,
        seed: int | np.ndarray | None = None,
        reward: str = "columns",
        autoreset: bool = True,
    ) -> None:
        if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)) \
                or num_games < 1:
            raise ValueError(f"num_games must be a positive integer, got {num_games!r}")
        if reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        if not isinstance(autoreset, (bool, np.bool_)):
            raise ValueError(f"autoreset must be True or False, got {autoreset!r}")
        self.rules = load_rules(rules)
        self.reward_mode = reward
        self.autoreset = bool(autoreset)
        self.state = GameState.zeros(int(num_games), self.rules)
        self.state.seeds[:] = game_seeds(seed, self.num_games)
        # The sheet of each game's last finished match (kept through the autoreset) and
        # its last finished hand: written in place by the engine, handed out as copies.
        self._last_match = SheetBatch.new(self.num_games, self.rules)
        self._last_hand = HandRecord.empty(self.num_games)
        self._mask: np.ndarray | None = None
        self.reset(seed=None if seed is None else self.state.seeds)

    @classmethod
    def from_state(
        cls, state: GameState, reward: str = "columns", autoreset: bool = True
    ) -> VectorGame:
        """An engine that continues ``state`` (validated; the engine owns a clone)."""
        validate(state)
        game = cls.__new__(cls)
        if reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        game.rules = state.rules
        game.reward_mode = reward
        game.autoreset = bool(autoreset)
        game.state = state.clone()
        game._last_match = SheetBatch.new(state.num_games, state.rules)
        game._last_hand = HandRecord.empty(state.num_games)
        game._mask = None
        return game

    def __getstate__(self) -> dict[str, Any]:
        """The pickle keeps its old keys (``last_hand``, ``last_match``); the legal mask
        is left out (it is derived from the state, and must stay read-only)."""
        data = dict(self.__dict__)
        data["last_hand"] = data.pop("_last_hand")
        data["last_match"] = data.pop("_last_match")
        data["_mask"] = None
        return data

    def __setstate__(self, data: dict[str, Any]) -> None:
        data = dict(data)
        data["_last_hand"] = data.pop("last_hand")
        data["_last_match"] = data.pop("last_match")
        data["_mask"] = None  # an old pickle's mask would come back writable
        self.__dict__.update(data)

    # ------------------------------------------------------------------ views
    @property
    def num_games(self) -> int:
        return self.state.num_games

    @property
    def sheets(self) -> SheetBatch:
        """A copy of the score sheets (the engine posts to its own in place)."""
        return self.state.sheets.copy()

    @property
    def last_match(self) -> SheetBatch:
        """A copy of the sheet of each game's last finished match (kept through the
        autoreset; the engine writes its own in place)."""
        return self._last_match.copy()

    @property
    def last_hand(self) -> HandRecord:
        """A copy of each game's last finished hand (the engine writes its own in place)."""
        return copy_record(self._last_hand)

    @property
    def stock_size(self) -> np.ndarray:
        """(B,) cards left in the stock (a new array)."""
        return self.state.stock_size

    @property
    def scores(self) -> np.ndarray:
        """A read-only copy of ``sheets.scores``: cheaper than ``sheets`` for the scores."""
        return _frozen_copy(self.state.sheets.scores)

    @property
    def wins(self) -> np.ndarray:
        """A read-only copy of ``sheets.wins``."""
        return _frozen_copy(self.state.sheets.wins)

    @property
    def column_winner(self) -> np.ndarray:
        """A read-only copy of ``sheets.column_winner``."""
        return _frozen_copy(self.state.sheets.column_winner)

    @property
    def truncated(self) -> np.ndarray:
        """(B,) bool: the game is parked (``autoreset=False``) after a match that the
        match bound (``hand.MAX_HANDS_PER_MATCH``) cut off undecided, with no winner."""
        return (self.state.phase == A.PHASE_MATCH_OVER) & ~self.state.sheets.match_over

    def sheet(self, i: int) -> Sheet:
        return self.state.sheets.sheet(int(i))

    def top_discard(self) -> np.ndarray:
        """(B,) card id on top of the discard pile, -1 where the pile is empty."""
        return self.state.top_discard()

    def clone(self) -> VectorGame:
        """An independent copy of the engine (state, records and settings)."""
        game = VectorGame.from_state(self.state, self.reward_mode, self.autoreset)
        game._last_match = self._last_match.copy()
        game._last_hand = copy_record(self._last_hand)
        return game

    # ------------------------------------------------------------------ reset
    def reset(
        self,
        seed: int | np.ndarray | None = None,
        decks: np.ndarray | None = None,
        dealer: np.ndarray | None = None,
    ) -> None:
        """Start B fresh matches.

        ``decks`` (B, 52) fixes the card order of each first deal (cards dealt
        alternately from index 0, non-dealer first; index 20 the upcard; the
        stock drawn from index 21 on); ``dealer`` (B,) fixes the first dealers.
        Later deals are shuffled from the seed.  Without any argument, every
        game continues its own seed stream with its next match (as Gymnasium's
        ``reset()`` continues the generator), so it never replays old deals;
        ``reset(seed=s)`` starts the stream of ``s`` from its first match.
        """
        b = self.num_games
        if seed is None and decks is None and dealer is None and self.state.deal_number.max() > 0:
            self._last_match.reset_rows(np.arange(b))
            self._last_hand = HandRecord.empty(b)
            self.reset_games(np.arange(b))
            return
        restart(self.state, *reset_arguments(self.state.seeds, seed, decks, dealer))
        self._last_match.reset_rows(np.arange(b))
        self._last_hand = HandRecord.empty(b)
        self._mask = None

    def reset_games(self, rows: np.ndarray | list[int]) -> None:
        """Start a fresh match (new seeded deal and dealer) in the listed games only."""
        rows = np.unique(np.asarray(rows, dtype=np.int64).reshape(-1))
        if rows.size and (rows.min() < 0 or rows.max() >= self.num_games):
            raise ValueError(
                f"game indices must be in 0..{self.num_games - 1}, got {rows.tolist()}"
            )
        if rows.size == 0:
            return
        next_matches(self.state, rows)
        self._mask = None

    # ------------------------------------------------------------------ masks
    def legal_action_mask(self) -> np.ndarray:
        """(B, 108) int8: 1 exactly for the legal actions of the player to move.

        Read-only: the engine checks actions against this same array, so it
        must not be changed by callers (copy it to edit).  It never changes
        either: a step or reset builds a new one.
        """
        return self._legal()

    def _legal(self) -> np.ndarray:
        """The cached mask: a read-only view of a read-only array, so that a caller
        cannot make it writable again (numpy refuses while the base is read-only)."""
        mask = self._mask
        if mask is None:
            base = legal_mask(self.state)
            base.flags.writeable = False
            mask = self._mask = base.view()
        return mask

    # ------------------------------------------------------------------ step
    def step(
        self, actions: np.ndarray, active: np.ndarray | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Apply one action per game for the player to move.

        Returns ``(rewards, info)``: rewards (B, 2) for both seats and (B,)
        arrays describing the hands and matches this step ended.  ``active``
        (B,) bool, optional, steps only those games (the others' actions are
        ignored).  An illegal action raises ``ValueError`` and changes nothing.
        Both are new arrays, the caller's to keep.
        """
        acts = self._check_actions(actions, active)
        st = self.state
        b = self.num_games
        player = st.current_player.astype(np.int64)
        rewards = np.zeros((b, 2), np.float32)
        info = empty_info(b, self.rules.columns)

        drawn_stock = np.flatnonzero(acts == A.DRAW_STOCK)
        taken = np.flatnonzero(acts == A.TAKE_DISCARD)
        passed = np.flatnonzero(acts == A.PASS)
        discarded = np.flatnonzero((acts >= 0) & (acts < A.KNOCK))
        knocked = np.flatnonzero((acts >= A.KNOCK) & (acts < A.DRAW_STOCK))
        big = np.flatnonzero(acts == A.BIG_GIN)

        if drawn_stock.size:
            g, p = drawn_stock, player[drawn_stock]
            card = st.deck[g, st.stock_pos[g]]
            st.hands[g, p] |= _bits(card)
            st.stock_pos[g] += 1
            st.taken_card[g] = -1
            st.phase[g] = A.PHASE_DISCARD
        if taken.size:
            g, p = taken, player[taken]
            top = st.pile_size[g] - 1
            card = st.pile[g, top]
            bit = _bits(card)
            st.pile_size[g] = top
            st.pile_mask[g] &= ~bit
            st.hands[g, p] |= bit
            st.known[g, p] |= bit
            st.taken_card[g] = card
            st.takes[g] += 1
            st.phase[g] = A.PHASE_DISCARD
        drew = np.concatenate([drawn_stock, taken]) if taken.size else drawn_stock
        if drew.size:
            eleven = st.hands[drew, player[drew]]
            st.discard_deadwood[drew] = discard_table_unchecked(eleven)
            if self.rules.big_gin:
                st.big_gin_ready[drew] = min_deadwood(eleven) == 0
        if passed.size:
            g = passed
            first = st.phase[g] == A.PHASE_OFFER_NONDEALER
            st.phase[g] = np.where(first, A.PHASE_OFFER_DEALER, A.PHASE_DRAW_STOCK)
            st.current_player[g] = np.where(first, st.dealer[g], 1 - st.dealer[g])

        dead = np.empty(0, np.int64)
        if discarded.size:
            g, p = discarded, player[discarded]
            self._put_on_pile(g, p, acts[g])
            st.phase[g] = A.PHASE_DRAW
            st.current_player[g] = 1 - p
            dead = g[stock_exhausted(st.stock_pos[g])]
        outcomes = []
        if knocked.size:
            g, p = knocked, player[knocked]
            # The knock discard goes face down; it joins the pile only to keep
            # all 52 cards accounted for until the next deal.
            self._put_on_pile(g, p, acts[g] - A.KNOCK)
            outcomes.append(resolve_knocks(st, self._last_hand, g, p))
        if big.size:
            outcomes.append(resolve_big_gins(st, self._last_hand, big, player[big]))
        outcome = HandOutcome.join(outcomes)
        if dead.size or outcome is not None:
            end_hands(st, dead, outcome, record=self._last_hand, last_match=self._last_match,
                      reward_mode=self.reward_mode, autoreset=self.autoreset,
                      rewards=rewards, info=info)
        self._mask = None
        return rewards, info

    def _check_actions(self, actions: Any, active: Any = None) -> np.ndarray:
        acts = np.asarray(actions)
        if acts.shape != (self.num_games,):
            raise ValueError(
                f"expected {self.num_games} actions (one per game), got shape {acts.shape}"
            )
        if not np.issubdtype(acts.dtype, np.integer):
            raise ValueError(f"actions must be integers, got dtype {acts.dtype}")
        given = acts
        # Out-of-range values (a uint64 2**64-1 included) become -2 before the cast, so
        # the cast never wraps; the message below quotes the value as given.
        acts = np.where((given >= 0) & (given < A.NUM_ACTIONS), given, -2).astype(np.int64)
        if active is not None:
            active = np.asarray(active)
            if active.shape != (self.num_games,) or active.dtype != bool:
                raise ValueError(f"active must be a ({self.num_games},) bool array")
            acts = np.where(active, acts, -1)
        in_range = (acts >= 0) & (acts < A.NUM_ACTIONS)
        if active is not None:
            in_range |= ~active
        legal = in_range.copy()
        mask = self._legal()
        check = np.flatnonzero(in_range & (acts >= 0))
        legal[check] = mask[check, acts[check]] == 1
        if not legal.all():
            i = int(np.flatnonzero(~legal)[0])
            a = int(given[i])
            allowed = np.flatnonzero(mask[i]).tolist()
            phase, player = int(self.state.phase[i]), int(self.state.current_player[i])
            raise ValueError(f"game {i}: " + A.illegal_message(a, phase, player, allowed))
        return acts

    def _put_on_pile(self, g: np.ndarray, p: np.ndarray, cards: np.ndarray) -> None:
        st = self.state
        bit = _bits(cards)
        st.hands[g, p] &= ~bit
        st.known[g, p] &= ~bit
        st.pile[g, st.pile_size[g]] = cards
        st.pile_size[g] += 1
        st.pile_mask[g] |= bit
        st.taken_card[g] = -1

    # ------------------------------------------------------------------ observe
    def observe(self, player: int | None = None) -> dict[str, np.ndarray]:
        """Observation and action mask for the mover of each game, or for one seat.

        The observation is a new array; the mask is :meth:`legal_action_mask`'s
        read-only one for the movers, a new array for one seat.
        """
        from hgin_env.observation import encode

        st = self.state
        mask = self._legal()
        if player is None:
            seats = st.current_player.astype(np.int64)
            action_mask = mask
        else:
            if player not in (0, 1):
                raise ValueError(f"player must be 0, 1 or None, got {player!r}")
            seats = np.full(self.num_games, player, np.int64)
            action_mask = np.where((st.current_player == player)[:, None], mask, 0).astype(
                np.int8
            )
        return {"observation": encode(st, seats), "action_mask": action_mask}

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of every state array (sheets included), for saving and comparison."""
        return self.state.to_dict()

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Continue from a :meth:`state_dict`; checked and validated before anything changes."""
        loaded = GameState.from_dict(state, self.rules)
        if loaded.num_games != self.num_games:
            raise ValueError(
                f"the saved state holds {loaded.num_games} games; this engine has {self.num_games}"
            )
        self.state = loaded
        self._mask = None

    def state_bytes_per_game(self) -> int:
        total = sum(arr.nbytes for arr in self.state_dict().values())
        return total // self.num_games


for _name in FIELD_NAMES:
    setattr(VectorGame, _name, _state_copy(_name))
del _name


def legal_mask(state: GameState) -> np.ndarray:
    """(B, 108) int8 legal actions of the player to move in each game of ``state``.

    A pure function of the state, so search and belief code can ask what was
    legal in positions they build without an engine around them.
    """
    # Whole-column writes over all games: cheaper than fancy-indexing the
    # discarding rows, and stale per-game arrays are masked by the phase.
    st = state
    rules = st.rules
    b = st.num_games
    phase = st.phase
    discarding = phase == A.PHASE_DISCARD
    offer = phase <= A.PHASE_OFFER_DEALER
    draw = phase == A.PHASE_DRAW
    held = unpack_masks(st.hands[np.arange(b), st.current_player]).view(bool)
    held &= discarding[:, None]
    forbidden = rules.forbidden_discard(st.taken_card)
    rows = np.flatnonzero(discarding & (forbidden >= 0))
    held[rows, forbidden[rows]] = False
    mask = np.zeros((b, A.NUM_ACTIONS), np.int8)
    mask[:, : A.KNOCK] = held
    mask[:, A.KNOCK : A.DRAW_STOCK] = held & (st.discard_deadwood <= st.knock_limit[:, None])
    mask[:, A.DRAW_STOCK] = draw | (phase == A.PHASE_DRAW_STOCK)
    mask[:, A.TAKE_DISCARD] = (offer | draw) & rules.pile_open(st.takes)
    mask[:, A.PASS] = offer
    if rules.big_gin:
        mask[:, A.BIG_GIN] = st.big_gin_ready & discarding
    return mask


def reset_arguments(
    seeds_now: np.ndarray, seed: Any, decks: Any, dealer: Any
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """A reset's (seeds, first decks, first dealers), all checked before any state changes."""
    b = seeds_now.shape[0]
    seeds = seeds_now.copy() if seed is None else game_seeds(seed, b)
    deck_arr = None if decks is None else check_decks(decks, b)
    dealers = None if dealer is None else check_dealers(dealer, b)
    return seeds, deck_arr, dealers


def check_dealers(dealer: Any, b: int) -> np.ndarray:
    """``dealer`` as (b,) int8 seats, each 0 or 1, else ValueError."""
    arr = np.asarray(dealer)
    if arr.shape != (b,) or arr.dtype == bool or not np.isin(arr, (0, 1)).all():
        raise ValueError(f"dealer must be 0 or 1 for each of the {b} games, got {dealer!r}")
    return arr.astype(np.int8)


def check_decks(decks: Any, b: int) -> np.ndarray:
    """``decks`` as (b, 52) int8 card orders, each a permutation of the 52 ids, else ValueError."""
    arr = np.asarray(decks)
    if arr.shape != (b, NUM_CARDS):
        raise ValueError(f"decks must have shape ({b}, 52), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"decks must hold card ids, got dtype {arr.dtype}")
    ok = (np.sort(arr, axis=1) == np.arange(NUM_CARDS)).all(axis=1)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"decks[{i}] is not a permutation of the 52 card ids")
    return arr.astype(np.int8)
