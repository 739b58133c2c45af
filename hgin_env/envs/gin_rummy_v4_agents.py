"""hgin's agents (``simple``, ``strong``, the network, ...) as players of ``gin_rummy_v4``.

hgin's agents read hgin's observation (:mod:`hgin_env.observation`) and answer with
hgin's action ids.  :class:`HginPlayer` shows them an RLCard position the way hgin's
engine would show the same cards (an hgin game state with the same hands, pile, stock
size, taken card and deadwood table, under the ``rlcard`` profile, before any score) and
maps the answer back to RLCard's ids.  RLCard's own choices are mapped onto hgin's:

* drawing at the dead stock (two cards left) is RLCard's "declare dead hand", so an
  agent that would draw there declares it; taking the discard stays taking it;
* where RLCard allows one action only (a forced gin, the scoring steps, the dead hand
  after 200 moves) it is taken without asking the agent;
* the knock with the card just picked up, legal in RLCard, is in the mask the agent sees.

An agent that reads the hand's public history (``search``) cannot be seated: RLCard's
hand has no hgin history.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hgin_env import actions as A
from hgin_env.agent import Agent
from hgin_env.envs import rlcard_game as G
from hgin_env.envs.opponents import as_opponent
from hgin_env.observation import encode
from hgin_env.rules import load_rules
from hgin_env.state import GameState

__all__ = ["HginPlayer", "hgin_card"]

_PHASES = {G.PHASE_DRAW: A.PHASE_DRAW, G.PHASE_DISCARD: A.PHASE_DISCARD}


def hgin_card(card: int) -> int:
    """hgin's id of RLCard's card ``card`` (and back: the map is its own inverse)."""
    return (3 - card // 13) * 13 + card % 13


class HginPlayer:
    """Plays ``gin_rummy_v4`` with an hgin agent: ``player(env)`` is the action of the
    agent to move (``env`` a ``gin_rummy_v4`` env, wrapped or raw).

    ``agent`` is an agent spec (``"simple"``, ``"strong"``, ``"pretrained"``,
    ``"random"``, ``"ckpt:PATH"``) or an agent object; ``seed`` seeds the draws of the
    agents that choose at random.
    """

    def __init__(self, agent: str | Agent = "simple", seed: int | None = None) -> None:
        self.rules = load_rules("rlcard")
        self.agent = as_opponent(agent, self.rules)
        if getattr(self.agent, "uses_history", False):
            raise ValueError(f"agent {getattr(self.agent, 'name', agent)!r} reads the hand's "
                             "public history, which an RLCard hand does not have")
        self.name = getattr(self.agent, "name", str(agent))
        self.rng = np.random.default_rng(seed)
        self._state = GameState.zeros(1, self.rules)

    def __call__(self, env: Any) -> int:
        return self.act(env.unwrapped.hand)

    def act(self, hand: G.RLCardHand) -> int:
        """The agent's action (an RLCard id) for the player to move in ``hand``."""
        legal = hand.legal_actions()
        if len(legal) == 1:
            return legal[0]
        if hand.phase not in _PHASES:
            raise ValueError("the hand is over: no player is to move")
        seat = hand.current
        mask = np.zeros((1, A.NUM_ACTIONS), np.int8)
        for a in legal:
            if a in (G.DRAW, G.DEAD_HAND):
                mask[0, A.DRAW_STOCK] = 1
            elif a == G.PICK_UP:
                mask[0, A.TAKE_DISCARD] = 1
            elif a >= G.KNOCK:
                mask[0, A.KNOCK + hgin_card(a - G.KNOCK)] = 1
            else:
                mask[0, hgin_card(a - G.DISCARD)] = 1
        obs = {"observation": encode(self._fill(hand), np.array([seat])), "action_mask": mask}
        choice = int(np.asarray(self.agent.act(obs, self.rng)).reshape(-1)[0])
        if not (0 <= choice < A.NUM_ACTIONS and mask[0, choice]):
            raise ValueError(f"agent {self.name!r} chose {choice}, not in the mask it was shown")
        if choice == A.DRAW_STOCK:
            return G.DRAW if G.DRAW in legal else G.DEAD_HAND
        if choice == A.TAKE_DISCARD:
            return G.PICK_UP
        if choice >= A.KNOCK:
            return G.KNOCK + hgin_card(choice - A.KNOCK)
        return G.DISCARD + hgin_card(choice)

    def _fill(self, hand: G.RLCardHand) -> GameState:
        """The one-game hgin state of ``hand``'s position."""
        st = self._state
        st.hands[0] = [G.to_hgin_mask(h) for h in hand.hands]
        st.known[0] = [G.to_hgin_mask(k) for k in hand.known]
        pile = [hgin_card(c) for c in hand.pile]
        st.pile[0] = 0
        st.pile[0, :len(pile)] = pile
        st.pile_size[0] = len(pile)
        st.pile_mask[0] = G.to_hgin_mask(hand.pile_mask)
        st.stock_pos[0] = 52 - len(hand.stock)
        st.phase[0] = _PHASES[hand.phase]
        st.current_player[0] = hand.current
        st.dealer[0] = hand.dealer
        st.taken_card[0] = hgin_card(hand.taken) if hand.taken >= 0 else -1
        st.knock_limit[0] = hand.knock_limit
        if hand.phase == G.PHASE_DISCARD:
            st.discard_deadwood[0] = hand.after
        return st
