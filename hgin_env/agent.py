"""What an agent is: the one interface every player implements.

An agent plays B games at once: ``act(obs, rng=None)`` takes a batch of
observations (what ``VectorGame.observe()`` returns: ``{"observation": float32
(B, OBS_DIM), "action_mask": int8 (B, 108)}``, plus the public history of
:mod:`hgin_env.history` when the agent sets ``uses_history = True``) and returns
one legal action id per game as ``int64 (B,)``.  The environments seat agents as
opponents, the arena plays them against each other, and every class in the
``agents`` package implements this protocol; it lives at the bottom of the
package so that all of them can name it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Agent"]


@runtime_checkable
class Agent(Protocol):
    """A policy over B games at once (see the module docstring)."""

    name: str

    def act(
        self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None
    ) -> np.ndarray: ...
