"""The play server's API with Flask's test client (no browser): sessions, errors, hidden cards."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hgin_env import actions as A
from hgin_env.cards import mask_to_cards
from hgin_env.records import check_record, in_progress
from hgin_env.replay import replay
from hgin_env.rules import load_rules

pytest.importorskip("flask", reason="flask is not installed (pip install -e '.[web]')")

from hgin_env.opponent import load_agent
from hgin_env.serve import create_app


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


def _play(client: Any, key: str, action: int) -> dict[str, Any]:
    reply = client.post(f"/api/{key}/action", json={"action": action})
    assert reply.status_code == 200, reply.get_json()
    return reply.get_json()["state"]


def test_page_is_served_self_contained(client: Any) -> None:
    reply = client.get("/")
    assert reply.status_code == 200 and reply.mimetype == "text/html"
    page = reply.get_data(as_text=True)
    assert "/*__" not in page  # every mark filled in
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
    ("/api/{key}/action", b'{"action": 108}', 400, "outside 0..107"),
    ("/api/{key}/action", b'{"action": -1}', 400, "outside 0..107"),
    ("/api/nosuchsession/action", b'{"action": 104}', 404, "no match with session id"),
    ("/api/new", b'{"seat": 2}', 400, "'seat' must be 0 or 1"),
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
    reply = client.post(f"/api/{key}/action", json={"action": card})
    assert reply.status_code == 409
    data = reply.get_json()
    assert "upcard" in data["error"] or "draw first" in data["error"]
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
    reply = client.post(f"/api/{key}/action", json={"action": A.DRAW_STOCK})
    assert reply.status_code == 409 and "match is over" in reply.get_json()["error"]


def test_a_record_in_progress_is_checked_to_its_last_action(client: Any) -> None:
    from hgin_env.viewer import viewer_data

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

    from hgin_env.serve import main

    assert main(["--opponent", "nosuchagent", "--port", "0"]) == 2
    assert main(["--seed", "-1", "--port", "0"]) == 2
    assert main(["--rules", str(tmp_path / "missing.toml"), "--port", "0"]) == 2
    with pytest.raises(SystemExit):
        main(["--port", "70000"])
    proc = subprocess.Popen([sys.executable, "-m", "hgin_env.serve", "--opponent", "random",
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
