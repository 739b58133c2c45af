"""Learning curves from training logs: match win rate against each evaluation opponent,
with its 95% interval, over environment steps, one line per run (per seed).

A run's periodic evaluations are the lines of ``<logdir>/eval.jsonl`` and its final one
is ``<logdir>/final_eval.json`` (both written by ``hgin train``); :func:`read_scalars`
adds TensorBoard scalars of the run (``loss/value``, ``loss/explained_variance``).
:func:`plot_runs` draws one panel per opponent (and one per scalar, below) and writes
the figure as PNG and SVG; ``hgin train``
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

__all__ = ["RunLog", "final_summary", "plot_runs", "read_run", "read_scalars"]


@dataclass
class RunLog:
    """One run's evaluations: ``points`` are ``(env_steps, {opponent: (rate, low, high)})``
    in step order, ``final`` the final evaluation (or ``None``), rates in [0, 1]."""

    label: str
    points: list[tuple[int, dict[str, tuple[float, float, float]]]] = field(default_factory=list)
    final: tuple[int, dict[str, tuple[float, float, float]]] | None = None
    #: TensorBoard scalars by tag (``loss/value``, ...): ``(env_steps, value)`` in order.
    scalars: dict[str, list[tuple[int, float]]] = field(default_factory=dict)

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


def read_scalars(run: RunLog, logdir: str | Path, tags: Sequence[str]) -> None:
    """Add the TensorBoard scalars ``tags`` of the run in ``logdir`` to ``run``;
    ``ValueError`` naming a tag the run did not log."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    events.Reload()
    logged = set(events.Tags().get("scalars", []))
    for tag in tags:
        if tag not in logged:
            known = ", ".join(sorted(t for t in logged if "/" in t)[:12])
            raise ValueError(f"{logdir}: no TensorBoard scalar {tag!r} (some it has: {known})")
        by_step = {e.step: e.value for e in events.Scalars(tag)}  # a resume rewrites steps
        run.scalars[tag] = sorted(by_step.items())


def _smooth(values: list[float], window: int) -> list[float]:
    """Trailing mean over ``window`` values: per-update losses are noisy."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


#: The win-rate axis: 0-100 % with a margin, so that a line, a marker or an interval at
#: 0 % or 100 % is drawn whole inside the panel (at the frame, half of it would be clipped).
WIN_RATE_LIMITS = (-4.0, 104.0)
WIN_RATE_TICKS = (0, 20, 40, 60, 80, 100)


def plot_runs(runs: Sequence[RunLog], out: str | Path, title: str | None = None,
              smooth: int = 10) -> list[Path]:
    """Draw ``runs`` (one panel per opponent, one line per run; a second row with a panel
    per TensorBoard scalar the runs carry, averaged over ``smooth`` updates) to ``out`` +
    ``.png`` and ``.svg``; returns the two paths."""
    fig = learning_curve_figure(runs, title, smooth)
    stem = Path(out)
    if stem.suffix.lower() in (".png", ".svg"):
        stem = stem.with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.savefig(paths[0], dpi=120)
    fig.savefig(paths[1], metadata={"Date": None})
    return paths


def learning_curve_figure(runs: Sequence[RunLog], title: str | None = None,
                          smooth: int = 10) -> Any:
    """The figure :func:`plot_runs` saves (a matplotlib ``Figure``)."""
    from matplotlib.figure import Figure

    if not runs:
        raise ValueError("no run to plot")
    opponents: dict[str, None] = {}
    tags: dict[str, None] = {}
    for run in runs:
        opponents.update(dict.fromkeys(run.opponents))
        tags.update(dict.fromkeys(run.scalars))
    names = list(opponents)
    cols = max(len(names), len(tags))
    rows = 2 if tags else 1
    fig = Figure(figsize=(4.2 * cols, 3.6 * rows), layout="constrained")
    grid = fig.subplots(rows, cols, squeeze=False)
    axes = list(grid[0][: len(names)])
    for ax in list(grid[0][len(names):]) + (list(grid[1][len(tags):]) if tags else []):
        ax.set_visible(False)
    for ax, tag in zip(grid[1][: len(tags)] if tags else [], tags, strict=False):
        for run, colour in zip(runs, [f"C{i % 10}" for i in range(len(runs))], strict=True):
            pts = run.scalars.get(tag, [])
            if pts:
                ax.plot([s / 1e6 for s, _ in pts], _smooth([v for _, v in pts], smooth),
                        color=colour, linewidth=1.2, label=run.label)
        ax.set_title(f"{tag} (mean of {smooth} updates)")
        ax.set_xlabel("environment steps (M)")
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3)
    colours = [f"C{i % 10}" for i in range(len(runs))]
    span = max([s for run in runs for s, _ in run.points]
               + [run.final[0] for run in runs if run.final] + [1]) / 1e6
    for ax, name in zip(axes, names, strict=True):
        for i, (run, colour) in enumerate(zip(runs, colours, strict=True)):
            pts = [(s, r[name]) for s, r in run.points if name in r]
            if pts:
                x = [s / 1e6 for s, _ in pts]
                ax.plot(x, [100 * r[0] for _, r in pts], color=colour, marker="o",
                        markersize=3, label=run.label)
                ax.fill_between(x, [100 * r[1] for _, r in pts], [100 * r[2] for _, r in pts],
                                color=colour, alpha=0.15, linewidth=0)
            if run.final and name in run.final[1]:
                steps, (rate, low, high) = run.final[0], run.final[1][name]
                nudge = span * 0.012 * (i - (len(runs) - 1) / 2)  # final points side by side
                ax.errorbar([steps / 1e6 + nudge], [100 * rate],
                            yerr=[[100 * (rate - low)], [100 * (high - rate)]], color=colour,
                            marker="s", markersize=5, capsize=3,
                            label=None if pts else run.label)
        ax.axhline(50, color="0.5", linewidth=0.8, linestyle="--")
        ax.set_title(f"vs {name}")
        ax.set_xlabel("environment steps (M)")
        ax.set_ylim(*WIN_RATE_LIMITS)
        ax.set_yticks(WIN_RATE_TICKS)
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("match win % (95% interval)")
    axes[-1].legend(fontsize="small", loc="lower right")
    fig.suptitle(title or "match win rate against each evaluation opponent "
                 "(circles: periodic evaluations, squares: final)", fontsize="medium")
    return fig


def final_summary(runs: Sequence[RunLog]) -> list[dict[str, Any]]:
    """Per opponent, the final match win rates of ``runs``: each run's, their mean and
    their range (the runs without a final evaluation are left out)."""
    done = [r for r in runs if r.final is not None]
    names: dict[str, None] = {}
    for run in done:
        names.update(dict.fromkeys(run.final[1]))  # type: ignore[index]
    out = []
    for name in names:
        rates = [run.final[1][name][0] for run in done if name in run.final[1]]  # type: ignore[index]
        out.append({"opponent": name, "rates": rates, "mean": sum(rates) / len(rates),
                    "low": min(rates), "high": max(rates)})
    return out
