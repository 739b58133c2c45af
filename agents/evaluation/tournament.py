"""Round-robin tournaments of full Hollywood matches, and their tables and heatmap.

Every pair of agents plays the same deal seeds (``matches`` full matches,
rounded up to an even number in the *duplicate* format of
:mod:`agents.evaluation.arena`: each deal sequence twice, seats swapped).  Results
hold, per pairing, the match, column and hand win rates of the first agent
with 95% intervals, gin and undercut rates, points per hand, and Elo
ratings fitted to all match results (Bradley–Terry maximum likelihood).

Intervals: the two matches of a duplicate pair are not independent (with a
skill gap the better player tends to win both seatings; within-pair
correlations of 0.5–0.6 were measured for strong vs simple), and neither
are the columns and hands of one match.  So every interval here is
:func:`agents.evaluation.arena.clustered_rate`'s — a Wilson interval on the
pair-clustered effective sample size — the same one the trainer's
evaluation and the examples report.

No result depends on ``batch_size``: each match draws its random choices
from its own generator (see :mod:`agents.evaluation.arena`).
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from agents import make_agent
from agents.base import Agent
from agents.evaluation.arena import AgentFailed, MatchStats, play_matches
from agents.evaluation.cluster import check_workers
from agents.evaluation.stats import elo_from_pairs, mean_knock_deadwood
from hgin_env.records.format import make_record
from hgin_env.rules import Rules, load_rules

DEFAULT_MATCHES = 200
#: Heatmap file formats, chosen by the file's extension.
PLOT_FORMATS = ("png", "svg", "pdf")
#: Perceptually uniform and readable with every common colour-vision deficiency.
HEATMAP_CMAP = "cividis"
#: Agent names longer than this are shortened in the tables and the heatmap (the JSON,
#: CSV and records keep them whole).
NAME_WIDTH = 32
#: Inches kept free around the heatmap's outermost text.
_FIG_MARGIN = 0.08
_RATE_KINDS = ("match", "column", "hand")
_RATE_FIELDS = ("rate", "low", "high", "successes", "trials", "design_effect")


@dataclass
class PairResult:
    """Results of one pairing, from agent ``a``'s side."""

    a: str
    b: str
    stats: MatchStats
    seconds: float = 0.0

    def swapped(self) -> PairResult:
        """The same pairing seen from agent ``b``'s side."""
        return PairResult(self.b, self.a, self.stats.swapped(), self.seconds)

    def summary(self) -> dict[str, Any]:
        """Rates with their 95% pair-clustered intervals and per-hand figures (plain values)."""
        s = self.stats
        n = s.num_matches
        hands = int(s.hands.sum())
        dead = int(s.dead.sum())
        wins = int(s.a_won.sum())
        ka, kb = int(s.a_knocks.sum()), int(s.b_knocks.sum())
        ua, ub = int(s.a_undercuts.sum()), int(s.b_undercuts.sum())
        ga, gb = int(s.a_gins.sum()), int(s.b_gins.sum())
        pa, pb = int(s.a_points.sum()), int(s.b_points.sum())
        per_hand = max(hands, 1)
        return {
            "a": self.a,
            "b": self.b,
            "matches": n,
            "a_match_wins": wins,
            "b_match_wins": n - wins,
            **s.rates(),
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
            # Mean deadwood at this agent's knocks (gins 0; NaN without knocks).
            "a_knock_deadwood": mean_knock_deadwood(s.a_knock_deadwood, s.a_knocks),
            "b_knock_deadwood": mean_knock_deadwood(s.b_knock_deadwood, s.b_knocks),
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
    #: Where a tournament with workers ran: ``workers``, ``nodes``, ``replayed`` (empty
    #: when it ran in this process).
    cluster: dict[str, int] = field(default_factory=dict)

    def pair(self, a: str, b: str) -> dict[str, Any]:
        """Summary of ``a`` against ``b`` (either order)."""
        for p in self.pairs:
            if (p.a, p.b) == (a, b):
                return p.summary()
            if (p.a, p.b) == (b, a):
                return p.swapped().summary()
        raise KeyError(f"no pairing {a!r} vs {b!r}")

    def win_matrix(self) -> np.ndarray:
        """(K, K) match win rate of row agent against column agent (NaN on the diagonal)."""
        return self.interval_matrix()[0]

    def interval_matrix(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rate, low, high)``: (K, K) match win rates of row vs column agent and their
        95% pair-clustered interval (NaN on the diagonal)."""
        k = len(self.agents)
        out = np.full((3, k, k), np.nan)
        index = {name: i for i, name in enumerate(self.agents)}
        for p in self.pairs:
            for side in (p, p.swapped()):
                r = side.stats.rates()["match"]
                out[:, index[side.a], index[side.b]] = (r["rate"], r["low"], r["high"])
        return out[0], out[1], out[2]

    def title(self) -> str:
        """Rules profile, matches per pairing and seed: what a reader needs to reproduce it."""
        kind = "duplicate " if self.duplicate else ""
        return (f"rules {self.rules_name}, {self.matches} {kind}matches per pairing, "
                f"seed {self.seed}")

    def to_json(self) -> dict[str, Any]:
        return {
            "agents": self.agents,
            "rules": self.rules_name,
            "rules_config": self.rules.to_dict(),
            "matches_per_pairing": self.matches,
            "seed": self.seed,
            "duplicate": self.duplicate,
            "intervals": "95% Wilson interval on the pair-clustered effective sample size",
            "seconds": self.seconds,
            "pairs": [p.summary() for p in self.pairs],
            "elo": self.elo,
        }

    def csv_rows(self) -> list[dict[str, Any]]:
        rows = []
        for p in self.pairs:
            flat: dict[str, Any] = {}
            for key, value in p.summary().items():
                if key in _RATE_KINDS:
                    flat.update({f"{key}_{sub}": value[sub] for sub in _RATE_FIELDS})
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

        table = Table(title=f"Hollywood round robin — {self.title()} — win rates of A, "
                            "95% intervals (pair-clustered Wilson)")
        self._name_columns(table, "A", "B")
        for name in ("matches", "match win", "column win", "hand win"):
            table.add_column(name, justify="right")
        shown = self.shown_names()
        for p in self.pairs:
            s = p.summary()
            table.add_row(shown[s["a"]], shown[s["b"]], str(s["matches"]),
                          *(_fmt_rate(s[kind]) for kind in _RATE_KINDS))
        return table

    def _name_columns(self, table: Any, *headers: str) -> None:
        """Agent-name columns as wide as the longest shown name, never wrapped: the other
        columns give way first, so a name is not cut or folded mid-word."""
        width = max(len(name) for name in self.shown_names().values())
        for header in headers:
            table.add_column(header, no_wrap=True, min_width=width)

    def shown_names(self) -> dict[str, str]:
        """Each agent's name as the tables and the heatmap show it (:func:`short_names`)."""
        return short_names(self.agents)

    def hand_table(self) -> Any:
        """A :class:`rich.table.Table` of gin, undercut, points and dead-hand figures."""
        from rich.table import Table

        table = Table(title="Hands (A / B)")
        self._name_columns(table, "A", "B")
        for name in ("hands/match", "gin", "undercut", "dw at knock", "pts/hand",
                     "net pts/hand", "dead"):
            table.add_column(name, justify="right")
        shown = self.shown_names()
        for p in self.pairs:
            s = p.summary()
            table.add_row(
                shown[s["a"]], shown[s["b"]], f"{s['hands_per_match']:.1f}",
                f"{100 * s['a_gin_rate']:.1f}% / {100 * s['b_gin_rate']:.1f}%",
                f"{100 * s['a_undercut_rate']:.1f}% / {100 * s['b_undercut_rate']:.1f}%",
                f"{s['a_knock_deadwood']:.1f} / {s['b_knock_deadwood']:.1f}",
                f"{s['a_points_per_hand']:.1f} / {s['b_points_per_hand']:.1f}",
                f"{s['a_net_points_per_hand']:+.2f}",
                f"{100 * s['dead_rate']:.1f}%",
            )
        return table

    def elo_table(self) -> Any:
        from rich.table import Table

        table = Table(title="Elo (Bradley–Terry fit to match results, mean 1500)")
        self._name_columns(table, "agent")
        table.add_column("Elo", justify="right")
        table.add_column("match win vs field", justify="right")
        mat = self.win_matrix()
        shown = self.shown_names()
        for i, name in sorted(enumerate(self.agents), key=lambda x: -self.elo.get(x[1], 0)):
            row = mat[i][~np.isnan(mat[i])]
            field_rate = f"{100 * row.mean():.1f}%" if row.size else "-"
            table.add_row(shown[name], f"{self.elo.get(name, float('nan')):.0f}", field_rate)
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
            "undercut; dw at knock: mean deadwood of the agent's knocks (gins 0); "
            "pts/hand: awards won per hand dealt; dead: hands with no winner."
        )
        for name, shown in self.shown_names().items():
            if shown != name:  # the whole name once, where it cannot break a table
                console.print(f"{shown} = {name}", soft_wrap=True, highlight=False)

    def plot(self, path: str | Path) -> Path:
        """Write the win-rate heatmap to ``path``; see :func:`plot_heatmap`."""
        return plot_heatmap(self, path)


def plot_format(path: str | Path) -> str:
    """The heatmap format ``path``'s extension asks for; ``ValueError`` if none is supported."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        raise ValueError(
            f"plot file {str(path)!r} must end in one of "
            f"{', '.join('.' + f for f in PLOT_FORMATS)} (the extension picks the format)"
        )
    return suffix


def heatmap_figure(result: TournamentResult) -> Any:
    """A :class:`matplotlib.figure.Figure` of match win rates, row agent vs column agent.

    Agents are labelled by :func:`short_name`, and the figure is sized so that no
    label is clipped (:func:`fit_texts`).  Each cell prints the rate and its 95%
    pair-clustered interval; the colormap is :data:`HEATMAP_CMAP` (perceptually
    uniform, colour-blind safe); the title names the rule profile, the matches per
    pairing and the seed.  Built without pyplot, so no global backend is touched.
    """
    import matplotlib
    from matplotlib.figure import Figure

    rate, low, high = result.interval_matrix()
    k = len(result.agents)
    cmap = matplotlib.colormaps[HEATMAP_CMAP].with_extremes(bad="0.92")
    shown = result.shown_names()
    labels = [f"{shown[a]}\n(Elo {result.elo.get(a, float('nan')):.0f})" for a in result.agents]
    fig = Figure(figsize=(1.9 * k + 2.8, 1.5 * k + 2.2), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(rate), cmap=cmap, vmin=0.0, vmax=1.0)
    ax.set_xticks(range(k), labels=labels)
    ax.set_yticks(range(k), labels=labels)
    ax.set_xlabel("opponent")
    ax.set_ylabel("agent")
    for i in range(k):
        for j in range(k):
            if np.isnan(rate[i, j]):
                ax.text(j, i, "—", ha="center", va="center", color="0.4")
                continue
            red, green, blue, _ = cmap(rate[i, j])
            luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
            ax.text(j, i, f"{100 * rate[i, j]:.0f}%\n[{100 * low[i, j]:.0f}, "
                          f"{100 * high[i, j]:.0f}]",
                    ha="center", va="center", fontsize=9,
                    color="black" if luminance > 0.45 else "white")
    ax.set_title(f"Match win rate, agent (row) vs opponent (column)\n{result.title()}\n"
                 "cells: rate [95% interval, pair-clustered Wilson]", fontsize=10)
    bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label("match win rate")
    fit_texts(fig)
    return fig


def fit_texts(fig: Any, tries: int = 6) -> None:
    """Enlarge ``fig`` until every text lies inside it, ``_FIG_MARGIN`` from its edges.

    Constrained layout only moves artists within the figure's size; with long
    agent names the tick labels need more than that, and the axis label
    ("agent") would be clipped at the left edge.  The figure grows by what
    sticks out (the layout is redone each time), so nothing is cut off in any
    format and the figure keeps its size when everything fits.
    """
    import warnings

    for _ in range(tries):
        with warnings.catch_warnings():  # "axes sizes collapsed": what the growing fixes
            warnings.filterwarnings("ignore", message="constrained_layout not applied")
            fig.draw_without_rendering()
        tight = fig.get_tightbbox()  # inches
        width, height = fig.get_size_inches()
        over_x = max(0.0, _FIG_MARGIN - tight.x0) + max(0.0, tight.x1 + _FIG_MARGIN - width)
        over_y = max(0.0, _FIG_MARGIN - tight.y0) + max(0.0, tight.y1 + _FIG_MARGIN - height)
        if over_x <= 1e-3 and over_y <= 1e-3:
            return
        fig.set_size_inches(width + over_x + _FIG_MARGIN, height + over_y + _FIG_MARGIN)


def plot_heatmap(result: TournamentResult, path: str | Path) -> Path:
    """Write :func:`heatmap_figure` to ``path``, in the format its extension names.

    :data:`PLOT_FORMATS`: ``.png`` for screens, ``.svg`` and ``.pdf`` as
    vector figures for papers (text stays text in SVG).  Vector files carry
    no creation date, so equal results give byte-identical files.
    """
    import matplotlib

    path = Path(path)
    fmt = plot_format(path)
    fig = heatmap_figure(result)
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt)
    with matplotlib.rc_context({"svg.hashsalt": "hgin", "svg.fonttype": "none"}):
        fig.savefig(path, format=fmt, dpi=150, metadata=metadata)
    return path


def _fmt_rate(r: dict[str, float]) -> str:
    if not r["trials"]:
        return "-"
    return f"{100 * r['rate']:.1f}% [{100 * r['low']:.1f}, {100 * r['high']:.1f}]"


def short_name(name: str, width: int = NAME_WIDTH) -> str:
    """``name`` as a table or the heatmap shows it, at most ``width`` characters.

    A long path (``ckpt:`` spec or not) keeps its parent folder and file name
    (``ckpt:…/quick/agent_final.pt``): that is what tells two checkpoints of a run apart,
    and a path that long would otherwise fold mid-word in a table or push a heatmap label
    off the figure.  Anything still too long keeps its start and its end.
    """
    if len(name) <= width:
        return name
    prefix = "ckpt:" if name.startswith("ckpt:") else ""
    parts = [part for part in name[len(prefix):].replace("\\", "/").split("/") if part]
    if len(parts) > 2:
        tail = f"{prefix}…/{'/'.join(parts[-2:])}"
        if len(tail) <= width:
            return tail
    if len(parts) > 1:
        tail = f"{prefix}…/{parts[-1]}"
        if len(tail) <= width:
            return tail
    head = max(1, (width - 1) // 3)
    return f"{name[:head]}…{name[-(width - 1 - head):]}"


def short_names(names: Sequence[str], width: int = NAME_WIDTH) -> dict[str, str]:
    """Each name to its :func:`short_name`; names whose short forms would coincide stay
    whole, so the tables never show two agents under one name."""
    short = {name: short_name(name, width) for name in names}
    count: dict[str, int] = {}
    for value in short.values():
        count[value] = count.get(value, 0) + 1
    return {name: value if count[value] == 1 else name for name, value in short.items()}


def unique_names(specs: Sequence[str | Agent]) -> list[str]:
    """Display names for ``specs``: spec string or agent name, ``#2``, ``#3``... on repeats."""
    names: list[str] = []
    for spec in specs:
        base = spec if isinstance(spec, str) else getattr(spec, "name", type(spec).__name__)
        name, k = base, 2
        while name in names:
            name, k = f"{base}#{k}", k + 1
        names.append(name)
    return names


def _progress_bar(total: int) -> tuple[Any, Callable[[int, str], None]]:
    """A rich progress bar on stderr (stdout stays clean for the tables) and its updater."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True))
    task = bar.add_task("matches", total=total)

    def update(done: int, description: str) -> None:
        bar.update(task, completed=done, description=description)

    return bar, update


def record_keeper(
    record: Callable[[dict[str, Any]], None], pairing: tuple[str, str], rules: Rules,
    rules_name: str, context: dict[str, Any], first: int, duplicate: bool = True,
) -> Callable[[dict[str, Any]], None]:
    """Turns a pairing's engine records (:meth:`~agents.evaluation.arena.Arena.recorded`) into full
    records (:func:`~hgin_env.records.make_record`) passed to ``record``, numbered from
    ``first`` by their place in the pairing (with ``duplicate``, match ``2 * pair + a_seat``;
    without, match ``pair``), so a record keeps its number when a failed agent leaves
    earlier matches unrecorded; ``context`` gains the ``pairing`` and the duplicate ``pair``."""

    def keep(game: dict[str, Any]) -> None:
        a_seat = int(game.pop("a_seat"))
        pair = int(game.pop("pair"))
        agents = pairing if a_seat == 0 else pairing[::-1]
        where = {**context, "pairing": list(pairing), "pair": pair}
        number = first + (2 * pair + a_seat if duplicate else pair)
        record(make_record(number, game, rules, agents, rules_name, where))

    return keep


def _spec_key(spec: str | Agent) -> str:
    return spec.strip().lower() if isinstance(spec, str) else str(getattr(spec, "name", ""))


def canonical_pair(agent_specs: Sequence[str | Agent], i: int, j: int) -> tuple[int, int]:
    """``(i, j)`` in the order a tournament plays them: by spec (an agent object by its
    ``name``), then by place in the list.  An agent that draws at random takes its
    numbers from its seat's per-match generator, so the order a pair is played in
    matters; fixing it by the pair alone makes ``--agents a b`` and ``--agents b a``
    the same games."""
    first, second = sorted((i, j), key=lambda k: (_spec_key(agent_specs[k]), k))
    return first, second


def _as_listed(pair: PairResult, i: int, j: int) -> PairResult:
    """A pair played as ``(i, j)``, seen from the side of the one listed first."""
    return pair if i < j else pair.swapped()


def run_tournament(
    agent_specs: Sequence[str | Agent],
    matches: int = DEFAULT_MATCHES,
    rules: Rules | str | None = "friendly",
    seed: int = 0,
    duplicate: bool = True,
    progress: bool | Callable[[int, int], None] = False,
    batch_size: int | None = None,
    names: Sequence[str] | None = None,
    record: Callable[[dict[str, Any]], None] | None = None,
    workers: int = 0,
    address: str | None = None,
) -> TournamentResult:
    """Round robin of ``agent_specs`` (spec strings or agent objects).

    Each pairing plays ``matches`` full matches (rounded up to an even number
    with ``duplicate``) on the same deal seeds.  ``progress`` is ``True`` for
    a rich progress bar (on stderr) or a callable ``(finished, total)``.
    ``batch_size`` caps the matches played at once (memory only: results do
    not depend on it); ``names`` overrides the display names (by default
    the spec strings, or the agents' ``name``, made unique).  ``record``
    (optional) is called with every match's record
    (:func:`hgin_env.records.make_record`), numbered across the tournament,
    e.g. a :class:`~hgin_env.records.RecordWriter`'s ``write``; when an agent fails
    (raises), every finished match has been passed to ``record`` and
    :class:`~agents.evaluation.arena.AgentFailed` names the agent, the pairing, the
    match (numbered as the records are), its hand and move.  Agents built here from
    spec strings that hold a program (``text:``) are closed at the end.  ``workers`` (> 0)
    spreads the matches over that many Ray actors (:mod:`agents.evaluation.distributed`;
    the ``ray`` extra), on the cluster at ``address`` or a local Ray; the results,
    records included, are the same for every number of workers.
    """
    if len(agent_specs) < 2:
        raise ValueError("a tournament needs at least two agents")
    if isinstance(matches, bool) or not isinstance(matches, int | np.integer) or matches < 1:
        raise ValueError(f"matches must be a positive integer, got {matches!r}")
    workers = check_workers(workers)
    rules_obj = load_rules(rules)
    rules_name = rules if isinstance(rules, str) else ("friendly" if rules is None else "custom")
    names = unique_names(list(names) if names is not None else agent_specs)
    if len(names) != len(agent_specs):
        raise ValueError("names must match agent_specs one to one")
    # Built here even when workers play (each builds its own): a bad spec fails now, in
    # one line, before any worker starts.
    agents = [make_agent(spec, seed=seed, rules=rules_obj) for spec in agent_specs]
    per_pair = matches + (matches % 2 if duplicate else 0)
    # Listed order (i < j) names the pairs; each is played in its canonical order, so
    # its games depend on the pair, not on where the two stand in the list.
    listed = list(combinations(range(len(agents)), 2))
    pairings = [canonical_pair(agent_specs, i, j) for i, j in listed]
    total = per_pair * len(pairings)
    result = TournamentResult(names, rules_obj, str(rules_name), per_pair, seed, duplicate)
    start = time.perf_counter()
    bar, update = _progress_bar(total) if progress is True else (None, None)
    if bar is not None:
        bar.start()
    keepers = []
    for k, (i, j) in enumerate(pairings):  # played order: records name the seats
        keepers.append(None if record is None else record_keeper(
            record, (names[i], names[j]), rules_obj, str(rules_name),
            {"tournament_seed": seed, "duplicate": duplicate}, first=k * per_pair,
            duplicate=duplicate))

    def advance(pairing: int, done: int) -> None:
        i, j = pairings[pairing]
        if update is not None:
            update(pairing * per_pair + done, f"{names[i]} vs {names[j]}")
        elif callable(progress):
            progress(pairing * per_pair + done, total)

    try:
        if workers:
            from agents.evaluation.distributed import play_pairings

            t0 = time.perf_counter()
            all_stats = play_pairings(
                agent_specs, pairings, matches, rules_obj, seed, duplicate, workers, address,
                batch_size, advance,
                None if record is None else lambda k, game: keepers[k](game),  # type: ignore[misc]
                report=result.cluster)
            share = (time.perf_counter() - t0) / len(pairings)
            for (i, j), stats in zip(pairings, all_stats, strict=True):
                result.pairs.append(_as_listed(PairResult(names[i], names[j], stats, share),
                                               i, j))
        else:
            recorded = 0
            for k, (i, j) in enumerate(pairings):
                t0 = time.perf_counter()
                try:
                    stats = play_matches(agents[i], agents[j], matches, rules_obj, seed,
                                         duplicate, progress=lambda done, k=k: advance(k, done),
                                         batch_size=batch_size, record=keepers[k])
                except AgentFailed as err:
                    err.pairing = (names[i], names[j])
                    if err.index in (0, 1):
                        err.agent = (names[i], names[j])[err.index]
                    if err.match is not None:
                        err.match += k * per_pair
                    err.recorded += recorded
                    raise
                recorded += stats.num_matches if record is not None else 0
                result.pairs.append(_as_listed(PairResult(names[i], names[j], stats,
                                                          time.perf_counter() - t0), i, j))
    finally:
        if bar is not None:
            bar.stop()
        for spec, agent in zip(agent_specs, agents, strict=True):
            close = getattr(agent, "close", None)
            if isinstance(spec, str) and callable(close):  # ours, holding a program
                close()
    records = [(p.a, p.b, int(p.stats.a_won.sum()), int(p.stats.b_won.sum()))
               for p in result.pairs]
    result.elo = elo_from_pairs(names, records)
    result.seconds = time.perf_counter() - start
    return result


__all__ = [
    "DEFAULT_MATCHES",
    "HEATMAP_CMAP",
    "PLOT_FORMATS",
    "PairResult",
    "TournamentResult",
    "canonical_pair",
    "heatmap_figure",
    "plot_format",
    "plot_heatmap",
    "record_keeper",
    "run_tournament",
    "unique_names",
]
