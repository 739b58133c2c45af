"""GameState: the complete state of B Hollywood matches as one value.

Everything the engine needs to continue a match lives here, as a struct of
numpy arrays with the game index first (pgx style), plus the rules and the
score sheets.  The field list is written once, in :data:`FIELDS`; the
engine's arrays, ``state_dict``/``load_state_dict``, the one-game fast path
and the tests' snapshots all derive from it.  A state can be cloned, sliced
(:meth:`GameState.take`), written into another (:meth:`GameState.put`),
checked (:func:`validate`) and built mid-hand from explicit cards
(:func:`from_position`), which is what search and replays need.

Card layout of a deal (``deck``): index 0..19 dealt alternately, non-dealer
first; index 20 the first upcard; the stock is ``deck[stock_pos:]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS, popcount64
from hgin_env.hollywood import Sheet, SheetBatch
from hgin_env.rules import Rules, load_rules, require_rules

__all__ = [
    "FIELDS",
    "HAND_CARDS",
    "STOCK_START",
    "Field",
    "GameState",
    "GameView",
    "from_position",
    "validate",
]

_U64 = np.uint64
_FULL = (1 << NUM_CARDS) - 1
#: Cards in a hand between turns.
HAND_CARDS = 10
#: ``stock_pos`` right after the deal (20 cards dealt, 1 upcard).
STOCK_START = 21
#: ``stock_pos`` at which a discard ends the hand as a dead hand (2 stock cards left).
DEAD_HAND_POS = NUM_CARDS - 2


class Field(NamedTuple):
    """One per-game array of the state: dtype, shape after the game axis, fill value."""

    name: str
    dtype: Any
    shape: tuple[int, ...]
    fill: int
    doc: str


#: Every per-game array of the state, in order.  The one place they are listed.
FIELDS: tuple[Field, ...] = (
    Field("hands", _U64, (2,), 0, "each seat's cards as a 52-bit mask"),
    Field("known", _U64, (2,), 0, "cards each seat took from the pile and still holds"),
    Field("deck", np.int8, (NUM_CARDS,), 0, "the card order of the current deal"),
    Field("stock_pos", np.int16, (), STOCK_START, "index in deck of the next stock card"),
    Field("pile", np.int8, (NUM_CARDS,), 0, "the discard pile, bottom first"),
    Field("pile_size", np.int16, (), 0, "cards in the discard pile"),
    Field("pile_mask", _U64, (), 0, "the discard pile as a mask"),
    Field("phase", np.int8, (), 0, "actions.PHASE_*"),
    Field("current_player", np.int8, (), 0, "the seat to move"),
    Field("dealer", np.int8, (), 0, "the dealer of the current hand"),
    Field("taken_card", np.int8, (), -1, "card taken from the pile this turn, -1 if none"),
    Field("takes", np.int16, (), 0, "takes from the discard pile this hand (§5 take limit)"),
    Field("knock_limit", np.int8, (), 0, "the knock limit of the current hand"),
    Field("discard_deadwood", np.int16, (NUM_CARDS,), 0,
          "mover's deadwood after each discard (valid in the discard phase)"),
    Field("big_gin_ready", bool, (), 0, "the mover's 11 cards are all melded"),
    Field("deal_number", np.int64, (), 0, "deals so far in this game's seed stream"),
    Field("match_number", np.int64, (), 0, "matches so far in this game's seed stream"),
    Field("hands_in_match", np.int32, (), 0, "hands dealt in the current match"),
    Field("seeds", _U64, (), 0, "the game's seed: every shuffle derives from it"),
)
FIELD_NAMES = tuple(f.name for f in FIELDS)


class GameView(Protocol):
    """What code above the engine reads of a game: the ``VectorGame`` attribute layout.

    :class:`~hgin_env.engine.VectorGame` has it for B games, and
    :class:`~hgin_env.engine.single.SingleGameArrays` for one :class:`SingleGame`, so the
    renderers, the observation encoder, the public history and the move language take
    either without knowing which.  Every array has the game index first
    (:data:`FIELDS` for their meaning); none of them may be written through a view.
    """

    @property
    def num_games(self) -> int: ...
    @property
    def rules(self) -> Rules: ...
    @property
    def sheets(self) -> SheetBatch: ...
    @property
    def stock_size(self) -> np.ndarray: ...
    @property
    def hands(self) -> np.ndarray: ...
    @property
    def known(self) -> np.ndarray: ...
    @property
    def deck(self) -> np.ndarray: ...
    @property
    def stock_pos(self) -> np.ndarray: ...
    @property
    def pile(self) -> np.ndarray: ...
    @property
    def pile_size(self) -> np.ndarray: ...
    @property
    def pile_mask(self) -> np.ndarray: ...
    @property
    def phase(self) -> np.ndarray: ...
    @property
    def current_player(self) -> np.ndarray: ...
    @property
    def dealer(self) -> np.ndarray: ...
    @property
    def taken_card(self) -> np.ndarray: ...
    @property
    def takes(self) -> np.ndarray: ...
    @property
    def knock_limit(self) -> np.ndarray: ...
    @property
    def discard_deadwood(self) -> np.ndarray: ...

    def top_discard(self) -> np.ndarray: ...
    def sheet(self, i: int) -> Sheet: ...
    def legal_action_mask(self) -> np.ndarray: ...
    def observe(self, player: int | None = None) -> dict[str, np.ndarray]: ...


@dataclass
class GameState:
    """B games: the arrays of :data:`FIELDS` (each ``(B, ...)``), the rules and the sheets.

    Mutable in place by the engine; every public operation here returns new
    arrays, so a clone or a taken slice never aliases its source.
    """

    rules: Rules
    hands: np.ndarray
    known: np.ndarray
    deck: np.ndarray
    stock_pos: np.ndarray
    pile: np.ndarray
    pile_size: np.ndarray
    pile_mask: np.ndarray
    phase: np.ndarray
    current_player: np.ndarray
    dealer: np.ndarray
    taken_card: np.ndarray
    takes: np.ndarray
    knock_limit: np.ndarray
    discard_deadwood: np.ndarray
    big_gin_ready: np.ndarray
    deal_number: np.ndarray
    match_number: np.ndarray
    hands_in_match: np.ndarray
    seeds: np.ndarray
    sheets: SheetBatch

    # ------------------------------------------------------------------ build
    @classmethod
    def zeros(cls, num_games: int, rules: Rules) -> GameState:
        """``num_games`` blank games (every array at its fill value, fresh sheets)."""
        require_rules(rules)
        b = int(num_games)
        arrays = {f.name: np.full((b, *f.shape), f.fill, f.dtype) for f in FIELDS}
        return cls(rules=rules, sheets=SheetBatch.new(b, rules), **arrays)

    @property
    def num_games(self) -> int:
        return self.phase.shape[0]

    def arrays(self) -> dict[str, np.ndarray]:
        """The per-game arrays by name (live, not copies), in :data:`FIELDS` order."""
        return {name: getattr(self, name) for name in FIELD_NAMES}

    # ------------------------------------------------------------------ copies
    def clone(self) -> GameState:
        """An independent deep copy."""
        return GameState(
            rules=self.rules,
            sheets=self.sheets.copy(),
            **{name: arr.copy() for name, arr in self.arrays().items()},
        )

    def take(self, rows: Any) -> GameState:
        """A new state holding copies of the listed games, in the order listed."""
        rows = self._rows(rows)
        return GameState(
            rules=self.rules,
            sheets=self.sheets.take(rows),
            **{name: arr[rows] for name, arr in self.arrays().items()},
        )

    def put(self, rows: Any, other: GameState) -> None:
        """Overwrite the listed games with ``other``'s games (one per listed row)."""
        rows = self._rows(rows)
        if other.num_games != rows.size:
            raise ValueError(f"put: {rows.size} rows but the other state has {other.num_games}")
        if other.rules != self.rules:
            raise ValueError("put: the other state plays different rules")
        for name, arr in self.arrays().items():
            arr[rows] = getattr(other, name)
        self.sheets.put(rows, other.sheets)

    def _rows(self, rows: Any) -> np.ndarray:
        arr = np.atleast_1d(np.asarray(rows))
        if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
            raise ValueError(f"rows must be a 1-D array of game indices, got {rows!r}")
        arr = arr.astype(np.int64)
        if arr.size and (arr.min() < -self.num_games or arr.max() >= self.num_games):
            raise ValueError(f"rows out of range for {self.num_games} games: {arr.tolist()}")
        return arr

    # ------------------------------------------------------------------ derived
    @property
    def stock_size(self) -> np.ndarray:
        return (NUM_CARDS - self.stock_pos).astype(np.int16)

    def top_discard(self) -> np.ndarray:
        """(B,) card id on top of the discard pile, -1 where the pile is empty."""
        rows = np.arange(self.num_games)
        top = self.pile[rows, np.maximum(self.pile_size - 1, 0)].astype(np.int16)
        return np.where(self.pile_size > 0, top, -1)

    def sheet(self, i: int = 0) -> Sheet:
        """Game ``i``'s score sheet as a scalar :class:`~hgin_env.hollywood.Sheet`."""
        return self.sheets.sheet(i)

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, np.ndarray]:
        """Copies of every array, sheets under ``sheet_<name>`` (checkpoint format)."""
        out = {name: arr.copy() for name, arr in self.arrays().items()}
        for name, arr in self.sheets.arrays().items():
            out[f"sheet_{name}"] = arr.copy()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], rules: Rules | str | None = None) -> GameState:
        """A state from :meth:`to_dict` output, checked field by field and then validated.

        Anything read from a file goes through here, so a wrong shape, dtype
        or an impossible position is a ``ValueError`` naming the field, never
        a crash (or an exploding meld search) later.  A public edge (states come from
        files), so ``rules`` may be a profile name or path.
        """
        rules = load_rules(rules)
        if not isinstance(data, dict):
            raise ValueError(f"game state must be a dict of arrays, got {type(data).__name__}")
        b = _num_games_of(data)
        arrays = {}
        for f in FIELDS:
            arrays[f.name] = _read_array(data, f.name, (b, *f.shape), f.dtype)
        sheets = SheetBatch.new(b, rules)
        for name, arr in sheets.arrays().items():
            arr[...] = _read_array(data, f"sheet_{name}", arr.shape, arr.dtype)
        state = cls(rules=rules, sheets=sheets, **arrays)
        validate(state)
        return state


def _num_games_of(data: dict[str, Any]) -> int:
    phase = data.get("phase")
    if phase is None:
        raise ValueError("game state has no 'phase' array")
    shape = np.shape(phase)
    if len(shape) != 1 or shape[0] < 1 or shape[0] > 10_000_000:
        raise ValueError(f"game state 'phase' must be (B,) with 1 <= B <= 1e7, got {shape}")
    return int(shape[0])


def _read_array(data: dict[str, Any], key: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    if key not in data:
        raise ValueError(f"game state has no {key!r} array")
    arr = np.asarray(data[key])
    if arr.shape != shape:
        raise ValueError(f"game state {key!r} has shape {arr.shape}, expected {shape}")
    if arr.dtype.kind not in "biu":
        raise ValueError(f"game state {key!r} must hold integers, got dtype {arr.dtype}")
    cast = arr.astype(dtype)
    if not np.array_equal(cast, arr):
        raise ValueError(f"game state {key!r} has values outside {np.dtype(dtype).name}")
    return cast


# ---------------------------------------------------------------------- checks


def _bit_count(masks: np.ndarray) -> np.ndarray:
    return popcount64(masks.astype(_U64)).astype(np.int64)


def validate(state: GameState) -> None:
    """Raise ``ValueError`` naming the first game and the broken invariant, if any.

    The invariants: the 52 cards are conserved (hands, pile and stock are
    disjoint and cover the deck), hand sizes fit the phase, every small
    field is in range, and each sheet is consistent with the rules.
    """
    rules = state.rules
    b = state.num_games

    def need(ok: np.ndarray, what: str) -> None:
        ok = np.asarray(ok)
        if ok.ndim > 1:
            ok = ok.all(axis=tuple(range(1, ok.ndim)))
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise ValueError(f"invalid game state: game {i}: {what}")

    phase = state.phase.astype(np.int64)
    need((phase >= 0) & (phase <= A.PHASE_MATCH_OVER), "phase out of range")
    for name in ("current_player", "dealer"):
        need(np.isin(getattr(state, name), (0, 1)), f"{name} must be 0 or 1")
    deck = state.deck.astype(np.int64)
    need((np.sort(deck, axis=1) == np.arange(NUM_CARDS)).all(axis=1),
         "deck is not a permutation of the 52 cards")
    pos = state.stock_pos.astype(np.int64)
    need((pos >= STOCK_START) & (pos <= DEAD_HAND_POS), f"stock_pos outside {STOCK_START}..50")
    size = state.pile_size.astype(np.int64)
    need((size >= 0) & (size <= NUM_CARDS - STOCK_START + 1), "pile_size out of range")
    pile = state.pile.astype(np.int64)
    slots = np.arange(NUM_CARDS)[None, :] < size[:, None]
    need(~slots | ((pile >= 0) & (pile < NUM_CARDS)), "pile holds a bad card id")
    bits = np.where(slots, np.left_shift(_U64(1), np.clip(pile, 0, 63).astype(_U64)), _U64(0))
    pile_from_list = np.bitwise_or.reduce(bits, axis=1)
    need(_bit_count(pile_from_list) == size, "pile holds a card twice")
    need(pile_from_list == state.pile_mask, "pile_mask differs from the pile")
    stock_bits = np.where(np.arange(NUM_CARDS)[None, :] >= pos[:, None],
                          np.left_shift(_U64(1), deck.astype(_U64)), _U64(0))
    stock = np.bitwise_or.reduce(stock_bits, axis=1)
    h0, h1 = state.hands[:, 0], state.hands[:, 1]
    need(((h0 | h1 | state.pile_mask | stock) >> _U64(NUM_CARDS)) == 0, "a mask above card 51")
    parts = (h0, h1, state.pile_mask, stock)
    total = sum(_bit_count(p) for p in parts)
    union = h0 | h1 | state.pile_mask | stock
    need((total == NUM_CARDS) & (union == _U64(_FULL)),
         "the 52 cards are not conserved (hands, pile and stock overlap or miss a card)")
    need((state.known & ~state.hands) == 0, "known cards not in the hand")
    mover = state.current_player.astype(np.int64)
    n_mover = _bit_count(state.hands[np.arange(b), mover])
    n_other = _bit_count(state.hands[np.arange(b), 1 - mover])
    discarding = phase == A.PHASE_DISCARD
    over = phase == A.PHASE_MATCH_OVER
    need(over | (n_mover == np.where(discarding, HAND_CARDS + 1, HAND_CARDS)),
         "the mover holds the wrong number of cards for the phase")
    need(over | (n_other == HAND_CARDS), "the waiting seat does not hold 10 cards")
    need(~over | ((n_mover <= HAND_CARDS + 1) & (n_other <= HAND_CARDS + 1)), "hand too large")
    offer = phase <= A.PHASE_OFFER_DEALER
    need(~offer | ((pos == STOCK_START) & (size == 1) & (state.takes == 0)),
         "an upcard offer after the first draw")
    taken = state.taken_card.astype(np.int64)
    need(discarding | (taken == -1), "taken_card set outside the discard phase")
    held_taken = (state.hands[np.arange(b), mover] >> np.clip(taken, 0, 63).astype(_U64)) & _U64(1)
    need((taken == -1) | ((taken >= 0) & (taken < NUM_CARDS) & (held_taken == 1)),
         "taken_card is not in the mover's hand")
    takes = state.takes.astype(np.int64)
    need((takes >= 0) & (takes <= rules.max_discard_takes), "takes outside 0..max_discard_takes")
    need(state.knock_limit == rules.knock_limits(state.deck[:, 20]),
         "knock_limit does not match the rules and the upcard")
    need((state.discard_deadwood >= 0) & (state.discard_deadwood <= 1000),
         "discard_deadwood out of range")
    for name in ("deal_number", "match_number", "hands_in_match"):
        need(getattr(state, name) >= 0, f"{name} is negative")
    _validate_sheets(state.sheets, need)


def _validate_sheets(sheets: SheetBatch, need: Any) -> None:
    rules = sheets.rules
    scores = sheets.scores.astype(np.int64)
    need(scores >= 0, "a negative score on the sheet")
    need(sheets.wins >= 0, "a negative hand count on the sheet")
    need(sheets.boxes >= 0, "a negative box count on the sheet")
    reached = scores.max(axis=1) >= rules.target
    need(sheets.decided == reached, "a column is decided iff a score reached the target")
    winner = sheets.column_winner.astype(np.int64)
    leader = scores.argmax(axis=1)
    need(np.where(sheets.decided, winner == leader, winner == -1),
         "column_winner does not match the decided columns")
    over = sheets.decided.all(axis=1)
    majority = (winner == 1).sum(axis=1) * 2 > rules.columns
    need(np.where(over, sheets.match_winner == majority.astype(np.int8),
                  sheets.match_winner == -1), "match_winner does not match the columns")


# ---------------------------------------------------------------------- mid-hand


def from_position(
    rules: Rules | str | None,
    hands: Any,
    stock: Any,
    pile: Any,
    *,
    dealer: int,
    current_player: int,
    phase: int = A.PHASE_DRAW,
    upcard: int | None = None,
    taken_card: int = -1,
    takes: int = 0,
    known: Any = (0, 0),
    sheet: dict[str, Any] | None = None,
    seed: int = 0,
    deal_number: int = 1,
    match_number: int = 0,
    hands_in_match: int = 1,
) -> GameState:
    """One game (B = 1) in the middle of a hand, from explicit cards.

    ``hands`` two masks or card lists, ``stock`` the stock cards next first,
    ``pile`` the discard pile bottom first; ``upcard`` (default: the bottom
    of the pile) fixes the hand's knock limit.  ``sheet`` optionally gives
    ``scores`` (2, C) and ``wins`` (2,), from which the decided columns and
    winners are derived.  The 52 cards must be conserved and the phase
    consistent, else ``ValueError`` says what is wrong.
    """
    rules = load_rules(rules)
    state = GameState.zeros(1, rules)
    h = [_as_mask(x, f"hands[{i}]") for i, x in enumerate(hands)] if len(hands) == 2 else None
    if h is None:
        raise ValueError("hands must hold two hands (seat 0, seat 1)")
    stock_cards = _as_cards(stock, "stock")
    pile_cards = _as_cards(pile, "pile")
    held = [c for mask in h for c in range(NUM_CARDS) if mask >> c & 1]
    everything = held + stock_cards + pile_cards
    if sorted(everything) != list(range(NUM_CARDS)):
        dup = sorted({c for c in everything if everything.count(c) > 1})
        missing = sorted(set(range(NUM_CARDS)) - set(everything))
        raise ValueError(f"the 52 cards are not conserved: duplicated {dup}, missing {missing}")
    if not pile_cards and upcard is None:
        raise ValueError("an empty pile needs an explicit upcard (it fixes the knock limit)")
    up = pile_cards[0] if upcard is None else int(upcard)
    if not 0 <= up < NUM_CARDS:
        raise ValueError(f"upcard must be a card id 0..51, got {upcard!r}")
    # The deal's card order: hands and pile first (any order), the upcard at 20, the stock last.
    pos = NUM_CARDS - len(stock_cards)
    if pos < STOCK_START:
        raise ValueError(f"the stock holds {len(stock_cards)} cards; at most 31 after the deal")
    front = [c for c in held + pile_cards if c != up]
    if up in stock_cards:
        raise ValueError(f"the upcard {up} cannot still be in the stock")
    deck = [*front[:20], up, *front[20:], *stock_cards]
    for name, value, ok in (("dealer", dealer, (0, 1)), ("current_player", current_player, (0, 1)),
                            ("phase", phase, range(A.PHASE_MATCH_OVER + 1))):
        if isinstance(value, bool) or value not in ok:
            raise ValueError(f"{name} must be in {list(ok)}, got {value!r}")
    s = state
    s.hands[0] = h
    s.known[0] = [_as_mask(x, f"known[{i}]") for i, x in enumerate(known)]
    s.deck[0] = deck
    s.stock_pos[0] = pos
    s.pile[0, : len(pile_cards)] = pile_cards
    s.pile_size[0] = len(pile_cards)
    s.pile_mask[0] = _as_mask(pile_cards, "pile")
    s.phase[0] = phase
    s.current_player[0] = current_player
    s.dealer[0] = dealer
    s.taken_card[0] = taken_card
    s.takes[0] = takes
    s.knock_limit[0] = rules.knock_limits(np.array([up]))[0]
    s.deal_number[0] = deal_number
    s.match_number[0] = match_number
    s.hands_in_match[0] = hands_in_match
    s.seeds[0] = seed
    if sheet is not None:
        _fill_sheet(s.sheets, sheet)
    if phase == A.PHASE_DISCARD:
        from hgin_env.melds import discard_table_unchecked, min_deadwood

        mover_hand = s.hands[:, current_player]
        s.discard_deadwood[0] = discard_table_unchecked(mover_hand)[0]
        s.big_gin_ready[0] = bool(rules.big_gin and min_deadwood(mover_hand)[0] == 0)
    validate(state)
    return state


def _fill_sheet(sheets: SheetBatch, sheet: dict[str, Any]) -> None:
    unknown = set(sheet) - {"scores", "wins", "boxes"}
    if unknown:
        raise ValueError(f"sheet accepts scores, wins and boxes; got {sorted(unknown)}")
    rules = sheets.rules
    for name in ("scores", "wins", "boxes"):
        if name in sheet:
            value = np.asarray(sheet[name])
            target = getattr(sheets, name)
            if value.shape != target.shape[1:]:
                raise ValueError(f"sheet {name} must have shape {target.shape[1:]}")
            target[0] = value
    scores = sheets.scores[0].astype(np.int64)
    sheets.decided[0] = scores.max(axis=0) >= rules.target
    sheets.column_winner[0] = np.where(sheets.decided[0], scores.argmax(axis=0), -1)
    if sheets.decided[0].all():
        sheets.match_winner[0] = int((sheets.column_winner[0] == 1).sum() * 2 > rules.columns)


def _as_cards(value: Any, name: str) -> list[int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        mask = int(value)
        if not 0 <= mask < 1 << NUM_CARDS:
            raise ValueError(f"{name}: mask out of range")
        return [c for c in range(NUM_CARDS) if mask >> c & 1]
    try:
        cards = [int(c) for c in value]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a list of card ids or a mask, got {value!r}") from None
    bad = [c for c in cards if not 0 <= c < NUM_CARDS]
    if bad:
        raise ValueError(f"{name} holds card ids outside 0..51: {bad}")
    return cards


def _as_mask(value: Any, name: str) -> int:
    cards = _as_cards(value, name)
    if len(set(cards)) != len(cards):
        raise ValueError(f"{name} holds a card twice")
    mask = 0
    for c in cards:
        mask |= 1 << c
    return mask

