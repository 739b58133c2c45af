"""The public history of each game's current hand, for agents that reason about it.

Every action in gin rummy is public (only the card a stock draw brings is
private), so the ordered action ids of a hand, with who played them, are what
both seats have seen.  The observation vector carries sets (the pile, the
cards known in the opponent's hand), not their order; an agent that infers the
opponent's cards from its past choices (``agents.search``) needs the order.

:class:`PublicHistory` is fed by whoever steps a game (any
:class:`~hgin_env.state.GameView`: a ``VectorGame`` or a ``SingleGame``'s arrays; the
match driver does it for agents with ``uses_history = True``) and adds to an
observation, for the seat to move:

* ``history`` int16 (B, L): ``seat * 108 + action`` per action of this hand,
  ``seat`` relative to the observer (0 = the observer, 1 = the opponent),
  ``-1`` after the last one;
* ``history_len`` int16 (B,): actions so far in this hand;
* ``upcard`` int8 (B,): the hand's first upcard.

``L`` is the longest hand the rules allow (:func:`max_hand_actions`), so the
history is never cut.
"""

from __future__ import annotations

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS
from hgin_env.rules import Rules
from hgin_env.state import STOCK_START, GameView

__all__ = ["HISTORY_KEYS", "PublicHistory", "history_for", "max_hand_actions"]

#: The keys :meth:`PublicHistory.observe` adds to an observation.
HISTORY_KEYS = ("history", "history_len", "upcard")


def max_hand_actions(rules: Rules) -> int:
    """An upper bound on the actions of one hand under ``rules``.

    Two passes on the upcard, then turns of two actions (draw, discard); every
    turn draws from the stock or takes from the pile, the stock holds 31
    cards and the pile can be taken from ``max_discard_takes`` times.
    """
    return 2 + 2 * (NUM_CARDS - STOCK_START + rules.max_discard_takes) + 2


class PublicHistory:
    """The action sequence of the current hand of B games, kept in step with an engine."""

    def __init__(self, game: GameView) -> None:
        self.rules = game.rules
        self.length = max_hand_actions(game.rules)
        b = game.num_games
        self.codes = np.full((b, self.length), -1, np.int16)
        self.count = np.zeros(b, np.int16)
        self.upcard = np.zeros(b, np.int8)
        self.new_hands(game, np.arange(b))

    def new_hands(self, game: GameView, rows: np.ndarray) -> None:
        """Forget the history of ``rows``: a new hand was dealt there."""
        self.codes[rows] = -1
        self.count[rows] = 0
        self.upcard[rows] = game.deck[rows, STOCK_START - 1]

    def step(self, game: GameView, seats: np.ndarray, actions: np.ndarray,
             info: dict[str, np.ndarray], rows: np.ndarray | None = None) -> None:
        """Append ``actions`` played by ``seats`` in ``rows`` (default all), after ``game.step``.

        Rows whose hand ended in that step start a new, empty history.
        """
        rows = np.arange(self.count.size) if rows is None else np.asarray(rows)
        n = self.count[rows].astype(np.int64)
        if (n >= self.length).any():
            raise ValueError("a hand played more actions than the rules allow; "
                             "was a new deal not reported to PublicHistory?")
        self.codes[rows, n] = (np.asarray(seats)[rows] * A.NUM_ACTIONS
                               + np.asarray(actions)[rows]).astype(np.int16)
        self.count[rows] += 1
        ended = rows[info["hand_over"][rows]]
        if ended.size:
            self.new_hands(game, ended)

    def step_one(self, game: GameView, seat: int, action: int,
                 hand_over: bool) -> None:
        """:meth:`step` for a one-game engine, whose step reports scalars."""
        self.step(game, np.array([seat]), np.array([action]), {"hand_over": np.array([hand_over])})

    def take(self, rows: np.ndarray) -> None:
        """Keep only ``rows`` (in that order), as the arena does when it compacts its batch."""
        self.codes = self.codes[rows]
        self.count = self.count[rows]
        self.upcard = self.upcard[rows]

    def observe(self, seats: np.ndarray) -> dict[str, np.ndarray]:
        """The history of every game seen by ``seats`` (one per game): :data:`HISTORY_KEYS`."""
        seats = np.asarray(seats, np.int64)
        codes = self.codes.astype(np.int64)
        seat = codes // A.NUM_ACTIONS
        relative = np.where(codes >= 0, (seat != seats[:, None]) * A.NUM_ACTIONS
                            + codes % A.NUM_ACTIONS, -1)
        return {"history": relative.astype(np.int16), "history_len": self.count.copy(),
                "upcard": self.upcard.copy()}


def history_for(game: GameView, *agents: object) -> PublicHistory | None:
    """A history of ``game`` if any of ``agents`` asks for one (``uses_history``), else None."""
    if any(getattr(agent, "uses_history", False) for agent in agents):
        return PublicHistory(game)
    return None
