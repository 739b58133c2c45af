"""The play server's API with Flask's test client (no browser): sessions, errors, hidden
cards, hostile input and faults; and the bounded server on a real socket (127.0.0.1 only)."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from hgin_env import actions as A
from hgin_env.cards import mask_to_cards
from hgin_env.records import check_record, in_progress
from hgin_env.records.replay import replay
from hgin_env.rules import load_rules

pytest.importorskip("flask", reason="needs Flask: pip install -e '.[web]'")

from hgin_env.apps.serve import create_app
from hgin_env.envs.opponents import load_agent


@pytest.fixture
def client() -> Any:
    rules = load_rules("friendly")
    app = create_app(load_agent("random", rules), "friendly", seed=11, opponent_name="random")
    app.config["TESTING"] = True
    return app.test_client()


def _new(client: Any, **body: Any) -> tuple[str, dict[str, Any]]:
    reply = client.post("/api/new", json=body)
    assert reply.status_code == 200, reply.get_json()
    data = reply.get_json()
    return data["session"], data["state"]


def _best(state: dict[str, Any]) -> int:
    """The first listed move: a knock when there is one, else the best discard or a draw."""
    return state["moves"][0][0]


def _play(client: Any, key: str, action: int, move: int | None = None) -> dict[str, Any]:
    """Play ``action`` answering move ``move`` (the session's current one by default)."""
    if move is None:
        move = client.get(f"/api/{key}").get_json()["state"]["move"]
    reply = client.post(f"/api/{key}/action", json={"action": action, "move": move})
    assert reply.status_code == 200, reply.get_json()
    return reply.get_json()["state"]


def test_page_is_served_self_contained(client: Any) -> None:
    reply = client.get("/")
    assert reply.status_code == 200 and reply.mimetype == "text/html"
    page = reply.get_data(as_text=True)
    assert "/*__" not in page  # every mark filled in
    # The SVG namespace of the card faces is a name, never fetched.
    page = page.replace('"http://www.w3.org/2000/svg"', '""')
    assert "http://" not in page and "https://" not in page and "src=" not in page
    assert "function showSheet" in page and ".card.red" in page  # the viewer's shared pieces


def test_sessions_are_independent(client: Any) -> None:
    one, first = _new(client)
    two, second = _new(client)
    assert one != two
    # The server's seed deals the first match; later matches get their own seeds.
    assert first["hand"] != second["hand"] or first["top"] != second["top"]
    after = _play(client, one, _best(first))
    assert client.get(f"/api/{two}").get_json()["state"] == second
    assert client.get(f"/api/{one}").get_json()["state"] == after


def test_the_same_seed_deals_the_same_match() -> None:
    rules = load_rules("friendly")
    states = []
    for _ in range(2):
        app = create_app(load_agent("random", rules), rules, seed=11)
        states.append(app.test_client().post("/api/new", json={}).get_json()["state"])
    assert states[0] == states[1]


@pytest.mark.parametrize(("path", "body", "status", "words"), [
    ("/api/{key}/action", b"{not json", 400, "not valid JSON"),
    ("/api/{key}/action", b"[1, 2]", 400, "must be a JSON object"),
    ("/api/{key}/action", b"{}", 400, "must name an 'action'"),
    ("/api/{key}/action", b'{"action": "pass"}', 400, "must be an integer"),
    ("/api/{key}/action", b'{"action": true}', 400, "must be an integer"),
    ("/api/{key}/action", b'{"action": 1.0}', 400, "must be an integer"),
    ("/api/{key}/action", b'{"action": 108}', 400, "outside 0..107"),
    ("/api/{key}/action", b'{"action": -1}', 400, "outside 0..107"),
    ("/api/{key}/action", b'{"action": 104}', 400, "must name the 'move'"),
    ("/api/{key}/action", b'{"action": 104, "move": 0.0}', 400, "'move' must be"),
    ("/api/{key}/action", b'{"action": 104, "move": "0"}', 400, "'move' must be"),
    ("/api/{key}/action", b"[" * 30_000 + b"]" * 30_000, 400, "nests too deep"),
    ("/api/nosuchsession/action", b'{"action": 104, "move": 0}', 404, "no match with session"),
    ("/api/new", b'{"seat": 2}', 400, "'seat' must be 0 or 1"),
    ("/api/new", b'{"seat": 1.0}', 400, "'seat' must be 0 or 1"),
    ("/api/new", b'{"seat": false}', 400, "'seat' must be 0 or 1"),
    ("/api/new", b"[" * 30_000, 400, "not valid JSON"),
])
def test_malformed_requests_get_4xx(client: Any, path: str, body: bytes, status: int,
                                    words: str) -> None:
    key, state = _new(client)
    reply = client.post(path.format(key=key), data=body, content_type="application/json")
    assert reply.status_code == status
    assert words in reply.get_json()["error"]
    # Nothing changed, and the server still answers.
    assert client.get(f"/api/{key}").get_json()["state"] == state


def test_unknown_routes_and_methods_answer_json(client: Any) -> None:
    for reply, status in ((client.get("/api/nosuch"), 404), (client.get("/nowhere"), 404),
                          (client.delete("/api/new"), 405), (client.get("/api/x/record"), 404)):
        assert reply.status_code == status and reply.get_json()["error"]


def test_illegal_action_is_refused_with_the_reason(client: Any) -> None:
    key, state = _new(client)
    assert (state["to_move"] and A.PASS in state["legal"]) or A.DRAW_STOCK in state["legal"]
    card = (state["hand"]["loose"] or state["hand"]["melds"][0])[0]
    reply = client.post(f"/api/{key}/action", json={"action": card, "move": state["move"]})
    assert reply.status_code == 409
    data = reply.get_json()
    assert "upcard" in data["error"] or "draw first" in data["error"]
    # Worded for the page, which has buttons: no terminal keys.
    assert "(t)" not in data["error"] and "(p)" not in data["error"]
    assert "'d'" not in data["error"] and "'t'" not in data["error"]
    assert data["detail"].startswith(f"action {card} (discard ") and "is illegal" in data["detail"]
    assert data["state"] == state


def _opponent_cards(client: Any, key: str) -> set[int]:
    """The agent's hand now, from an independent replay of the downloaded record."""
    record = json.loads(client.get(f"/api/{key}/record").get_data(as_text=True))
    held: list[int] = []

    def listen(event: str, h: int, k: int, game: Any, details: dict[str, Any]) -> None:
        held[:] = mask_to_cards(int(game.hands[0, 1 - record["context"]["human_seat"]]))

    replay(record, listen)
    return set(held)


def _cards_in(state: dict[str, Any]) -> set[int]:
    """Every card id the state shows outside the previous hand's showdown."""
    shown = {state["top"], *state["hand"]["loose"], *state["opponent"]["known"]}
    for meld in state["hand"]["melds"]:
        shown.update(meld)
    shown.update(int(c) for c in state["after_discard"])
    shown.update(a % 52 for a in state["legal"] if a < A.DRAW_STOCK)
    return shown


def test_the_state_hides_the_agents_hand_until_the_showdown(client: Any) -> None:
    key, state = _new(client, seat=1)
    assert state["seat"] == 1
    for _ in range(60):
        hidden = _opponent_cards(client, key) - set(state["opponent"]["known"])
        assert state["opponent"]["count"] == len(hidden) + len(state["opponent"]["known"])
        assert not hidden & _cards_in(state)
        assert "hands" not in json.dumps({k: v for k, v in state.items() if k != "showdown"})
        if state["showdown"] is not None:  # a finished hand shows both hands
            assert len(state["showdown"]["hands"][0]) >= 10
            break
        state = _play(client, key, _best(state))
    else:
        raise AssertionError("no hand ended in 60 moves")


def test_records_download_and_replay(client: Any) -> None:
    key, state = _new(client)
    for _ in range(5):
        state = _play(client, key, _best(state))
    reply = client.get(f"/api/{key}/record")
    assert reply.status_code == 200 and "attachment" in reply.headers["Content-Disposition"]
    record = json.loads(reply.get_data(as_text=True))
    check_record(record)
    assert in_progress(record) and record["hands"][-1]["showdown"] is None
    assert replay(record).winner == -1
    moves = 0
    while not state["over"]:
        state = _play(client, key, _best(state))
        moves += 1
        assert moves < 2000
    final = json.loads(client.get(f"/api/{key}/record").get_data(as_text=True))
    assert not in_progress(final)
    assert final["agents"] == ["human", "random"] and final["rules"]["profile"] == "friendly"
    result = replay(final)
    assert result.winner == state["winner"] == final["result"]["winner"]
    assert state["sheet"]["match_winner"] == result.winner
    reply = client.post(f"/api/{key}/action", json={"action": A.DRAW_STOCK,
                                                     "move": state["move"]})
    assert reply.status_code == 409 and "match is over" in reply.get_json()["error"]


def test_a_record_in_progress_is_checked_to_its_last_action(client: Any) -> None:
    from hgin_env.records.viewer import viewer_data

    key, state = _new(client)
    for _ in range(3):
        state = _play(client, key, _best(state))
    record = json.loads(client.get(f"/api/{key}/record").get_data(as_text=True))
    data = viewer_data(record)  # the viewer shows it up to the last action
    assert data["result"]["winner"] == -1
    assert len(data["hands"][-1]["steps"]) == len(record["hands"][-1]["actions"]) + 1
    tampered = json.loads(json.dumps(record))
    tampered["hands"][-1]["actions"].append([state["seat"], A.NUM_ACTIONS - 1])
    with pytest.raises(ValueError, match=r"^match 0, hand \d+, step \d+: .*is illegal"):
        replay(tampered)
    tampered = json.loads(json.dumps(record))
    tampered["hands"][-1]["sheet"] = tampered["hands"][0]["sheet"] or {}
    with pytest.raises(ValueError, match="hand in play of a match in progress"):
        check_record(tampered)


def test_command_line_prints_its_address_and_serves(tmp_path: Any) -> None:
    import subprocess
    import sys
    import urllib.request

    from hgin_env.apps.serve import main

    assert main(["--opponent", "nosuchagent", "--port", "0"]) == 2
    assert main(["--seed", "-1", "--port", "0"]) == 2
    assert main(["--rules", str(tmp_path / "missing.toml"), "--port", "0"]) == 2
    with pytest.raises(SystemExit):
        main(["--port", "70000"])
    proc = subprocess.Popen([sys.executable, "-m", "hgin_env.apps.serve", "--opponent", "random",
                             "--port", "0", "--seed", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Playing random at http://127.0.0.1:"), line
        address = line.split()[3]
        with urllib.request.urlopen(address, timeout=10) as reply:
            assert b"<!DOCTYPE html>" in reply.read()
    finally:
        proc.terminate()
        proc.wait(10)


# ------------------------------------------------------------------ words and order


def test_buttons_that_are_not_moves_say_why(client: Any) -> None:
    key, state = _new(client)
    assert state["to_move"]
    why = state["why_not"]
    for name, action in (("draw", A.DRAW_STOCK), ("take", A.TAKE_DISCARD), ("pass", A.PASS),
                         ("big_gin", A.BIG_GIN)):
        assert (name in why) == (action not in state["legal"]), name
    assert why.get("knock")  # no knock before drawing
    assert all("(t)" not in w and "'d'" not in w for w in why.values())
    state = _play(client, key, A.TAKE_DISCARD if A.TAKE_DISCARD in state["legal"] else
                  A.DRAW_STOCK)
    if state["to_move"] and not any(A.KNOCK <= a < A.DRAW_STOCK for a in state["legal"]):
        assert "knock limit" in state["why_not"]["knock"] or "gin" in state["why_not"]["knock"]


def test_the_hand_is_in_the_terminal_games_order(client: Any) -> None:
    """One order in both places: melds, then the deadwood by rank (render.hand_groups)."""
    from hgin_env.ui.render import card_text, table_text

    key, state = _new(client)
    session = _session_of(client, key)
    shown = [c for meld in state["hand"]["melds"] for c in meld] + state["hand"]["loose"]
    text = table_text(session.game, 0, session.seat)
    mine = next(line for line in text.splitlines() if ("deadwood" in line and "[" in line)
                or line.strip().startswith("deadwood:"))
    positions = [mine.index(card_text(c)) for c in shown]
    assert positions == sorted(positions), (mine, shown)
    loose = state["hand"]["loose"]
    assert [c % 13 for c in loose] == sorted(c % 13 for c in loose)


def _session_of(client: Any, key: str) -> Any:
    """The live PlaySession behind ``key`` (white-box, for comparing with the terminal)."""
    sessions = client.application.view_functions["state"].__closure__
    for cell in sessions:
        holder = cell.cell_contents
        if hasattr(holder, "get") and hasattr(holder, "per_client"):
            return holder.get(key).session
    raise AssertionError("no session table in the app")


# ------------------------------------------------------------------ seeds


def test_every_match_has_its_own_seed_derived_from_the_servers() -> None:
    from hgin_env.apps.play_session import PlaySession
    from hgin_env.apps.serve import match_seed

    rules = load_rules("friendly")
    agent = load_agent("random", rules)
    runs = []
    for _ in range(2):
        app = create_app(agent, "friendly", seed=11)
        test = app.test_client()
        runs.append([test.post("/api/new", json={}).get_json() for _ in range(3)])
    assert runs[0] == [{**r, "session": a["session"]} for r, a in zip(runs[1], runs[0],
                                                                      strict=True)]
    first = runs[0]
    assert [r["state"]["match"] for r in first] == [1, 2, 3]
    assert [r["seed"] for r in first] == [11, match_seed(11, 2), match_seed(11, 3)]
    assert len({r["seed"] for r in first}) == 3 and all(r["seed"] == r["state"]["seed"]
                                                       for r in first)
    # A match is dealt again from its seed alone.
    again = PlaySession(agent, rules, first[2]["seed"]).view()
    assert again["hand"] == first[2]["state"]["hand"] and again["top"] == first[2]["state"]["top"]
    unseeded = create_app(agent, "friendly").test_client()
    assert len({unseeded.post("/api/new", json={}).get_json()["seed"] for _ in range(3)}) == 3


# ------------------------------------------------------------------ sessions under a flood


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _flood_app(clock: _Clock, **options: Any) -> Any:
    rules = load_rules("friendly")
    settings = {"max_sessions": 6, "per_client": 3, "min_idle_s": 60.0, "archived": 50}
    app = create_app(load_agent("random", rules), "friendly", seed=3, clock=clock,
                     **(settings | options))
    return app.test_client()


def _new_from(client: Any, address: str) -> Any:
    return client.post("/api/new", json={}, environ_base={"REMOTE_ADDR": address})


def test_a_flood_of_new_matches_cannot_wipe_a_match_in_play() -> None:
    clock = _Clock()
    client = _flood_app(clock)
    reply = _new_from(client, "10.0.0.1")
    key = reply.get_json()["session"]
    state = _play(client, key, _best(reply.get_json()["state"]))
    # 200 new matches from one address: it keeps at most 3, refused while they are fresh.
    codes = [_new_from(client, "10.0.0.2").status_code for _ in range(200)]
    assert codes[:3] == [200] * 3 and set(codes[3:]) == {429}
    # From many addresses: the server fills up, then refuses (503) rather than evict.
    codes = [_new_from(client, f"10.1.0.{i}").status_code for i in range(20)]
    assert codes[:2] == [200, 200] and set(codes[2:]) == {503}
    assert client.get(f"/api/{key}").get_json()["state"] == state


def test_an_idle_match_is_closed_with_a_reason_and_its_record_kept(tmp_path: Any) -> None:
    clock = _Clock()
    client = _flood_app(clock, records_dir=tmp_path / "records")
    reply = _new_from(client, "10.0.0.1")
    key, state = reply.get_json()["session"], reply.get_json()["state"]
    state = _play(client, key, _best(state))
    busy = [_new_from(client, f"10.2.0.{i}").get_json()["session"] for i in range(5)]
    clock.now += 30
    for other in busy:  # the others are played on; the first match idles
        assert client.get(f"/api/{other}").status_code == 200
    clock.now += 40  # the first match idle 70 s, the others 40 s: it goes first
    assert _new_from(client, "10.3.0.1").status_code == 200
    gone = client.get(f"/api/{key}")
    assert gone.status_code == 410 and gone.get_json()["gone"]
    assert "server was full" in gone.get_json()["error"]
    assert all(client.get(f"/api/{other}").status_code == 200 for other in busy)
    reply = client.post(f"/api/{key}/action", json={"action": 104, "move": state["move"]})
    assert reply.status_code == 410
    record = client.get(f"/api/{key}/record")
    assert record.status_code == 200 and "in-progress" in record.headers["Content-Disposition"]
    data = json.loads(record.get_data(as_text=True))
    check_record(data)
    assert in_progress(data)
    replay(data)
    (written,) = (tmp_path / "records").glob("*.jsonl")
    assert json.loads(written.read_text("utf-8")) == data


def test_a_finished_match_goes_first_and_its_record_stays() -> None:
    clock = _Clock()
    client = _flood_app(clock, max_sessions=2, per_client=5)
    key, state = _new(client)
    while not state["over"]:
        state = _play(client, key, _best(state))
    _new(client)  # fresh, so not closed
    _new(client)  # the finished match makes room
    assert client.get(f"/api/{key}").status_code == 410
    final = json.loads(client.get(f"/api/{key}/record").get_data(as_text=True))
    assert not in_progress(final) and replay(final).winner == state["winner"]


# ------------------------------------------------------------------ hostile requests


def test_posts_must_be_json(client: Any) -> None:
    key, state = _new(client)
    for kind in ("application/x-www-form-urlencoded", "text/plain", "multipart/form-data"):
        for path in ("/api/new", f"/api/{key}/action"):
            reply = client.post(path, data=b"", content_type=kind)
            assert reply.status_code == 400, (path, kind)
            assert "Content-Type: application/json" in reply.get_json()["error"]
    assert client.post("/api/new").status_code == 400  # no content type at all
    assert client.get(f"/api/{key}").get_json()["state"] == state


def test_host_and_origin_must_name_this_server() -> None:
    rules = load_rules("friendly")
    app = create_app(load_agent("random", rules), "friendly", seed=1, port=8123)
    client = app.test_client()
    for host in ("localhost:8123", "127.0.0.1:8123", "[::1]:8123"):
        assert client.get("/", headers={"Host": host}).status_code == 200, host
    for host in ("evil.example:8123", "localhost:8124", "localhost", "127.0.0.2:8123"):
        reply = client.get("/", headers={"Host": host})
        assert reply.status_code == 400 and "host" in reply.get_json()["error"], host
        reply = client.post("/api/new", json={}, headers={"Host": host})
        assert reply.status_code == 400, host
    good = {"Host": "127.0.0.1:8123"}
    for origin in ("http://evil.example", "null", "http://localhost:9999", "file://"):
        reply = client.post("/api/new", json={}, headers={**good, "Origin": origin})
        assert reply.status_code == 403 and "refused" in reply.get_json()["error"], origin
    reply = client.post("/api/new", json={}, headers={**good, "Origin": "http://127.0.0.1:8123"})
    assert reply.status_code == 200


def test_big_bodies_are_refused_with_413(client: Any) -> None:
    key, state = _new(client)
    for body in (b"[" * 200_000 + b"]" * 200_000, b'{"action": 104, "pad": "' + b"x" * 70_000
                 + b'"}'):
        reply = client.post(f"/api/{key}/action", data=body, content_type="application/json")
        assert reply.status_code == 413 and reply.get_json()["error"]
    assert client.get(f"/api/{key}").get_json()["state"] == state


def test_a_stale_move_number_is_refused(client: Any) -> None:
    key, state = _new(client)
    seen = state["move"]
    first = _best(state)
    state = _play(client, key, first, move=seen)
    assert state["move"] > seen
    # A second click sent for the table as it was: refused, nothing applied.
    reply = client.post(f"/api/{key}/action", json={"action": _best(state), "move": seen})
    assert reply.status_code == 409 and "changed since you saw it" in reply.get_json()["error"]
    assert reply.get_json()["state"] == state
    assert client.get(f"/api/{key}").get_json()["state"] == state


# ------------------------------------------------------------------ agent faults


class _Faulty:
    """Plays like ``random`` but raises on the calls numbered in ``fail_on`` (from 1)."""

    name = "faulty"

    def __init__(self, fail_on: set[int], delay: float = 0.0) -> None:
        self.inner = load_agent("random", load_rules("friendly"))
        self.fail_on = fail_on
        self.delay = delay
        self.calls = 0

    def act(self, obs: dict[str, Any], rng: Any = None) -> Any:
        import time

        self.calls += 1
        if self.calls in self.fail_on:
            raise RuntimeError(f"agent fault at call {self.calls}")
        time.sleep(self.delay)
        return self.inner.act(obs, rng=rng)


def _faulty_client(agent: Any) -> Any:
    return create_app(agent, "friendly", seed=11).test_client()


def test_an_agent_that_keeps_failing_stops_the_match() -> None:
    agent = _Faulty(set(range(1, 10_000)))
    client = _faulty_client(agent)
    key, state = _new(client)  # seed 11: you move first
    assert state["to_move"] and state["error"] is None
    for _ in range(3):  # until a move of yours hands the turn to the agent
        before = state["move"]
        reply = client.post(f"/api/{key}/action", json={"action": _best(state), "move": before})
        if reply.status_code != 200:
            break
        state = reply.get_json()["state"]
    assert reply.status_code == 500 and "the agent failed" in reply.get_json()["error"]
    stopped = reply.get_json()["state"]
    assert stopped["move"] == before + 1  # your move stands; the agent's never came
    assert stopped["error"] and "failed 2 times" in stopped["error"]
    assert not stopped["to_move"] and stopped["legal"] == [] and stopped["moves"] == []
    assert "stopped" in stopped["todo"]
    # No one may move for the agent now, whatever they send.
    for action in (A.DRAW_STOCK, A.TAKE_DISCARD, A.PASS, *range(52)):
        reply = client.post(f"/api/{key}/action", json={"action": action,
                                                         "move": stopped["move"]})
        assert reply.status_code == 409 and "stopped" in reply.get_json()["error"]
    assert client.get(f"/api/{key}").get_json()["state"] == stopped
    record = json.loads(client.get(f"/api/{key}/record").get_data(as_text=True))
    assert len(record["hands"][-1]["actions"]) == stopped["move"]
    replay(record)


def test_an_agent_that_fails_once_is_asked_again() -> None:
    agent = _Faulty({1})
    client = _faulty_client(agent)
    key, state = _new(client)
    while agent.calls < 2:  # until the agent has replied once, after its fault
        state = _play(client, key, _best(state))
    assert state["error"] is None and (state["to_move"] or state["over"])


class _Meeting:
    """Plays like ``random``, but once armed each thread's first reply waits for another
    thread's agent to reply too: it fails (the barrier times out) if agents take turns."""

    name = "meeting"

    def __init__(self) -> None:
        import threading

        self.inner = load_agent("random", load_rules("friendly"))
        self.barrier: Any = None
        self.met = threading.local()

    def act(self, obs: dict[str, Any], rng: Any = None) -> Any:
        if self.barrier is not None and not getattr(self.met, "done", False):
            self.met.done = True
            self.barrier.wait()
        return self.inner.act(obs, rng=rng)


def test_two_sessions_agents_think_at_the_same_time() -> None:
    import threading

    agent = _Meeting()
    client = _faulty_client(agent)
    games = []
    for _ in range(2):  # each at a discard: the next move hands the turn to the agent
        key, state = _new(client)
        while not any(a < A.KNOCK for a in state["legal"]):
            state = _play(client, key, _best(state))
        games.append((key, state))
    agent.barrier = threading.Barrier(2, timeout=10)
    codes: list[int] = []

    def discard(key: str, state: dict[str, Any]) -> None:
        card = min(a for a in state["legal"] if a < A.KNOCK)
        reply = client.post(f"/api/{key}/action", json={"action": card, "move": state["move"]})
        codes.append(reply.status_code)

    threads = [threading.Thread(target=discard, args=game) for game in games]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert codes == [200, 200]
    assert agent.barrier.n_waiting == 0 and not agent.barrier.broken


# ------------------------------------------------------------------ the server itself


def test_the_server_bounds_its_threads_and_drops_stalled_uploads() -> None:
    import socket
    import threading
    import time
    import urllib.request

    from hgin_env.apps.serve import make_play_server

    rules = load_rules("friendly")
    app = create_app(load_agent("random", rules), "friendly", seed=1)
    server = make_play_server(app, "127.0.0.1", 0, workers=2, timeout=1.0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    baseline = threading.active_count()
    stalled: list[socket.socket] = []
    try:
        address = f"http://127.0.0.1:{server.port}/"
        for _ in range(8):  # each sends half an upload, then nothing
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            sock.sendall(b"POST /api/new HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: "
                         b"application/json\r\nContent-Length: 1000\r\n\r\n{" % server.port)
            stalled.append(sock)
        time.sleep(0.3)
        assert threading.active_count() <= baseline + 2  # not a thread per connection
        start = time.monotonic()
        with urllib.request.urlopen(address, timeout=20) as reply:
            assert reply.status == 200
        assert time.monotonic() - start < 15
        # The Host header must name the bound port.
        request = urllib.request.Request(address, headers={"Host": "127.0.0.1:1"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 400
    finally:
        for sock in stalled:
            sock.close()
        server.shutdown()
        server.server_close()
        thread.join(10)
    assert not thread.is_alive()


def test_a_hostile_opponent_name_cannot_break_the_page() -> None:
    """The page inlines the opponent's name: a ``<!--<script>`` or a template mark in it
    stays data (one-pass substitution, every ``<`` escaped in the inline JSON)."""
    name = "<!--<script>__TITLE__/*__MATCH_DATA__*/"
    app = create_app(load_agent("random", load_rules("friendly")), "friendly", seed=1,
                     opponent_name=name)
    app.config["TESTING"] = True
    text = app.test_client().get("/").get_data(as_text=True)
    assert "<!--<script>" not in text
    data = re.search(r'<script type="application/json" id="match-data">(.*?)</script>', text, re.S)
    assert data is not None and json.loads(data.group(1))["opponent"] == name
    assert html.unescape(re.search(r"<title>(.*?)</title>", text).group(1)).endswith(name)
