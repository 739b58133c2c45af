"""The HTML match viewer: one self-contained page whose positions are the engine's."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.evaluation.tournament import run_tournament
from hgin_env.apps.replay import main as replay_main
from hgin_env.cards import mask_to_cards
from hgin_env.records import RecordWriter, read_records
from hgin_env.records.replay import replay
from hgin_env.records.viewer import inline_json, match_html, viewer_data, write_html


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    run_tournament(["simple", "random"], 2, "friendly", seed=7, record=found.append)
    return found


def _embedded(page: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="match-data">(.*?)</script>',
                      page, re.S)
    assert match is not None, "the page embeds no match data"
    return json.loads(match.group(1))


class _Resources(HTMLParser):
    """Collects every attribute that could make a browser fetch something."""

    def __init__(self) -> None:
        super().__init__()
        self.fetches: list[tuple[str, str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "srcset", "data", "action", "poster") and value:
                self.fetches.append((tag, name, value))


#: XML namespace names look like addresses but are never fetched (the SVG card faces).
_NAMESPACES = ("http://www.w3.org/2000/svg",)


def test_page_is_self_contained(records: list[dict[str, Any]]) -> None:
    page = match_html(records[0])
    addresses = page
    for name in _NAMESPACES:
        addresses = addresses.replace(name, "")
    assert not re.search(r"https?://", addresses), "the page must not name any network address"
    assert "@import" not in page and "url(" not in page
    parser = _Resources()
    parser.feed(page)
    assert parser.fetches == [], f"the page fetches {parser.fetches}"
    assert parser.tags.count("script") == 2  # the data and the inline program
    assert "style" in parser.tags and "@media print" in page


def _replayed_positions(record: dict[str, Any]) -> dict[tuple[int, int], list[list[int]]]:
    """The cards each seat holds after every step, from an independent replay."""
    seen: dict[tuple[int, int], list[list[int]]] = {}

    def listen(event: str, h: int, k: int, game: Any, details: dict[str, Any]) -> None:
        if event in ("deal", "move"):
            seen[h, k] = [[int(c) for c in mask_to_cards(int(game.hands[0, p]))] for p in (0, 1)]

    replay(record, listen)
    return seen


def test_embedded_positions_match_the_record(records: list[dict[str, Any]]) -> None:
    record = records[1]
    data = _embedded(match_html(record))
    assert len(data["hands"]) == record["result"]["hands"]
    replayed = _replayed_positions(record)
    for h, (hand, recorded) in enumerate(zip(data["hands"], record["hands"], strict=True), 1):
        steps = hand["steps"]
        assert len(steps) == len(recorded["actions"]) + 1
        assert hand["dealer"] == recorded["dealer"]
        # The deal, straight from the recorded deck: 0..19 alternately, non-dealer first.
        deck = recorded["deck"]
        first = 1 - recorded["dealer"]
        dealt = [sorted(deck[0:20:2]), sorted(deck[1:20:2])]
        assert steps[0]["hands"][first] == dealt[0]
        assert steps[0]["hands"][1 - first] == dealt[1]
        assert steps[0]["top"] == deck[20] and steps[0]["stock"] == 31
        for k, step in enumerate(steps[1:-1], 1):
            assert step["hands"] == replayed[h, k], f"hand {h}, step {k}"
            assert [step["seat"], step["action"]] == recorded["actions"][k - 1]
        assert steps[-1]["hands"] == [sorted(c) for c in recorded["showdown"]["hands"]]
        assert hand["showdown"] == recorded["showdown"]
        assert hand["sheet"] == recorded["sheet"]
        assert hand["sheet_before"] == (record["hands"][h - 2]["sheet"] if h > 1 else None)
        # Cards are conserved: both hands, the pile and the stock always make 52.
        for step in steps:
            held = len(step["hands"][0]) + len(step["hands"][1]) + step["pile"] + step["stock"]
            knocked = step is steps[-1] and 52 <= step["action"] < 104  # one card face down
            assert held == 52 - knocked, f"hand {h}, step {step['step']}"
    assert data["result"] == record["result"]
    assert data["names"] == list(record["agents"]) or record["agents"][0] == record["agents"][1]


def test_action_words_and_cards(records: list[dict[str, Any]]) -> None:
    data = viewer_data(records[0])
    assert data["cards"][0] == "A♣" and data["cards"][51] == "K♠" and data["cards"][22] == "10♦"
    words = [s["words"] for hand in data["hands"] for s in hand["steps"][1:]]
    assert all(w.startswith(tuple(f"{n}: " for n in data["names"])) for w in words)
    assert any("draw from the stock" in w for w in words)
    assert data["columns"] == ["I", "II", "III"]


def test_a_tampered_record_is_refused(records: list[dict[str, Any]]) -> None:
    tampered = copy.deepcopy(records[0])
    tampered["hands"][0]["actions"][0][1] = 0  # not a legal first action
    with pytest.raises(ValueError, match=r"^match 0, hand 1, step 1: "):
        viewer_data(tampered)


def test_data_cannot_close_the_script_element(records: list[dict[str, Any]]) -> None:
    record = copy.deepcopy(records[0])
    record["hgin"] = "</script><b>x"
    page = match_html(record)
    assert "</script><b>x" not in page
    assert _embedded(page)["hgin"] == "</script><b>x"


def test_cli_writes_the_page(records: list[dict[str, Any]], tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.jsonl.gz"
    with RecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    out = tmp_path / "out.html"
    assert replay_main([str(path), "--match", "1", "--html", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert _embedded(page) == viewer_data(next(r for r in read_records(path) if r["match"] == 1))
    assert "wrote match 1" in capsys.readouterr().err
    assert replay_main([str(path), "--match", "9", "--html", str(out)]) == 1
    assert "has no match 9" in capsys.readouterr().err


def test_write_html_returns_the_path(records: list[dict[str, Any]], tmp_path: Path) -> None:
    out = write_html(records[0], tmp_path / "page.html")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# ------------------------------------------------------------------- hostile records


def _renamed(record: dict[str, Any], *names: str) -> dict[str, Any]:
    renamed = copy.deepcopy(record)
    renamed["agents"] = list(names)
    return renamed


def _data_text(page: str) -> str:
    match = re.search(r'<script type="application/json" id="match-data">(.*?)</script>',
                      page, re.S)
    assert match is not None
    return match.group(1)


def test_inline_json_cannot_change_how_the_page_parses(records: list[dict[str, Any]]) -> None:
    """``<!--<script>`` in a name would put the tokenizer in its double-escaped state and
    swallow the page's program: no ``<`` (nor ``>``, ``&``, U+2028/9) stays raw."""
    record = _renamed(records[0], "<!--<script>", "a&b>c\u2028\u2029</script")
    page = match_html(record)
    text = _data_text(page)
    assert not set(text) & set("<>&\u2028\u2029")
    assert _embedded(page) == viewer_data(record)
    assert "<!--<script>" not in page
    parser = _Resources()
    parser.feed(page)
    assert parser.tags.count("script") == 2
    assert inline_json({"k": "<\ud800"}) == '{"k":"\\u003c\\ud800"}'
    assert json.loads(inline_json({"k": "<\ud800"})) == {"k": "<\ud800"}


def test_marks_in_names_are_data_not_template(records: list[dict[str, Any]]) -> None:
    marks = ("__TITLE__", "/*__MATCH_DATA__*/", "/*__COMMON_JS__*/", "/*__COMMON_CSS__*/")
    record = _renamed(records[0], " ".join(marks), "__TITLE__")
    page = match_html(record)
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    assert title is not None
    assert title.group(1) == f"hgin match 0: {' '.join(marks)} vs __TITLE__"
    assert page.count('id="match-data"') == 1 and page.count("<style>") == 1
    assert _embedded(page)["names"] == record["agents"]


def test_lone_surrogates_are_written_and_a_page_is_replaced_whole(
        records: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "page.html"
    old = write_html(records[0], out).read_bytes()
    assert (out.stat().st_mode & 0o777) == 0o666 & ~_umask()  # an ordinary file's mode
    record = _renamed(records[0], "a\ud800", "\udfffb")
    write_html(record, out)
    assert _embedded(out.read_text(encoding="utf-8"))["names"] == ["a\ud800", "\udfffb"]
    title = re.search(r"<title>(.*?)</title>", out.read_text(encoding="utf-8"))
    assert title is not None and title.group(1) == "hgin match 0: a\ufffd vs \ufffdb"
    write_html(records[0], out)
    tampered = copy.deepcopy(records[0])
    tampered["hands"][0]["actions"][0][1] = 0
    with pytest.raises(ValueError):
        write_html(tampered, out)
    import hgin_env.records.viewer as viewer

    def full_disk(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(viewer.os, "replace", full_disk)
    with pytest.raises(OSError, match="No space"):
        write_html(records[1], out)
    assert out.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]  # no temporary left


def _umask() -> int:
    import os

    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def test_html_paths_are_checked_before_any_record_is_read(
        records: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import hgin_env.apps.replay as replay_module

    path = tmp_path / "m.jsonl"
    with RecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    before = path.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)

    def refuse(*args: object) -> None:
        raise AssertionError("a record was read before --html was checked")

    with monkeypatch.context() as patch:
        patch.setattr(replay_module, "read_records", refuse)
        for out, message in [
            (tmp_path / "missing" / "dir" / "out.html", "directory .*missing/dir does not exist"),
            (f"{tmp_path / 'outputs'}/", "directory .*outputs does not exist"),
            (path, "is the record file being read; refusing to overwrite it"),
            (link, "is the record file being read"),
            ("/dev/null", "is not a regular file"),
        ]:
            with pytest.raises(SystemExit) as exc:
                replay_main([str(path), "--html", str(out)])
            assert exc.value.code == 2
            err = capsys.readouterr().err
            assert re.search(f"error: --html .*{message}", err), err
    assert path.read_bytes() == before
    # A folder gets match_<N>.html, and the message says which file was written.
    folder = tmp_path / "outputs"
    folder.mkdir()
    for argv, name in [([], "match_0.html"), (["--match", "1"], "match_1.html")]:
        assert replay_main([str(path), *argv, "--html", f"{folder}/"]) == 0
        assert f"wrote match {name[6]} to {folder / name}" in capsys.readouterr().err
        assert _embedded((folder / name).read_text(encoding="utf-8"))["match"] == int(name[6])
    (folder / "match_0.html").unlink()
    (folder / "match_0.html").mkdir()
    assert replay_main([str(path), "--html", str(folder)]) == 1
    assert "match_0.html is a directory" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="chromium is not installed (the issue's browser tests need it)")
def test_chromium_runs_the_page_of_hostile_names(records: list[dict[str, Any]],
                                                 tmp_path: Path) -> None:
    """The page's program runs (it fills the heading) whatever the names hold."""
    names = ("<!--<script>", "__TITLE__ </script> \u2028")
    page = write_html(_renamed(records[0], *names), tmp_path / "page.html")
    run = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                          "--dump-dom", page.as_uri()],
                         capture_output=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    heading = re.search(r'<h1 id="title">(.*?)</h1>', run.stdout.decode("utf-8"), re.S)
    assert heading is not None
    assert heading.group(1) == ("Match 0: &lt;!--&lt;script&gt; (seat 0) vs "
                                "__TITLE__ &lt;/script&gt; \u2028 (seat 1)")


# ------------------------------------------------------------------- the script, run

_DOM_STUB = r"""
// Just enough of a DOM to run the page's script under node and read what it shows.
class Node {
  constructor(tag) { this.tag = tag; this.children = []; this._text = ""; this.className = "";
    this.dataset = {}; this.disabled = false; const self = this;
    this.classList = { add(c) { self.className += " " + c; },
                       toggle(c, on) { self.className = self.className.replace(" " + c, "");
                                       if (on) self.className += " " + c; } }; }
  appendChild(n) { this.children.push(n); return n; }
  setAttribute(name, value) { this[name] = String(value); }
  set textContent(t) { this._text = t; this.children = []; }
  get textContent() { return this._text + this.children.map((c) => c.textContent).join(""); }
  querySelector(sel) { const k = sel.slice(1); if (!this.parts[k]) this.parts[k] = new Node(k);
                       return this.parts[k]; }
}
const byId = {}, listeners = {};
global.document = {
  body: new Node("body"),
  getElementById(id) { if (!byId[id]) { byId[id] = new Node(id); byId[id].parts = {}; }
                       return byId[id]; },
  createElement(tag) { return new Node(tag); },
  createElementNS(ns, tag) { return new Node(tag); },
  createTextNode(t) { const n = new Node("#text"); n._text = t; return n; },
  addEventListener(type, f) { listeners[type] = f; },
};
global.location = { hash: "" };
"""

_DRIVER = r"""
const press = (key) => listeners.keydown({ key, preventDefault() {} });
const shown = () => [0, 1].map((p) =>
  byId["seat" + p].parts.cards.children.map((c) => +c.dataset.card));
const out = [];
for (let i = 0; i < STEPS; i++) { out.push({ body: { ...document.body.dataset }, hands: shown(),
  action: byId.action.textContent, sheet: byId.sheet.textContent,
  showdown: byId.showdown.textContent }); press("ArrowRight"); }
press("PageUp"); const afterUp = { ...document.body.dataset };
press("ArrowDown"); const afterDown = { ...document.body.dataset };
console.log(JSON.stringify({ out, afterUp, afterDown }));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed: the page's "
                    "script cannot be run outside a browser")
def test_script_steps_through_the_match_under_node(records: list[dict[str, Any]],
                                                   tmp_path: Path) -> None:
    """The page's own script, run with a minimal DOM, shows the engine's cards at each step."""
    record = records[0]
    page = match_html(record)
    program = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(program) == 1
    data_json = _embedded(page)
    total = sum(len(h["steps"]) for h in data_json["hands"])
    source = (_DOM_STUB
              + "document.getElementById('match-data').textContent = "
              + json.dumps(json.dumps(data_json)) + ";\n"
              + program[0] + _DRIVER.replace("STEPS", str(total)))
    script = tmp_path / "page.js"
    script.write_text(source, encoding="utf-8")
    run = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=60,
                         check=False)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    flat = [(h, s) for h in data_json["hands"] for s in h["steps"]]
    assert len(result["out"]) == total
    rng = np.random.default_rng(0)
    for i in sorted(set(rng.integers(0, total, 12).tolist()) | {0, total - 1}):
        hand, step = flat[i]
        seen = result["out"][i]
        assert seen["body"] == {"hand": str(hand["number"]), "step": str(step["step"])}
        assert seen["hands"] == step["hands"]
        if step is hand["steps"][-1]:
            assert f"scoring {hand['showdown']['award']}" in seen["showdown"] \
                or hand["showdown"]["dead"]
    last = data_json["hands"][-1]
    assert result["afterUp"] == {"hand": str(last["number"]), "step": "0"}
    assert result["afterDown"] == {"hand": str(last["number"]),
                                   "step": str(len(last["steps"]) - 1)}
    assert "Match won by" in result["out"][-1]["sheet"]


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="chromium is not installed (the issue's browser tests need it)")
def test_chromium_renders_the_page(records: list[dict[str, Any]], tmp_path: Path) -> None:
    page = write_html(records[0], tmp_path / "page.html")
    shot = tmp_path / "shot.png"
    run = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                          f"--screenshot={shot}", "--window-size=1280,900",
                          page.as_uri() + "#hand=1&step=3"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert shot.stat().st_size > 10_000
