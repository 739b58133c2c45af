"""Play a Hollywood gin match against an agent in the browser.

    python -m hgin_env.serve --opponent pretrained --rules friendly [--seed N] [--port 0]

A small Flask app (the ``[web]`` extra) on 127.0.0.1 serves one
self-contained page and a JSON API; every browser tab plays its own match
(:class:`~hgin_env.play_session.PlaySession`, kept on the server under a
random session id).  The API:

* ``POST /api/new`` ``{"seat": 0|1}`` (optional) → ``{"session", "state"}``;
* ``GET /api/<session>`` → ``{"state"}``, the table as that seat may see it;
* ``POST /api/<session>/action`` ``{"action": id}`` → ``{"state"}``, after the
  agent's replies; a move the rules refuse now is a 409 with the reason;
* ``GET /api/<session>/record`` → the match so far as a match record
  (``.jsonl``, see docs/records.md), verifiable by ``python -m hgin_env.replay``.

Malformed requests (bad JSON, an unknown session, an action that is not an
id in ``0..107``) get a 4xx with ``{"error": ...}``.  With ``--seed S`` the
first match is dealt from seed ``S`` (the deals of ``python -m hgin_env.play
--seed S``) and later matches from seeds drawn from ``S``, so a restarted
server deals the same matches again.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from .cards import NUM_CARDS
from .opponent import Policy
from .play import add_match_arguments, load_match
from .play_session import IllegalMove, PlaySession
from .render import card_text
from .rules import PROFILES, Rules, load_rules
from .webpage import page

__all__ = ["create_app", "main"]

#: Sessions kept at once; the least recently used goes first.
MAX_SESSIONS = 200


class _BadRequest(ValueError):
    """A malformed request (answered 400)."""


class _NotFound(LookupError):
    """An unknown session id (answered 404)."""


class _Sessions:
    """The live matches by session id, each with its own lock (one request at a time)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._items: OrderedDict[str, tuple[PlaySession, threading.Lock]] = OrderedDict()

    def add(self, session: PlaySession) -> str:
        key = secrets.token_urlsafe(16)
        with self._lock:
            self._items[key] = (session, threading.Lock())
            while len(self._items) > self.limit:
                self._items.popitem(last=False)
        return key

    def get(self, key: str) -> tuple[PlaySession, threading.Lock] | None:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item


class _Seeds:
    """Match seeds: the first is the server's seed, the rest drawn from it (as
    :meth:`hgin_env.aec.raw_env.reset` does); no seed gives fresh entropy."""

    def __init__(self, seed: int | None) -> None:
        self._next = seed
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()

    def draw(self) -> int:
        with self._lock:
            if self._next is not None:
                seed, self._next = self._next, None
                return seed
            return int(self._rng.integers(0, 2**63 - 1))


def create_app(opponent: Policy, rules: Rules | str = "friendly", seed: int | None = None,
               opponent_name: str | None = None, seat: int = 0,
               max_sessions: int = MAX_SESSIONS) -> Any:
    """The Flask app: the page and the JSON API for matches against ``opponent``.

    ``seat`` is the person's default seat (a new match may ask for the other).
    Raises ``ImportError`` naming the ``[web]`` extra when Flask is missing.
    """
    try:
        from flask import Flask, Response, jsonify, request
        from werkzeug.exceptions import HTTPException
    except ImportError as err:
        raise ImportError("the play server needs Flask: pip install -e '.[web]'") from err
    profile = rules if isinstance(rules, str) and rules in PROFILES else None
    rules = load_rules(rules)
    name = opponent_name or getattr(opponent, "name", "opponent")
    sessions = _Sessions(max_sessions)
    seeds = _Seeds(seed)
    agent_lock = threading.Lock()  # one agent object serves every session
    app = Flask(__name__)
    page_data = {"opponent": name, "profile": profile or "custom rules",
                 "cards": [card_text(c) for c in range(NUM_CARDS)], "big_gin": rules.big_gin}
    html = page("play_template.html", f"hgin: play against {name}", page_data)

    def fail(status: int, message: str, **extra: Any) -> Any:
        response = jsonify({"error": message, **extra})
        response.status_code = status
        return response

    def body() -> dict[str, Any]:
        data = request.get_json(silent=True)
        if data is None and request.get_data():
            raise _BadRequest("the request body is not valid JSON")
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise _BadRequest(f"the request body must be a JSON object, got {data!r}")
        return data

    def session_of(key: str) -> tuple[PlaySession, threading.Lock]:
        item = sessions.get(key)
        if item is None:
            raise _NotFound(f"no match with session id {key!r} (expired, or the server "
                            "restarted): start a new match")
        return item

    @app.errorhandler(_BadRequest)
    def bad_request(err: _BadRequest) -> Any:
        return fail(400, str(err))

    @app.errorhandler(_NotFound)
    def not_found(err: _NotFound) -> Any:
        return fail(404, str(err))

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
        chosen = data.get("seat", seat)
        if chosen not in (0, 1) or isinstance(chosen, bool):
            raise _BadRequest(f"'seat' must be 0 or 1, got {chosen!r}")
        with agent_lock:
            session = PlaySession(opponent, rules, seeds.draw(), seat=chosen,
                                  opponent_name=name, profile=profile)
        key = sessions.add(session)
        return jsonify({"session": key, "seed": session.seed, "state": session.view()})

    @app.get("/api/<key>")
    def state(key: str) -> Any:
        session, lock = session_of(key)
        with lock:
            return jsonify({"state": session.view()})

    @app.post("/api/<key>/action")
    def action(key: str) -> Any:
        session, lock = session_of(key)
        data = body()
        if "action" not in data:
            raise _BadRequest("the request must name an 'action' (an id in 0..107)")
        chosen = data["action"]
        if isinstance(chosen, bool) or not isinstance(chosen, int):
            raise _BadRequest(f"'action' must be an integer id in 0..107, got {chosen!r}")
        if not 0 <= chosen < 108:
            raise _BadRequest(f"action {chosen} is outside 0..107")
        with lock:
            try:
                with agent_lock:
                    session.play(chosen)
            except IllegalMove as err:
                return fail(409, str(err), detail=err.detail, state=session.view())
            return jsonify({"state": session.view()})

    @app.get("/api/<key>/record")
    def record(key: str) -> Any:
        session, lock = session_of(key)
        with lock:
            line = json.dumps(session.record(), separators=(",", ":")) + "\n"
        name = f"hgin-match-{session.seed}-{'final' if session.over else 'in-progress'}.jsonl"
        return Response(line, mimetype="application/jsonl",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})

    return app


def main(argv: Sequence[str] | None = None, prog: str = "python -m hgin_env.serve") -> int:
    """Start the server and print its address; Ctrl-C stops it."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Play Hollywood gin against an agent in the browser (a local web server).")
    add_match_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default "
                        "127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=8000,
                        help="port (default 8000; 0 picks a free one)")
    args = parser.parse_args(argv)
    if not 0 <= args.port < 65536:
        parser.error(f"--port must be in 0..65535, got {args.port}")
    try:
        rules, opponent = load_match(args)
        app = create_app(opponent, args.rules if args.rules in PROFILES else rules,
                         seed=args.seed, opponent_name=args.opponent, seat=args.seat)
        from werkzeug.serving import make_server

        server = make_server(args.host, args.port, app, threaded=True)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
