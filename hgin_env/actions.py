"""The flat action space (docs/api.md): 108 ids shared by every interface."""

from __future__ import annotations

from hgin_env.cards import card_str

NUM_ACTIONS = 108
DISCARD = 0  # 0..51: discard card id
KNOCK = 52  # 52..103: knock, discarding card id - 52
DRAW_STOCK = 104
TAKE_DISCARD = 105
PASS = 106
BIG_GIN = 107

#: Phases of a turn.  The upcard offer goes to the non-dealer, then the
#: dealer; if both pass the non-dealer must draw from the stock.
PHASE_OFFER_NONDEALER = 0
PHASE_OFFER_DEALER = 1
PHASE_DRAW_STOCK = 2
PHASE_DRAW = 3
PHASE_DISCARD = 4
#: Phases a live hand can be in (the observation one-hot covers these).
NUM_PHASES = 5
#: Only with ``VectorGame(autoreset=False)``: the match is over and the game
#: waits for ``reset_games``; no action is legal.
PHASE_MATCH_OVER = 5
PHASE_NAMES = (
    "upcard offer (non-dealer)",
    "upcard offer (dealer)",
    "draw from stock",
    "draw",
    "discard",
    "match over",
)


def action_name(action: int, symbols: bool = False) -> str:
    """Plain words for an action id, e.g. ``"knock discarding 7♥"``."""
    action = int(action)
    if 0 <= action < KNOCK:
        return f"discard {card_str(action, symbols)}"
    if KNOCK <= action < DRAW_STOCK:
        return f"knock discarding {card_str(action - KNOCK, symbols)}"
    names = {
        DRAW_STOCK: "draw from the stock",
        TAKE_DISCARD: "take the discard",
        PASS: "pass",
        BIG_GIN: "big gin",
    }
    if action in names:
        return names[action]
    raise ValueError(f"action {action} is outside 0..{NUM_ACTIONS - 1}")


def illegal_message(action: int, phase: int, player: int, legal: list[int]) -> str:
    """Why ``action`` was refused, in the words every engine and env uses."""
    inside = 0 <= action < NUM_ACTIONS
    what = action_name(action) if inside else f"out of range 0..{NUM_ACTIONS - 1}"
    return (f"action {action} ({what}) is illegal in phase '{PHASE_NAMES[phase]}' "
            f"for player {player}; legal actions: {legal}")
