"""
# Gin Rummy (`gin_rummy_v4`, a drop-in for PettingZoo 1.26's)

| Import             | `from hgin_env.envs import gin_rummy_v4`      |
|--------------------|-----------------------------------------------|
| Actions            | Discrete                                      |
| Parallel API       | Yes (`parallel_env()`, a turn-based wrapper)  |
| Agents             | `agents= ['player_0', 'player_1']`            |
| Action Shape       | Discrete(110)                                 |
| Observation Shape  | (4, 52), or (5, 52) with `opponents_hand_visible=True` |
| Observation Values | [0, 1] (int8)                                 |

PettingZoo removed its RLCard-based gin rummy in 1.27.  This module plays the
same game, one hand of RLCard's gin rummy (docs/rules.md §R), with the same
arguments, spaces, action ids, observations, rewards and seeds: a seed deals
the cards it dealt in PettingZoo 1.26.1 (``tests/hgin_env/envs/
test_gin_rummy_v4_lockstep.py`` plays both side by side).  Where the original
had a defect, this module does what PettingZoo's documentation says instead;
docs/migrating.md lists each one.

```python
from hgin_env.envs import gin_rummy_v4

env = gin_rummy_v4.env(knock_reward=0.5, gin_reward=1.0, opponents_hand_visible=False)
env.reset(seed=42)
for i, agent in enumerate(env.possible_agents):
    env.action_space(agent).seed(42 + i)
for agent in env.agent_iter():
    observation, reward, termination, truncation, info = env.last()
    if termination or truncation:
        action = None
    else:
        action = env.action_space(agent).sample(observation["action_mask"])
    env.step(action)
env.close()
```

Actions (RLCard's ids): 0 and 1 score player 0 and player 1 (the two steps
that end every hand, each the only legal action), 2 draw from the stock, 3
pick up the top discard, 4 declare a dead hand, 5 gin, 6-57 discard a card,
58-109 knock with a card.  Cards are ordered spades, hearts, diamonds, clubs,
each ace to king (card ``c`` is ``6 + c`` to discard, ``58 + c`` to knock).

Observation planes: 0 the agent's hand, 1 the top of the discard pile, 2 the
rest of the pile, 3 the other player's known cards (picked up from the pile and
still held), 4 the unknown cards (only with ``opponents_hand_visible=True``,
as in PettingZoo 1.26).  All zero once the hand is over.

Rewards, at the end of the hand: the player who goes gin gets ``gin_reward``,
the knocker ``knock_reward``, the other player (both after a dead hand) minus
its deadwood / 100 (no layoffs).  ``env()`` ends the game on an illegal move
with -1 for the mover and 0 for the other (PettingZoo's
``TerminateIllegalWrapper``).

hgin's agents play it through
:class:`hgin_env.envs.gin_rummy_v4_agents.HginPlayer`; docs/migrating.md lists what
is the same as PettingZoo 1.26's env and what is not.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import turn_based_aec_to_parallel
from pettingzoo.utils.env_logger import EnvLogger

from hgin_env.envs import rlcard_game as G
from hgin_env.envs.aec_wrapper import DirectOrderEnforcingWrapper, not_before_reset

__all__ = ["env", "parallel_env", "raw_env"]

AGENTS = ("player_0", "player_1")
_PLANE_BITS = 5 * 52


def env(**kwargs: Any) -> AECEnv:
    """The wrapped environment, as PettingZoo 1.26 wrapped it: an illegal move ends the
    game with -1 for the mover (``TerminateIllegalWrapper``), out-of-space actions are
    refused (``AssertOutOfBoundsWrapper``), and the call order is enforced
    (``OrderEnforcingWrapper``); the three in one layer, :class:`GinRummyWrapper`."""
    return GinRummyWrapper(raw_env(**kwargs), illegal_reward=-1)


class GinRummyWrapper(DirectOrderEnforcingWrapper):
    """``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(TerminateIllegalWrapper(raw,
    illegal_reward)))`` in one layer, step for step (the lockstep test compares it with
    that stack around the original), reading the hot attributes straight from the raw
    env rather than through three ``__getattr__`` fallbacks, which cost more than a step.
    """

    def __init__(self, env: raw_env, illegal_reward: float = -1) -> None:
        super().__init__(env)
        self._illegal_reward = illegal_reward


    @property
    def _cumulative_rewards(self) -> dict[str, float]:
        return self._raw.cumulative_rewards

    def observation_space(self, agent: str) -> spaces.Space:
        return self._raw.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._raw.action_spaces[agent]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self._raw.observe(agent)

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not self._has_reset:
            raise not_before_reset("agent_selection")
        raw = self._raw
        agent = raw.agent_selection
        return (raw.observe(agent) if observe else None, raw.cumulative_rewards[agent],
                raw.terminations[agent], raw.truncations[agent], raw.infos[agent])

    def step(self, action: Any) -> None:
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        raw = self._raw
        self._has_updated = True
        if not raw.agents:
            EnvLogger.warn_step_after_terminated_truncated()
            return
        agent = raw.agent_selection
        dead = raw.terminations[agent] or raw.truncations[agent]
        # AssertOutOfBoundsWrapper
        assert (action is None and dead) or raw.action_spaces[agent].contains(action), (
            "action is not in action space")
        # TerminateIllegalWrapper (a dead agent's step goes to the raw env's dead step)
        if not dead and not raw.is_legal(action):
            EnvLogger.warn_on_illegal_move()
            raw.forfeit_illegal(self._illegal_reward)
            return
        raw.step(action)

    def __str__(self) -> str:
        return str(self._raw)


def parallel_env(**kwargs: Any) -> ParallelEnv:
    """The same game through PettingZoo's parallel API: each step applies the action of
    the agent to move (``infos[agent]["active_agent"]``) and ignores the other's."""
    return turn_based_aec_to_parallel(env(**kwargs))


class raw_env(AECEnv, EzPickle):  # PettingZoo's name for the unwrapped env
    """The unwrapped environment: one RLCard hand per episode (:class:`RLCardHand`).

    An illegal action raises ``ValueError``.  ``reset(options={"deck": [...],
    "dealer": 0 or 1})`` deals a given deck (RLCard's shuffled-deck order: the
    non-dealer's 11 cards are its last 11) instead of a shuffled one.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["human", "rgb_array", "ansi"],
        "name": "gin_rummy_v4",
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        knock_reward: float = 0.5,
        gin_reward: float = 1.0,
        opponents_hand_visible: bool | None = False,
        render_mode: str | None = None,
        screen_height: int | None = 1000,
    ) -> None:
        EzPickle.__init__(self, knock_reward=knock_reward, gin_reward=gin_reward,
                          opponents_hand_visible=opponents_hand_visible,
                          render_mode=render_mode, screen_height=screen_height)
        super().__init__()
        for name, value in (("knock_reward", knock_reward), ("gin_reward", gin_reward)):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise ValueError(f"{name} must be a number, got {value!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of "
                             f"{self.metadata['render_modes']}, got {render_mode!r}")
        self._knock_reward = knock_reward
        self._gin_reward = gin_reward
        self._opponents_hand_visible = bool(opponents_hand_visible)
        self._num_planes = 5 if self._opponents_hand_visible else 4
        self.render_mode = render_mode
        self.screen_height = screen_height
        self.possible_agents = list(AGENTS)
        self.agents = self.possible_agents[:]
        shape = (self._num_planes, 52)
        self.observation_spaces = {
            a: spaces.Dict({
                "observation": spaces.Box(low=0, high=1, shape=shape, dtype=np.int8),
                "action_mask": spaces.Box(low=0, high=1, shape=(G.NUM_ACTIONS,), dtype=np.int8),
            }) for a in AGENTS}
        self.action_spaces = {a: spaces.Discrete(G.NUM_ACTIONS) for a in AGENTS}
        self.hand = G.RLCardHand("rlcard")
        self._rng = G.rlcard_rng(None)
        self._seat_of = {a: i for i, a in enumerate(AGENTS)}

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new hand: RLCard's dealer draw and shuffle from the seed's stream (a seed
        restarts the stream, as PettingZoo 1.26 did; without one the stream goes on)."""
        if seed is not None:
            self._rng = G.rlcard_rng(seed)
        options = options or {}  # other keys are ignored, as PettingZoo's api_test expects
        if "deck" in options:
            deck = [int(c) for c in options["deck"]]
            dealer = int(options.get("dealer", 0))
        else:
            # game.py line 35, then dealer.py lines 19-20: the dealer, then the shuffle.
            dealer = int(self._rng.choice([0, 1]))
            deck = list(range(52))
            self._rng.shuffle(deck)
            if "dealer" in options:
                dealer = int(options["dealer"])
        self.hand.deal(deck, dealer)
        self.agents = self.possible_agents[:]
        self.agent_selection = AGENTS[self.hand.current]
        self.rewards = dict.fromkeys(AGENTS, 0)
        self._cumulative_rewards = dict.fromkeys(AGENTS, 0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)
        self.infos = {a: {} for a in AGENTS}
        self._masks: dict[int, np.ndarray] = {}

    # ------------------------------------------------------------------ observe
    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``agent``'s own view; its action mask is zero unless it is to move."""
        seat = self._seat_of[agent]
        bits = self.hand.planes(seat)
        planes = np.unpackbits(np.frombuffer(bits.to_bytes(33, "little"), np.uint8),
                               bitorder="little")[:_PLANE_BITS].view(np.int8)
        observation = planes.reshape(5, 52)[:self._num_planes].copy()
        legal = self.hand.legal if seat == self.hand.current else 0
        mask = self._masks.get(legal)
        if mask is None:
            mask = np.unpackbits(np.frombuffer(legal.to_bytes(14, "little"), np.uint8),
                                 bitorder="little")[:G.NUM_ACTIONS].view(np.int8)
            if len(self._masks) > 256:
                self._masks.clear()
            self._masks[legal] = mask
        return {"observation": observation, "action_mask": mask.copy()}

    def action_mask(self, agent: str) -> np.ndarray:
        return self.observe(agent)["action_mask"]

    def is_legal(self, action: Any) -> bool:
        """Whether ``action`` is legal for the agent to move."""
        try:
            a = int(action)
        except (TypeError, ValueError):
            return False
        return 0 <= a < G.NUM_ACTIONS and bool(self.hand.legal >> a & 1)

    @property
    def cumulative_rewards(self) -> dict[str, float]:
        """PettingZoo's ``_cumulative_rewards`` (what ``last()`` reports), by a public name."""
        return self._cumulative_rewards

    def forfeit_illegal(self, illegal_reward: float = -1) -> None:
        """End the game on an illegal move by the agent to move, exactly as PettingZoo's
        ``TerminateIllegalWrapper`` does: every agent terminated and truncated, the mover
        ``illegal_reward``, the others 0."""
        agent = self.agent_selection
        self._cumulative_rewards[agent] = 0
        self.terminations = dict.fromkeys(self.agents, True)
        self.truncations = dict.fromkeys(self.agents, True)
        self.rewards = dict.fromkeys(self.truncations, 0)
        self.rewards[agent] = float(illegal_reward)
        self._accumulate_rewards()
        self._deads_step_first()

    # ------------------------------------------------------------------ step
    def step(self, action: Any) -> None:
        if self.terminations[self.agent_selection] or self.truncations[self.agent_selection]:
            self._was_dead_step(action)
            return
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise ValueError(f"actions must be integer action ids, got {action!r}")
        hand = self.hand
        hand.step(int(action))
        if hand.over:
            payoffs = hand.payoffs(self._knock_reward, self._gin_reward)
            self.rewards = dict(zip(AGENTS, payoffs, strict=True))
            self.terminations = dict.fromkeys(AGENTS, True)
            self.truncations = dict.fromkeys(AGENTS, False)
        self._cumulative_rewards[self.agent_selection] = 0
        self.agent_selection = AGENTS[hand.current]
        self._accumulate_rewards()
        self._deads_step_first()
        if self.render_mode == "human":
            self.render()

    # ------------------------------------------------------------------ render
    def render(self) -> str | np.ndarray | None:
        """``ansi``: the table as text; ``rgb_array``: as an image with hgin's card faces;
        ``human``: the text, printed."""
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any "
                                  "render mode.")
            return None
        if not hasattr(self.hand, "hands"):
            raise RuntimeError("render() needs reset() first")
        if self.render_mode == "rgb_array":
            from hgin_env.envs.gin_rummy_v4_render import table_image

            return table_image(self.hand)
        from hgin_env.envs.gin_rummy_v4_render import table_text

        text = table_text(self.hand)
        if self.render_mode == "human":
            print(text + "\n", file=sys.stdout, flush=True)
            return None
        return text

    def close(self) -> None:
        pass
