"""The uniformly random legal player: the floor every other agent must clear."""

from __future__ import annotations

import numpy as np

from agents.base import default_rng, sample_uniform_legal


class RandomAgent:
    name = "random"
    #: Draws one number per row (see ``agents.base.RowGenerators``).
    draws_per_row = True

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None) -> np.ndarray:
        return sample_uniform_legal(obs["action_mask"], rng if rng is not None else self._rng)


__all__ = ["RandomAgent", "default_rng"]
