"""What a new user meets on a first run: the install line for a missing extra fits how hgin
was installed, and the learning curve draws a 100 % (or 0 %) line whole."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hgin_env import shipped
from hgin_env.apps import serve
from tests.helpers.paths import ROOT


def test_the_install_line_fits_a_checkout(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    monkeypatch.chdir(ROOT)
    assert shipped.extra_install_command("web") == "pip install -e '.[web]'"
    monkeypatch.chdir(tmp_path)  # elsewhere: the checkout's path, so the line works there
    assert shipped.extra_install_command("web") == f"pip install -e '{ROOT}[web]'"


def test_the_install_line_fits_a_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed wheel is not a checkout; ``-e '.[web]'`` would fail there (the wheel
    test runs the real installed copy)."""
    monkeypatch.setattr(shipped, "checkout_root", lambda: None)
    assert shipped.extra_install_command("web") == "pip install 'hgin[web]'"


@pytest.mark.parametrize("checkout", [True, False], ids=["checkout", "wheel"])
def test_serve_without_flask_says_the_line_that_fits(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        checkout: bool) -> None:
    monkeypatch.setitem(sys.modules, "flask", None)  # import flask raises ImportError
    monkeypatch.chdir(ROOT)
    if not checkout:
        monkeypatch.setattr(shipped, "checkout_root", lambda: None)
    assert serve.main(["--opponent", "random", "--port", "0"]) == 2
    expected = "pip install -e '.[web]'" if checkout else "pip install 'hgin[web]'"
    assert capsys.readouterr().err.strip() == (
        f"error: the play server needs Flask: {expected}")


def test_the_curve_draws_0_and_100_percent_inside_the_panel(tmp_path: Path) -> None:
    """A win rate of 100 % sits inside the panel with room for its marker and interval
    (on the frame, half of it would be clipped); the ticks still end at 0 and 100."""
    pytest.importorskip("matplotlib")
    from agents.training.curves import RunLog, learning_curve_figure

    run = RunLog("r")
    run.points = [(800_000, {"simple": (1.0, 0.95, 1.0)}),
                  (1_600_000, {"simple": (0.0, 0.0, 0.05)})]
    fig = learning_curve_figure([run])
    (ax,) = [a for a in fig.axes if a.get_visible()]
    low, high = ax.get_ylim()
    assert low < 0 - 2 and high > 100 + 2
    ticks = [t for t in ax.get_yticks() if low <= t <= high]
    assert min(ticks) == 0 and max(ticks) == 100
    marker = ax.lines[0]
    assert marker.get_clip_on()  # clipped at the frame: hence the margin above
