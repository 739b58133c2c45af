"""agents.evaluation.tournament and the arena's batching: results, intervals, outputs, heatmap."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from agents import RandomAgent, SimpleAgent, StrongAgent
from agents.evaluation.arena import (
    Arena,
    MatchStats,
    act_split,
    clustered_rate,
    duplicate_rates,
    match_rngs,
    play_matches,
)
from agents.evaluation.stats import clustered_wilson
from agents.evaluation.tournament import (
    HEATMAP_CMAP,
    TournamentResult,
    heatmap_figure,
    plot_format,
    run_tournament,
)
from hgin_env.engine import VectorGame
from hgin_env.rules import load_rules


@pytest.fixture(scope="module")
def small_tournament() -> TournamentResult:
    return run_tournament(["random", "simple", "strong"], matches=2, seed=3)


def _same_stats(x: MatchStats, y: MatchStats) -> bool:
    names = ("pair", "a_seat", "a_won", "b_won", "a_columns", "b_columns", "hands", "dead",
             "a_hands", "b_hands", "a_gins", "b_gins", "a_knocks", "b_knocks", "a_points",
             "b_points")
    return all(np.array_equal(getattr(x, n), getattr(y, n)) for n in names)


def test_run_tournament_round_robin(small_tournament) -> None:
    res = small_tournament
    assert res.agents == ["random", "simple", "strong"]
    assert [(p.a, p.b) for p in res.pairs] == [("random", "simple"), ("random", "strong"),
                                               ("simple", "strong")]
    for p in res.pairs:
        s = p.summary()
        assert s["matches"] == 2 == p.stats.num_matches
        assert s["a_match_wins"] + s["b_match_wins"] == 2
        for key in ("match", "column", "hand"):
            r = s[key]
            assert r["low"] <= r["rate"] <= r["high"]
            assert r["design_effect"] >= 1.0
        assert s["column"]["trials"] == 6
    # Random never beats the heuristics, and is rated lowest.
    assert res.pair("simple", "random")["match"]["rate"] == 1.0
    assert res.pair("strong", "random")["match"]["rate"] == 1.0
    assert min(res.elo, key=res.elo.get) == "random"
    assert np.mean(list(res.elo.values())) == pytest.approx(1500)
    mat = res.win_matrix()
    assert np.isnan(np.diag(mat)).all()
    off = ~np.eye(3, dtype=bool)
    assert np.allclose((mat + mat.T)[off], 1.0)
    sw = res.pair("strong", "simple")
    assert sw["match"]["rate"] == pytest.approx(1 - res.pair("simple", "strong")["match"]["rate"])
    with pytest.raises(KeyError, match="no pairing"):
        res.pair("simple", "nobody")


def test_interval_matrix_is_the_pair_clustered_interval_of_each_side(small_tournament) -> None:
    res = small_tournament
    rate, low, high = res.interval_matrix()
    off = ~np.eye(3, dtype=bool)
    assert (low[off] <= rate[off]).all() and (rate[off] <= high[off]).all()
    # Swapping the sides mirrors the interval (Wilson is symmetric in p <-> 1 - p).
    assert np.allclose(low[off], (1 - high.T)[off])
    summary = res.pair("simple", "strong")["match"]
    i, j = res.agents.index("simple"), res.agents.index("strong")
    assert (low[i, j], high[i, j]) == (summary["low"], summary["high"])


def test_json_and_csv_outputs(small_tournament, tmp_path) -> None:
    res = small_tournament
    res.write_json(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["agents"] == res.agents and len(data["pairs"]) == 3
    assert set(data["elo"]) == set(res.agents)
    assert "pair-clustered" in data["intervals"]
    # One kind of interval only: no second (unclustered) bounds beside the clustered ones.
    assert not any("wilson" in key for key in data["pairs"][0]["match"])
    res.write_csv(tmp_path / "r.csv")
    with open(tmp_path / "r.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3
    assert {"match_rate", "match_low", "match_design_effect", "a_elo", "a_gin_rate"} <= set(rows[0])


def test_heatmap_is_colour_blind_safe_with_intervals_and_a_reproducible_title(
        small_tournament) -> None:
    res = small_tournament
    fig = heatmap_figure(res)
    ax = fig.axes[0]
    assert HEATMAP_CMAP in ("cividis", "viridis")
    assert ax.images[0].get_cmap().name.startswith(HEATMAP_CMAP)
    title = ax.get_title()
    assert "rules friendly" in title and "2 duplicate matches per pairing" in title
    assert "seed 3" in title and "95%" in title
    texts = [t.get_text() for t in ax.texts]
    i, j = res.agents.index("simple"), res.agents.index("random")
    rate, low, high = res.interval_matrix()
    cell = f"{100 * rate[i, j]:.0f}%\n[{100 * low[i, j]:.0f}, {100 * high[i, j]:.0f}]"
    assert cell in texts
    assert sum("[" in t for t in texts) == 6  # every off-diagonal cell has its interval


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG\r\n\x1a\n"), (".svg", b"<?xml"),
                                               (".pdf", b"%PDF-")])
def test_plot_formats_by_extension(small_tournament, tmp_path, suffix, magic) -> None:
    first = small_tournament.plot(tmp_path / f"a{suffix}")
    second = small_tournament.plot(tmp_path / f"b{suffix.upper()}")
    assert first.read_bytes().startswith(magic) and second.read_bytes().startswith(magic)
    if suffix != ".png":
        assert first.read_bytes() == second.read_bytes()  # no dates: same results, same file
    if suffix == ".svg":
        assert "seed 3" in first.read_text()  # text stays text


def test_plot_format_rejects_unknown_extensions(tmp_path) -> None:
    assert plot_format("x.PDF") == "pdf"
    for bad in ("x", "x.txt", "x.png.bak", tmp_path):
        with pytest.raises(ValueError, match=r"\.png, \.svg, \.pdf"):
            plot_format(bad)


def test_results_do_not_depend_on_batch_size_even_with_random_agents() -> None:
    specs = ["random", "simple"]
    whole = run_tournament(specs, matches=6, seed=4)
    for batch_size in (1, 4):
        batched = run_tournament(specs, matches=6, seed=4, batch_size=batch_size)
        for p, q in zip(whole.pairs, batched.pairs, strict=True):
            assert _same_stats(p.stats, q.stats), (batch_size, p.a, p.b)
        assert batched.elo == whole.elo
    # Independent deals too, with the random agent in either role.
    a = play_matches(SimpleAgent(), RandomAgent(), 5, "classic", seed=2, duplicate=False)
    b = play_matches(SimpleAgent(), RandomAgent(), 5, "classic", seed=2, duplicate=False,
                     batch_size=2)
    assert _same_stats(a, b)
    other_seed = play_matches(SimpleAgent(), RandomAgent(), 5, "classic", seed=3,
                              duplicate=False)
    assert not _same_stats(a, other_seed)


def test_compaction_does_not_change_a_random_agents_games() -> None:
    rules = load_rules("friendly")
    full = Arena(RandomAgent(), SimpleAgent(), 8, rules, seed=6, compact=False).run()
    compact = Arena(RandomAgent(), SimpleAgent(), 8, rules, seed=6, compact=True).run()
    assert _same_stats(full, compact)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "4"])
def test_play_matches_rejects_bad_batch_sizes(bad) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        play_matches(SimpleAgent(), SimpleAgent(), 4, seed=0, batch_size=bad)


def test_act_split_row_generators_make_each_rows_choice_independent_of_its_neighbours() -> None:
    game = VectorGame(12, "friendly", seed=7)
    obs = game.observe()
    seeds = np.arange(12, dtype=np.uint64) + 100
    everyone = act_split([RandomAgent()], np.zeros(12, np.int64), obs,
                         row_rngs=match_rngs(seeds, np.zeros(12)))
    rows = np.array([1, 4, 5, 11])
    sub = {key: value[rows] for key, value in obs.items()}
    alone = act_split([RandomAgent()], np.zeros(4, np.int64), sub,
                      row_rngs=match_rngs(seeds[rows], np.zeros(4)))
    assert np.array_equal(everyone[rows], alone)

    calls = []

    class Recorder(SimpleAgent):
        def act(self, o, rng=None):
            calls.append(o["observation"].shape[0])
            return super().act(o, rng)

    act_split([Recorder()], np.zeros(12, np.int64), obs, row_rngs=match_rngs(seeds, np.zeros(12)))
    assert calls == [12]  # an agent that draws nothing keeps its one batched call


def test_one_evaluator_for_trainer_examples_and_tournaments() -> None:
    """duplicate_rates (the trainer's and examples' report) and the tournament give the
    same pair-clustered intervals for the same games."""
    rates = duplicate_rates(SimpleAgent(), StrongAgent(), 6, "friendly", seed=5)
    assert set(rates) == {"matches", "match", "column", "hand", "seconds"}
    tournament = run_tournament([SimpleAgent(), StrongAgent()], matches=6, seed=5)
    summary = tournament.pair("simple", "strong")
    for kind in ("match", "column", "hand"):
        assert set(rates[kind]) == {"rate", "low", "high"}
        assert rates[kind] == {key: summary[kind][key] for key in ("rate", "low", "high")}


def test_clustered_rate_clusters_by_pair() -> None:
    wins = np.array([1, 1, 0, 0, 1, 1, 0, 0])
    pair = np.repeat(np.arange(4), 2)
    r = clustered_rate(wins, np.ones(8), pair)
    low, high, deff = clustered_wilson(np.array([2, 0, 2, 0]), np.full(4, 2))
    assert (r["rate"], r["low"], r["high"], r["design_effect"]) == (0.5, low, high, deff)
    assert r["design_effect"] > 1.0 and (r["successes"], r["trials"]) == (4, 8)
    assert np.isnan(clustered_rate(np.zeros(0), np.zeros(0), np.zeros(0, np.int64))["rate"])


def test_unique_names_progress_and_errors() -> None:
    seen = []
    a = run_tournament(["simple", "simple", SimpleAgent()], matches=2, seed=1,
                       progress=lambda done, total: seen.append((done, total)))
    assert a.agents == ["simple", "simple#2", "simple#3"]
    assert seen[-1] == (6, 6)
    b = run_tournament(["simple", "random"], matches=2, seed=9, rules="classic")
    c = run_tournament(["simple", "random"], matches=2, seed=9, rules="classic")
    assert _same_stats(b.pairs[0].stats, c.pairs[0].stats)
    assert b.rules_name == "classic"
    with pytest.raises(ValueError, match="at least two"):
        run_tournament(["simple"])
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="matches"):
            run_tournament(["simple", "random"], matches=bad)
    with pytest.raises(ValueError, match="one to one"):
        run_tournament(["simple", "random"], matches=2, names=["x"])


def test_short_names_keep_a_checkpoints_folder_and_file() -> None:
    from agents.evaluation.tournament import NAME_WIDTH, short_name, short_names

    path = "ckpt:runs/a_long_experiment_name_2026/agents/update_00420.pt"
    assert short_name(path) == "ckpt:…/agents/update_00420.pt"
    # A parent folder too long to keep: the file name alone.
    assert short_name("runs/a_long_experiment_name_2026/agent_final.pt") == "…/agent_final.pt"
    assert short_name("strong") == "strong"
    plain = "x" * 100
    assert len(short_name(plain)) == NAME_WIDTH and "…" in short_name(plain)
    for name in (path, plain, "ckpt:" + "d/" * 40 + "f" * 60 + ".pt"):
        assert len(short_name(name)) <= NAME_WIDTH
    # Two checkpoints whose short forms would coincide keep their whole names.
    twins = ["ckpt:runs/one_long_experiment_name/agents/update_1.pt",
             "ckpt:runs/two_long_experiment_name/agents/update_1.pt"]
    assert short_names(twins) == {name: name for name in twins}


def test_long_names_are_shortened_in_the_tables_and_given_whole_once() -> None:
    from io import StringIO

    from rich.console import Console

    long = "ckpt:runs/some_really_long_experiment_name_2026_11_30/agents/update_00420.pt"
    res = run_tournament(["simple", "random"], matches=2, seed=0, names=[long, "random"],
                         progress=False)
    buffer = StringIO()
    res.print(Console(file=buffer, width=100))
    text = buffer.getvalue()
    assert text.count("ckpt:…/agents/update_00420.pt") == 4  # three tables and the legend
    assert text.count(long) == 1  # the legend line, whole, never folded
    assert f"ckpt:…/agents/update_00420.pt = {long}" in text
    assert res.to_json()["agents"][0] == long  # the files keep the name


@pytest.mark.parametrize("whole", [False, True])
def test_heatmap_never_clips_a_label_even_with_a_very_long_name(monkeypatch, tmp_path,
                                                                whole) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text
    from PIL import Image

    long = "ckpt:runs/" + "a_very_long_experiment_name_" * 5 + "/agents/update_00420.pt"
    res = run_tournament(["simple", "random"], matches=2, seed=0,
                         names=[long, "another_agent_with_a_long_name_" * 3], progress=False)
    if whole:  # the layout alone, with names nothing shortens
        monkeypatch.setattr(TournamentResult, "shown_names",
                            lambda self: {a: a for a in self.agents})
    fig = heatmap_figure(res)
    FigureCanvasAgg(fig)
    fig.set_dpi(150)  # as saved
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    assert {"agent", "opponent"} <= {t.get_text() for t in texts}
    for t in texts:
        box = t.get_window_extent(renderer)
        assert (box.x0 >= fig.bbox.x0 and box.y0 >= fig.bbox.y0 and box.x1 <= fig.bbox.x1
                and box.y1 <= fig.bbox.y1), t.get_text()[:40]
    path = res.plot(tmp_path / "long.png")  # the saved file is that whole figure
    width, height = fig.get_size_inches() * 150
    assert Image.open(path).size == (int(width), int(height))


def test_a_pairings_games_do_not_depend_on_the_list_order() -> None:
    """`--agents a b c` and `--agents c a b` play each pair on the same games: the
    random agents draw from their seat's per-match generator, and each pair is played in
    one order fixed by the pair (canonical_pair), its result mirrored to the list."""
    from agents.evaluation.tournament import canonical_pair

    one = run_tournament(["random", "simple", "strong"], matches=8, seed=5)
    two = run_tournament(["strong", "random", "simple"], matches=8, seed=5)
    for a, b in (("random", "simple"), ("random", "strong"), ("simple", "strong")):
        assert one.pair(a, b) == {**two.pair(a, b), "seconds": one.pair(a, b)["seconds"]}
    # the listed order still names the rows: (strong, random) is strong's side
    assert [(p.a, p.b) for p in two.pairs] == [("strong", "random"), ("strong", "simple"),
                                                ("random", "simple")]
    assert canonical_pair(["strong", "random"], 0, 1) == (1, 0)
    assert canonical_pair(["simple", "simple"], 0, 1) == (0, 1)  # a tie keeps the list
