"""The agent interface (:class:`hgin_env.agent.Agent`, re-exported) and the helpers
agents share: uniform legal sampling and per-row generators."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hgin_env.agent import Agent

__all__ = ["Agent", "RowGenerators", "default_rng", "sample_uniform_legal"]


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


class RowGenerators:
    """One generator per game row, drawn from as one batch.

    The arena gives every match its own generator so results do not depend on
    batching.  An agent that sets ``draws_per_row = True`` promises to draw only
    through :meth:`random` (one leading entry per row of its batch) or
    :meth:`random_rows`; it then gets this object as ``rng`` and is called once
    for the batch, drawing exactly what it would draw called on each row alone.
    """

    def __init__(self, generators: Sequence[np.random.Generator]) -> None:
        self._generators = list(generators)

    def __len__(self) -> int:
        return len(self._generators)

    def random(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Uniform [0, 1) draws of ``size``; row ``i`` comes from generator ``i``."""
        shape = (int(size),) if isinstance(size, (int, np.integer)) else tuple(size)
        if not shape or shape[0] != len(self._generators):
            raise ValueError(f"RowGenerators draws per row: size {size!r} for "
                             f"{len(self._generators)} rows")
        rest = shape[1:]
        return np.array([g.random(rest) for g in self._generators], np.float64).reshape(shape)

    def random_rows(self, rows: np.ndarray) -> np.ndarray:
        """One uniform draw for each listed row, from that row's generator."""
        return np.array([self._generators[r].random() for r in np.asarray(rows).tolist()],
                        np.float64)


def default_rng(rng: np.random.Generator | None) -> np.random.Generator:
    return rng if rng is not None else np.random.default_rng()
