"""Shared helpers for the bench scripts: random hands, timing, table output."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from rich.console import Console
from rich.table import Table


def random_hands(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """``n`` uniformly random ``size``-card hands as ``uint64`` masks."""
    keys = rng.random((n, 52))
    cards = np.argpartition(keys, size, axis=1)[:, :size].astype(np.uint64)
    return np.bitwise_or.reduce(np.uint64(1) << cards, axis=1)


def best_time(fn: Callable[[], object], min_seconds: float = 1.0, repeats: int = 5) -> float:
    """Best per-call wall time over ``repeats`` rounds of at least ``min_seconds`` / repeats."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds / repeats:
                break
        best = min(best, elapsed / calls)
    return best


def print_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(*row)
    console = Console()
    Console(width=max(console.width, 120)).print(table)


def random_legal(mask: np.ndarray, rng: np.random.Generator) -> int:
    """One uniformly random legal action of a single (108,) mask."""
    legal = np.flatnonzero(mask)
    return int(legal[int(rng.integers(legal.size))])


def print_verdict(worst: float, limit: float, what: str = "slower") -> None:
    """PASS/FAIL line for an overhead limit (``worst`` and ``limit`` as fractions)."""
    verdict = "PASS" if worst <= limit else "FAIL"
    print(f"limit: recording at most {100 * limit:.0f}% {what}: {verdict} "
          f"(worst {100 * worst:+.1f}%)")
