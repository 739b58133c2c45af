"""What one seat cannot see, encoded for a critic that may: for training only.

The observation (:mod:`hgin_env.observation`) holds only what a seat may know.  An
asymmetric actor-critic trains its value function on more (the approach of PerfectDou
in Dou Di Zhu and of Suphx's oracle guiding): the opponent's whole hand and the stock,
with the card drawn next.  Nothing here may reach a policy, an agent that plays, or
search; ``tests/project/test_structure.py`` keeps every module that plays from importing
it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from hgin_env.cards import NUM_CARDS, unpack_masks

if TYPE_CHECKING:
    from hgin_env.state import GameState

__all__ = ["HIDDEN_DIM", "HIDDEN_LAYOUT", "encode_hidden"]


class Slice(NamedTuple):
    name: str
    width: int


#: Every slice, in order: 0/1 flags per card.
HIDDEN_LAYOUT: tuple[Slice, ...] = (
    Slice("opponent_hand", NUM_CARDS),  # the opponent's cards, seen or not
    Slice("stock", NUM_CARDS),  # the cards still in the stock
    Slice("next_stock_card", NUM_CARDS),  # the stock's top card (none when it is empty)
)
HIDDEN_DIM = sum(s.width for s in HIDDEN_LAYOUT)


def encode_hidden(state: GameState, seats: np.ndarray) -> np.ndarray:
    """``(B, HIDDEN_DIM)`` float32: what seat ``seats[g]`` of game ``g`` cannot see."""
    b = state.num_games
    rows = np.arange(b)
    seats = np.asarray(seats, np.int64)
    out = np.zeros((b, HIDDEN_DIM), np.float32)
    out[:, :NUM_CARDS] = unpack_masks(state.hands[rows, 1 - seats])
    deck = state.deck.astype(np.int64)
    pos = state.stock_pos.astype(np.int64)
    in_stock = np.arange(NUM_CARDS)[None, :] >= pos[:, None]  # (B, 52) deck indices
    stock = np.zeros((b, NUM_CARDS), np.float32)
    np.put_along_axis(stock, deck, in_stock.astype(np.float32), axis=1)
    out[:, NUM_CARDS : 2 * NUM_CARDS] = stock
    has_next = pos < NUM_CARDS
    nxt = deck[rows[has_next], pos[has_next]]
    out[rows[has_next], 2 * NUM_CARDS + nxt] = 1.0
    return out
