"""An agent played by an external program that reads positions and answers in text.

``make_agent("text:python my_bot.py")`` (or ``text:timeout=5:COMMAND``) starts
the program once and keeps it running.  For every move it writes to the
program's standard input one description (:func:`hgin_env.ui.text.describe`)
followed by a line holding only :data:`END_MARKER`, and reads one line from its
standard output: a listed code (``7H``, ``knock 7H``, ``draw``, ``take``,
``pass``) or the move in words (:func:`hgin_env.ui.text.parse_move`).  The
program writes nothing else to standard output (logs go to standard error).

An answer that is illegal, unparsable, missing (the program exited) or later
than the timeout raises :class:`TextAgentError` naming the move, the answer and
the legal moves: a move is never chosen for the program.  The program is
killed and reaped on :meth:`TextAgent.close`, on a timeout, when it stops
answering, and when the agent is garbage collected or Python exits.
"""

from __future__ import annotations

import math
import os
import queue
import re
import shlex
import signal
import subprocess
import threading
import weakref
from collections.abc import Sequence
from typing import IO, Any

import numpy as np

from hgin_env.rules import Rules, load_rules
from hgin_env.ui.text import describe, legal_moves, parse_move

#: The line that ends each description: the program answers after reading it.
END_MARKER = "END"
#: Seconds the program has for each answer unless told otherwise.
DEFAULT_TIMEOUT_S = 30.0
#: Seconds :meth:`TextAgent.close` waits for the program to exit on end of input.
CLOSE_GRACE_S = 1.0
_OPTIONS = re.compile(r"\w+=[^,:\s]+(,\w+=[^,:\s]+)*")


class TextAgentError(RuntimeError):
    """The program gave no usable answer: it names the move, the answer and the legal moves."""


def parse_text_spec(spec: str) -> tuple[str, float]:
    """``(command, timeout)`` from ``text:COMMAND`` or ``text:timeout=S:COMMAND``.

    The options part is told apart from the command by its ``key=value`` form, so
    a command may itself hold colons.  ``ValueError`` says what is wrong.
    """
    if not spec.lower().startswith("text:"):
        raise ValueError(f"a text agent spec starts with 'text:', got {spec!r}")
    body = spec[len("text:"):]
    timeout = DEFAULT_TIMEOUT_S
    head, sep, rest = body.partition(":")
    if sep and _OPTIONS.fullmatch(head.strip()):
        for item in head.strip().split(","):
            key, value = item.split("=", 1)
            if key != "timeout":
                raise ValueError(f"agent spec {spec!r}: unknown option {key!r} (known: timeout)")
            try:
                timeout = float(value)
            except ValueError:
                timeout = math.nan
            if not (math.isfinite(timeout) and timeout > 0):
                raise ValueError(f"agent spec {spec!r}: timeout must be a positive number of "
                                 f"seconds, got {value!r}")
        body = rest
    if not body.strip():
        raise ValueError(f"agent spec {spec!r} needs a command, e.g. text:python my_bot.py")
    return body.strip(), timeout


def _read_lines(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    """Move the program's output lines to ``lines`` (``None`` at its end), so that an
    answer can be waited for with a deadline."""
    try:
        for line in stream:
            lines.put(line.rstrip("\r\n"))
    except (OSError, ValueError):  # the pipe was closed under us
        pass
    lines.put(None)


def _stop(proc: subprocess.Popen[str], grace: float) -> None:
    """End the program: close its input, give it ``grace`` seconds, then kill its process
    group (helpers it started too) and reap it."""
    if proc.poll() is None and grace > 0:
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(grace)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
    if proc.poll() is None:
        try:
            if os.name == "posix":
                os.killpg(proc.pid, signal.SIGKILL)
            else:  # pragma: no cover - not run on the CI's Linux
                proc.kill()
        except (ProcessLookupError, PermissionError):
            pass
    proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        try:
            if pipe is not None:
                pipe.close()
        except (OSError, ValueError):
            pass


class TextAgent:
    """Plays each move by asking an external program (see the module docstring).

    ``command`` is a command line (split as a POSIX shell would, run without a
    shell) or an argument list; ``timeout`` the seconds allowed per answer;
    ``rules`` the rules the sheet's points are shown in (default ``friendly``).
    Slow by nature: ``act`` asks about one game row at a time.
    """

    def __init__(self, command: str | Sequence[str], timeout: float = DEFAULT_TIMEOUT_S,
                 rules: Rules | str | None = None, name: str | None = None) -> None:
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ValueError("a text agent needs a command to run")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.argv = argv
        self.timeout = float(timeout)
        self.rules = load_rules(rules)
        self.name = name or "text:" + (command if isinstance(command, str) else shlex.join(argv))
        #: Moves asked so far (the number error messages give).
        self.moves = 0
        self._closed = False
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8",
            errors="replace", bufsize=1, start_new_session=os.name == "posix")
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert self._proc.stdout is not None
        threading.Thread(target=_read_lines, args=(self._proc.stdout, self._lines),
                         daemon=True, name=f"{self.name} output").start()
        # Holds the process, not the agent, so an agent nobody keeps is collected (and its
        # program killed); also runs at interpreter exit.
        self._finalizer = weakref.finalize(self, _stop, self._proc, 0.0)

    @property
    def pid(self) -> int:
        """The program's process id."""
        return self._proc.pid

    @property
    def running(self) -> bool:
        """Whether the program is still running (it is reaped once it has ended)."""
        return self._proc.poll() is None

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None
            ) -> np.ndarray:
        """One action per row of ``obs``, each asked of the program in turn (``rng`` is not
        used: the program makes its own choices)."""
        rows = np.asarray(obs["observation"]).shape[0]
        out = np.empty(rows, np.int64)
        for row in range(rows):
            out[row] = self._ask(obs, row)
        return out

    def _ask(self, obs: dict[str, np.ndarray], row: int) -> int:
        if self._closed:
            raise TextAgentError(f"text agent {self.name!r} is closed")
        self.moves += 1
        move = f"move {self.moves} of {self.name!r}"
        legal = "; ".join(f"{m.code} = {m.words}" for m in legal_moves(obs, row, self.rules))
        stray = self._pending()
        if stray is not None:
            self._fail_hard()
            raise TextAgentError(f"{move}: the program wrote {stray!r} before it was asked "
                                 "(one answer line per move; logs belong on standard error)")
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(f"{describe(obs, row, self.rules)}\n{END_MARKER}\n")
            self._proc.stdin.flush()
        except (OSError, ValueError):
            code = self._fail_hard()
            raise TextAgentError(f"{move}: the program is not reading its input (exit code "
                                 f"{code}); legal moves: {legal}") from None
        try:
            answer = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            self._fail_hard()
            raise TextAgentError(f"{move}: no answer within {self.timeout:g} s (the program "
                                 f"was killed); legal moves: {legal}") from None
        if answer is None:
            code = self._fail_hard()
            raise TextAgentError(f"{move}: the program exited (code {code}) without "
                                 f"answering; legal moves: {legal}")
        vec = np.asarray(obs["observation"])[row]
        mask = np.asarray(obs["action_mask"])[row]
        try:
            return parse_move(answer, mask, vec, self.rules)
        except ValueError as err:
            raise TextAgentError(f"{move}: answer {answer!r} refused: {err}") from None

    def _pending(self) -> str | None:
        """A line the program wrote while no move was asked (``None``: none), or its end."""
        try:
            line = self._lines.get_nowait()
        except queue.Empty:
            return None
        return "(end of output)" if line is None else line

    def _fail_hard(self) -> int | None:
        """Kill the program at once and mark the agent closed; its exit code."""
        self._closed = True
        self._finalizer()
        return self._proc.returncode

    def close(self) -> None:
        """End the program: end of input first, killed after :data:`CLOSE_GRACE_S`."""
        if not self._closed:
            self._closed = True
            self._finalizer.detach()
            _stop(self._proc, CLOSE_GRACE_S)

    def __enter__(self) -> TextAgent:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"pid {self._proc.pid}"
        return f"TextAgent({self.name!r}, timeout={self.timeout:g}, {state})"

