"""Ray for the tests: processes found and stopped by their ids, a two-node cluster on this
machine, and the worker processes of a kind of actor.

Nothing here runs ``ray stop`` (it would stop every Ray on the machine): a test stops
exactly the processes it started, found under /proc.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.paths import ROOT


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid``, read from /proc (no psutil needed)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def kill_all(pids: set[int]) -> list[int]:
    """SIGKILL each of ``pids`` still alive; returns those still alive a moment later."""
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
    time.sleep(0.2)
    return [pid for pid in pids if alive(pid)]


def actor_pids(class_name: str) -> list[int]:
    """The processes of the Ray actors of ``class_name`` (their title is ``ray::Class``)."""
    mark = f"ray::{class_name}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and cmdline(int(entry.name)).startswith(mark):
            pids.append(int(entry.name))
    return sorted(pids)


def wait_for(predicate: object, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(0.1)


def ray_processes(temp_dir: Path) -> set[int]:
    """The processes of the Ray nodes that use ``temp_dir`` (GCS, raylets, agents) and
    everything below them (the workers): no other Ray on the machine is touched."""
    mark = str(temp_dir).encode()
    roots = {int(e.name) for e in Path("/proc").iterdir()
             if e.name.isdigit() and mark in cmdline(int(e.name))}
    out = set(roots)
    for pid in roots:
        out |= descendants(pid)
    return out


@dataclass
class Cluster:
    """A running two-node cluster: its address, the environment a client needs (the
    token), and the second node's raylet processes."""

    address: str
    env: dict[str, str]
    temp: Path
    second_raylets: list[int] = field(default_factory=list)


@contextmanager
def two_node_cluster() -> Iterator[Cluster]:
    """``ray start --head`` and a second ``ray start --address`` on this machine, one CPU
    each, on a free port.  Ray 2.60's servers listen on every interface whatever
    ``--node-ip-address`` says, so the cluster takes a token only this test knows.  Every
    process the two calls began is stopped by its id afterwards."""
    ray_cli = str(Path(sys.executable).with_name("ray"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAY_USAGE_STATS_ENABLED="0",
               RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    temp = Path(tempfile.mkdtemp(prefix="hgin-ray-", dir="/tmp"))  # Unix sockets: short
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats",
              f"--temp-dir={temp}"]
    started: set[int] = set()
    try:
        subprocess.run([ray_cli, "start", "--head", f"--port={port}",
                        "--include-dashboard=false", *common], check=True, env=env,
                       capture_output=True, timeout=120)
        head = ray_processes(temp)
        subprocess.run([ray_cli, "start", f"--address=127.0.0.1:{port}",
                        "--resources={\"second_node\": 1}", *common], check=True, env=env,
                       capture_output=True, timeout=120)
        started = ray_processes(temp)
        second = [pid for pid in started - head
                  if b"second_node" in cmdline(pid) and b"raylet" in cmdline(pid)]
        assert second, "the second node's raylet was not found"
        yield Cluster(f"127.0.0.1:{port}", env, temp, second)
    finally:  # stop every process of the two nodes, by id, until none is left
        for _ in range(20):
            started |= ray_processes(temp)
            if not kill_all(started):
                break
            time.sleep(0.3)
        shutil.rmtree(temp, ignore_errors=True)
    left = [pid for pid in started if alive(pid)]
    assert left == [], f"Ray processes still running: {left}"
