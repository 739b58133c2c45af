"""One observation encoding, from one seat's point of view.

Used by the AEC env, the Gymnasium wrappers and the trainer alike, so a
policy trained on one interface runs on the others.  It holds only what that
seat may know: its own hand, the public discard pile, the cards the opponent
took from the pile and still holds, and the public score sheet; never the
opponent's other cards or the stock order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS, unpack_masks
from hgin_env.melds import min_deadwood

if TYPE_CHECKING:
    from hgin_env.state import GameState, GameView

MAX_COLUMNS = 3
_FULL = np.uint64((1 << NUM_CARDS) - 1)

class Slice(NamedTuple):
    """One slice of the observation: its name, width and the divisor its raw value is
    scaled by (1 for 0/1 flags; ``None`` where the divisor is the rules' target)."""

    name: str
    width: int
    scale: float | None


#: Deadwood values (hand deadwood, deadwood after a discard) are divided by this.
DEADWOOD_SCALE = 100.0
#: The stock size is divided by this (31 cards are in the stock after the deal).
STOCK_SCALE = 31.0
#: The knock limit is divided by this (the largest knock limit).
KNOCK_LIMIT_SCALE = 10.0

#: Every slice, in order.  The one place the layout and its scales are written.
LAYOUT: tuple[Slice, ...] = (
    Slice("hand", NUM_CARDS, 1.0),
    Slice("top_discard", NUM_CARDS, 1.0),
    Slice("pile_below_top", NUM_CARDS, 1.0),
    Slice("opponent_known", NUM_CARDS, 1.0),
    Slice("unseen", NUM_CARDS, 1.0),
    Slice("forbidden_discard", NUM_CARDS, 1.0),
    Slice("deadwood_after_discard", NUM_CARDS, DEADWOOD_SCALE),
    Slice("phase", A.NUM_PHASES, 1.0),
    Slice("to_move", 1, 1.0),
    Slice("is_dealer", 1, 1.0),
    Slice("stock_size", 1, STOCK_SCALE),
    Slice("knock_limit", 1, KNOCK_LIMIT_SCALE),
    Slice("deadwood", 1, DEADWOOD_SCALE),
    Slice("column_exists", MAX_COLUMNS, 1.0),
    Slice("own_score", MAX_COLUMNS, None),
    Slice("opponent_score", MAX_COLUMNS, None),
    Slice("column_decided", MAX_COLUMNS, 1.0),
    Slice("column_won", MAX_COLUMNS, 1.0),
    Slice("column_lost", MAX_COLUMNS, 1.0),
    Slice("open_to_me", MAX_COLUMNS, 1.0),
    Slice("open_to_opponent", MAX_COLUMNS, 1.0),
)
#: Divisor of each named slice (``None``: the rules' target).
SCALE: dict[str, float | None] = {s.name: s.scale for s in LAYOUT}
OBS_DIM = sum(s.width for s in LAYOUT)


def observation_spec() -> dict[str, slice]:
    """Name of every slice of the observation vector and where it lies.

    Card slices are indexed by card id; scores are divided by the target,
    the stock size by 31, deadwood by 100, and ``deadwood_after_discard`` is
    (deadwood after discarding that card) / 100 for held cards when this seat
    must discard, else 0.
    """
    spec, start = {}, 0
    for name, width, _ in LAYOUT:
        spec[name] = slice(start, start + width)
        start += width
    return spec


_SPEC = observation_spec()


def encode(game: GameState | GameView, seats: np.ndarray) -> np.ndarray:
    """(B, OBS_DIM) float32 observations of ``game`` for seat ``seats[i]`` of game i.

    ``game`` is a :class:`~hgin_env.state.GameState` (or an engine, which
    exposes the same arrays).
    """
    b = game.num_games
    rows = np.arange(b)
    seats = np.asarray(seats, dtype=np.int64)
    opp = 1 - seats
    own = game.hands[rows, seats]
    top = game.top_discard()
    has_top = top >= 0
    top_bit = np.where(has_top, np.uint64(1) << np.maximum(top, 0).astype(np.uint64), np.uint64(0))
    opp_known = game.known[rows, opp]
    to_move = game.current_player == seats
    discarding = to_move & (game.phase == A.PHASE_DISCARD)
    forbidden = np.zeros(b, np.uint64)
    banned = game.rules.forbidden_discard(game.taken_card.astype(np.int64))
    show = discarding & (banned >= 0)
    forbidden[show] = np.uint64(1) << banned[show].astype(np.uint64)
    masks = np.stack(
        [
            own,
            top_bit,
            game.pile_mask & ~top_bit,
            opp_known,
            _FULL & ~(own | game.pile_mask | opp_known),
            forbidden,
        ],
        axis=1,
    )
    obs = np.zeros((b, OBS_DIM), np.float32)
    obs[:, : 6 * NUM_CARDS] = unpack_masks(masks).reshape(b, 6 * NUM_CARDS)
    held = obs[:, _SPEC["hand"]] > 0
    dd = np.where(held & discarding[:, None], game.discard_deadwood / DEADWOOD_SCALE, 0.0)
    obs[:, _SPEC["deadwood_after_discard"]] = dd
    live = game.phase < A.NUM_PHASES
    obs[rows[live], _SPEC["phase"].start + game.phase[live].astype(np.int64)] = 1.0
    obs[:, _SPEC["to_move"].start] = to_move
    obs[:, _SPEC["is_dealer"].start] = game.dealer == seats
    obs[:, _SPEC["stock_size"].start] = game.stock_size / STOCK_SCALE
    obs[:, _SPEC["knock_limit"].start] = game.knock_limit / KNOCK_LIMIT_SCALE
    obs[:, _SPEC["deadwood"].start] = min_deadwood(own) / DEADWOOD_SCALE

    sheets = game.sheets
    c = sheets.columns
    target = float(game.rules.target)
    cols = slice(0, c)

    def put(name: str, values: np.ndarray) -> None:
        start = _SPEC[name].start
        obs[:, start + cols.start : start + cols.stop] = values

    put("column_exists", np.ones((b, c)))
    put("own_score", sheets.scores[rows, seats] / target)
    put("opponent_score", sheets.scores[rows, opp] / target)
    put("column_decided", sheets.decided)
    put("column_won", sheets.column_winner == seats[:, None])
    put("column_lost", sheets.column_winner == opp[:, None])
    put("open_to_me", sheets.wins[rows, seats][:, None] > np.arange(c))
    put("open_to_opponent", sheets.wins[rows, opp][:, None] > np.arange(c))
    return obs
