"""Test oracles for the AEC wrapper layer.

:class:`IllegalMoveWrapper` rebuilds, from PettingZoo's own wrappers, what
``hgin_env.env()``'s single :class:`~hgin_env.envs.aec_wrapper.HollywoodWrapper`
layer does: ``OrderEnforcingWrapper(IllegalMoveWrapper(raw))`` must play
every game exactly as ``HollywoodWrapper(raw)`` does (tests/hgin_env/envs/test_aec.py).
It is written the obvious way (PettingZoo's ``TerminateIllegalWrapper``
pattern) and favours clarity over speed.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers import OrderEnforcingWrapper
from pettingzoo.utils.wrappers.base import BaseWrapper

from hgin_env.envs.spaces import action_id


class IllegalMoveWrapper(BaseWrapper):
    """PettingZoo's ``TerminateIllegalWrapper`` behaviour, reported in ``infos``.

    An illegal action ends the match: the offender gets ``illegal_reward``,
    the other agent 0, both are terminated, and both infos carry
    ``illegal_move`` (see ``raw_env.forfeit_illegal``).  A value that is not
    an action id goes to the raw env, which raises ``ValueError``.
    """

    def __init__(self, env: AECEnv, illegal_reward: float = -1.0) -> None:
        super().__init__(env)
        self.illegal_reward = float(illegal_reward)

    def step(self, action: Any) -> None:
        raw = self.env.unwrapped
        agent = raw.agent_selection
        if raw.terminations[agent] or raw.truncations[agent] or raw.is_legal(action):
            self.env.step(action)
            return
        try:
            action_id(action)
        except ValueError:
            self.env.step(action)  # raises the raw env's ValueError
            return
        EnvLogger.warn_on_illegal_move()
        raw.forfeit_illegal(action, self.illegal_reward)

    def __str__(self) -> str:
        return str(self.env)


def reference_env(raw: AECEnv, illegal_reward: float = -1.0) -> AECEnv:
    """The PettingZoo-wrapper stack that ``hgin_env.env()`` must behave like."""
    return OrderEnforcingWrapper(IllegalMoveWrapper(raw, illegal_reward))
