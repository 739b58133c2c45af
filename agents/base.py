"""The batched policy interface every agent implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Agent(Protocol):
    """A policy over B games at once.

    ``obs`` is what ``VectorGame.observe()`` returns: ``{"observation":
    float32 (B, OBS_DIM), "action_mask": int8 (B, 108)}``.  ``act`` returns
    one legal action id per game as ``int64 (B,)``.
    """

    name: str

    def act(
        self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None
    ) -> np.ndarray: ...


def sample_uniform_legal(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of ``mask`` (B, 108).

    Legal ids are sparse (at most a couple of dozen of 108), so listing them
    with one ``nonzero`` and picking a random offset inside each row's run is
    several times cheaper than a random key per action.
    """
    mask = np.ascontiguousarray(mask)
    if mask.ndim != 2:
        raise ValueError(f"action mask must be 2-D (B, actions), got shape {mask.shape}")
    width = mask.shape[1]
    flat = mask.view(bool) if mask.dtype in (np.int8, np.uint8, np.bool_) else mask != 0
    # flatnonzero on a bool view is ~8x faster than a 2-D nonzero on int8.
    legal = np.flatnonzero(flat.reshape(-1))
    rows = legal // width
    cols = legal - rows * width
    counts = np.bincount(rows, minlength=mask.shape[0])
    if (counts == 0).any():
        row = int(np.flatnonzero(counts == 0)[0])
        raise ValueError(f"game {row} has no legal action (all-zero action mask)")
    starts = np.cumsum(counts) - counts
    pick = starts + (rng.random(mask.shape[0]) * counts).astype(np.int64)
    return cols[pick].astype(np.int64)


def default_rng(rng: np.random.Generator | None) -> np.random.Generator:
    return rng if rng is not None else np.random.default_rng()
