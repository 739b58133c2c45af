"""Learning curves from training logs: match win rate against each evaluation opponent,
with its 95% interval, over environment steps, one line per run (per seed).

A run's periodic evaluations are the lines of ``<logdir>/eval.jsonl`` and its final one
is ``<logdir>/final_eval.json`` (both written by ``hgin train``).  :func:`plot_runs`
draws one panel per opponent and writes the figure as PNG and SVG; ``hgin train``
draws its own run at the end, and ``hgin plot RUN [RUN ...]`` draws several (the seeds
of one recipe) on one figure.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["RunLog", "plot_runs", "read_run"]


@dataclass
class RunLog:
    """One run's evaluations: ``points`` are ``(env_steps, {opponent: (rate, low, high)})``
    in step order, ``final`` the final evaluation (or ``None``), rates in [0, 1]."""

    label: str
    points: list[tuple[int, dict[str, tuple[float, float, float]]]] = field(default_factory=list)
    final: tuple[int, dict[str, tuple[float, float, float]]] | None = None

    @property
    def opponents(self) -> list[str]:
        seen: dict[str, None] = {}
        for _, res in self.points + ([self.final] if self.final else []):
            seen.update(dict.fromkeys(res))
        return list(seen)


def _rates(results: Any, where: str) -> dict[str, tuple[float, float, float]]:
    if not isinstance(results, dict):
        raise ValueError(f"{where}: 'results' is not a table of opponents")
    out = {}
    for spec, r in results.items():
        try:
            out[str(spec)] = (float(r["win_rate"]), float(r["ci_low"]), float(r["ci_high"]))
        except (TypeError, KeyError, ValueError) as exc:
            raise ValueError(f"{where}: the results against {spec!r} have no win_rate / "
                             f"ci_low / ci_high ({exc})") from None
    return out


def read_run(logdir: str | Path, label: str | None = None) -> RunLog:
    """The evaluations of the run in ``logdir``; ``ValueError`` naming the file for a run
    without any, or a line that is not an evaluation."""
    folder = Path(logdir)
    log = folder / "eval.jsonl"
    final = folder / "final_eval.json"
    if not log.is_file() and not final.is_file():
        raise ValueError(f"{folder}: no eval.jsonl or final_eval.json (is it a log folder "
                         "of hgin train?)")
    if label is None:
        label = folder.name
        config = folder / "config.toml"
        if config.is_file():
            try:
                seed = tomllib.loads(config.read_text())["run"]["seed"]
                label = f"{folder.name} (seed {seed})"
            except (tomllib.TOMLDecodeError, KeyError, TypeError):
                pass
    run = RunLog(label)
    if log.is_file():
        for number, line in enumerate(log.read_text().splitlines(), 1):
            if not line.strip():
                continue
            where = f"{log}:{number}"
            try:
                entry = json.loads(line)
                steps = int(entry["env_steps"])
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"{where}: not an evaluation line ({exc})") from None
            run.points.append((steps, _rates(entry.get("results"), where)))
    run.points.sort(key=lambda p: p[0])
    if final.is_file():
        try:
            entry = json.loads(final.read_text())
            run.final = (int(entry["env_steps"]), _rates(entry.get("results"), str(final)))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{final}: not a final evaluation ({exc})") from None
    if not run.points and run.final is None:
        raise ValueError(f"{folder}: the run has no evaluation yet")
    return run


def plot_runs(runs: Sequence[RunLog], out: str | Path, title: str | None = None) -> list[Path]:
    """Draw ``runs`` (one panel per opponent, one line per run) to ``out`` + ``.png`` and
    ``.svg``; returns the two paths."""
    from matplotlib.figure import Figure

    if not runs:
        raise ValueError("no run to plot")
    opponents: dict[str, None] = {}
    for run in runs:
        opponents.update(dict.fromkeys(run.opponents))
    names = list(opponents)
    fig = Figure(figsize=(4.2 * len(names), 3.6), layout="constrained")
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    colours = [f"C{i % 10}" for i in range(len(runs))]
    for ax, name in zip(axes, names, strict=True):
        for run, colour in zip(runs, colours, strict=True):
            pts = [(s, r[name]) for s, r in run.points if name in r]
            if pts:
                x = [s / 1e6 for s, _ in pts]
                ax.plot(x, [100 * r[0] for _, r in pts], color=colour, marker="o",
                        markersize=3, label=run.label)
                ax.fill_between(x, [100 * r[1] for _, r in pts], [100 * r[2] for _, r in pts],
                                color=colour, alpha=0.15, linewidth=0)
            if run.final and name in run.final[1]:
                steps, (rate, low, high) = run.final[0], run.final[1][name]
                ax.errorbar([steps / 1e6], [100 * rate],
                            yerr=[[100 * (rate - low)], [100 * (high - rate)]], color=colour,
                            marker="s", markersize=5, capsize=3,
                            label=None if pts else run.label)
        ax.axhline(50, color="0.5", linewidth=0.8, linestyle="--")
        ax.set_title(f"vs {name}")
        ax.set_xlabel("environment steps (M)")
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("match win % (95% interval)")
    axes[-1].legend(fontsize="small", loc="lower right")
    fig.suptitle(title or "match win rate against each evaluation opponent "
                 "(circles: periodic evaluations, squares: final)", fontsize="medium")
    stem = Path(out)
    if stem.suffix.lower() in (".png", ".svg"):
        stem = stem.with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.savefig(paths[0], dpi=120)
    fig.savefig(paths[1], metadata={"Date": None})
    return paths
