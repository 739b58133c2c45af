"""The match driver: let the agents at a table move, and keep the hand's public history.

Whoever seats an agent at a :class:`~hgin_env.envs.table.MatchTable` (the Gymnasium
env's opponent, the terminal game's, the browser play session's) needs the same
three things: to hand the agent its seat's observation as a batch of one, with the
hand's public history (:mod:`hgin_env.history`) for agents that ask for it (search);
to refuse an illegal reply; and to record every move of either seat, the person's or
the learner's included, in that history.  :class:`MatchDriver` does them once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from hgin_env.agent import Agent
from hgin_env.envs.table import MatchTable
from hgin_env.history import PublicHistory, history_for

__all__ = ["AgentError", "MatchDriver"]


class AgentError(RuntimeError):
    """An agent chose an illegal action: ``seat``, ``action`` and the table's message."""

    def __init__(self, seat: int, action: int, message: str) -> None:
        super().__init__(message)
        self.seat = seat
        self.action = action


class MatchDriver:
    """Plays the turns of ``agents`` (by seat) at ``table`` and keeps the public history.

    Call :meth:`new_match` after every ``table.reset``; apply every other move
    through :meth:`play`, so the history sees it.  ``rng`` is the generator the agents
    draw from (the caller's, so its seeding decides their choices).
    """

    def __init__(self, table: MatchTable, agents: Mapping[int, Agent],
                 rng: np.random.Generator) -> None:
        self.table = table
        self.agents = dict(agents)
        self.rng = rng
        self.history: PublicHistory | None = None

    def new_match(self) -> None:
        """Start the history of a match just dealt (agents that use none get none)."""
        self.history = history_for(self.table.game, *self.agents.values())

    def observation(self, seat: int) -> dict[str, np.ndarray]:
        """``seat``'s observation as a batch of one, with the public history if kept."""
        obs = self.table.observe(seat)
        batch = {key: value[None] for key, value in obs.items()}
        if self.history is not None:
            batch.update(self.history.observe(np.array([seat])))
        return batch

    def choose(self, seat: int) -> int:
        """The action ``seat``'s agent chooses now (not yet played); an illegal one
        raises :class:`AgentError`."""
        agent = self.agents[seat]
        action = int(np.asarray(agent.act(self.observation(seat), rng=self.rng)).reshape(-1)[0])
        if not self.table.is_legal(action):
            raise AgentError(seat, action, self.table.illegal_action_message(seat, action))
        return action

    def play(self, action: int) -> tuple[float, float, dict[str, Any]]:
        """Apply the legal ``action`` of the seat to move (anyone's) and record it."""
        seat = self.table.current_player
        r0, r1, info = self.table.play(action)
        if self.history is not None:
            self.history.step_one(self.table.game, seat, action, bool(info["hand_over"]))
        return r0, r1, info

    def play_agents(self, after: Callable[[int, int, float, float, dict[str, Any]], None]
                    | None = None) -> None:
        """Let the agents move while it is one of theirs to move and the match goes on;
        ``after(seat, action, r0, r1, info)`` is called after each of their moves."""
        table = self.table
        while not table.over and table.current_player in self.agents:
            seat = table.current_player
            action = self.choose(seat)
            r0, r1, info = self.play(action)
            if after is not None:
                after(seat, action, r0, r1, info)
