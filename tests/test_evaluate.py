"""evaluate.py end to end: the function API, the CLI outputs and errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import evaluate
from agents import SimpleAgent

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def small_tournament() -> evaluate.TournamentResult:
    return evaluate.run_tournament(["random", "simple", "strong"], matches=2, seed=3)


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


def test_outputs(small_tournament, tmp_path) -> None:
    res = small_tournament
    res.write_json(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["agents"] == res.agents and len(data["pairs"]) == 3
    assert set(data["elo"]) == set(res.agents)
    res.write_csv(tmp_path / "r.csv")
    with open(tmp_path / "r.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3 and {"match_rate", "match_low", "a_elo", "a_gin_rate"} <= set(rows[0])
    res.plot(tmp_path / "r.png")
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_writes_files(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    code = evaluate.main(["--agents", "random", "simple", "--matches", "3", "--seed", "5",
                          "--json", f"{out}.json", "--csv", f"{out}.csv",
                          "--plot", f"{out}.png", "--no-progress"])
    assert code == 0
    text = capsys.readouterr().out
    assert "match win" in text and "Elo" in text
    data = json.loads(Path(f"{out}.json").read_text())
    assert data["matches_per_pairing"] == 4  # rounded up to an even number of duplicate pairs
    assert data["pairs"][0]["b_match_wins"] == 4
    assert Path(f"{out}.csv").exists() and Path(f"{out}.png").exists()


def test_cli_errors(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        evaluate.main(["--agents", "random", "bogus", "--no-progress"])
    assert exc.value.code == 2
    assert "valid specs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        evaluate.main(["--agents", "random", "--no-progress"])
    with pytest.raises(SystemExit):
        evaluate.main(["--agents", "random", "simple", "--rules", "nonsense", "--no-progress"])


def test_seeded_and_duplicate_agents_get_unique_names() -> None:
    seen = []
    a = evaluate.run_tournament(["simple", "simple", SimpleAgent()], matches=2, seed=1,
                                progress=lambda done, total: seen.append((done, total)))
    assert a.agents == ["simple", "simple#2", "simple#3"]
    assert seen[-1] == (6, 6)
    b = evaluate.run_tournament(["simple", "random"], matches=2, seed=9, rules="classic")
    c = evaluate.run_tournament(["simple", "random"], matches=2, seed=9, rules="classic")
    assert (b.pairs[0].stats.hands == c.pairs[0].stats.hands).all()
    assert b.rules_name == "classic"


def test_script_entry_point() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), "--agents", "random", "simple",
         "--matches", "2", "--no-progress"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "random" in proc.stdout and "simple" in proc.stdout
