"""Tournaments on Ray actors (``workers=N``): the same results and records as in one
process, for every N; clear one-line errors without Ray or with a bad address; and every
process the local Ray started is gone afterwards.

One local Ray serves the whole module (starting one costs seconds on two cores).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agents import make_agent
from agents.evaluation.arena import play_matches
from agents.evaluation.cluster import TOKEN_NOTE, check_workers, require_ray
from agents.evaluation.distributed import chunks_for, play_pairings
from agents.evaluation.tournament import run_tournament
from hgin_env.rules import load_rules
from tests.helpers.paths import ROOT
from tests.helpers.ray_cluster import actor_pids, alive, kill_all, two_node_cluster

ray = pytest.importorskip("ray", reason="needs Ray: pip install 'hgin[ray]'")


def _summary(result: Any, records: list[dict[str, Any]]) -> Any:
    pairs = [(p.a, p.b, {k: v for k, v in result.pair(p.a, p.b).items() if k != "seconds"})
             for p in result.pairs]
    lines = [json.dumps({k: v for k, v in r.items() if k != "hgin"}, sort_keys=True)
             for r in records]
    return pairs, result.elo, lines


def _tournament(workers: int, batch_size: int | None = None, duplicate: bool = True) -> Any:
    records: list[dict[str, Any]] = []
    result = run_tournament(["random", "simple", "strong"], matches=6, rules="classic",
                            seed=4, duplicate=duplicate, record=records.append,
                            workers=workers, batch_size=batch_size)
    return _summary(result, records)


def test_results_and_records_are_the_same_for_every_number_of_workers(local_ray: Any) -> None:
    here = _tournament(0)
    assert len(here[2]) == 18
    for workers, batch in ((1, None), (2, None), (2, 2), (1, 4)):
        assert _tournament(workers, batch) == here, (workers, batch)
    assert _tournament(2, duplicate=False) == _tournament(0, duplicate=False)


def test_progress_reaches_the_total_once_in_order(local_ray: Any) -> None:
    seen: list[tuple[int, int]] = []
    run_tournament(["random", "simple"], matches=8, seed=1, workers=2,
                   progress=lambda done, total: seen.append((done, total)))
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == 8 and {t for _, t in seen} == {8}


def test_chunks_cover_every_pair_once() -> None:
    for matches, duplicate, workers, batch in ((7, True, 2, None), (5, False, 3, 2),
                                               (1, True, 4, None)):
        jobs = chunks_for(3, matches, 9, duplicate, workers, batch)
        for pairing in range(3):
            units = [s for p, _, seeds in jobs if p == pairing for s in seeds.tolist()]
            unit = 2 if duplicate else 1
            assert len(units) == -(-matches // unit) and len(set(units)) == len(units)


def test_bad_worker_counts_and_addresses_are_one_line_errors() -> None:
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="workers must be a non-negative integer"):
            check_workers(bad)
    with pytest.raises(ValueError, match="workers must be"):
        run_tournament(["random", "simple"], matches=2, workers=-2)


def test_more_workers_than_cpus_is_refused_not_left_waiting(local_ray: Any) -> None:
    with pytest.raises(ValueError, match="at most 2 workers"):
        run_tournament(["random", "simple"], matches=2, workers=3)


def test_without_ray_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails
    with pytest.raises(ValueError, match=r"pip install 'hgin\[ray\]'"):
        require_ray("--workers")


def test_rays_token_banner_is_said_in_hgins_words(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Ray warns when it turns token authentication on by itself; hgin holds that line
    back and says what it means, and only then (a cluster joined, or Ray quiet: nothing)."""
    import logging

    from agents.evaluation import cluster

    class FakeRay:
        banner = True

        @staticmethod
        def is_initialized() -> bool:
            return False

        @classmethod
        def init(cls, **options: Any) -> None:
            log = logging.getLogger("ray._private.authentication.authentication_token_setup")
            if cls.banner:
                log.warning("Token authentication is enabled for this Ray cluster. Set "
                            "RAY_AUTH_MODE=disabled to opt out.")
            log.warning("another warning")

    monkeypatch.setitem(sys.modules, "ray", FakeRay)
    cluster.connect(None, "--workers")
    err = capsys.readouterr().err
    assert TOKEN_NOTE in err and "Token authentication is enabled" not in err
    # only the banner is held back
    assert [r.getMessage() for r in caplog.records] == ["another warning"]
    FakeRay.banner = False
    cluster.connect(None, "--workers")
    assert TOKEN_NOTE not in capsys.readouterr().err


def _hgin(*args: str, timeout: int = 300, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT)) if env is None else env
    return subprocess.run([sys.executable, "-m", "agents.cli", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=timeout)


def test_hgin_evaluate_with_workers_prints_the_in_process_table(tmp_path: Path) -> None:
    common = ["evaluate", "--agents", "random", "simple", "--matches", "4", "--no-progress"]
    here = _hgin(*common, "--json", str(tmp_path / "here.json"))
    bare = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}
    there = _hgin(*common, "--workers", "2", "--json", str(tmp_path / "there.json"),
                  env=dict(bare, PYTHONPATH=str(ROOT)))
    assert here.returncode == there.returncode == 0, there.stderr
    # The local Ray's token authentication is hgin's one explained line, not Ray's banner.
    assert TOKEN_NOTE in there.stderr
    assert "Token authentication is enabled" not in there.stderr
    drop = {"seconds", "elapsed_s", "pair_seconds"}

    def load(name: str) -> Any:
        data = json.loads((tmp_path / name).read_text())
        return json.loads(json.dumps(data), object_hook=lambda d: {k: v for k, v in d.items()
                                                                   if k not in drop})
    assert load("here.json") == load("there.json")


def test_hgin_evaluate_address_needs_workers_and_a_cluster() -> None:
    alone = _hgin("evaluate", "--agents", "random", "simple", "--address", "auto")
    assert alone.returncode == 2 and "--workers" in alone.stderr.splitlines()[-1]
    nowhere = _hgin("evaluate", "--agents", "random", "simple", "--matches", "2",
                    "--workers", "1", "--address", "127.0.0.1:9", "--no-progress",
                    timeout=200)
    assert nowhere.returncode == 2
    assert "Traceback" not in nowhere.stderr
    assert "127.0.0.1:9" in nowhere.stderr.splitlines()[-1]


def _worker_pids() -> list[int]:
    return actor_pids("_MatchWorker")


def test_a_killed_worker_is_replaced_and_the_results_do_not_change(local_ray: Any) -> None:
    """A worker's process is killed after the first chunk comes back: its chunk is played
    again elsewhere and the tournament's results equal the in-process ones."""
    killed: list[int] = []

    def progress(done: int, total: int) -> None:
        if not killed:
            pids = _worker_pids()
            if pids:
                os.kill(pids[0], 9)
                killed.append(pids[0])

    specs = ["simple", "strong"]
    here = run_tournament(specs, matches=16, seed=2, batch_size=2)
    there = run_tournament(specs, matches=16, seed=2, batch_size=2, workers=2,
                           progress=progress)
    assert killed
    assert there.cluster["replayed"] >= 1
    drop = {"seconds"}
    assert ({k: v for k, v in there.pair(*specs).items() if k not in drop}
            == {k: v for k, v in here.pair(*specs).items() if k not in drop})


def test_a_stopped_worker_is_found_stuck_and_its_chunk_played_again(local_ray: Any) -> None:
    """A worker's process is stopped (SIGSTOP: a hung machine, a deadlocked library) after
    the first chunk comes back: its arena makes no progress, so after ``stall_timeout``
    (5 s here) it is killed and its chunk played again elsewhere; the tournament ends in
    seconds, with the in-process results."""
    rules = load_rules("classic")
    specs = ["simple", "strong"]
    stopped: list[int] = []

    def progress(pairing: int, done: int) -> None:
        pids = _worker_pids()
        if not stopped and len(pids) == 2:
            os.kill(pids[0], signal.SIGSTOP)
            stopped.append(pids[0])

    def wake() -> None:  # code that waits on it for ever still ends (and fails the timing)
        for pid in stopped:
            if alive(pid):
                os.kill(pid, signal.SIGCONT)

    watchdog = threading.Timer(120, wake)
    watchdog.start()
    report: dict[str, int] = {}
    try:
        began = time.monotonic()
        there = play_pairings(specs, [(0, 1)], 12, rules, 2, True, 2, None, batch_size=2,
                              progress=progress, report=report, stall_timeout=5)
        took = time.monotonic() - began
    finally:
        watchdog.cancel()
        assert kill_all(set(stopped)) == []
    assert stopped
    agents = [make_agent(spec, seed=2, rules=rules) for spec in specs]
    here = play_matches(*agents, 12, rules, 2, True, batch_size=2)
    assert there[0].rates() == here.rates()
    assert report["late"] == 1 and report["replayed"] >= 1, report
    assert took < 60, f"the tournament waited {took:.0f} s on the stopped worker"


def test_a_bad_stall_timeout_is_a_one_line_error() -> None:
    for bad in (0, -1.0, True, "3", float("nan"), 1e9):
        with pytest.raises(ValueError, match="stall_timeout must be a number of seconds"):
            play_pairings(["random", "simple"], [(0, 1)], 2, load_rules("classic"), 0, True,
                          1, None, stall_timeout=bad)


@pytest.mark.slow
def test_a_two_node_cluster_plays_on_both_nodes_and_survives_losing_one(tmp_path: Path
                                                                         ) -> None:
    """``ray start --head`` and a second ``ray start --address`` on this machine (one CPU
    each), ``hgin evaluate --workers 2 --address``: the chunks run on both nodes; then the
    second node's raylet is killed mid-run and the tournament still ends with the
    in-process table.  Every process the two ``ray start`` calls began is stopped by id."""
    import time

    args = ["evaluate", "--agents", "simple", "strong", "--matches", "32",
            "--batch-size", "2", "--no-progress", "--seed", "3"]
    here = _hgin(*args, "--json", str(tmp_path / "here.json"))
    with two_node_cluster() as cluster:
        first = _hgin(*args, "--workers", "2", "--address", cluster.address,
                      "--json", str(tmp_path / "first.json"), env=cluster.env)
        assert first.returncode == 0, first.stderr
        assert "on 2 node(s)" in first.stderr
        run = subprocess.Popen([sys.executable, "-m", "agents.cli", *args, "--workers", "2",
                                "--address", cluster.address, "--json",
                                str(tmp_path / "lost.json")], env=cluster.env, cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while not _worker_pids() and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(1.0)
            for pid in cluster.second_raylets:
                os.kill(pid, 9)
            _, err = run.communicate(timeout=300)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        assert run.returncode == 0, err
        assert "played again after a lost worker" in err, err
    assert here.returncode == 0
    drop = {"seconds", "elapsed_s", "pair_seconds"}

    def load(name: str) -> Any:
        return json.loads((tmp_path / name).read_text(),
                          object_hook=lambda d: {k: v for k, v in d.items() if k not in drop})
    assert load("here.json") == load("first.json") == load("lost.json")
