"""An agent played by an external program that reads positions and answers in text.

``make_agent("text:python my_bot.py")`` (or ``text:timeout=5:COMMAND``) starts
the program once and keeps it running.  For every move it writes to the
program's standard input one description (:func:`hgin_env.ui.text.describe`)
followed by a line holding only :data:`END_MARKER`, and reads one line from its
standard output: a listed code (``7H``, ``knock 7H``, ``draw``, ``take``,
``pass``) or the move in words (:func:`hgin_env.ui.text.parse_move`).  The
program writes nothing else to standard output (logs go to standard error).

An answer that is illegal, unparsable, missing (the program exited), longer
than :data:`MAX_ANSWER_BYTES` or later than the timeout raises
:class:`TextAgentError` naming the move, the answer and the legal moves: a move
is never chosen for the program.  The timeout is one deadline per move that
covers writing the position as well as reading the answer, so a program that
stops reading its input cannot block hgin either.  The program is killed and
reaped on :meth:`TextAgent.close`, on a timeout, on an answer line too long,
when it stops answering, and when the agent is garbage collected or Python
exits.  Memory stays bounded whatever the program prints: hgin holds at most
about :data:`MAX_ANSWER_BYTES` of unread output, and a program that writes
more before it is asked simply waits on its pipe.

One :class:`TextAgent` may be shared by threads: one question is asked at a
time (a lock), so answers never interleave.  Once its program is gone (killed
or exited) every later move raises; :meth:`TextAgent.spawn` starts a new
program for the same command (the play server gives each match its own).
"""

from __future__ import annotations

import enum
import math
import os
import re
import select
import shlex
import signal
import subprocess
import threading
import time
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
#: The longest timeout accepted (a day): any longer is a typo, and far past what the
#: waits of the standard library can express (``1e308`` overflows them).
MAX_TIMEOUT_S = 86400.0
#: The longest answer line accepted, in bytes (the longest move in words is under 80):
#: past it the program is killed, so a program that never ends its line cannot fill memory.
MAX_ANSWER_BYTES = 4096
#: Seconds :meth:`TextAgent.close` waits for the program to exit on end of input.
CLOSE_GRACE_S = 1.0
_OPTIONS = re.compile(r"\w+=[^,:\s]+(,\w+=[^,:\s]+)*")
#: Bytes read from the program at a time.
_CHUNK = 65536
#: Writes wait on ``poll`` (a non-blocking pipe) where there is one (POSIX); elsewhere on
#: a writer thread (pipes cannot be polled there).  Both keep the move's deadline.
_POLL_WRITES = hasattr(select, "poll")


class TextAgentError(RuntimeError):
    """The program gave no usable answer: it names the move, the answer and the legal moves.

    ``row`` is the row of the observation batch the move was asked for, so a caller
    playing many games at once can tell which game the failure belongs to.
    """

    def __init__(self, message: str, row: int | None = None) -> None:
        super().__init__(message)
        self.row = row


def _timeout(value: float) -> float | None:
    """``value`` as a timeout in seconds, or ``None`` when it is not one."""
    return float(value) if math.isfinite(value) and 0 < value <= MAX_TIMEOUT_S else None


def _timeout_error(value: object) -> str:
    return (f"timeout must be a positive number of seconds, at most {MAX_TIMEOUT_S:g} "
            f"(a day), got {value!r}")


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
                checked = _timeout(float(value))
            except ValueError:
                checked = None
            if checked is None:
                raise ValueError(f"agent spec {spec!r}: {_timeout_error(value)}")
            timeout = checked
        body = rest
    if not body.strip():
        raise ValueError(f"agent spec {spec!r} needs a command, e.g. text:python my_bot.py")
    return body.strip(), timeout


class _Event(enum.Enum):
    """What the program's output holds instead of a line (never confused with an answer)."""

    END = "the end of its output"
    TOO_LONG = "a line longer than MAX_ANSWER_BYTES"


class _Output:
    """The program's standard output, moved by a thread into a bounded buffer.

    The thread stops reading while more than :data:`MAX_ANSWER_BYTES` wait unread,
    so the program then blocks on its own pipe instead of filling hgin's memory.
    It owns the pipe and closes it when it ends (at the program's end of output,
    or on :meth:`stop`), so the descriptor is never closed under a read.
    """


    def __init__(self, stream: IO[bytes], name: str) -> None:
        self._stream = stream
        self._data = bytearray()
        self._ended = False
        self._stopped = False
        self._cond = threading.Condition()
        threading.Thread(target=self._run, daemon=True, name=f"{name} output").start()

    def _run(self) -> None:
        fd = self._stream.fileno()
        try:
            while True:
                with self._cond:
                    while len(self._data) > MAX_ANSWER_BYTES and not self._stopped:
                        self._cond.wait()
                    if self._stopped:
                        return
                try:
                    chunk = os.read(fd, _CHUNK)
                except OSError:  # pragma: no cover - the pipe failed under us
                    chunk = b""
                if not chunk:
                    return
                with self._cond:
                    self._data += chunk
                    self._cond.notify_all()
        finally:
            with self._cond:
                self._ended = True
                self._cond.notify_all()
            try:
                self._stream.close()
            except OSError:  # pragma: no cover
                pass

    def stop(self) -> None:
        """Stop reading (the program is being ended)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _take_line(self) -> str | _Event | None:
        """The first whole line (``\\r\\n`` or ``\\n`` ends it), ``TOO_LONG``, the last
        unterminated line at the end of output, ``END``, or ``None``: wait for more."""
        data = self._data
        end = data.find(b"\n", 0, MAX_ANSWER_BYTES + 1)
        if end < 0 and len(data) > MAX_ANSWER_BYTES:
            return _Event.TOO_LONG
        if end < 0 and not self._ended:
            return None
        if end < 0 and not data:
            return _Event.END
        if end < 0:
            end = len(data)
        line = bytes(data[:end])
        del data[: end + 1]
        self._cond.notify_all()  # room again: the reader may go on
        return line.decode("utf-8", "replace").removesuffix("\r")

    def line(self, deadline: float) -> str | _Event | None:
        """The next answer line (see :meth:`_take_line`), or ``None`` past ``deadline``."""
        with self._cond:
            while (line := self._take_line()) is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            return line

    def pending(self) -> str | _Event | None:
        """What the program wrote while no move was asked (its first line, cut to 80
        characters, or ``END`` when its output has ended); ``None``: nothing."""
        with self._cond:
            if self._data:
                first = bytes(self._data[:80]).split(b"\n", 1)[0]
                return first.decode("utf-8", "replace").removesuffix("\r")
            return _Event.END if self._ended else None


def _write_poll(proc: subprocess.Popen[bytes], data: bytes, deadline: float) -> bool:
    """Write ``data`` to the program's non-blocking input by ``deadline``; ``False``
    when it did not read it in time.  ``OSError`` when the pipe is closed."""
    assert proc.stdin is not None
    fd = proc.stdin.fileno()
    poller = select.poll()  # not select.select: descriptors past 1023 are fine
    poller.register(fd, select.POLLOUT)
    view = memoryview(data)
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if poller.poll(max(1, math.ceil(left * 1000))):  # ready, or the reader is gone
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:  # pragma: no cover - poll said it was ready
                pass
    return True


def _write_thread(proc: subprocess.Popen[bytes], data: bytes, deadline: float) -> bool:
    """:func:`_write_poll` for systems whose pipes cannot be selected: a writer thread,
    waited for until ``deadline`` (then the caller kills the program, ending the write)."""
    assert proc.stdin is not None
    stdin = proc.stdin
    failed: list[OSError] = []

    def write() -> None:
        try:
            stdin.write(data)  # a blocking pipe: the whole buffer, or an error
        except (OSError, ValueError) as err:
            failed.append(err if isinstance(err, OSError) else OSError(str(err)))

    writer = threading.Thread(target=write, daemon=True, name="text agent input")
    writer.start()
    writer.join(max(0.0, deadline - time.monotonic()))
    if writer.is_alive():
        return False
    if failed:
        raise failed[0]
    return True


def _stop(proc: subprocess.Popen[bytes], output: _Output, grace: float) -> None:
    """End the program: close its input, give it ``grace`` seconds, then kill its process
    group (helpers it started too) and reap it."""
    output.stop()
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
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except (OSError, ValueError):
        pass


class TextAgent:
    """Plays each move by asking an external program (see the module docstring).

    ``command`` is a command line (split as a POSIX shell would, run without a
    shell) or an argument list; ``timeout`` the seconds allowed per move (writing
    the position and reading the answer; at most :data:`MAX_TIMEOUT_S`); ``rules``
    the rules the sheet's points are shown in (default ``friendly``).  Safe to
    share between threads: one move is asked at a time.  Slow by nature: ``act``
    asks about one game row at a time.
    """

    def __init__(self, command: str | Sequence[str], timeout: float = DEFAULT_TIMEOUT_S,
                 rules: Rules | str | None = None, name: str | None = None) -> None:
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ValueError("a text agent needs a command to run")
        try:
            checked = _timeout(float(timeout))
        except (TypeError, ValueError):
            checked = None
        if checked is None:
            raise ValueError(_timeout_error(timeout))
        self.argv = argv
        self.timeout = checked
        self.rules = load_rules(rules)
        self.name = name or "text:" + (command if isinstance(command, str) else shlex.join(argv))
        #: Moves asked so far (the number error messages give).
        self.moves = 0
        self._closed = False
        self._lock = threading.Lock()  # one question at a time
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
            start_new_session=os.name == "posix")
        assert self._proc.stdin is not None and self._proc.stdout is not None
        if _POLL_WRITES:
            os.set_blocking(self._proc.stdin.fileno(), False)
        self._output = _Output(self._proc.stdout, self.name)
        # Holds the process, not the agent, so an agent nobody keeps is collected (and its
        # program killed); also runs at interpreter exit.
        self._finalizer = weakref.finalize(self, _stop, self._proc, self._output, 0.0)

    def spawn(self) -> TextAgent:
        """A new agent like this one (command, timeout, rules, name) with its own program:
        for callers that must not share one program, such as the play server's matches."""
        return TextAgent(self.argv, self.timeout, self.rules, self.name)

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
        used: the program makes its own choices).  :class:`TextAgentError` carries the
        ``row`` that failed."""
        rows = np.asarray(obs["observation"]).shape[0]
        out = np.empty(rows, np.int64)
        with self._lock:
            for row in range(rows):
                out[row] = self._ask(obs, row)
        return out

    def _ask(self, obs: dict[str, np.ndarray], row: int) -> int:
        if self._closed:
            code = self._proc.returncode
            raise TextAgentError(f"text agent {self.name!r} is closed: its program has ended"
                                 + ("" if code is None else f" (exit code {code})"), row)
        self.moves += 1
        move = f"move {self.moves} of {self.name!r}"
        legal = "; ".join(f"{m.code} = {m.words}" for m in legal_moves(obs, row, self.rules))
        stray = self._output.pending()
        if stray is _Event.END:  # it ended its output while no move was asked
            code = self._fail_hard()
            raise TextAgentError(f"{move}: the program exited (code {code}) without "
                                 f"answering; legal moves: {legal}", row)
        if stray is not None:
            self._fail_hard()
            raise TextAgentError(f"{move}: the program wrote {stray!r} before it was asked "
                                 "(one answer line per move; logs belong on standard error)",
                                 row)
        deadline = time.monotonic() + self.timeout
        question = f"{describe(obs, row, self.rules)}\n{END_MARKER}\n".encode()
        write = _write_poll if _POLL_WRITES else _write_thread
        try:
            written = write(self._proc, question, deadline)
        except (OSError, ValueError):
            exited = self._proc.poll() is not None
            code = self._fail_hard()
            if exited:
                raise TextAgentError(f"{move}: the program exited (code {code}) without "
                                     f"answering; legal moves: {legal}", row) from None
            raise TextAgentError(f"{move}: the program is not reading its input (exit code "
                                 f"{code}); legal moves: {legal}", row) from None
        if not written:
            self._fail_hard()
            raise TextAgentError(f"{move}: the program did not read the position within "
                                 f"{self.timeout:g} s (it is not reading its input; the "
                                 f"program was killed); legal moves: {legal}", row)
        answer = self._output.line(deadline)
        if answer is None:
            self._fail_hard()
            raise TextAgentError(f"{move}: no answer within {self.timeout:g} s (the program "
                                 f"was killed); legal moves: {legal}", row)
        if answer is _Event.TOO_LONG:
            self._fail_hard()
            raise TextAgentError(f"{move}: the answer line is longer than {MAX_ANSWER_BYTES} "
                                 "bytes (one short line per move; the program was killed); "
                                 f"legal moves: {legal}", row)
        if answer is _Event.END:
            code = self._fail_hard()
            raise TextAgentError(f"{move}: the program exited (code {code}) without "
                                 f"answering; legal moves: {legal}", row)
        vec = np.asarray(obs["observation"])[row]
        mask = np.asarray(obs["action_mask"])[row]
        try:
            return parse_move(answer, mask, vec, self.rules)
        except ValueError as err:
            raise TextAgentError(f"{move}: answer {answer!r} refused: {err}", row) from None

    def _fail_hard(self) -> int | None:
        """Kill the program at once and mark the agent closed; its exit code."""
        self._closed = True
        self._finalizer()
        return self._proc.returncode

    def close(self) -> None:
        """End the program: end of input first, killed after :data:`CLOSE_GRACE_S`.
        Waits for a move being asked by another thread (at most its timeout)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._finalizer.detach()
                _stop(self._proc, self._output, CLOSE_GRACE_S)

    def __enter__(self) -> TextAgent:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"pid {self._proc.pid}"
        return f"TextAgent({self.name!r}, timeout={self.timeout:g}, {state})"
