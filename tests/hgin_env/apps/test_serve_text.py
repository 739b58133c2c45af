"""The play server against an external program (``text:``): every match has a program of its
own, so concurrent players never share one and a dead program stops only its own match
(issue 35); the programs end with their matches.

Each program writes its pid into a folder when it starts, so the test knows which programs
a match started; every one is ended and checked reaped, and every wait is bounded.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("flask", reason="needs Flask: pip install -e '.[web]'")

from agents.text_agent import TextAgent
from hgin_env.apps.serve import close_matches, create_app

BOT = """
import os, sys
open(os.path.join(sys.argv[1], str(os.getpid())), "w").close()
position = []
for line in sys.stdin:
    line = line.rstrip("\\n")
    if line != "END":
        position.append(line)
        continue
    start = position.index("Legal moves (answer with one code, or the move in words):")
    print(position[start + 1].strip().split("  ")[0], flush=True)
    position = []
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _gone(pid: int, seconds: float = 5.0) -> bool:
    """Whether ``pid`` is dead and reaped (a zombie still takes signal 0)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return False


class Server:
    """A play server against the scripted program, and the pids its programs wrote."""

    def __init__(self, folder: Path, **options: Any) -> None:
        self.pids = folder / "pids"
        self.pids.mkdir()
        script = folder / "bot.py"
        script.write_text(BOT, encoding="utf-8")
        command = shlex.join([sys.executable, str(script), str(self.pids)])
        self.template = TextAgent(command, timeout=10, name="bot")
        self.app = create_app(self.template, "friendly", seed=3, opponent_name="bot", **options)
        self.app.config["TESTING"] = True

    def started(self) -> set[int]:
        """The programs started so far (each writes its pid when it starts)."""
        deadline = time.monotonic() + 5
        while True:
            pids = {int(p.name) for p in self.pids.iterdir()}
            if self.template.pid in pids or time.monotonic() > deadline:
                return pids
            time.sleep(0.02)

    def new(self, client: Any) -> tuple[str, int]:
        """A new match: its session id and the pid of the program it started (``-1``
        when it started none)."""
        before = self.started()
        reply = client.post("/api/new", json={})
        assert reply.status_code == 200, reply.get_json()
        deadline = time.monotonic() + 5  # the program writes its pid once it runs
        while not (new := self.started() - before) and time.monotonic() < deadline:
            time.sleep(0.02)
        return reply.get_json()["session"], new.pop() if len(new) == 1 else -1

    def close(self) -> None:
        close_matches(self.app)
        self.template.close()
        for pid in self.started():  # only the programs these tests started
            if _alive(pid):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    made = Server(tmp_path)
    yield made
    made.close()
    assert all(_gone(pid) for pid in made.started())


def _move(client: Any, key: str) -> tuple[int, dict[str, Any]]:
    """Play the first listed move of match ``key``: the reply's status and state."""
    state = client.get(f"/api/{key}").get_json()["state"]
    reply = client.post(f"/api/{key}/action",
                        json={"action": state["moves"][0][0], "move": state["move"]})
    return reply.status_code, reply.get_json()


def test_concurrent_players_each_get_a_program_of_their_own(server: Server) -> None:
    results: dict[int, list[int]] = {}

    def player(k: int) -> None:
        client = server.app.test_client()
        reply = client.post("/api/new", json={})
        statuses = [reply.status_code]
        key = reply.get_json().get("session")
        for _ in range(25):
            if key is None:
                break
            status, data = _move(client, key)
            statuses.append(status)
            if status != 200 or data["state"]["over"]:
                break
        results[k] = statuses

    threads = [threading.Thread(target=player, args=(k,), daemon=True) for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(t.is_alive() for t in threads)
    assert all(set(statuses) == {200} for statuses in results.values()), results
    assert all(len(statuses) > 10 for statuses in results.values())
    # Six matches, six programs besides the template (never asked a move itself).
    deadline = time.monotonic() + 5
    while len(server.started()) < 7 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(server.started() - {server.template.pid}) == 6
    assert server.template.moves == 0


def test_one_matchs_dead_program_stops_only_that_match(server: Server) -> None:
    client = server.app.test_client()
    one, pid_one = server.new(client)
    two, pid_two = server.new(client)
    assert pid_one > 0 and pid_two > 0 and pid_one != pid_two
    os.killpg(pid_one, signal.SIGKILL)
    time.sleep(0.2)  # dead before its next move is asked
    for _ in range(4):  # until the agent is asked (the person may move twice in a row)
        status, data = _move(client, one)
        if status != 200:
            break
    assert status == 500 and "the agent failed" in data["error"]
    assert _gone(pid_one)  # reaped
    assert "its program has ended (exit code -9)" in data["error"] and data["state"]["error"]
    for _ in range(15):  # the other match plays on
        status, data = _move(client, two)
        assert status == 200, data
    three, pid_three = server.new(client)  # and new matches start
    assert pid_three not in (-1, pid_one, pid_two)
    assert _move(client, three)[0] == 200
    assert _alive(pid_two) and _alive(pid_three)


def test_programs_end_with_their_matches(tmp_path: Path) -> None:
    server = Server(tmp_path, per_client=2, min_idle_s=0.0)
    try:
        client = server.app.test_client()
        first, pid_first = server.new(client)
        second, pid_second = server.new(client)
        third, pid_third = server.new(client)  # the idle first match is closed for it
        assert _gone(pid_first)
        assert client.get(f"/api/{first}").status_code == 410
        assert _alive(pid_second) and _alive(pid_third)
        for _ in range(2000):  # a match played to its end ends its program
            status, data = _move(client, second)
            assert status == 200, data
            if data["state"]["over"]:
                break
        assert data["state"]["over"]
        assert _gone(pid_second) and _alive(pid_third)
        close_matches(server.app)  # what the server does when it stops
        assert _gone(pid_third)
        status, data = _move(client, third)  # its view stays; its agent is gone
        assert status in (200, 500)
    finally:
        server.close()
    assert all(_gone(pid) for pid in server.started())
