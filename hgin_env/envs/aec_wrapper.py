"""What ``hgin_env.env()`` wraps the raw AEC env in: PettingZoo's order
enforcement, the out-of-space check and the illegal-move handling in one layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from hgin_env.envs.spaces import warn_illegal_move

if TYPE_CHECKING:
    from pettingzoo import AECEnv

__all__ = ["DirectOrderEnforcingWrapper", "HollywoodWrapper", "not_before_reset"]


# ----------------------------------------------------------------------------- AEC


def not_before_reset(name: str) -> AttributeError:
    """The error PettingZoo's order enforcement raises for ``name`` read before reset()."""
    return AttributeError(f"{name} cannot be accessed before reset")


class DirectOrderEnforcingWrapper(OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` that reads the attributes it guards until
    ``reset()`` (``agent_selection``, ``agents``, ``rewards``, ...) straight from the raw
    env ``_raw``, instead of through a chain of ``__getattr__`` fallbacks, which cost more
    than a game step.  The base of hgin's one-layer wrappers (this module's and
    ``gin_rummy_v4``'s)."""

    def __init__(self, env: AECEnv) -> None:
        super().__init__(env)
        self._raw = env

    @property
    def agent_selection(self) -> str:
        if self._has_reset:
            return self._raw.agent_selection
        raise not_before_reset("agent_selection")

    @property
    def agents(self) -> list[str]:
        if self._has_reset:
            return self._raw.agents
        raise not_before_reset("agents")

    @property
    def rewards(self) -> dict[str, float]:
        if self._has_reset:
            return self._raw.rewards
        raise not_before_reset("rewards")

    @property
    def terminations(self) -> dict[str, bool]:
        if self._has_reset:
            return self._raw.terminations
        raise not_before_reset("terminations")

    @property
    def truncations(self) -> dict[str, bool]:
        if self._has_reset:
            return self._raw.truncations
        raise not_before_reset("truncations")

    @property
    def infos(self) -> dict[str, dict[str, Any]]:
        if self._has_reset:
            return self._raw.infos
        raise not_before_reset("infos")

    @property
    def num_agents(self) -> int:
        return len(self.agents)


class HollywoodWrapper(DirectOrderEnforcingWrapper):
    """What :func:`hgin_env.env <hgin_env.envs.aec.env>` wraps ``raw_env`` in: PettingZoo's order
    enforcement, the out-of-space check and the illegal-move handling in one layer.

    It behaves as ``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(
    TerminateIllegalWrapper(raw)))`` (or ``OrderEnforcingWrapper(raw)`` with
    ``strict``), except that an action that is not an action id at all raises
    ``ValueError`` (see :func:`action_id`) rather than an assertion, which
    ``python -O`` would strip, and a forfeit warns with an
    :class:`~hgin_env.envs.spaces.IllegalMoveWarning` that names the move (PettingZoo's
    own warning does not).  It reads the hot attributes
    (``agent_selection``, ``agents``, ``rewards``, …) straight from the raw
    env instead of through a chain of ``__getattr__`` fallbacks, which cost
    more than a game step.
    """

    def __init__(self, env: AECEnv, strict: bool = False, illegal_reward: float = -1.0) -> None:
        super().__init__(env)
        self.strict = bool(strict)
        self.illegal_reward = float(illegal_reward)


    @property
    def _cumulative_rewards(self) -> dict[str, float]:
        # PettingZoo's protocol name (its wrappers and tests read it).
        return dict(self._raw.cumulative_rewards)

    def observation_space(self, agent: str) -> spaces.Space:
        return self._raw.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._raw.action_spaces[agent]

    def observe(self, agent: str) -> dict[str, np.ndarray] | None:
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self._raw.observe(agent)

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        raw = self._raw
        agent = self.agent_selection
        return (raw.observe(agent) if observe else None, raw.cumulative_reward(agent),
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
        if raw.terminations[agent] or raw.truncations[agent]:
            raw.step(action)  # only None is accepted (PettingZoo raises ValueError)
            return
        if raw.try_step(action):
            return
        message = raw.illegal_action_message(agent, action)
        if self.strict:
            raise ValueError(message)
        warn_illegal_move(message)  # never silent: names the move and strict=True
        raw.forfeit_illegal(action, self.illegal_reward)

    def __str__(self) -> str:
        return str(self._raw)
