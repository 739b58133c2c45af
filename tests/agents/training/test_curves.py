"""Learning curves: reading a run's evaluations and drawing them (``hgin plot``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.cli.plot import main as plot_main
from agents.training.curves import plot_runs, read_run, read_scalars


def _rates(rate: float) -> dict[str, float]:
    return {"win_rate": rate, "ci_low": rate - 0.1, "ci_high": rate + 0.1}


def fake_run(folder: Path, seed: int, rates: list[float]) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(f"[run]\nseed = {seed}\n")
    lines = [json.dumps({"update": 25 * (i + 1), "env_steps": 800_000 * (i + 1),
                         "results": {"simple": _rates(r), "strong": _rates(r - 0.05)}})
             for i, r in enumerate(rates)]
    (folder / "eval.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "final_eval.json").write_text(json.dumps(
        {"env_steps": 3_000_000, "results": {"simple": _rates(0.7), "strong": _rates(0.6)}}))
    return folder


def test_a_run_reads_in_step_order_with_its_seed_and_final_point(tmp_path: Path) -> None:
    run = read_run(fake_run(tmp_path / "q", 4, [0.5, 0.6, 0.65]))
    assert run.label == "q (seed 4)"
    assert [s for s, _ in run.points] == [800_000, 1_600_000, 2_400_000]
    assert run.points[1][1]["strong"] == pytest.approx((0.55, 0.45, 0.65))
    assert run.final == (3_000_000, {"simple": pytest.approx((0.7, 0.6, 0.8)),
                                     "strong": pytest.approx((0.6, 0.5, 0.7))})
    assert run.opponents == ["simple", "strong"]


def test_plot_writes_png_and_svg_with_a_panel_per_opponent(tmp_path: Path) -> None:
    runs = [read_run(fake_run(tmp_path / f"s{i}", i, [0.5 + i / 20, 0.6])) for i in range(3)]
    png, svg = plot_runs(runs, tmp_path / "out" / "curves.png")
    assert png.name == "curves.png" and svg.name == "curves.svg"
    assert png.read_bytes().startswith(b"\x89PNG")
    text = svg.read_text()
    assert "vs simple" in text and "vs strong" in text and "s2 (seed 2)" in text


def test_folders_without_evaluations_and_bad_lines_are_one_line_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(ValueError, match=r"no eval\.jsonl"):
        read_run(tmp_path)
    bad = fake_run(tmp_path / "bad", 0, [0.5])
    (bad / "eval.jsonl").write_text('{"env_steps": 5, "results": {"simple": {"win": 1}}}\n')
    with pytest.raises(ValueError, match=r"eval\.jsonl:1: the results against 'simple'"):
        read_run(bad)
    assert plot_main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hgin plot: error:") and "Traceback" not in err


def test_hgin_plot_draws_several_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    folders = [str(fake_run(tmp_path / f"r{i}", i, [0.5, 0.55])) for i in range(2)]
    assert plot_main([*folders, "--out", str(tmp_path / "fig"), "--title", "two seeds"]) == 0
    assert (tmp_path / "fig.png").exists() and (tmp_path / "fig.svg").exists()
    out = capsys.readouterr().out
    assert "wrote" in out and "over 2 run(s)" in out
    assert "vs strong" in out and "60.0 [60.0, 60.0]" in out


def test_tensorboard_scalars_are_drawn_below_and_unknown_tags_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from torch.utils.tensorboard import SummaryWriter

    folder = fake_run(tmp_path / "tb", 1, [0.5, 0.6])
    writer = SummaryWriter(str(folder))
    for step in range(1, 31):
        writer.add_scalar("loss/value", 1.0 / step, step * 1000)
    writer.close()
    run = read_run(folder)
    read_scalars(run, folder, ["loss/value"])
    assert [s for s, _ in run.scalars["loss/value"]][:2] == [1000, 2000]
    _, svg = plot_runs([run], tmp_path / "with_scalars", smooth=5)
    assert "loss/value (mean of 5 updates)" in svg.read_text()
    assert plot_main([str(folder), "--out", str(tmp_path / "x"), "--scalars", "loss/none"]) == 2
    assert "no TensorBoard scalar 'loss/none'" in capsys.readouterr().err
