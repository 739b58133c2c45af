"""Play a Hollywood gin match against an agent in the browser.

    python -m hgin_env.serve --opponent pretrained --rules friendly [--seed N] [--port 0]

A small Flask app (the ``[web]`` extra) on 127.0.0.1 serves one
self-contained page and a JSON API; every browser tab plays its own match
(:class:`~hgin_env.apps.play_session.PlaySession`, kept on the server under a
random 128-bit session id).  The API:

* ``POST /api/new`` ``{"seat": 0|1}`` (optional) → ``{"session", "seed", "state"}``;
* ``GET /api/<session>`` → ``{"state"}``, the table as that seat may see it;
* ``POST /api/<session>/action`` ``{"action": id, "move": n}`` → ``{"state"}``,
  after the agent's replies.  ``move`` is the state's ``"move"`` the client
  saw: a stale one is a 409 (so a double click or a second tab cannot apply
  two moves), as is a move the rules refuse now (with the reason).  When the
  agent fails the match stops: a 500 with the reason, and the state says so;
* ``GET /api/<session>/record`` → the match so far as a match record
  (``.jsonl``, see docs/records.md), verifiable by ``python -m hgin_env.replay``.

Matches are numbered from 1.  With ``--seed S`` match 1 is dealt from seed
``S`` (the deals of ``python -m hgin_env.play --seed S``) and match ``n`` from
:func:`match_seed` ``(S, n)``; the page shows each match's seed, so any match
can be dealt again (``--seed`` that seed).  Without ``--seed`` every match gets
fresh entropy.

Hostile input is refused: a body that is not a JSON object, or nests too deep,
is a 400; a POST without ``Content-Type: application/json`` a 400, a body over
:data:`MAX_BODY` bytes a 413; a ``Host`` or ``Origin`` header that does not
name the address the server is bound to (DNS rebinding, cross-site forms) a
400 or 403.  Every error is ``{"error": ...}``.  Sessions are bounded, per
client address and in all; when a bound is reached the match idle longest goes
(a finished one first), but never one used in the last :data:`MIN_IDLE_S`
seconds: then the new match is refused (429, 503) instead.  A closed match
answers 410 with the reason, and its record stays downloadable (the last
:data:`ARCHIVED` records, and every one in ``--records-dir`` when given).
The server (:func:`make_play_server`) runs a bounded pool of worker threads
with a socket read timeout, so stalled uploads cannot hold a thread each.

An opponent that holds an external program (a ``text:`` agent: it has a
``spawn()`` method) is never shared between matches: every match gets its own
program, started with the match and ended when it finishes, stops or is
closed, so the session bounds also bound the programs running, and one
match's dead program never stops another.  :func:`close_matches` ends them all
(``main`` does on exit).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import secrets
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from hgin_env.agent import Agent
from hgin_env.apps.play import add_match_arguments, load_match
from hgin_env.apps.play_session import AgentFailed, IllegalMove, PlaySession
from hgin_env.cards import NUM_CARDS
from hgin_env.rules import PROFILES, Rules, load_rules
from hgin_env.shipped import extra_install_command
from hgin_env.ui.render import card_text
from hgin_env.ui.webpage import page

__all__ = ["close_matches", "create_app", "main", "make_play_server", "match_seed"]

#: Sessions kept at once, in all and per client address.
MAX_SESSIONS = 200
PER_CLIENT = 20
#: A match used this recently is never closed to make room (seconds).
MIN_IDLE_S = 600.0
#: Records of closed (finished or evicted) matches kept for download.
ARCHIVED = 200
#: Closed session ids remembered, to say why they are gone.
GONE_KEYS = 5000
#: The largest request body accepted (bytes); larger is a 413.
MAX_BODY = 64 * 1024
#: Worker threads of :func:`make_play_server`, and its socket read timeout (seconds).
WORKERS = 16
READ_TIMEOUT_S = 10.0
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def match_seed(seed: int, number: int) -> int:
    """The seed of match ``number`` (from 1) on a server started with ``--seed seed``.

    Match 1 is dealt from ``seed`` itself, as the terminal game deals; later
    matches from a 53-bit seed mixed from both numbers (numpy's
    ``SeedSequence``), so each is fixed by the two and can be dealt again.  53
    bits, so that JavaScript's numbers hold it exactly.
    """
    if number <= 1:
        return int(seed)
    words = np.random.SeedSequence([int(seed), int(number)]).generate_state(2, np.uint32)
    return ((int(words[0]) & 0x1FFFFF) << 32) | int(words[1])


class _BadRequest(ValueError):
    """A malformed request (answered 400)."""


class _NotFound(LookupError):
    """An unknown session id (answered 404)."""


class _Gone(LookupError):
    """A session that was closed (answered 410, with the reason)."""


class _Refused(RuntimeError):
    """A request refused with ``status`` (403, 429, 503)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Entry:
    session: PlaySession
    client: str
    used: float
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Archive:
    """The records of closed matches, for download: the last ``limit`` in memory,
    and every one written to ``folder`` when there is one."""

    def __init__(self, limit: int, folder: Path | None) -> None:
        self.limit = limit
        self.folder = folder
        self._lock = threading.Lock()
        self._items: OrderedDict[str, tuple[str, str]] = OrderedDict()

    def put(self, key: str, session: PlaySession) -> None:
        name, line = _record_file(session)
        with self._lock:
            self._items[key] = (name, line)
            self._items.move_to_end(key)
            while len(self._items) > self.limit:
                self._items.popitem(last=False)
        if self.folder is not None:
            # The session id keeps two matches with one seed apart.
            (self.folder / f"{name[:-6]}-{key[:8]}.jsonl").write_text(line, "utf-8")

    def get(self, key: str) -> tuple[str, str] | None:
        with self._lock:
            return self._items.get(key)


def _record_file(session: PlaySession) -> tuple[str, str]:
    """A file name and the one-line ``.jsonl`` text of ``session``'s record."""
    line = json.dumps(session.record(), separators=(",", ":")) + "\n"
    state = "final" if session.over else "stopped" if session.failed else "in-progress"
    return f"hgin-match-{session.seed}-{state}.jsonl", line


class _Sessions:
    """The live matches by session id, each with its own lock (one request at a time).

    Bounded in all (``limit``) and per client address (``per_client``).  To make
    room the match idle longest goes (a finished one first), its record kept in
    the archive; one used in the last ``min_idle_s`` seconds is never closed,
    so a flood of new matches is refused rather than wiping matches in play.
    """

    def __init__(self, limit: int, per_client: int, min_idle_s: float, archive: _Archive,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.per_client = per_client
        self.min_idle_s = min_idle_s
        self.archive = archive
        self.clock = clock
        self._lock = threading.Lock()
        self._items: dict[str, _Entry] = {}
        self._gone: OrderedDict[str, str] = OrderedDict()

    def _victim(self, keys: list[str], now: float) -> str | None:
        """The match to close among ``keys``: finished first, then idle longest; ``None``
        when every one was used in the last ``min_idle_s`` seconds."""
        key = min(keys, key=lambda k: (not self._items[k].session.over, self._items[k].used))
        entry = self._items[key]
        return key if entry.session.over or now - entry.used >= self.min_idle_s else None

    def _close(self, key: str, why: str) -> _Entry:
        """Take ``key`` out of play (its record archived); the caller then ends its agent
        (:func:`_end`) outside this object's lock, as that may wait for a program."""
        entry = self._items.pop(key)
        with entry.lock:  # an idle match: no request holds it for long
            if not entry.session.over:  # a finished match was archived when it ended
                self.archive.put(key, entry.session)
        self._gone[key] = why
        while len(self._gone) > GONE_KEYS:
            self._gone.popitem(last=False)
        return entry

    def add(self, session: PlaySession, client: str) -> str:
        key = secrets.token_urlsafe(16)  # 128 bits
        closed: list[_Entry] = []
        try:
            with self._lock:
                now = self.clock()
                mine = [k for k, e in self._items.items() if e.client == client]
                if len(mine) >= self.per_client:
                    victim = self._victim(mine, now)
                    if victim is None:
                        raise _Refused(429, f"your address has {len(mine)} matches in play, "
                                       "the most it may: finish one, or try again in a few "
                                       "minutes")
                    closed.append(self._close(victim, "it was closed to make room for a "
                                              "newer match from the same address"))
                if len(self._items) >= self.limit:
                    victim = self._victim(list(self._items), now)
                    if victim is None:
                        raise _Refused(503, f"the server is full ({len(self._items)} matches "
                                       "in play): try again in a few minutes")
                    closed.append(self._close(victim, "the server was full and this match "
                                              "was idle longest"))
                self._items[key] = _Entry(session, client, now)
        finally:
            for entry in closed:
                _end(entry)
        return key

    def close_all(self) -> None:
        """End every live match's agent (the server is stopping); the matches stay."""
        with self._lock:
            entries = list(self._items.values())
        for entry in entries:
            _end(entry)

    def get(self, key: str) -> _Entry:
        with self._lock:
            entry = self._items.get(key)
            if entry is not None:
                entry.used = self.clock()
                return entry
            why = self._gone.get(key)
        if why is not None:
            raise _Gone(why)
        raise _NotFound(f"no match with session id {key!r} (the server restarted, or it "
                        "never existed): start a new match")


def _end(entry: _Entry) -> None:
    """End a match's own agent (:meth:`PlaySession.close`), after any request on it."""
    with entry.lock:
        entry.session.close()


class _Seeds:
    """Match numbers and seeds: :func:`match_seed` of the server's seed, or fresh entropy."""

    def __init__(self, seed: int | None) -> None:
        self.seed = seed
        self._count = 0
        self._lock = threading.Lock()

    def draw(self) -> tuple[int, int]:
        with self._lock:
            self._count += 1
            number = self._count
        if self.seed is None:
            return number, secrets.randbits(53)
        return number, match_seed(self.seed, number)


def _split_host(host: str) -> tuple[str, int | None]:
    """``"[::1]:8000"`` → ``("[::1]", 8000)``; a host without a port gets ``None``."""
    host = host.strip().lower()
    name, sep, port = host.rpartition(":")
    if not sep or name.endswith(":") or (host.startswith("[") and not name.endswith("]")):
        return host, None  # no port (a bare IPv6 address has colons of its own)
    return name, int(port) if port.isdigit() else -1


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def create_app(opponent: Agent, rules: Rules | str = "friendly", seed: int | None = None,
               opponent_name: str | None = None, seat: int = 0,
               max_sessions: int = MAX_SESSIONS, per_client: int = PER_CLIENT,
               min_idle_s: float = MIN_IDLE_S, archived: int = ARCHIVED,
               records_dir: str | Path | None = None,
               allowed_hosts: Collection[str] | None = LOOPBACK_NAMES,
               port: int | None = None, clock: Callable[[], float] = time.monotonic) -> Any:
    """The Flask app: the page and the JSON API for matches against ``opponent``.

    ``seat`` is the person's default seat (a new match may ask for the other).
    ``allowed_hosts`` are the host names a request's ``Host`` (and ``Origin``,
    when sent) may name, with ``port`` when given (:func:`make_play_server`
    sets both from the address it binds); ``None`` accepts any.
    ``records_dir``, when given, receives every closed match's record.
    An ``opponent`` with a ``spawn()`` method (a ``text:`` agent) is only a
    template: each match plays ``opponent.spawn()``, its own copy, closed with
    the match (see the module docstring).
    Raises ``ImportError`` naming the ``[web]`` extra when Flask is missing.
    """
    try:
        from flask import Flask, Response, jsonify, request
        from werkzeug.exceptions import HTTPException
    except ImportError as err:
        raise ImportError("the play server needs Flask: "
                          f"{extra_install_command('web')}") from err
    profile = rules if isinstance(rules, str) and rules in PROFILES else None
    rules = load_rules(rules)
    name = opponent_name or getattr(opponent, "name", "opponent")
    folder = Path(records_dir) if records_dir is not None else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    archive = _Archive(archived, folder)
    sessions = _Sessions(max_sessions, per_client, min_idle_s, archive, clock)
    seeds = _Seeds(seed)
    spawn = getattr(opponent, "spawn", None)
    app = Flask(__name__)
    app.extensions["hgin_serve"] = sessions
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.config["HGIN_HOSTS"] = (None if allowed_hosts is None
                                else frozenset(h.lower() for h in allowed_hosts))
    app.config["HGIN_PORT"] = port
    page_data = {"opponent": name, "profile": profile or "custom rules",
                 "cards": [card_text(c) for c in range(NUM_CARDS)], "big_gin": rules.big_gin}
    html = page("play_template.html", f"hgin: play against {name}", page_data)

    def fail(status: int, message: str, **extra: Any) -> Any:
        response = jsonify({"error": message, **extra})
        response.status_code = status
        return response

    def host_allowed(host: str) -> bool:
        hosts, want = app.config["HGIN_HOSTS"], app.config["HGIN_PORT"]
        if hosts is None:
            return True
        name, given = _split_host(host)
        if name not in hosts:
            return False
        return want is None or given == want or (given is None and want == 80)

    @app.before_request
    def check_request() -> Any:
        if not host_allowed(request.host):
            return fail(400, f"this server does not answer for host {request.host!r}; open "
                        "it at the address it printed")
        origin = request.headers.get("Origin")
        if origin is not None:
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or not host_allowed(parts.netloc):
                return fail(403, f"requests from {origin!r} are refused: this server only "
                            "answers its own page")
        if request.method == "POST" and request.mimetype != "application/json":
            return fail(400, "a POST must have Content-Type: application/json")
        return None

    def body() -> dict[str, Any]:
        raw = request.get_data(cache=False)
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as err:
            raise _BadRequest("the request body is not valid JSON (or nests too deep)") from err
        if not isinstance(data, dict):
            raise _BadRequest(f"the request body must be a JSON object, got {type(data).__name__}")
        return data

    def integer(data: dict[str, Any], key: str, what: str) -> int:
        value = data[key]
        if type(value) is not int:  # not a bool, not 1.0
            raise _BadRequest(f"'{key}' must be {what}, got {json.dumps(value)[:40]}")
        return value

    def stop_or_finish(key: str, session: PlaySession) -> None:
        """Keep the record of a match that just ended (or stopped) for download."""
        if session.over or session.failed is not None:
            archive.put(key, session)

    @app.errorhandler(_BadRequest)
    def bad_request(err: _BadRequest) -> Any:
        return fail(400, str(err))

    @app.errorhandler(_NotFound)
    def not_found(err: _NotFound) -> Any:
        return fail(404, str(err))

    @app.errorhandler(_Gone)
    def gone(err: _Gone) -> Any:
        return fail(410, f"this match was closed: {err}. Its record can still be downloaded; "
                    "start a new match to play on", gone=True)

    @app.errorhandler(_Refused)
    def refused(err: _Refused) -> Any:
        return fail(err.status, str(err))

    @app.errorhandler(HTTPException)
    def http_error(err: HTTPException) -> Any:
        return fail(err.code or 500, f"{err.name}: {err.description}")

    @app.errorhandler(Exception)
    def server_error(err: Exception) -> Any:
        app.logger.exception("request failed")
        return fail(500, f"the server failed: {err}")

    @app.get("/")
    def index() -> Any:
        return Response(html, mimetype="text/html")

    @app.post("/api/new")
    def new_match() -> Any:
        data = body()
        chosen = integer(data, "seat", "0 or 1") if "seat" in data else seat
        if chosen not in (0, 1):
            raise _BadRequest(f"'seat' must be 0 or 1, got {chosen}")
        number, match = seeds.draw()
        if callable(spawn):  # a program of its own for this match
            try:
                player = spawn()
            except (OSError, ValueError) as err:
                raise _Refused(503, f"the agent's program could not be started: {err}") from err
        else:
            player = opponent
        session = PlaySession(player, rules, match, seat=chosen, opponent_name=name,
                              profile=profile, number=number, owns_opponent=callable(spawn))
        try:
            key = sessions.add(session, request.remote_addr or "")
        except BaseException:
            session.close()
            raise
        stop_or_finish(key, session)
        return jsonify({"session": key, "seed": session.seed, "state": session.view()})

    @app.get("/api/<key>")
    def state(key: str) -> Any:
        entry = sessions.get(key)
        with entry.lock:
            return jsonify({"state": entry.session.view()})

    @app.post("/api/<key>/action")
    def action(key: str) -> Any:
        entry = sessions.get(key)
        data = body()
        if "action" not in data:
            raise _BadRequest("the request must name an 'action' (an id in 0..107)")
        chosen = integer(data, "action", "an integer id in 0..107")
        if not 0 <= chosen < 108:
            raise _BadRequest(f"action {chosen} is outside 0..107")
        if "move" not in data:
            raise _BadRequest("the request must name the 'move' it answers (the state's "
                              "'move' number)")
        expected = integer(data, "move", "the state's 'move' number")
        session = entry.session
        with entry.lock:
            try:
                session.play(chosen, expected)
            except IllegalMove as err:
                return fail(409, str(err), detail=err.detail, state=session.view())
            except AgentFailed as err:
                stop_or_finish(key, session)
                return fail(500, f"the agent failed, so the match was stopped: {err}",
                            state=session.view())
            stop_or_finish(key, session)
            return jsonify({"state": session.view()})

    @app.get("/api/<key>/record")
    def record(key: str) -> Any:
        try:
            entry = sessions.get(key)
        except _Gone:
            kept = archive.get(key)
            if kept is None:
                raise
            file_name, line = kept
        else:
            with entry.lock:
                file_name, line = _record_file(entry.session)
        return Response(line, mimetype="application/jsonl",
                        headers={"Content-Disposition": f'attachment; filename="{file_name}"'})

    return app


def close_matches(app: Any) -> None:
    """End the agents of every match ``app`` (:func:`create_app`) holds: the programs of a
    ``text:`` opponent.  The matches' views and records stay; their next agent move fails."""
    app.extensions["hgin_serve"].close_all()


def make_play_server(app: Any, host: str = "127.0.0.1", port: int = 0, workers: int = WORKERS,
                     timeout: float = READ_TIMEOUT_S) -> Any:
    """A WSGI server for ``app`` on ``host:port`` (0: a free port), serving with at most
    ``workers`` threads; a connection that sends nothing for ``timeout`` seconds is closed.

    Connections beyond ``workers`` wait in the listen queue rather than each
    taking a thread.  The app's allowed hosts become the bound address (with
    its port): the loopback names when bound to loopback; any host when bound
    to a wildcard address (``0.0.0.0``, ``::``).  Call ``serve_forever()``,
    then ``shutdown()`` and ``server_close()``.
    """
    from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler

    class Handler(WSGIRequestHandler):
        pass

    Handler.timeout = timeout  # socketserver sets it on each connection's socket

    class PoolServer(BaseWSGIServer):
        """Hands each connection to a bounded thread pool; waits for a free worker."""

        def __init__(self) -> None:
            super().__init__(host, port, app, handler=Handler)
            self.pool = ThreadPoolExecutor(workers, thread_name_prefix="hgin-serve")
            self.slots = threading.BoundedSemaphore(workers)
            self.closing = False

        def process_request(self, request: Any, client_address: Any) -> None:
            while not self.slots.acquire(timeout=0.5):  # the accept loop waits for a worker
                if self.closing:
                    self.shutdown_request(request)
                    return
            self.pool.submit(self._work, request, client_address)

        def shutdown(self) -> None:
            self.closing = True
            super().shutdown()

        def _work(self, request: Any, client_address: Any) -> None:
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)
                self.slots.release()

        def server_close(self) -> None:
            super().server_close()
            self.pool.shutdown(wait=False, cancel_futures=True)

    server = PoolServer()
    bare = host.strip("[]")
    if bare in ("0.0.0.0", "::", ""):
        app.config["HGIN_HOSTS"] = None
    elif _is_loopback(bare):
        app.config["HGIN_HOSTS"] = frozenset(LOOPBACK_NAMES) | {host.lower()}
    else:
        address = f"[{bare}]" if ":" in bare else bare
        app.config["HGIN_HOSTS"] = frozenset(LOOPBACK_NAMES) | {address.lower()}
    app.config["HGIN_PORT"] = server.port
    return server


def main(argv: Sequence[str] | None = None, prog: str = "python -m hgin_env.serve") -> int:
    """Start the server and print its address; Ctrl-C stops it."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Play Hollywood gin against an agent in the browser (a local web server).",
        epilog="exit codes: 0 stopped with Ctrl-C, 2 bad arguments, a bad agent or rules, or "
               "an address that cannot be bound")
    add_match_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default "
                        "127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=8000,
                        help="port (default 8000; 0 picks a free one)")
    parser.add_argument("--records-dir", default=None, metavar="DIR",
                        help="also write the record of every finished or closed match here")
    args = parser.parse_args(argv)
    if not 0 <= args.port < 65536:
        parser.error(f"--port must be in 0..65535, got {args.port}")
    try:
        rules, opponent = load_match(args)
        app = create_app(opponent, args.rules if args.rules in PROFILES else rules,
                         seed=args.seed, opponent_name=args.opponent, seat=args.seat,
                         records_dir=args.records_dir)
        server = make_play_server(app, args.host, args.port)
    except (ValueError, ImportError, OSError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"Playing {args.opponent} at http://{host}:{server.port}/ (Ctrl-C stops the server)",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("\nServer stopped.", file=sys.stderr)
    finally:
        server.server_close()
        close_matches(app)
        close = getattr(opponent, "close", None)
        if callable(close):
            close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
