"""The two pages in a real browser: headless Chromium (Debian's) driven by Playwright.

Skipped, with the reason, only where the ``playwright`` package or a Chromium
binary cannot be found (``.ci/run`` installs both: ``apt-get install chromium``
and the ``[browser]`` extra; ``playwright install`` is never needed).
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

from agents.tournament import run_tournament
from hgin_env import actions as A
from hgin_env.cards import mask_to_cards
from hgin_env.replay import replay
from hgin_env.rules import load_rules
from hgin_env.viewer import write_html

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not "
                               "installed (pip install -e '.[browser]')")
pytest.importorskip("flask", reason="flask is not installed (pip install -e '.[web]')")

CHROMIUM = os.environ.get("HGIN_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


def _serve(app: Any) -> Iterator[str]:
    """Run ``app`` on a free port in a thread; yield its address."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.port}/"
    finally:
        server.shutdown()
        thread.join(10)


@pytest.fixture
def server() -> Iterator[str]:
    """A server against ``random`` whose first match is always the same (seed 5)."""
    from hgin_env.opponent import load_agent
    from hgin_env.serve import create_app

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


def _docs_screenshot(path: str = "docs/serve.png") -> None:
    """The README's picture of the play page: mid-match (hand 2, a discard to choose).

    ``python tests/test_browser.py`` writes it, from the repository root.
    """
    from hgin_env.opponent import load_agent
    from hgin_env.serve import create_app

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
