"""The text agent's limits: a deadline on writes as well as reads, a bounded answer line and
unread output, one question at a time when shared, and a bounded timeout (issue 35).

Every program started here is closed by the ``bot`` fixture and checked to be reaped; every
wait is bounded, so a regression fails the test instead of hanging the run.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents import text_agent as ta
from agents.text_agent import (
    MAX_ANSWER_BYTES,
    MAX_TIMEOUT_S,
    TextAgent,
    TextAgentError,
    parse_text_spec,
)
from agents.training.config import check_agent_spec
from hgin_env.engine import VectorGame
from hgin_env.ui.text import legal_moves, parse_move

BOT = """
import sys, time
mode = sys.argv[1]
if mode == "deaf":  # never reads its input, never answers
    time.sleep(60)
    sys.exit(0)
position = []
for line in sys.stdin:
    line = line.rstrip("\\n")
    if line != "END":
        position.append(line)
        continue
    start = position.index("Legal moves (answer with one code, or the move in words):")
    first = position[start + 1].strip().split("  ")[0]
    position = []
    if mode == "flood":  # 64 MB and never a newline
        chunk = "x" * 2**20
        for _ in range(64):
            sys.stdout.write(chunk)
        sys.stdout.flush()
        time.sleep(60)
    print(first, flush=True)
    if mode == "lines":  # then 50 MB of short lines nobody asked for
        for _ in range(10**4):
            sys.stdout.write("draw\\n" * 1000)
        sys.stdout.flush()
        time.sleep(60)
"""

Bot = Callable[..., TextAgent]


def _gone(pid: int, seconds: float = 5.0) -> bool:
    """Whether ``pid`` is dead and reaped (a zombie still takes signal 0)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def bot(tmp_path: Path) -> Iterator[Bot]:
    """``bot(mode, timeout=S)`` starts the scripted program; all are closed and reaped after."""
    script = tmp_path / "bot.py"
    script.write_text(BOT, encoding="utf-8")
    started: list[TextAgent] = []

    def start(mode: str, timeout: float = 5.0) -> TextAgent:
        command = shlex.join([sys.executable, str(script), mode])
        agent = make_agent(f"text:timeout={timeout}:{command}")
        assert isinstance(agent, TextAgent)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        if agent.running:  # a test that failed half-way: never leave a program behind
            os.killpg(agent.pid, signal.SIGKILL)
        agent.close()
        assert _gone(agent.pid)


def _bounded(call: Callable[[], object], agent: TextAgent, seconds: float) -> BaseException:
    """Run ``call`` in a thread and return what it raised; if it is still running after
    ``seconds`` (blocked for good), kill the program to free the thread and fail."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as err:  # handed to the test
            raised.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        os.killpg(agent.pid, signal.SIGKILL)
        thread.join(5)
        pytest.fail(f"still blocked after {seconds} s")
    assert raised, "it returned instead of raising"
    return raised[0]


def _fill_input(agent: TextAgent) -> int:
    """Fill the program's input pipe, as a program that stopped reading long ago would have
    let it fill; the bytes written."""
    fd = agent._proc.stdin.fileno()
    blocking = os.get_blocking(fd)
    os.set_blocking(fd, False)
    written = 0
    try:
        while True:
            written += os.write(fd, b"#" * 4096)
    except BlockingIOError:
        pass
    finally:
        os.set_blocking(fd, blocking)
    return written


@pytest.mark.parametrize("poll", [True, False], ids=["poll", "writer-thread"])
def test_a_program_that_does_not_read_its_input_is_killed_at_the_deadline(
        bot: Bot, monkeypatch: pytest.MonkeyPatch, poll: bool) -> None:
    monkeypatch.setattr(ta, "_POLL_WRITES", poll)  # both ways of writing keep the deadline
    agent = bot("deaf", timeout=1)
    assert _fill_input(agent) > 0
    obs = VectorGame(1, seed=0).observe()
    start = time.monotonic()
    err = _bounded(lambda: agent.act(obs), agent, 10)
    assert isinstance(err, TextAgentError)
    assert re.search(r"move 1 of .*did not read the position within 1 s \(it is not reading "
                     r"its input; the program was killed\); legal moves: take", str(err))
    assert time.monotonic() - start < 5
    assert _gone(agent.pid) and not agent.running
    with pytest.raises(TextAgentError, match="is closed"):
        agent.act(obs)


def test_an_answer_line_without_end_is_cut_off_and_the_program_killed(bot: Bot) -> None:
    agent = bot("flood", timeout=5)
    obs = VectorGame(1, seed=0).observe()
    start = time.monotonic()
    err = _bounded(lambda: agent.act(obs), agent, 15)
    assert isinstance(err, TextAgentError)
    assert re.search(rf"move 1 of .*answer line is longer than {MAX_ANSWER_BYTES} bytes "
                     r".*the program was killed.*legal moves: take", str(err))
    assert time.monotonic() - start < 4  # at the limit, not at the timeout
    assert _gone(agent.pid)


def test_output_nobody_asked_for_is_held_bounded_until_the_next_move(bot: Bot) -> None:
    agent = bot("lines")
    obs = VectorGame(1, seed=0).observe()
    assert agent.act(obs).tolist() == [parse_move("take", obs["action_mask"][0])]
    time.sleep(0.5)  # the program writes 50 MB of lines: it is made to wait on its pipe
    assert agent.running
    assert len(agent._output._data) <= MAX_ANSWER_BYTES + ta._CHUNK
    with pytest.raises(TextAgentError, match="wrote 'draw' before it was asked"):
        agent.act(obs)
    assert _gone(agent.pid)


def _positions(count: int) -> list[dict[str, np.ndarray]]:
    """``count`` positions at a discard, from different deals: their first listed moves
    (what the "first" program answers) differ."""
    out = []
    for seed in range(count):
        game = VectorGame(1, seed=seed)
        rng = np.random.default_rng(seed)
        for _ in range(3 + seed % 4):
            legal = np.flatnonzero(game.legal_action_mask()[0])
            game.step(np.array([rng.choice(legal)]))
        out.append(game.observe())
    return out


def test_threads_sharing_one_agent_each_get_their_own_answers(bot: Bot) -> None:
    agent = bot("first")
    positions = _positions(6)
    expected = [parse_move(legal_moves(o)[0].code, o["action_mask"][0], o["observation"][0])
                for o in positions]
    assert len(set(expected)) > 1  # the answers tell the positions apart
    errors: list[BaseException] = []
    wrong: list[tuple[int, int, int]] = []

    def play(k: int) -> None:
        try:
            for _ in range(15):
                got = int(agent.act(positions[k])[0])
                if got != expected[k]:
                    wrong.append((k, got, expected[k]))
        except BaseException as err:  # checked below
            errors.append(err)

    threads = [threading.Thread(target=play, args=(k,), daemon=True) for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(t.is_alive() for t in threads)
    assert errors == [] and wrong == []
    assert agent.moves == 6 * 15 and agent.running


def test_a_program_gone_between_moves_keeps_the_agent_raising(bot: Bot) -> None:
    agent = bot("first")
    obs = VectorGame(1, seed=0).observe()
    agent.act(obs)
    os.killpg(agent.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while agent.running and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(TextAgentError, match=r"move 2 of .*the program exited \(code -9\) "
                                             r"without answering"):
        agent.act(obs)
    for _ in range(3):
        with pytest.raises(TextAgentError, match="is closed: its program has ended"):
            agent.act(obs)


def test_spawn_starts_a_program_of_its_own(bot: Bot) -> None:
    agent = bot("first", timeout=2.5)
    twin = agent.spawn()
    try:
        assert twin.pid != agent.pid and twin.name == agent.name and twin.timeout == 2.5
        obs = VectorGame(1, seed=0).observe()
        os.killpg(agent.pid, signal.SIGKILL)
        assert twin.act(obs).shape == (1,)
    finally:
        twin.close()
    assert _gone(twin.pid)


def test_the_timeout_is_at_most_a_day() -> None:
    assert MAX_TIMEOUT_S == 86400
    assert parse_text_spec("text:timeout=86400:cat") == ("cat", 86400.0)
    for value in ("1e308", "86401", "inf", "nan", "-1"):
        spec = f"text:timeout={value}:cat"
        with pytest.raises(ValueError, match=r"at most 86400 \(a day\)"):
            parse_text_spec(spec)
        with pytest.raises(ValueError, match=r"at most 86400 \(a day\)"):
            make_agent(spec)
        with pytest.raises(ValueError, match=r"at most 86400 \(a day\)"):
            check_agent_spec("opponents.agents", spec)
    for bad in (1e308, 86400.5, float("inf"), 0.0):
        with pytest.raises(ValueError, match=r"at most 86400 \(a day\)"):
            TextAgent(["cat"], timeout=bad)
    with TextAgent(["cat"], timeout=86400) as agent:
        assert agent.timeout == 86400.0 and agent.running
    assert _gone(agent.pid)
