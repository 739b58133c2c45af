"""A fast-finishing test policy for the environment tests.

Knocks whenever it may (lowest knock id), otherwise discards the card that
leaves the least deadwood, and draws at random; two of these finish a
Hollywood match in a few hundred steps, where random play needs thousands.
"""

from __future__ import annotations

import numpy as np

from hgin_env.observation import observation_spec

_AFTER = observation_spec()["deadwood_after_discard"]


def greedy_action(obs: dict[str, np.ndarray], rng: np.random.Generator) -> int:
    """One action from a single (unbatched) observation dict."""
    legal = np.flatnonzero(obs["action_mask"])
    knocks = legal[(legal >= 52) & (legal < 104)]
    if knocks.size:
        return int(knocks[0])
    discards = legal[legal < 52]
    if discards.size:
        after = obs["observation"][_AFTER]
        return int(discards[np.argmin(after[discards])])
    return int(rng.choice(legal))


def greedy_batch(obs: dict[str, np.ndarray], rng: np.random.Generator | None = None) -> np.ndarray:
    """The same policy on a batch (``VectorGame.observe()`` format)."""
    rng = rng if rng is not None else np.random.default_rng(0)
    return np.array(
        [greedy_action({"observation": o, "action_mask": m}, rng)
         for o, m in zip(obs["observation"], obs["action_mask"], strict=True)],
        dtype=np.int64,
    )


class GreedyAgent:
    """:func:`greedy_batch` with the agent interface (``name``, ``act``)."""

    name = "greedy"

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None) -> np.ndarray:
        return greedy_batch(obs, rng)
