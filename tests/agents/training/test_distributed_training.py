"""``hgin train --workers N``: rollouts collected by Ray actors.

The claims: one worker is the in-process run, to the bit; the same seed and N give the
same run; checkpoints resume exactly with workers (and refuse another shard count); a
worker killed mid-run changes nothing (its shard's rollout is collected again from the
state it began from); with every worker lost the run stops with exit 1 and keeps a good
checkpoint; on a two-node cluster the workers run on both nodes and the run survives
losing one.  One local Ray (two CPUs, ``local_ray`` in tests/agents/conftest.py) serves
the module.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from agents.torch_agent import CheckpointError, load_checkpoint
from agents.training.config import validate
from agents.training.ppo import Trainer
from agents.training.shard import shard_bounds, shard_seeds
from tests.helpers.paths import ROOT
from tests.helpers.ray_cluster import (
    actor_pids,
    alive,
    descendants,
    kill_all,
    two_node_cluster,
    wait_for,
)

ray = pytest.importorskip("ray", reason="needs Ray: pip install 'hgin[ray]'")
pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/agents/conftest.py


def small_config(workers: int, **sections: dict) -> dict:
    raw = {
        "run": {"seed": 5, "total_steps": 64 * 8 * 40, "threads": 1},
        "env": {"num_games": 64, "rollout_steps": 8, "points_coef": 0.5},
        "model": {"hidden": [32], "features": "knock"},
        "ppo": {"epochs": 2, "minibatch_size": 96},
        "imitation": {"teacher": "strong", "steps": 64 * 8, "kickstart_steps": 64 * 8 * 2,
                      "kickstart_coef": 1.0},
        "opponents": {"self_play": 0.4, "pool": 0.2, "simple": 0.2, "strong": 0.1,
                      "random": 0.1, "blocks": 8, "snapshot_every": 1, "pool_size": 2},
        "distributed": {"workers": workers},
    }
    for name, keys in sections.items():
        raw.setdefault(name, {}).update(keys)
    return validate(raw)


def weights_digest(trainer: Trainer) -> str:
    h = hashlib.sha256()
    for key, value in trainer.model.state_dict().items():
        h.update(key.encode())
        h.update(value.detach().cpu().numpy().tobytes())
    return h.hexdigest()


def run_updates(config: dict, updates: int) -> tuple[str, list[dict[str, float]]]:
    trainer = Trainer(config)
    try:
        logs = [_comparable(trainer.update()) for _ in range(updates)]
        return weights_digest(trainer), logs
    finally:
        trainer.close()


@functools.cache
def two_workers_four_updates() -> str:
    """The weights of an untouched two-worker run after four updates (several tests
    compare with it; computed once)."""
    return run_updates(small_config(2), 4)[0]


def _comparable(out: dict[str, Any]) -> dict[str, float]:
    return {k: v for k, v in out.items() if not k.startswith(("perf/", "workers/"))}


# --------------------------------------------------------------------------- shards


def test_shards_cover_the_games_once_and_shard_zero_keeps_the_run_seeds() -> None:
    for games, count in ((64, 1), (64, 3), (7, 7), (1000, 6)):
        bounds = shard_bounds(games, count)
        assert bounds[0][0] == 0 and bounds[-1][1] == games
        assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
        assert max(b - a for a, b in bounds) - min(b - a for a, b in bounds) <= 1
    with pytest.raises(ValueError, match="at least one game"):
        shard_bounds(3, 4)
    assert shard_seeds(9, 0) == (9 * 7919 + 1, [9, 2])
    seeds = {shard_seeds(9, i)[0] for i in range(50)}
    assert len(seeds) == 50


def test_more_workers_than_games_is_a_config_error() -> None:
    with pytest.raises(ValueError, match=r"distributed\.workers"):
        small_config(65)
    with pytest.raises(ValueError, match=r"distributed\.address"):
        small_config(1, distributed={"address": "nowhere"})


def test_without_ray_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails
    with pytest.raises(ValueError, match=r"pip install 'hgin\[ray\]'"):
        Trainer(small_config(1))


# --------------------------------------------------------------------------- determinism


def test_one_worker_is_the_in_process_run_and_n_workers_repeat(local_ray: Any) -> None:
    """Six updates (imitation, kickstarting, pool snapshots, heuristics): the weights and
    every logged statistic of one worker equal the in-process run's; two workers repeat
    themselves to the bit, and play other games than one (their shards' own seeds)."""
    here = run_updates(small_config(0), 6)
    assert run_updates(small_config(1), 6) == here
    two = run_updates(small_config(2), 6)
    assert run_updates(small_config(2), 6) == two
    assert two[0] != here[0]
    serial = small_config(1, run={"pipeline": False})
    assert run_updates(serial, 3) == run_updates(small_config(0, run={"pipeline": False}), 3)


def test_a_privileged_critic_on_one_worker_is_the_in_process_run(local_ray: Any) -> None:
    """The critic's weights go to the workers with the policy's, and the hidden cards
    come back with the rollouts: one worker is still the in-process run."""
    critic = {"critic": "privileged", "critic_hidden": [32]}
    here = run_updates(small_config(0, model=critic), 4)
    assert run_updates(small_config(1, model=critic), 4) == here


def _checkpoint_after(config: dict, updates: int, folder: Path) -> tuple[dict, Path]:
    """A training checkpoint of ``config`` after ``updates`` updates, saved and loaded."""
    trainer = Trainer(config)
    try:
        for _ in range(updates):
            trainer.update()
        ckpt = trainer.checkpoint()
    finally:
        trainer.close()
    path = folder / "latest.pt"
    torch.save(ckpt, path)
    return load_checkpoint(path), path


def _resumed_digest(config: dict, ckpt: dict, path: Path, updates: int) -> str:
    trainer = Trainer(config)
    try:
        trainer.load_trainer_state(ckpt, path)
        for _ in range(updates):
            trainer.update()
        return weights_digest(trainer)
    finally:
        trainer.close()


def test_a_checkpoint_resumes_exactly_with_workers(local_ray: Any, tmp_path: Path) -> None:
    whole = two_workers_four_updates()
    ckpt, path = _checkpoint_after(small_config(2), 2, tmp_path)
    assert _resumed_digest(small_config(2), ckpt, path, 2) == whole
    with pytest.raises(CheckpointError, match="resume it with --workers 2"):
        Trainer(small_config(0)).load_trainer_state(ckpt, path)


def test_one_worker_checkpoints_resume_in_process(local_ray: Any, tmp_path: Path) -> None:
    """One shard either way: a run collected by one worker continues in-process exactly."""
    whole = run_updates(small_config(0), 4)[0]
    ckpt, path = _checkpoint_after(small_config(1), 2, tmp_path)
    assert _resumed_digest(small_config(0), ckpt, path, 2) == whole


# --------------------------------------------------------------------------- faults


def test_a_killed_worker_is_replaced_and_the_run_does_not_change(local_ray: Any) -> None:
    """A worker's process is killed between two updates: the shard's rollout is collected
    again by a new worker from the state it began from, so the weights after six updates
    are those of a run where nothing happened."""
    clean = run_updates(small_config(2), 6)[0]
    events: list[str] = []
    trainer = Trainer(small_config(2), on_event=events.append)
    try:
        for update in range(6):
            if update == 2:
                pids = actor_pids("_ShardHost")
                assert len(pids) == 2
                os.kill(pids[0], 9)
            out = trainer.update()
        assert weights_digest(trainer) == clean
        assert out["workers/lost"] == 1 and out["workers/restarts"] == 1
        assert out["workers/alive"] == 2
        assert any("lost" in e for e in events) and any("again" in e for e in events)
    finally:
        trainer.close()


def test_with_no_restart_left_the_shard_moves_to_a_surviving_worker(local_ray: Any) -> None:
    clean = two_workers_four_updates()
    trainer = Trainer(small_config(2, distributed={"max_restarts": 0}))
    try:
        trainer.update()
        os.kill(actor_pids("_ShardHost")[1], 9)
        for _ in range(3):
            out = trainer.update()
        assert out["workers/alive"] == 1 and out["workers/shards_moved"] == 1
        assert weights_digest(trainer) == clean
    finally:
        trainer.close()


def _resume_stopped(pids: list[int]) -> threading.Timer:
    """A watchdog that wakes the stopped processes ``pids`` after two minutes, so that code
    that waits on them for ever still ends (and fails the test's timing)."""
    def wake() -> None:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGCONT)

    timer = threading.Timer(120, wake)
    timer.start()
    return timer


def test_a_stopped_worker_is_late_lost_and_replaced_and_the_run_does_not_change(
        local_ray: Any) -> None:
    """A worker's process is stopped (SIGSTOP: a hung machine, a deadlocked library)
    between two updates: its rollout is late, past the deadline derived from the measured
    shard times (``distributed.shard_timeout = 5`` the least), so its worker is killed and
    a new one (a restart) collects the rollout again from the state it began from; the
    update ends in seconds and the weights after four updates are those of an untouched
    run."""
    clean = two_workers_four_updates()
    events: list[str] = []
    trainer = Trainer(small_config(2, distributed={"shard_timeout": 5}), on_event=events.append)
    stopped: list[int] = []
    watchdog = _resume_stopped(stopped)
    try:
        trainer.update()
        stopped.append(trainer.collection.where[1]["pid"])
        os.kill(stopped[0], signal.SIGSTOP)
        began = time.monotonic()
        out = trainer.update()
        took = time.monotonic() - began
        for _ in range(2):
            out = trainer.update()
        assert weights_digest(trainer) == clean
        assert took < 60, f"the update waited {took:.0f} s on the stopped worker"
        assert out["workers/late"] == 1 and out["workers/lost"] == 1
        assert out["workers/restarts"] == 1 and out["workers/alive"] == 2
        assert any("WorkerLateError" in e and "shard_timeout = 5" in e for e in events), events
    finally:
        watchdog.cancel()
        trainer.close()
        assert kill_all(set(stopped)) == []


def _train(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT)) if env is None else env
    return subprocess.Popen([sys.executable, "-m", "agents.cli", "train", *args], env=env,
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


TINY = ["--config", "quick", "--no-progress", "--set", "env.num_games=64",
        "--set", "env.rollout_steps=8", "--set", "opponents.blocks=4",
        "--set", "model.hidden=[32]", "--set", "run.eval_every=0",
        "--set", "run.final_eval_matches=2", "--set", 'run.eval_opponents=["simple"]',
        "--set", "run.checkpoint_every=1", "--set", "imitation.steps=1024"]


def _children(proc: subprocess.Popen[str], name: str) -> list[int]:
    below = descendants(proc.pid)
    return [pid for pid in actor_pids(name) if pid in below]


def _finish(proc: subprocess.Popen[str], timeout: int = 300) -> tuple[str, str]:
    """The run's output once it ends (killed after ``timeout`` s); every process it
    started (its local Ray included) is stopped by its id afterwards."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while True:
            seen |= descendants(proc.pid)
            try:
                return proc.communicate(timeout=0.5)
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    raise
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        left = kill_all(seen)
        assert left == [], f"processes of the run still alive: {left}"


def test_every_worker_lost_stops_with_exit_1_and_a_good_checkpoint(tmp_path: Path) -> None:
    """One worker and no restart allowed: once a checkpoint is written its process is
    killed; the run stops with exit code 1 and one line, and the checkpoint it kept loads
    (checksums verified) and resumes."""
    logdir = tmp_path / "run"
    proc = _train(*TINY, "--logdir", str(logdir), "--total-steps", "2e6", "--workers", "1",
                  "--set", "distributed.max_restarts=0")
    latest = logdir / "checkpoints" / "latest.pt"
    try:
        wait_for(lambda: latest.exists() and _children(proc, "_ShardHost"), 240,
                 "the first checkpoint")
        for pid in _children(proc, "_ShardHost"):
            os.kill(pid, 9)
    finally:
        _, err = _finish(proc)
    assert proc.returncode == 1, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: every collection worker was lost"), err
    assert str(latest) in last and "--resume" in last and "Traceback" not in err
    ckpt = load_checkpoint(latest)
    resumed = Trainer(ckpt["config"])
    resumed.load_trainer_state(ckpt, latest)
    assert resumed.updates >= 1


def test_a_run_survives_a_killed_worker_and_ends_as_an_untouched_one(tmp_path: Path) -> None:
    """``hgin train --workers 2``: one worker's process is killed mid-run; the run
    finishes (exit 0), says what happened, and its final agent, loaded from disk, has the
    weights of the same run without the kill."""
    steps = ["--total-steps", str(64 * 8 * 8)]
    clean = _train(*TINY, *steps, "--logdir", str(tmp_path / "clean"), "--workers", "2")
    _, err = _finish(clean)
    assert clean.returncode == 0, err
    proc = _train(*TINY, *steps, "--logdir", str(tmp_path / "hit"), "--workers", "2")
    latest = tmp_path / "hit" / "checkpoints" / "latest.pt"
    try:
        wait_for(lambda: latest.exists() and len(_children(proc, "_ShardHost")) == 2, 240,
                 "the first checkpoint")
        os.kill(_children(proc, "_ShardHost")[0], 9)
    finally:
        _, err = _finish(proc)
    assert proc.returncode == 0, err
    assert "workers: worker of shard" in err and "lost" in err
    a = load_checkpoint(tmp_path / "clean" / "agent_final.pt")
    b = load_checkpoint(tmp_path / "hit" / "agent_final.pt")
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])


def test_sigterm_while_waiting_on_a_stopped_worker_saves_and_exits_143(tmp_path: Path
                                                                      ) -> None:
    """``hgin train --workers 2`` with a worker stopped (SIGSTOP) mid-run and a deadline
    of 60 s: one SIGTERM gives the late shard up at once to the worker left, so the run
    saves its checkpoint and exits 143 within seconds, naming the resume command."""
    logdir = tmp_path / "run"
    proc = _train(*TINY, "--logdir", str(logdir), "--total-steps", "2e6", "--workers", "2",
                  "--set", "distributed.shard_timeout=60")
    latest = logdir / "checkpoints" / "latest.pt"
    stopped: list[int] = []
    watchdog = _resume_stopped(stopped)
    try:
        def started() -> bool:
            assert proc.poll() is None, proc.communicate()[1]
            return latest.exists() and len(_children(proc, "_ShardHost")) == 2

        wait_for(started, 240, "the first checkpoint")
        stopped.extend(_children(proc, "_ShardHost")[:1])
        os.kill(stopped[0], signal.SIGSTOP)
        time.sleep(1.5)  # the run is waiting on the stopped worker now
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = _finish(proc, timeout=100)
        took = time.monotonic() - began
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            _finish(proc, timeout=1)
    assert proc.returncode == 143, err
    assert took < 30, f"exit {took:.0f} s after SIGTERM"
    assert "stopped after update" in err and f"--resume {latest}" in err, err
    assert "Traceback" not in err
    ckpt = load_checkpoint(latest)
    assert ckpt["meta"]["reason"] == "stopped", ckpt["meta"]


def test_a_second_sigterm_stops_at_once_with_143(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture) -> None:
    """The first SIGTERM asks the run to finish its update and save; a second gives up at
    once, with SIGTERM's code (it was 130, Ctrl-C's)."""
    from agents.cli import train

    stop = train._Stop()
    with stop, pytest.raises(KeyboardInterrupt) as second:
        os.kill(os.getpid(), signal.SIGTERM)
        wait_for(lambda: stop.requested, 5, "the first SIGTERM")
        assert stop.exit_code == 143
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert getattr(second.value, "exit_code", None) == 143

    def interrupted(args: Any) -> dict[str, Any]:
        raise second.value

    monkeypatch.setattr(train, "train", interrupted)
    assert train.main(["--no-progress"]) == 143
    assert capsys.readouterr().err.strip().endswith("interrupted")


def test_address_without_workers_is_refused() -> None:
    proc = _train(*TINY, "--logdir", "/nonexistent/never", "--address", "auto")
    _, err = _finish(proc)
    assert proc.returncode == 2 and "--workers" in err.strip().splitlines()[-1]


# --------------------------------------------------------------------------- a real cluster


@pytest.mark.slow
def test_a_two_node_cluster_trains_on_both_nodes_and_survives_losing_one(tmp_path: Path
                                                                          ) -> None:
    """``hgin train --workers 2 --address`` on a two-node cluster (one CPU each): the
    workers run on both nodes; the second node's raylet is killed mid-run, its shard goes
    to the worker left (no CPU is free for a new one), and the run finishes."""
    with two_node_cluster() as cluster:
        proc = _train(*TINY, "--logdir", str(tmp_path / "run"), "--total-steps",
                      str(64 * 8 * 12), "--workers", "2", "--address", cluster.address,
                      env=cluster.env)
        latest = tmp_path / "run" / "checkpoints" / "latest.pt"
        try:
            wait_for(lambda: latest.exists(), 240, "the first checkpoint")
            time.sleep(0.5)
            for pid in cluster.second_raylets:
                os.kill(pid, 9)
        finally:
            _, err = _finish(proc)
        assert proc.returncode == 0, err
        assert "collecting on 2 Ray worker(s) on 2 node(s)" in err, err
        assert "lost" in err and "surviving worker" in err, err
    final = load_checkpoint(tmp_path / "run" / "agent_final.pt")
    assert final["meta"]["updates"] == 12
