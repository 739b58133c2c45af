"""One observation encoding, from one seat's point of view.

Used by the AEC env, the Gymnasium wrappers and the trainer alike, so a
policy trained on one interface runs on the others.  It holds only what that
seat may know: its own hand, the public discard pile, the cards the opponent
took from the pile and still holds, and the public score sheet; never the
opponent's other cards or the stock order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import actions as A
from .cards import NUM_CARDS, unpack_masks
from .melds import min_deadwood

if TYPE_CHECKING:
    from .engine import VectorGame

MAX_COLUMNS = 3
_FULL = np.uint64((1 << NUM_CARDS) - 1)

#: (name, width) of each slice, in order.
LAYOUT: tuple[tuple[str, int], ...] = (
    ("hand", NUM_CARDS),
    ("top_discard", NUM_CARDS),
    ("pile_below_top", NUM_CARDS),
    ("opponent_known", NUM_CARDS),
    ("unseen", NUM_CARDS),
    ("forbidden_discard", NUM_CARDS),
    ("deadwood_after_discard", NUM_CARDS),
    ("phase", A.NUM_PHASES),
    ("to_move", 1),
    ("is_dealer", 1),
    ("stock_size", 1),
    ("knock_limit", 1),
    ("deadwood", 1),
    ("column_exists", MAX_COLUMNS),
    ("own_score", MAX_COLUMNS),
    ("opponent_score", MAX_COLUMNS),
    ("column_decided", MAX_COLUMNS),
    ("column_won", MAX_COLUMNS),
    ("column_lost", MAX_COLUMNS),
    ("open_to_me", MAX_COLUMNS),
    ("open_to_opponent", MAX_COLUMNS),
)
OBS_DIM = sum(width for _, width in LAYOUT)


def observation_spec() -> dict[str, slice]:
    """Name of every slice of the observation vector and where it lies.

    Card slices are indexed by card id; scores are divided by the target,
    the stock size by 31, deadwood by 100, and ``deadwood_after_discard`` is
    (deadwood after discarding that card) / 100 for held cards when this seat
    must discard, else 0.
    """
    spec, start = {}, 0
    for name, width in LAYOUT:
        spec[name] = slice(start, start + width)
        start += width
    return spec


_SPEC = observation_spec()


def encode(game: VectorGame, seats: np.ndarray) -> np.ndarray:
    """(B, OBS_DIM) float32 observations of ``game`` for seat ``seats[i]`` of game i."""
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
    if game.rules.forbid_discard_of_taken:
        taken = game.taken_card.astype(np.int64)
        show = discarding & (taken >= 0)
        forbidden[show] = np.uint64(1) << taken[show].astype(np.uint64)
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
    dd = np.where(held & discarding[:, None], game.discard_deadwood / 100.0, 0.0)
    obs[:, _SPEC["deadwood_after_discard"]] = dd
    live = game.phase < A.NUM_PHASES
    obs[rows[live], _SPEC["phase"].start + game.phase[live].astype(np.int64)] = 1.0
    obs[:, _SPEC["to_move"].start] = to_move
    obs[:, _SPEC["is_dealer"].start] = game.dealer == seats
    obs[:, _SPEC["stock_size"].start] = game.stock_size / 31.0
    obs[:, _SPEC["knock_limit"].start] = game.knock_limit / 10.0
    obs[:, _SPEC["deadwood"].start] = min_deadwood(own) / 100.0

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
