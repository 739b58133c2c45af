"""evaluate.py, the command line: outputs, argument checks before any match, exit codes.

The tournament library it drives is tested in test_tournament.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import agents.evaluation.tournament
from agents.cli import evaluate
from tests.helpers.paths import ROOT
from tests.helpers.signals import sigint_default


def _run_cli(*args: str, **popen: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "evaluate.py"), *args], cwd=ROOT, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=sigint_default, **popen,
    )


@pytest.fixture
def no_matches(monkeypatch) -> None:
    """Fail the test if the CLI gets as far as playing."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a match was started before the arguments were checked")

    monkeypatch.setattr(agents.evaluation.tournament, "run_tournament", refuse)


def test_cli_writes_files_and_says_so(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    code = evaluate.main(["--agents", "random", "simple", "--matches", "3", "--seed", "5",
                          "--json", f"{out}.json", "--csv", f"{out}.csv",
                          "--plot", f"{out}.svg", "--no-progress"])
    assert code == 0
    captured = capsys.readouterr()
    assert "match win" in captured.out and "Elo" in captured.out
    for suffix in (".json", ".csv", ".svg"):
        assert f"wrote {out}{suffix}" in captured.err
    data = json.loads(Path(f"{out}.json").read_text())
    assert data["matches_per_pairing"] == 4  # rounded up to an even number of duplicate pairs
    assert data["pairs"][0]["b_match_wins"] == 4
    assert Path(f"{out}.csv").read_text().startswith("a,b,matches")
    assert Path(f"{out}.svg").read_text().startswith("<?xml")


def test_a_directory_gets_named_files_inside_it(tmp_path, capsys) -> None:
    code = evaluate.main(["--agents", "random", "simple", "--matches", "2", "--no-progress",
                          "--json", str(tmp_path), "--csv", f"{tmp_path}/", "--plot",
                          str(tmp_path)])
    assert code == 0
    err = capsys.readouterr().err
    for name in ("tournament.json", "tournament.csv", "tournament.png"):
        assert (tmp_path / name).is_file()
        assert f"wrote {tmp_path / name}" in err
    assert not Path(f"{tmp_path}.png").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--json", "/nonexistent-hgin/o.json"], "directory /nonexistent-hgin does not exist"),
        (["--csv", "{tmp}/missing/"], "does not exist"),
        (["--csv", "{tmp}/file.txt/o.csv"], "is not a directory"),
        (["--plot", "{tmp}/heat"], ".png, .svg, .pdf"),
        (["--plot", "{tmp}/heat.jpg"], ".png, .svg, .pdf"),
        (["--json", "{tmp}/same", "--csv", "{tmp}/same"], "both write"),
        (["--batch-size", "0"], "--batch-size: expected a positive integer, got 0"),
        (["--batch-size", "-3"], "--batch-size: expected a positive integer, got -3"),
        (["--batch-size", "two"], "--batch-size: expected a positive integer"),
        (["--matches", "0"], "--matches: expected a positive integer"),
        (["--seed", "-1"], "--seed: expected a non-negative integer"),
    ],
)
def test_bad_arguments_stop_before_the_first_match(tmp_path, capsys, no_matches, args,
                                                   message) -> None:
    (tmp_path / "file.txt").write_text("")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    with pytest.raises(SystemExit) as exc:
        evaluate.main(["--agents", "random", "simple", "--no-progress", *args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_unwritable_output_is_refused(tmp_path, capsys, monkeypatch, no_matches) -> None:
    # Permissions are simulated: the tests may run as root, who writes anywhere.
    monkeypatch.setattr(evaluate.os, "access", lambda path, mode: Path(path) != tmp_path)
    with pytest.raises(SystemExit):
        evaluate.main(["--agents", "random", "simple", "--json", str(tmp_path / "o.json")])
    assert f"{tmp_path / 'o.json'} is not writable" in capsys.readouterr().err


def test_cli_errors(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        evaluate.main(["--agents", "random", "bogus", "--no-progress"])
    assert exc.value.code == 2
    assert "valid specs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        evaluate.main(["--agents", "random", "--no-progress"])
    with pytest.raises(SystemExit):
        evaluate.main(["--agents", "random", "simple", "--rules", "nonsense", "--no-progress"])


def test_help_documents_formats_outputs_and_batching() -> None:
    text = evaluate.build_parser().format_help()
    for needle in (".svg", ".pdf", ".png", "outputs/", "cividis", "95%", "--batch-size",
                   "do not depend on --batch-size"):
        assert needle in text, needle


def test_script_entry_point() -> None:
    proc = _run_cli("--agents", "random", "simple", "--matches", "2", "--no-progress")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "random" in out and "simple" in out


def test_ctrl_c_exits_130_with_one_line() -> None:
    proc = _run_cli("--agents", "simple", "strong", "--matches", "4000", "--no-progress")
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == evaluate.EXIT_INTERRUPTED == 130
    assert err == "evaluate.py: interrupted\n"


def test_closed_output_pipe_exits_with_one_line() -> None:
    """``evaluate.py ... | head``: the reader is gone before the tables are printed."""
    proc = _run_cli("--agents", "random", "simple", "--matches", "2", "--no-progress")
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=120)
    assert proc.returncode == evaluate.EXIT_BROKEN_PIPE
    assert err == "evaluate.py: output pipe closed, stopped\n"


def test_a_failed_write_is_one_line_and_exit_1(tmp_path, capsys, monkeypatch) -> None:
    def full_disk(self, path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(agents.evaluation.tournament.TournamentResult, "write_csv", full_disk)
    code = evaluate.main(["--agents", "random", "simple", "--matches", "2", "--no-progress",
                          "--json", str(tmp_path / "r.json"), "--csv", str(tmp_path / "r.csv")])
    assert code == 1
    err = capsys.readouterr().err
    assert f"wrote {tmp_path / 'r.json'}" in err
    assert f"could not write {tmp_path / 'r.csv'}: [Errno 28] No space left on device" in err


def test_names_label_the_agents_everywhere(tmp_path, capsys) -> None:
    out = tmp_path / "named.json"
    code = evaluate.main(["--agents", "random", "simple", "--names", "rnd", "smp",
                          "--matches", "2", "--no-progress", "--json", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["agents"] == ["rnd", "smp"]
    assert (data["pairs"][0]["a"], data["pairs"][0]["b"]) == ("rnd", "smp")
    table = capsys.readouterr().out
    assert "rnd" in table and "smp" in table


@pytest.mark.parametrize(("names", "message"), [
    (["one"], "--names gives 1 name(s) for 2 agent(s)"),
    (["same", "same"], "--names must be distinct"),
])
def test_bad_names_are_refused_before_the_first_match(capsys, no_matches, names,
                                                      message) -> None:
    with pytest.raises(SystemExit) as exc:
        evaluate.main(["--agents", "random", "simple", "--names", *names, "--no-progress"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_closed_output_pipe_still_writes_the_plot(tmp_path) -> None:
    """``evaluate.py ... --plot out.png | head``: the reader is gone, the heatmap is not."""
    plot = tmp_path / "out.png"
    proc = _run_cli("--agents", "random", "simple", "--matches", "2", "--no-progress",
                    "--plot", str(plot))
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=120)
    assert proc.returncode == evaluate.EXIT_BROKEN_PIPE == 141
    assert f"wrote {plot}" in err and err.endswith("evaluate.py: output pipe closed, stopped\n")
    assert plot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
