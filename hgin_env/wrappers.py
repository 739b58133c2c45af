"""Thin Gymnasium wrappers for RL libraries that want a flat observation.

:class:`FlatObservation` turns :class:`~hgin_env.gym_env.HollywoodGinEnv`'s
``{"observation", "action_mask"}`` dict into the bare observation vector
(a ``Box`` of ``OBS_DIM`` float32) and keeps the legal-action mask of the
latest observation behind ``action_masks()`` — the method
``sb3_contrib.MaskablePPO`` looks for (through ``get_wrapper_attr`` or a
``VecEnv``'s ``env_method``), so no ``ActionMasker`` is needed::

    from hgin_env.gym_env import HollywoodGinEnv
    from hgin_env.wrappers import FlatObservation

    env = FlatObservation(HollywoodGinEnv(opponent="simple"))
    obs, info = env.reset(seed=0)  # obs: float32 (OBS_DIM,)
    env.action_masks()  # bool (108,): the legal actions now

It works on any Gymnasium env whose observation space is a ``Dict`` with
those two keys.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["FlatObservation"]


class FlatObservation(gym.ObservationWrapper):
    """Observation = the ``observation`` vector; ``action_masks()`` = the mask as bools."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if not (isinstance(space, spaces.Dict)
                and {"observation", "action_mask"} <= set(space.spaces)):
            raise ValueError("FlatObservation needs a Dict observation space with "
                             f"'observation' and 'action_mask' keys, got {space!r}")
        self.observation_space = space["observation"]
        self._mask = np.zeros(space["action_mask"].shape, bool)

    def observation(self, observation: dict[str, Any]) -> np.ndarray:
        self._mask = np.asarray(observation["action_mask"]).astype(bool)
        return observation["observation"]

    def action_masks(self) -> np.ndarray:
        """The legal actions of the latest observation (bool, ``NUM_ACTIONS``)."""
        return self._mask.copy()
