"""Round-robin tournaments of full Hollywood matches between agents.

Command line (see docs/api.md)::

    python evaluate.py --agents random simple strong [ckpt:PATH ...]
        [--matches N] [--rules friendly] [--seed S]
        [--json out.json] [--csv out.csv] [--plot out.png]

Every pair of agents plays ``--matches`` full matches (rounded up to an
even number) in the *duplicate* format: each deal seed is played twice with
the seats swapped, so both agents get the same cards (see
:mod:`agents.arena` for when the deals stay identical).  Every pairing uses
the same deal seeds.  The table gives, for the first agent of each pairing,
the match, column and hand win rates with 95% Wilson intervals, gin and
undercut rates and average points per hand, then Elo ratings fitted to all
match results (Bradley–Terry maximum likelihood).

Intervals: the two matches of a duplicate pair are not independent — with
a skill gap they are strongly *positively* correlated (the better player
tends to win both seatings of a deal sequence; within-pair correlations of
0.5–0.6 were measured for strong vs simple) — and the columns and hands of
one match are not either.  So every interval is a Wilson interval computed
on the *effective* sample size ``n / design_effect``, where the design
effect (>= 1) is the cluster-robust variance of the rate over the binomial
one, with duplicate pairs as the clusters (``agents.stats.clustered_wilson``).
The plain Wilson bounds are in the JSON/CSV as ``wilson_low`` /
``wilson_high``.

Function API: :func:`run_tournament` returns a :class:`TournamentResult`
with ``.table()``, ``.to_json()``, ``.to_csv()`` and ``.plot()``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from agents import AGENT_SPECS, make_agent
from agents.arena import MatchStats, play_matches
from agents.base import Agent
from agents.stats import clustered_wilson, elo_from_pairs, wilson_interval
from hgin_env.rules import Rules, load_rules

DEFAULT_MATCHES = 200


@dataclass
class PairResult:
    """Results of one pairing, from agent ``a``'s side."""

    a: str
    b: str
    stats: MatchStats
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        """Rates with 95% Wilson intervals and per-hand figures (plain Python values)."""
        s = self.stats
        n = s.num_matches
        hands = int(s.hands.sum())
        dead = int(s.dead.sum())
        wa, wb = int(s.a_won.sum()), n - int(s.a_won.sum())
        ka, kb = int(s.a_knocks.sum()), int(s.b_knocks.sum())
        ua, ub = int(s.a_undercuts.sum()), int(s.b_undercuts.sum())
        ga, gb = int(s.a_gins.sum()), int(s.b_gins.sum())
        pa, pb = int(s.a_points.sum()), int(s.b_points.sum())

        pair = s.pair

        def rate(wins: np.ndarray, trials: np.ndarray) -> dict[str, float]:
            k, total = int(wins.sum()), int(trials.sum())
            # Duplicate pairs are the independent units: cluster the counts by pair.
            cw = np.bincount(pair, weights=wins)
            ct = np.bincount(pair, weights=trials)
            lo, hi, deff = clustered_wilson(cw, ct)
            plain = wilson_interval(k, total)
            return {"rate": k / total if total else float("nan"), "low": lo, "high": hi,
                    "successes": k, "trials": total, "design_effect": deff,
                    "wilson_low": plain[0], "wilson_high": plain[1]}

        per_hand = max(hands, 1)
        return {
            "a": self.a,
            "b": self.b,
            "matches": n,
            "a_match_wins": wa,
            "b_match_wins": wb,
            "match": rate(s.a_won.astype(np.int64), np.ones(n, np.int64)),
            "column": rate(s.a_columns, s.a_columns + s.b_columns),
            "hand": rate(s.a_hands, s.a_hands + s.b_hands),
            "hands": hands,
            "dead_hands": dead,
            "dead_rate": dead / per_hand,
            "hands_per_match": hands / max(n, 1),
            "a_gin_rate": ga / per_hand,
            "b_gin_rate": gb / per_hand,
            "a_knocks": ka,
            "b_knocks": kb,
            # Share of the opponent's knocks this agent undercut.
            "a_undercut_rate": ua / kb if kb else 0.0,
            "b_undercut_rate": ub / ka if ka else 0.0,
            "a_points_per_hand": pa / per_hand,
            "b_points_per_hand": pb / per_hand,
            "a_net_points_per_hand": (pa - pb) / per_hand,
            "seconds": self.seconds,
        }


@dataclass
class TournamentResult:
    """Everything a tournament measured; ``pairs`` in round-robin order."""

    agents: list[str]
    rules: Rules
    rules_name: str
    matches: int
    seed: int
    duplicate: bool
    pairs: list[PairResult] = field(default_factory=list)
    elo: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    def pair(self, a: str, b: str) -> dict[str, Any]:
        """Summary of ``a`` against ``b`` (either order)."""
        for p in self.pairs:
            if (p.a, p.b) == (a, b):
                return p.summary()
            if (p.a, p.b) == (b, a):
                return PairResult(b, a, p.stats.swapped(), p.seconds).summary()
        raise KeyError(f"no pairing {a!r} vs {b!r}")

    def win_matrix(self) -> np.ndarray:
        """(K, K) match win rate of row agent against column agent (NaN on the diagonal)."""
        k = len(self.agents)
        out = np.full((k, k), np.nan)
        index = {name: i for i, name in enumerate(self.agents)}
        for p in self.pairs:
            rate = float(p.stats.a_won.mean()) if p.stats.num_matches else np.nan
            out[index[p.a], index[p.b]] = rate
            out[index[p.b], index[p.a]] = 1.0 - rate
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "agents": self.agents,
            "rules": self.rules_name,
            "rules_config": self.rules.to_dict(),
            "matches_per_pairing": self.matches,
            "seed": self.seed,
            "duplicate": self.duplicate,
            "seconds": self.seconds,
            "pairs": [p.summary() for p in self.pairs],
            "elo": self.elo,
        }

    def csv_rows(self) -> list[dict[str, Any]]:
        rows = []
        for p in self.pairs:
            s = p.summary()
            flat: dict[str, Any] = {}
            for key, value in s.items():
                if isinstance(value, dict):
                    for sub in ("rate", "low", "high", "trials", "design_effect",
                                "wilson_low", "wilson_high"):
                        flat[f"{key}_{sub}"] = value[sub]
                else:
                    flat[key] = value
            flat["a_elo"] = self.elo.get(p.a, float("nan"))
            flat["b_elo"] = self.elo.get(p.b, float("nan"))
            rows.append(flat)
        return rows

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2) + "\n")

    def write_csv(self, path: str | Path) -> None:
        rows = self.csv_rows()
        with open(path, "w", newline="") as fh:
            if not rows:
                return
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)

    def table(self) -> Any:
        """A :class:`rich.table.Table` of the win rates of every pairing."""
        from rich.table import Table

        title = (f"Hollywood round robin — rules {self.rules_name}, "
                 f"{self.matches} {'duplicate ' if self.duplicate else ''}matches per pairing, "
                 f"seed {self.seed} — win rates of A, 95% Wilson intervals (pair-clustered)")
        table = Table(title=title)
        table.add_column("A")
        table.add_column("B")
        for name in ("matches", "match win", "column win", "hand win"):
            table.add_column(name, justify="right")
        for p in self.pairs:
            s = p.summary()
            table.add_row(s["a"], s["b"], str(s["matches"]), _fmt_rate(s["match"]),
                          _fmt_rate(s["column"]), _fmt_rate(s["hand"]))
        return table

    def hand_table(self) -> Any:
        """A :class:`rich.table.Table` of gin, undercut, points and dead-hand figures."""
        from rich.table import Table

        table = Table(title="Hands (A / B)")
        table.add_column("A")
        table.add_column("B")
        for name in ("hands/match", "gin", "undercut", "pts/hand", "net pts/hand", "dead"):
            table.add_column(name, justify="right")
        for p in self.pairs:
            s = p.summary()
            table.add_row(
                s["a"], s["b"], f"{s['hands_per_match']:.1f}",
                f"{100 * s['a_gin_rate']:.1f}% / {100 * s['b_gin_rate']:.1f}%",
                f"{100 * s['a_undercut_rate']:.1f}% / {100 * s['b_undercut_rate']:.1f}%",
                f"{s['a_points_per_hand']:.1f} / {s['b_points_per_hand']:.1f}",
                f"{s['a_net_points_per_hand']:+.2f}",
                f"{100 * s['dead_rate']:.1f}%",
            )
        return table

    def elo_table(self) -> Any:
        from rich.table import Table

        table = Table(title="Elo (Bradley–Terry fit to match results, mean 1500)")
        table.add_column("agent")
        table.add_column("Elo", justify="right")
        table.add_column("match win vs field", justify="right")
        mat = self.win_matrix()
        for i, name in sorted(enumerate(self.agents), key=lambda x: -self.elo.get(x[1], 0)):
            row = mat[i][~np.isnan(mat[i])]
            field_rate = f"{100 * row.mean():.1f}%" if row.size else "-"
            table.add_row(name, f"{self.elo.get(name, float('nan')):.0f}", field_rate)
        return table

    def print(self, console: Any = None) -> None:
        from rich.console import Console

        if console is None:
            console = Console()
            if not console.is_terminal:
                console = Console(width=max(console.width, 120))
        console.print(self.table())
        console.print(self.hand_table())
        console.print(self.elo_table())
        console.print(
            "gin: share of hands won by gin; undercut: share of the opponent's knocks "
            "undercut; pts/hand: awards won per hand dealt; dead: hands with no winner."
        )

    def plot(self, path: str | Path) -> None:
        """A heatmap of pairwise match win rates (row agent vs column agent) as a PNG."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        mat = self.win_matrix()
        k = len(self.agents)
        labels = [f"{a}\n({self.elo.get(a, float('nan')):.0f})" for a in self.agents]
        fig, ax = plt.subplots(figsize=(1.6 * k + 2.5, 1.3 * k + 2))
        image = ax.imshow(np.ma.masked_invalid(mat), cmap="RdYlGn", vmin=0, vmax=1)
        ax.set_xticks(range(k), labels=labels)
        ax.set_yticks(range(k), labels=labels)
        ax.set_xlabel("opponent (Elo)")
        ax.set_ylabel("agent (Elo)")
        for i in range(k):
            for j in range(k):
                text = "—" if np.isnan(mat[i, j]) else f"{100 * mat[i, j]:.0f}%"
                ax.text(j, i, text, ha="center", va="center", color="black")
        ax.set_title(f"Match win rate, rules {self.rules_name}, {self.matches} matches/pairing")
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def _fmt_rate(r: dict[str, float]) -> str:
    if not r["trials"]:
        return "-"
    return f"{100 * r['rate']:.1f}% [{100 * r['low']:.1f}, {100 * r['high']:.1f}]"


def _unique_names(specs: Sequence[str | Agent]) -> list[str]:
    names: list[str] = []
    for spec in specs:
        base = spec if isinstance(spec, str) else getattr(spec, "name", type(spec).__name__)
        name, k = base, 2
        while name in names:
            name, k = f"{base}#{k}", k + 1
        names.append(name)
    return names


def run_tournament(
    agent_specs: Sequence[str | Agent],
    matches: int = DEFAULT_MATCHES,
    rules: Rules | str | None = "friendly",
    seed: int = 0,
    duplicate: bool = True,
    progress: bool | Callable[[int, int], None] = False,
    batch_size: int | None = None,
    names: Sequence[str] | None = None,
) -> TournamentResult:
    """Round robin of ``agent_specs`` (spec strings or agent objects).

    Each pairing plays ``matches`` full matches (rounded up to an even number
    with ``duplicate``) on the same deal seeds.  ``progress`` is ``True`` for
    a rich progress bar or a callable ``(finished, total)``.  ``batch_size``
    caps the matches played at once; ``names`` overrides the display names
    (by default the spec strings, or the agents' ``name``, made unique).
    """
    if len(agent_specs) < 2:
        raise ValueError("a tournament needs at least two agents")
    if matches < 1:
        raise ValueError(f"matches must be >= 1, got {matches}")
    rules_obj = load_rules(rules)
    rules_name = rules if isinstance(rules, str) else ("friendly" if rules is None else "custom")
    names = _unique_names(list(names) if names is not None else agent_specs)
    if len(names) != len(agent_specs):
        raise ValueError("names must match agent_specs one to one")
    agents = [make_agent(spec, seed=seed, rules=rules_obj) for spec in agent_specs]
    per_pair = matches + (matches % 2 if duplicate else 0)
    pairings = list(combinations(range(len(agents)), 2))
    total = per_pair * len(pairings)
    result = TournamentResult(names, rules_obj, str(rules_name), per_pair, seed, duplicate)
    start = time.perf_counter()

    bar = None
    callback: Callable[[int, int], None] | None = progress if callable(progress) else None
    if progress is True:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                       MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                       transient=False)
        task = bar.add_task("matches", total=total)
        bar.start()

        def callback(done: int, total: int) -> None:
            bar.update(task, completed=done)

    try:
        done_before = 0
        for i, j in pairings:
            if bar is not None:
                bar.update(task, description=f"{names[i]} vs {names[j]}")
            t0 = time.perf_counter()
            cb = None
            if callback is not None:

                def cb(k: int, offset: int = done_before) -> None:
                    callback(offset + k, total)

            stats = play_matches(agents[i], agents[j], matches, rules_obj, seed, duplicate,
                                 progress=cb, batch_size=batch_size)
            result.pairs.append(PairResult(names[i], names[j], stats, time.perf_counter() - t0))
            done_before += stats.num_matches
    finally:
        if bar is not None:
            bar.stop()
    records = [(p.a, p.b, int(p.stats.a_won.sum()), int((~p.stats.a_won).sum()))
               for p in result.pairs]
    result.elo = elo_from_pairs(names, records)
    result.seconds = time.perf_counter() - start
    return result


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Round-robin of agents over full Hollywood gin matches (duplicate format).")
    parser.add_argument("--agents", nargs="+", required=True, metavar="SPEC",
                        help=f"agent specs: {', '.join(AGENT_SPECS)} (two or more)")
    parser.add_argument("--matches", type=int, default=DEFAULT_MATCHES,
                        help=f"matches per pairing, rounded up to even (default {DEFAULT_MATCHES})")
    parser.add_argument("--rules", default="friendly",
                        help="rules profile name or path to a rules TOML (default friendly)")
    parser.add_argument("--seed", type=int, default=0, help="deal seed (default 0)")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    parser.add_argument("--csv", metavar="FILE", help="write one CSV row per pairing")
    parser.add_argument("--plot", metavar="FILE", help="write a win-rate heatmap PNG")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="play at most this many matches at once (memory)")
    parser.add_argument("--no-duplicate", action="store_true",
                        help="independent deals instead of seat-swapped pairs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if len(args.agents) < 2:
        parser.error("--agents needs at least two agent specs")
    if args.matches < 1:
        parser.error("--matches must be >= 1")
    try:
        rules = load_rules(args.rules)
        agents = [make_agent(spec, seed=args.seed, rules=rules) for spec in args.agents]
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    result = run_tournament(agents, args.matches, args.rules, args.seed,
                            duplicate=not args.no_duplicate, progress=not args.no_progress,
                            batch_size=args.batch_size, names=args.agents)
    result.print()
    if args.json:
        result.write_json(args.json)
    if args.csv:
        result.write_csv(args.csv)
    if args.plot:
        result.plot(args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
