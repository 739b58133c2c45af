"""The two pages in a real browser: headless Chromium (Debian's) driven by Playwright.

Skipped, with the reason, only where the ``playwright`` package or a Chromium
binary cannot be found (``.ci/run`` installs both: ``apt-get install chromium``
and the ``[browser]`` extra; ``playwright install`` is never needed).  Servers
listen on 127.0.0.1 only and stop when their test ends; screenshots go to each
test's ``tmp_path``, at a phone's width (420 px) and a desktop's.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.evaluation.tournament import run_tournament
from hgin_env import actions as A
from hgin_env.cards import mask_to_cards
from hgin_env.records.replay import replay
from hgin_env.records.viewer import write_html
from hgin_env.rules import load_rules

sync_api = pytest.importorskip("playwright.sync_api", reason="needs Playwright: pip install "
                               "-e '.[browser]'")
pytest.importorskip("flask", reason="needs Flask: pip install -e '.[web]'")

CHROMIUM = os.environ.get("HGIN_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"needs Chromium at {CHROMIUM}: apt-get install chromium "
                                "(or set HGIN_CHROMIUM)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


def _serve(app: Any) -> Iterator[str]:
    """Run ``app`` with the play server's own server on a free port of 127.0.0.1, in a
    thread; yield its address, then stop it."""
    from hgin_env.apps.serve import make_play_server

    server = make_play_server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def server() -> Iterator[str]:
    """A server against ``random`` whose first match is always the same (seed 5)."""
    from hgin_env.apps.serve import create_app
    from hgin_env.envs.opponents import load_agent

    rules = load_rules("friendly")
    yield from _serve(create_app(load_agent("random", rules), "friendly", seed=5,
                                 opponent_name="random"))


# ------------------------------------------------------------------- the viewer


def _positions(record: dict[str, Any]) -> list[list[list[int]]]:
    """Both seats' cards after the deal and every move but a hand's last, in play order."""
    seen: list[list[list[int]]] = []

    def listen(event: str, h: int, k: int, game: Any, details: dict[str, Any]) -> None:
        if event == "deal" or (event == "move" and k < len(record["hands"][h - 1]["actions"])):
            seen.append([mask_to_cards(int(game.hands[0, p])) for p in (0, 1)])
        elif event == "move":
            seen.append([sorted(c) for c in record["hands"][h - 1]["showdown"]["hands"]])

    replay(record, listen)
    return seen


def test_viewer_steps_through_a_record(browser: Any, tmp_path: Path) -> None:
    records: list[dict[str, Any]] = []
    run_tournament(["simple", "random"], 1, "friendly", seed=3, record=records.append)
    record = records[0]
    expected = _positions(record)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(write_html(record, tmp_path / "viewer.html").as_uri())

    def shown() -> list[list[int]]:
        return [[int(c) for c in page.eval_on_selector_all(
            f"#seat{p} .cards .card", "els => els.map(e => e.dataset.card)")] for p in (0, 1)]

    checked = 0
    for i, cards in enumerate(expected):
        if i % 7 == 0 or i == len(expected) - 1:  # every 7th step, and the last
            assert shown() == cards, f"step {i} of the match"
            checked += 1
        if i < len(expected) - 1:
            (page.keyboard.press("ArrowRight") if i % 2 else page.click("#next-step"))
    assert checked > 5
    assert "Match won by" in page.inner_text("#sheet")
    page.keyboard.press("Home")
    assert page.evaluate("document.body.dataset.hand") == "1"
    assert page.evaluate("document.body.dataset.step") == "0"
    page.screenshot(path=str(tmp_path / "viewer.png"))
    assert (tmp_path / "viewer.png").stat().st_size > 10_000
    page.close()


# ------------------------------------------------------------------- the play page


def _click_and_wait(page: Any, selector: str) -> None:
    """Click, then wait until the page has shown the server's answer."""
    before = page.evaluate("document.body.dataset.version")
    page.click(selector)
    page.wait_for_function(f"document.body.dataset.version !== {before!r}", timeout=10_000)


def _open(browser: Any, server: str) -> Any:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(server)
    page.wait_for_function("document.body.dataset.version !== undefined", timeout=10_000)
    return page


def test_an_illegal_click_is_refused_in_the_page(browser: Any, server: str,
                                                 tmp_path: Path) -> None:
    page = _open(browser, server)
    hand = page.eval_on_selector_all("#hand .card", "els => els.map(e => e.dataset.card)")
    assert len(hand) == 10
    # A new hand starts with the upcard offer or a draw: a discard is not a move yet.
    assert "discard" not in page.inner_text("#todo")
    _click_and_wait(page, f"#hand .card[data-card='{hand[0]}']")
    message = page.inner_text("#message")
    assert message.startswith("Refused: ") and ("upcard" in message or "draw first" in message)
    # The page's words: it has buttons, not the terminal game's keys.
    assert "(t)" not in message and "(p)" not in message and "'d'" not in message
    assert page.eval_on_selector_all("#hand .card", "els => els.map(e => e.dataset.card)") == hand
    # The agent's hand is face down: ten backs, no card text.
    assert page.eval_on_selector_all("#opp .card", "els => els.map(e => e.className)") == \
        ["card back"] * 10
    page.screenshot(path=str(tmp_path / "refused.png"))
    page.close()


def _click_a_good_move(page: Any) -> None:
    """A simple player: knock when it can, else draw (or pass the upcard), else click the
    discard that leaves the least deadwood (the page shows it on each card)."""
    knocks = page.eval_on_selector_all(
        "#options button", f"els => els.map(e => +e.dataset.action)"
                           f".filter(a => a >= {A.KNOCK} && a < {A.DRAW_STOCK})")
    if knocks:
        page.click("#knock")
        _click_and_wait(page, f"#hand .card[data-card='{knocks[0] - A.KNOCK}']")
    elif page.is_visible("#draw.legal"):
        _click_and_wait(page, "#draw")
    elif page.is_visible("#pass.legal"):
        _click_and_wait(page, "#pass")
    else:
        after = page.eval_on_selector_all(
            "#hand .card.legal", "els => els.map(e => [+e.dataset.after, +e.dataset.card])")
        assert after, "no legal move is shown"
        _click_and_wait(page, f"#hand .card[data-card='{min(after)[1]}']")


def test_play_a_whole_match_by_clicking(browser: Any, server: str, tmp_path: Path) -> None:
    """A simple clicking policy (knock when it can, else draw, else the discard that leaves
    the least deadwood) plays a match to its end against ``random``, then downloads it."""
    page = _open(browser, server)
    start = time.monotonic()
    clicks = 0
    shot = False
    while page.evaluate("document.body.dataset.over") != "true":
        assert time.monotonic() - start < 50, f"the match is not over after {clicks} clicks"
        _click_a_good_move(page)
        clicks += 1
        if not shot and page.evaluate("document.body.dataset.hand") == "2":
            page.screenshot(path=str(tmp_path / "serve.png"))
            shot = True
        message = page.inner_text("#message")
        assert not message.startswith("Refused"), message
    assert "won the match" in page.inner_text("#todo")
    assert "Match won by" in page.inner_text("#sheet")
    # The whole match as a record, replayed independently.
    with page.expect_download() as info:
        page.click("#download")
    path = tmp_path / "match.jsonl"
    info.value.save_as(path)
    from hgin_env.records import read_records

    (record,) = list(read_records(path))
    result = replay(record)
    assert result.winner >= 0 and result.actions >= clicks
    page.screenshot(path=str(tmp_path / "final.png"), full_page=True)
    assert shot and (tmp_path / "serve.png").stat().st_size > 10_000
    page.close()


def test_tabs_play_their_own_matches(browser: Any, server: str) -> None:
    first, second = _open(browser, server), _open(browser, server)
    one = first.evaluate("sessionStorage.getItem('hgin-session')")
    two = second.evaluate("sessionStorage.getItem('hgin-session')")
    assert one and two and one != two
    first.close()
    second.close()


def _state(page: Any) -> dict[str, Any]:
    """The state the page shows now (the server's view it last received)."""
    return page.evaluate("S")


def _no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the page is {width[0]} px wide in a {width[1]} px window"


def test_buttons_that_are_not_moves_are_disabled_and_say_why(browser: Any,
                                                             server: str) -> None:
    page = _open(browser, server)
    state = _state(page)
    for button, action in (("draw", A.DRAW_STOCK), ("take", A.TAKE_DISCARD), ("pass", A.PASS)):
        legal = action in state["legal"]
        assert page.is_enabled(f"#{button}") == legal, button
        title = page.get_attribute(f"#{button}", "title")
        assert bool(title) == (not legal), button
    assert page.is_disabled("#knock")  # no knock before drawing
    assert "draw" in page.get_attribute("#knock", "title") or \
        "upcard" in page.get_attribute("#knock", "title")
    disabled = "#draw" if page.is_disabled("#draw") else "#pass"
    page.click(disabled, force=True)  # a disabled button does nothing
    assert _state(page)["move"] == state["move"]
    # A hand card that is not a move says why when hovered.
    first = page.eval_on_selector("#hand .card", "e => e.title")
    assert first and "(t)" not in first
    page.close()


def _reach(page: Any, wanted: str, limit: int = 400) -> dict[str, Any]:
    """Click good moves (never knocking) until ``wanted`` (JS on the state ``S``) holds."""
    for _ in range(limit):
        if page.evaluate(f"(() => {{ const s = S; return {wanted}; }})()"):
            return _state(page)
        state = _state(page)
        if state["over"]:
            _click_and_wait(page, "#new-match")
            continue
        if page.is_enabled("#draw"):
            _click_and_wait(page, "#draw")
        elif page.is_enabled("#pass"):
            _click_and_wait(page, "#pass")
        else:
            after = page.eval_on_selector_all(
                "#hand .card.legal", "els => els.map(e => [+e.dataset.after, +e.dataset.card])")
            _click_and_wait(page, f"#hand .card[data-card='{min(after)[1]}']")
    raise AssertionError(f"never reached {wanted}")


def test_a_refused_knock_leaves_knock_mode(browser: Any, server: str) -> None:
    page = _open(browser, server)
    state = _reach(page, "s.legal.some(a => a >= 52 && a < 104) && "
                         "Object.keys(s.why_not_cards.knock).length > 0")
    bad = int(next(iter(state["why_not_cards"]["knock"])))
    page.click("#knock")
    assert page.get_attribute("#knock", "aria-pressed") == "true"
    _click_and_wait(page, f"#hand .card[data-card='{bad}']")
    message = page.inner_text("#message")
    assert message.startswith("Refused: ") and "knock" in message, message
    assert page.get_attribute("#knock", "aria-pressed") == "false"
    assert "knocking" not in page.get_attribute("#hand", "class")
    assert _state(page)["move"] == state["move"]
    # The next card click is a discard again, not a second knock.
    good = min(a for a in state["legal"] if a < A.KNOCK)
    _click_and_wait(page, f"#hand .card[data-card='{good}']")
    assert not page.inner_text("#message").startswith("Refused"), page.inner_text("#message")
    assert _state(page)["move"] > state["move"]
    page.close()


@pytest.mark.parametrize("width", [420, 1280])
def test_the_page_fits_a_phone_and_a_desktop(browser: Any, server: str, tmp_path: Path,
                                             width: int) -> None:
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(server)
    page.wait_for_function("document.body.dataset.version !== undefined", timeout=10_000)
    _no_sideways_scroll(page)
    page.screenshot(path=str(tmp_path / f"start-{width}.png"), full_page=True)
    _reach(page, "s.showdown !== null && s.legal.some(a => a < 52)")  # a hand scored
    _no_sideways_scroll(page)
    # Each panel (the sheet, the showdown) fits too, without a scroll bar of its own.
    sizes = page.eval_on_selector_all(".panel", "els => els.map(e => [e.scrollWidth, "
                                                "e.clientWidth])")
    assert all(inner <= outer for inner, outer in sizes), sizes
    page.screenshot(path=str(tmp_path / f"play-{width}.png"), full_page=True)
    for name in ("start", "play"):
        assert (tmp_path / f"{name}-{width}.png").stat().st_size > 10_000
    boxes = page.eval_on_selector_all(
        ".card", "els => els.map(e => { const r = e.getBoundingClientRect(); "
                 "return [r.left, r.right]; })")
    assert boxes and all(0 <= left and right <= width for left, right in boxes)
    page.close()


def test_cards_have_faces_with_suit_shapes(browser: Any, server: str) -> None:
    page = _open(browser, server)
    faces = page.eval_on_selector_all(
        "#hand .card", "els => els.map(e => [e.getAttribute('aria-label'), "
        "e.querySelector('.rank').textContent, e.querySelectorAll('svg.suit path').length, "
        "e.querySelector('svg.big').dataset.suit, "
        "e.querySelector('svg.big path').getAttribute('d')])")
    assert len(faces) == 10
    names = ["clubs", "diamonds", "hearts", "spades"]
    shapes: dict[str, str] = {}
    for label, rank, paths, suit, shape in faces:
        assert label.startswith(rank) and paths == 2
        assert names.index(suit) == "♣♦♥♠".index(label[-1])
        shapes[suit] = shape
    assert len(set(shapes.values())) == len(shapes)  # each suit its own shape
    assert page.evaluate("document.images.length") == 0  # drawn inline, nothing fetched
    # The hand in the terminal game's order: the deadwood by rank.
    state = _state(page)
    shown = page.eval_on_selector_all("#hand .card", "els => els.map(e => +e.dataset.card)")
    assert shown == [c for m in state["hand"]["melds"] for c in m] + state["hand"]["loose"]
    loose = state["hand"]["loose"]
    assert [c % 13 for c in loose] == sorted(c % 13 for c in loose)
    page.close()


def test_each_match_shows_its_own_seed(browser: Any, server: str) -> None:
    from hgin_env.apps.serve import match_seed

    first = _open(browser, server)
    assert first.evaluate("document.body.dataset.seed") == "5"
    assert "match 1, seed 5" in first.inner_text("#meta")
    second = _open(browser, server)  # another tab: the server's second match
    assert second.evaluate("document.body.dataset.seed") == str(match_seed(5, 2))
    _click_and_wait(first, "#new-match")
    assert f"match 3, seed {match_seed(5, 3)}" in first.inner_text("#meta")
    first.reload()
    first.wait_for_function("document.body.dataset.version !== undefined", timeout=10_000)
    assert "match 3" in first.inner_text("#meta")  # a reload resumes the tab's match
    first.close()
    second.close()


def test_a_closed_match_is_told_not_replaced(browser: Any, tmp_path: Path) -> None:
    import json
    import urllib.request

    from hgin_env.apps.serve import create_app
    from hgin_env.envs.opponents import load_agent

    rules = load_rules("friendly")
    app = create_app(load_agent("random", rules), "friendly", seed=5, max_sessions=1,
                     per_client=5, min_idle_s=0.0)
    served = _serve(app)
    address = next(served)
    try:
        page = _open(browser, address)
        key = page.evaluate("sessionStorage.getItem('hgin-session')")
        request = urllib.request.Request(address + "api/new", data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:  # closes the page's match
            assert json.load(reply)["session"] != key
        _click_and_wait(page, "#take" if page.is_enabled("#take") else "#draw")
        message = page.inner_text("#message")
        assert "closed" in message and "New match" in message, message
        assert page.evaluate("sessionStorage.getItem('hgin-session')") == key  # nothing new
        assert page.is_disabled("#pass") and page.is_disabled("#take")
        page.screenshot(path=str(tmp_path / "closed.png"))
        with page.expect_download() as info:  # its record is still there
            page.click("#download")
        info.value.save_as(tmp_path / "closed.jsonl")
        from hgin_env.records import read_records

        (record,) = list(read_records(tmp_path / "closed.jsonl"))
        replay(record)
        page.reload()
        page.wait_for_function("document.body.dataset.version !== undefined", timeout=10_000)
        assert "closed" in page.inner_text("#message")
        assert page.evaluate("document.body.dataset.gone") == "true"
        _click_and_wait(page, "#new-match")
        assert page.evaluate("sessionStorage.getItem('hgin-session')") != key
        assert page.evaluate("document.body.dataset.gone") is None
        page.close()
    finally:
        served.close()


def _docs_screenshot(path: str = "docs/serve.png") -> None:
    """The README's picture of the play page: mid-match (hand 2, a discard to choose).

    ``python -m tests.hgin_env.apps.test_browser`` writes it, from the repository root.
    """
    from hgin_env.apps.serve import create_app
    from hgin_env.envs.opponents import load_agent

    rules = load_rules("friendly")
    served = _serve(create_app(load_agent("simple", rules), "friendly", seed=2024,
                               opponent_name="simple"))
    address = next(served)
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = _open(chromium, address)
        while page.evaluate("document.body.dataset.hand") == "1" \
                or not page.is_visible("#hand .card.legal"):
            _click_a_good_move(page)
        page.screenshot(path=path)
        chromium.close()
    served.close()
    print(f"wrote {path}")


if __name__ == "__main__":
    _docs_screenshot()
