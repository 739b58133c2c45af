"""Small statistics helpers for evaluations: Wilson intervals, Elo ratings and per-knock means."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Z95 = 1.959963984540054


def wilson_interval(successes: float, trials: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default).

    ``(nan, nan)`` when there are no trials.  It stays inside [0, 1] and
    behaves well at 0 and 100%, unlike the normal approximation.
    """
    if trials <= 0:
        return (math.nan, math.nan)
    p = successes / trials
    z2 = z * z
    denom = 1.0 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denom
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= trials else min(1.0, centre + half)
    return (low, high)


def design_effect(successes: np.ndarray, trials: np.ndarray) -> float:
    """Variance inflation of a proportion measured in clusters (>= 1).

    ``successes[i]`` and ``trials[i]`` are the counts of cluster ``i`` (for
    example the two matches of a duplicate pair, or the hands of a match).
    Outcomes inside a cluster can be correlated, so the binomial variance
    understates the uncertainty; the ratio of the cluster-robust variance
    of the pooled rate to the binomial one is returned, floored at 1 so
    that a negative correlation never narrows an interval.
    """
    s = np.asarray(successes, dtype=np.float64)
    t = np.asarray(trials, dtype=np.float64)
    keep = t > 0
    s, t = s[keep], t[keep]
    m, n = s.size, t.sum()
    if m < 2 or n <= 0:
        return 1.0
    p = s.sum() / n
    binomial = p * (1 - p) / n
    if binomial <= 0:
        return 1.0
    robust = ((s - p * t) ** 2).sum() / (n * n) * m / (m - 1)
    return max(1.0, float(robust / binomial))


def clustered_wilson(
    successes: np.ndarray, trials: np.ndarray, z: float = Z95
) -> tuple[float, float, float]:
    """Wilson interval on the effective sample size of clustered counts.

    Returns ``(low, high, design_effect)``: the pooled proportion's Wilson
    interval computed with ``n / design_effect`` trials (and the same rate).
    """
    s = np.asarray(successes, dtype=np.float64)
    t = np.asarray(trials, dtype=np.float64)
    n = float(t.sum())
    if n <= 0:
        return (math.nan, math.nan, 1.0)
    deff = design_effect(s, t)
    n_eff = n / deff
    k = float(s.sum())
    low, high = wilson_interval(k / n * n_eff, n_eff, z)
    if k <= 0:
        low = 0.0
    if k >= n:
        high = 1.0
    return (low, high, deff)


def paired_difference(a_won: np.ndarray, b_won: np.ndarray, pair: np.ndarray,
                      z: float = Z95) -> dict[str, float]:
    """The difference of two agents' match win rates over the same deals, with its interval.

    ``a_won[i]`` and ``b_won[i]`` are the results (1 won, 0 lost) of two agents that
    each played match ``i`` of the same seeded set against the same opponent, and
    ``pair[i]`` is the duplicate pair of match ``i``.  Playing the same deals cancels
    most of the luck of the cards, so the difference is measured per pair (the
    independent unit) and its interval is the normal one on the pairs' differences:
    far narrower than two separate intervals.  Returns ``diff`` (A's rate minus B's),
    ``low``, ``high``, ``a_rate``, ``b_rate`` and ``pairs``.
    """
    a = np.asarray(a_won, dtype=np.float64)
    b = np.asarray(b_won, dtype=np.float64)
    p = np.asarray(pair, dtype=np.int64)
    if not a.shape == b.shape == p.shape:
        raise ValueError(f"a_won, b_won and pair need one shape, got {a.shape}, {b.shape}, "
                         f"{p.shape}")
    counts = np.bincount(p)
    used = counts > 0
    if not used.any():
        return {"diff": math.nan, "low": math.nan, "high": math.nan, "a_rate": math.nan,
                "b_rate": math.nan, "pairs": 0}
    d = (np.bincount(p, weights=a - b)[used]) / counts[used]
    mean = float(d.mean())
    half = z * float(d.std(ddof=1)) / math.sqrt(d.size) if d.size > 1 else math.inf
    return {"diff": mean, "low": mean - half, "high": mean + half,
            "a_rate": float(a.mean()), "b_rate": float(b.mean()), "pairs": int(d.size)}


def mean_knock_deadwood(deadwood: np.ndarray, knocks: np.ndarray) -> float:
    """The mean deadwood an agent knocked with: summed deadwood over its knocks (per match,
    gins counted as 0) divided by the number of knocks; NaN when it never knocked.

    It tells a knocking style apart where the gin and undercut rates do not: ``simple``
    knocks with whatever it first may (near the knock limit), a gin hunter with little.
    """
    k = float(np.asarray(knocks, dtype=np.float64).sum())
    return float(np.asarray(deadwood, dtype=np.float64).sum()) / k if k else math.nan


def elo_ratings(
    wins: np.ndarray,
    prior: float = 0.5,
    mean: float = 1500.0,
    iterations: int = 10_000,
    tol: float = 1e-10,
) -> np.ndarray:
    """Elo ratings from a pairwise win matrix by Bradley–Terry maximum likelihood.

    ``wins[i, j]`` counts the matches agent ``i`` won against agent ``j``.
    ``prior`` adds that many virtual wins each way to every pair that met
    (a draw-like regulariser), so a 100% record gives a large but finite
    gap.  Fitted with the classic minorise–maximise iteration; ratings are
    ``400 * log10(strength)``, shifted so their average is ``mean``.
    """
    w = np.asarray(wins, dtype=np.float64)
    k = w.shape[0]
    if w.shape != (k, k):
        raise ValueError(f"wins must be square, got shape {w.shape}")
    if k == 0:
        return np.zeros(0)
    games = w + w.T
    met = games > 0
    w = w + prior * met
    games = w + w.T
    total_wins = w.sum(axis=1)
    strength = np.ones(k)
    for _ in range(iterations):
        denom = (games / (strength[:, None] + strength[None, :])).sum(axis=1)
        new = np.where(denom > 0, total_wins / np.where(denom > 0, denom, 1.0), strength)
        new = np.where(new > 0, new, 1e-300)
        new /= math.exp(np.log(new).mean())
        if np.max(np.abs(np.log(new) - np.log(strength))) < tol:
            strength = new
            break
        strength = new
    ratings = 400.0 * np.log10(strength)
    return ratings - ratings.mean() + mean


def elo_from_pairs(
    names: Sequence[str], results: Sequence[tuple[str, str, int, int]], **kwargs: float
) -> dict[str, float]:
    """Elo ratings from ``(a, b, a_wins, b_wins)`` records."""
    index = {name: i for i, name in enumerate(names)}
    wins = np.zeros((len(names), len(names)))
    for a, b, wa, wb in results:
        wins[index[a], index[b]] += wa
        wins[index[b], index[a]] += wb
    ratings = elo_ratings(wins, **kwargs)
    return {name: float(ratings[i]) for name, i in index.items()}


__all__ = [
    "Z95",
    "clustered_wilson",
    "design_effect",
    "elo_from_pairs",
    "elo_ratings",
    "mean_knock_deadwood",
    "paired_difference",
    "wilson_interval",
]
