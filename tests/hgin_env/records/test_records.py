"""Match records: the recorder, the file format, the verified replay and evaluate --record."""

from __future__ import annotations

import copy
import gzip
import io
import json
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.cli import evaluate
from agents.evaluation.arena import play_matches
from agents.evaluation.tournament import run_tournament
from hgin_env import actions as A
from hgin_env.apps.replay import main as replay_main
from hgin_env.cards import mask_to_cards
from hgin_env.engine import VectorGame
from hgin_env.engine.hand import shuffled_decks
from hgin_env.melds import split_melds
from hgin_env.records import (
    FORMAT,
    MAX_LINE_BYTES,
    VERSION,
    MatchRecorder,
    RecordWriter,
    check_record,
    hgin_version,
    make_record,
    meld_lists,
    read_records,
)
from hgin_env.records.replay import match_text, replay
from hgin_env.rules import load_rules
from tests.helpers.paths import ROOT


@pytest.fixture(scope="module")
def records() -> list[dict]:
    """Four recorded matches, random against simple (random plays long, varied hands)."""
    out: list[dict] = []
    run_tournament(["random", "simple"], 4, "friendly", seed=3, record=out.append)
    return out


def _failure(record: dict, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        replay(record)


def test_round_trip_verifies_every_match(records) -> None:
    assert [r["match"] for r in records] == [0, 1, 2, 3]
    for record in records:
        assert record["format"] == FORMAT and record["version"] == VERSION
        assert record["hgin"] == hgin_version()
        assert record["rules"] == {"profile": "friendly",
                                   "switches": load_rules("friendly").to_dict()}
        result = replay(record)
        assert result.hands == len(record["hands"]) == record["result"]["hands"]
        assert result.actions == sum(len(h["actions"]) for h in record["hands"])
        assert record["agents"][result.winner] == "simple"  # simple beats random every time here
    # Duplicate pairs: the twin games share the seed and swap the seats.
    assert records[0]["seed"] == records[1]["seed"]
    assert records[0]["agents"] == ["random", "simple"]
    assert records[1]["agents"] == ["simple", "random"]
    assert records[0]["hands"][0]["deck"] == records[1]["hands"][0]["deck"]


def test_meld_lists_agree_with_split_melds() -> None:
    rng = np.random.default_rng(5)
    for _ in range(300):
        cards = rng.choice(52, size=rng.integers(0, 20), replace=False)
        sets, runs = 0, 0
        for card in cards:
            if rng.random() < 0.5:
                sets |= 1 << int(card)
            else:
                runs |= 1 << int(card)
        expected = [mask_to_cards(m) for m in split_melds(sets, runs)]
        assert meld_lists(sets, runs) == expected


def test_records_do_not_depend_on_the_batch_size(records) -> None:
    again: list[dict] = []
    run_tournament(["random", "simple"], 4, "friendly", seed=3, batch_size=2, record=again.append)
    assert again == records


@pytest.mark.parametrize("batch_size", [None, 2])
def test_only_the_first_matches_can_be_recorded(batch_size: int | None) -> None:
    random, simple = make_agent("random", seed=3), make_agent("simple", seed=3)
    every: list[dict] = []
    play_matches(random, simple, 4, "friendly", seed=3, record=every.append)
    first: list[dict] = []
    stats = play_matches(random, simple, 4, "friendly", seed=3, batch_size=batch_size,
                         record=first.append, record_matches=3)
    assert stats.num_matches == 4 and first == every[:3]
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="record_matches"):
            play_matches(random, simple, 2, record=first.append, record_matches=bad)


def test_each_hand_holds_its_deal_actions_showdown_and_sheet(records) -> None:
    record = records[0]
    seed = np.array([record["seed"]], np.uint64)
    for n, hand in enumerate(record["hands"]):
        assert hand["deck"] == shuffled_decks(seed, np.array([n]))[0].tolist()
        seats = {seat for seat, _ in hand["actions"]}
        assert seats == {0, 1}
        showdown = hand["showdown"]
        if not showdown["dead"]:
            assert showdown["winner"] in (0, 1) and showdown["award"] > 0
            assert all(len(cards) in (10, 11) for cards in showdown["hands"])
    final = record["hands"][-1]["sheet"]
    assert final["match_winner"] == record["result"]["winner"]
    assert sum(record["result"]["columns_won"]) == 3


def _big_gin_deck() -> np.ndarray:
    """A deck whose non-dealer holds A-5 of clubs and of diamonds, with the 6 of clubs up."""
    first = [0, 1, 2, 3, 4, 13, 14, 15, 16, 17]
    rest = [c for c in range(52) if c not in first and c != 5]
    deck = []
    for k in range(10):
        deck += [first[k], rest[k]]
    return np.array([*deck, 5, *rest[10:]])


def _scripted_actions(game: VectorGame, agent, live: np.ndarray) -> np.ndarray:
    """Hand 1: take the upcard and go big gin; hand 2: never knock (a dead hand); then
    the deterministic simple agent to the end of the match."""
    actions = np.asarray(agent.act(game.observe(), rng=np.random.default_rng(0)))
    mask = game.legal_action_mask()
    for i in np.flatnonzero(live):
        hand, phase = int(game.hands_in_match[i]), int(game.phase[i])
        if hand == 1:
            actions[i] = A.BIG_GIN if mask[i, A.BIG_GIN] else A.TAKE_DISCARD
        elif hand == 2:
            if phase <= A.PHASE_OFFER_DEALER:
                actions[i] = A.PASS
            elif phase in (A.PHASE_DRAW, A.PHASE_DRAW_STOCK):
                actions[i] = A.DRAW_STOCK
            else:  # discard the card just drawn
                actions[i] = int(game.deck[i, game.stock_pos[i] - 1])
    return np.where(live, actions, 0)


def test_a_plain_engine_loop_with_given_decks_big_gin_and_a_dead_hand() -> None:
    """The recorder on a hand-written loop: 'given' first deals, autoreset off."""
    rules = load_rules("classic").replace(big_gin=True)
    game = VectorGame(2, rules, seed=11, autoreset=False)
    decks = np.stack([_big_gin_deck()] * 2)
    game.reset(seed=11, decks=decks, dealer=np.array([0, 1]))
    agent = make_agent("simple-det", rules=rules)
    recorder = MatchRecorder(2, first_deal="given")
    recorder.start(game)
    ids = np.arange(2)
    while (game.phase != A.PHASE_MATCH_OVER).any():
        live = game.phase != A.PHASE_MATCH_OVER
        actions = _scripted_actions(game, agent, live)
        seats = game.current_player.copy()
        _, info = game.step(actions, active=live)
        recorder.step(game, ids, live, seats, actions, info)
    with pytest.raises(ValueError, match="match 0 is over; its row must not be live"):
        recorder.step(game, ids, np.array([True, False]), seats, actions, info)
    for i, match in enumerate(recorder.matches()):
        assert match is not None
        record = make_record(i, match, rules, ["a", "b"], profile=None)
        assert record["rules"]["profile"] is None
        assert record["hands"][0]["deck"] == decks[i].tolist()
        big, dead = record["hands"][0]["showdown"], record["hands"][1]["showdown"]
        knocker = 1 - i  # the non-dealer
        assert big["big_gin"] and big["gin"] and big["knocker"] == big["winner"] == knocker
        assert big["melds"][knocker] == [[0, 1, 2, 3, 4, 5], [13, 14, 15, 16, 17]]
        assert big["deadwood"][knocker] == 0
        assert big["award"] == rules.big_gin_bonus + big["deadwood"][1 - knocker]
        assert dead["dead"] and dead["melds"] is None and dead["winner"] == -1
        assert record["hands"][1]["sheet"] == record["hands"][0]["sheet"]
        assert replay(record).winner == int(game.sheet(i).match_winner)
        tampered = copy.deepcopy(record)
        deck = tampered["hands"][0]["deck"]
        deck[1], deck[20] = deck[20], deck[1]  # the upcard is no longer the 6 of clubs
        _failure(tampered, rf"^match {i}, hand 1, step 2: .*big gin")


# ---------------------------------------------------------------------- tampering


def _discard_step(record: dict, hand: int) -> int:
    """1-based step of the first discard of ``hand`` (1-based)."""
    actions = record["hands"][hand - 1]["actions"]
    return next(k for k, (_, a) in enumerate(actions, 1) if a < A.KNOCK)


def test_an_illegal_action_names_match_hand_and_step(records) -> None:
    record = copy.deepcopy(records[2])
    step = _discard_step(record, 2)
    record["hands"][1]["actions"][step - 1][1] = A.PASS
    _failure(record, rf"^match 2, hand 2, step {step}: .*pass")


def test_a_changed_legal_action_is_caught(records) -> None:
    record = copy.deepcopy(records[0])
    actions = record["hands"][0]["actions"]
    k = next(k for k, (_, a) in enumerate(actions) if a == A.DRAW_STOCK and k > 2)
    actions[k][1] = A.TAKE_DISCARD  # legal in the draw phase, but not what was played
    _failure(record, r"^match 0, hand 1, step \d+: ")


def test_a_wrong_seat_is_caught(records) -> None:
    record = copy.deepcopy(records[0])
    record["hands"][0]["actions"][3][0] ^= 1
    _failure(record, r"^match 0, hand 1, step 4: the record has seat \d moving")


def test_a_changed_award_or_sheet_or_result_is_caught(records) -> None:
    record = copy.deepcopy(records[1])
    hand = next(h for h, x in enumerate(record["hands"], 1) if not x["showdown"]["dead"])
    steps = len(record["hands"][hand - 1]["actions"])
    record["hands"][hand - 1]["showdown"]["award"] += 1
    _failure(record, rf"^match 1, hand {hand}, step {steps}: showdown: 'award'")
    record = copy.deepcopy(records[1])
    record["hands"][0]["sheet"]["scores"][0][0] += 5
    _failure(record, r"^match 1, hand 1, step \d+: sheet after the hand: 'scores'")
    record = copy.deepcopy(records[1])
    record["result"]["winner"] ^= 1
    last = len(record["hands"])
    _failure(record, rf"^match 1, hand {last}, step \d+: match result: 'winner'")


@pytest.mark.parametrize("hand", [1, 2])
def test_a_changed_deck_card_is_caught(records, hand) -> None:
    record = copy.deepcopy(records[3])
    deck = record["hands"][hand - 1]["deck"]
    deck[40], deck[45] = deck[45], deck[40]  # deep in the stock: perhaps never drawn
    _failure(record, rf"^match 3, hand {hand}, step 0: deck position 40 ")


def test_a_changed_dealer_is_caught(records) -> None:
    record = copy.deepcopy(records[3])
    record["hands"][1]["dealer"] ^= 1
    _failure(record, r"^match 3, hand 2, step 0: the record's dealer")


def test_truncated_records_are_caught(records) -> None:
    record = copy.deepcopy(records[0])
    steps = len(record["hands"][1]["actions"])
    record["hands"][1]["actions"].pop()
    _failure(record, rf"^match 0, hand 2, step {steps - 1}: .*before the hand does")
    record = copy.deepcopy(records[0])
    record["hands"].pop()
    last = len(record["hands"])
    _failure(record, rf"^match 0, hand {last}, step \d+: the record ends before the match")
    record = copy.deepcopy(records[0])
    record["hands"][0]["actions"].append([0, A.DRAW_STOCK])
    steps = len(record["hands"][0]["actions"])
    _failure(record, rf"^match 0, hand 1, step {steps - 1}: the hand ends here")


def test_a_cut_file_line_names_the_line(records, tmp_path) -> None:
    path = tmp_path / "cut.jsonl"
    with RecordWriter(path) as writer:
        writer.write(records[0])
        writer.write(records[1])
    text = path.read_text()
    path.write_text(text[: len(text) - 200])
    with pytest.raises(ValueError, match=r"line 2 \(match 1 by position\) .*truncated"):
        list(read_records(path))


def test_malformed_records_are_refused_before_play(records) -> None:
    for change, pattern in [
        (lambda r: r.update(version=99), r"match 0: version 99 is not supported"),
        (lambda r: r.pop("seed"), r"missing field\(s\) seed"),
        (lambda r: r["hands"][0]["deck"].pop(), r"^match 0, hand 1, step 0: 'deck' must be"),
        (lambda r: r["hands"][1]["actions"].__setitem__(2, [2, 104]),
         r"^match 0, hand 2, step 3: expected a \[seat, action\] pair"),
        (lambda r: r["rules"]["switches"].update(gin_bonus=7), r"gin_bonus"),
        (lambda r: r["rules"]["switches"].pop("oklahoma"), r"switch\(es\) missing: oklahoma"),
        (lambda r: r["rules"]["switches"].update(jokers=2), r"unknown rules switch\(es\) jokers"),
    ]:
        record = copy.deepcopy(records[0])
        change(record)
        _failure(record, pattern)
    with pytest.raises(ValueError, match="JSON object"):
        check_record([1, 2])


# ---------------------------------------------------------------------- files and CLIs


@pytest.mark.parametrize("name", ["m.jsonl", "m.jsonl.gz"])
def test_files_round_trip_plain_and_gzip(records, tmp_path, name) -> None:
    path = tmp_path / name
    with RecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    raw = path.read_bytes()
    assert raw.startswith(b"\x1f\x8b") == name.endswith(".gz")
    text = gzip.decompress(raw).decode() if name.endswith(".gz") else raw.decode()
    assert len(text.splitlines()) == len(records)
    assert list(read_records(path)) == records


def test_evaluate_records_every_match(tmp_path, capsys) -> None:
    path = tmp_path / "t.jsonl.gz"
    code = evaluate.main(["--agents", "random", "simple", "simple-det", "--matches", "2",
                          "--seed", "4", "--no-progress", "--record", str(path)])
    assert code == 0
    assert f"wrote {path} (6 matches)" in capsys.readouterr().err
    saved = list(read_records(path))
    assert [r["match"] for r in saved] == list(range(6))
    assert {tuple(r["context"]["pairing"]) for r in saved} == {
        ("random", "simple"), ("random", "simple-det"), ("simple", "simple-det")}
    for record in saved:
        assert record["context"]["tournament_seed"] == 4
        replay(record)
    # A directory gets tournament.jsonl.
    assert evaluate.main(["--agents", "random", "simple", "--matches", "1", "--no-progress",
                          "--record", str(tmp_path)]) == 0
    assert len(list(read_records(tmp_path / "tournament.jsonl"))) == 2


def test_evaluate_checks_the_record_path_before_playing(tmp_path, capsys, monkeypatch) -> None:
    import agents.evaluation.tournament

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a match was started before the arguments were checked")

    monkeypatch.setattr(agents.evaluation.tournament, "run_tournament", refuse)
    with pytest.raises(SystemExit) as exc:
        evaluate.main(["--agents", "random", "simple", "--record",
                       str(tmp_path / "missing" / "t.jsonl")])
    assert exc.value.code == 2
    assert "--record" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        evaluate.main(["--agents", "random", "simple", "--record", str(tmp_path / "t.json"),
                       "--json", str(tmp_path / "t.json")])


def test_replay_cli_prints_and_verifies(records, tmp_path, capsys) -> None:
    path = tmp_path / "m.jsonl"
    with RecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    assert replay_main([str(path), "--match", "1"]) == 0
    out = capsys.readouterr().out
    assert out == match_text(records[1]) + "\n"
    for h in range(1, len(records[1]["hands"]) + 1):
        assert f"=== Hand {h} (dealer: " in out
    assert "Score sheet" in out and "Match won by simple" in out
    assert replay_main([str(path)]) == 0
    assert capsys.readouterr().out.count("verified") == 4
    assert replay_main([str(path), "--match", "9"]) == 1
    assert "no match 9" in capsys.readouterr().err
    tampered = copy.deepcopy(records[0])
    tampered["hands"][0]["showdown"]["award"] += 1
    path.write_text(json.dumps(tampered) + "\n")
    assert replay_main([str(path)]) == 1
    assert "match 0, hand 1, step" in capsys.readouterr().err


def test_the_docs_schema_lists_every_field(records) -> None:
    doc = (ROOT / "docs" / "records.md").read_text()
    record = records[0]
    names = set(record) | set(record["hands"][0]) | set(record["hands"][0]["showdown"])
    names |= set(record["result"]) | set(record["rules"])
    for name in names:
        assert f"`{name}`" in doc, name


# ---------------------------------------------------------------------- hostile files


def _write_lines(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_deeply_nested_line_is_a_one_line_error(records, tmp_path, capsys) -> None:
    path = _write_lines(tmp_path / "deep.jsonl", json.dumps(records[0]),
                        "[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=r"deep\.jsonl: line 2 is nested too deeply"):
        list(read_records(path))
    assert replay_main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "deep.jsonl: line 2 is nested too deeply" in err


def test_a_record_line_may_hold_up_to_the_cap(records, tmp_path) -> None:
    """The cap counts the line with its newline: exactly MAX_LINE_BYTES reads, one more
    byte is refused (a long free-form context pads the record to the size)."""
    record = copy.deepcopy(records[0])
    record["context"] = {"pad": ""}
    size = len(json.dumps(record, separators=(",", ":"))) + 1
    record["context"]["pad"] = "x" * (MAX_LINE_BYTES - size)
    path = tmp_path / "full.jsonl"
    with RecordWriter(path) as writer:
        writer.write(record)
    assert path.stat().st_size == MAX_LINE_BYTES
    assert list(read_records(path)) == [record]
    record["context"]["pad"] += "x"
    with RecordWriter(path) as writer:
        writer.write(record)
    with pytest.raises(ValueError, match=r"full\.jsonl: line 1 is longer than 16 MiB"):
        list(read_records(path))


def test_a_long_gzip_line_is_refused_in_bounded_memory(tmp_path, capsys) -> None:
    """A .gz of a few hundred KB holding a 64 MiB line: refused, reading at most ~2 caps."""
    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=1) as fh:
        chunk = b"[" * 2**20
        for _ in range(4 * MAX_LINE_BYTES // len(chunk)):
            fh.write(chunk)
        fh.write(b"\n")
    assert path.stat().st_size < 2**20
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"line 1 is longer than 16 MiB"):
            list(read_records(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * MAX_LINE_BYTES
    assert replay_main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bomb.jsonl.gz: line 1 is longer" in err


def test_an_empty_file_is_not_verified(tmp_path, capsys) -> None:
    for name, text in [("empty.jsonl", ""), ("blank.jsonl", "\n  \n")]:
        path = tmp_path / name
        path.write_text(text)
        assert replay_main([str(path)]) == 1
        captured = capsys.readouterr()
        assert "verified" not in captured.err + captured.out
        assert f"{name} holds no match record (it is empty)" in captured.err
    assert replay_main([str(tmp_path / "empty.jsonl"), "--match", "0"]) == 1
    assert "has no match 0" in capsys.readouterr().err


_HOSTILE_NAMES = ["\x1b[2J\x1b]0;pwned\x07evil\ud800", "line\nbreak \u202eright-to-left\x9b"]


def test_names_reach_the_terminal_escaped(records, tmp_path, capsys, monkeypatch) -> None:
    record = copy.deepcopy(records[0])
    record["agents"] = list(_HOSTILE_NAMES)
    path = tmp_path / "names.jsonl"
    with RecordWriter(path) as writer:
        writer.write(record)
    assert replay_main([str(path)]) == 0
    assert replay_main([str(path), "--match", "0"]) == 0
    out = capsys.readouterr().out
    assert "\\x1b[2J\\x1b]0;pwned\\x07evil\\ud800" in out
    assert "line\\x0abreak \\u202eright-to-left\\x9b" in out
    for raw in ("\x1b", "\x07", "\ud800", "\u202e", "\x9b", "line\nbreak"):
        assert raw not in out
    # A terminal that cannot encode the suits (or anything else) gets escapes, not a crash.
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stream)
    assert replay_main([str(path), "--match", "0"]) == 0
    stream.flush()
    text = stream.buffer.getvalue().decode("ascii")
    assert "\\u2663" in text and "\\x1b[2J" in text  # the club suit, the name


def test_hostile_values_give_short_one_line_errors(records) -> None:
    deep = json.loads("[" * 900 + "]" * 900)
    for change, pattern in [
        (lambda r: r.update(match="\x1b[2J"), r"^match '\\x1b\[2J': 'match' must be"),
        (lambda r: r.update(hgin=["0.1"]), r"'hgin' must be a version string"),
        (lambda r: r["rules"].update(profile=7), r"'rules' must hold 'profile'"),
        (lambda r: r["rules"]["switches"].update(gin_bonus=deep),
         r"switch\(es\) gin_bonus must be a number, boolean or name"),
        (lambda r: r["hands"][0]["actions"].__setitem__(0, deep), r"step 1: expected a \["),
        (lambda r: r["hands"][0]["actions"].__setitem__(0, [0] * 10**5),
         r"step 1: expected a \["),
        (lambda r: r["hands"][0]["showdown"].update(award=deep), r"showdown: 'award' is \["),
        (lambda r: r.update(format="x" * 10**5), r"format is 'x+\.\.\.x+', expected"),
    ]:
        record = copy.deepcopy(records[0])
        change(record)
        with pytest.raises(ValueError, match=pattern) as exc:
            replay(record)
        assert len(str(exc.value)) < 500 and "\n" not in str(exc.value)


def test_a_record_from_before_a_switch_existed_still_replays() -> None:
    """Records written before the ``layoff`` switch lack it; they were played under its
    earlier (and default) value, and still verify."""
    from agents import make_agent
    from agents.evaluation.tournament import run_tournament

    records: list[dict] = []
    run_tournament([make_agent("random", seed=0), make_agent("simple", seed=0)], 2,
                   "friendly", seed=1, record=records.append)
    old = json.loads(json.dumps(records[0]))
    del old["rules"]["switches"]["layoff"]
    check_record(old)
    assert replay(old).hands == replay(records[0]).hands
    old["rules"]["switches"]["colums"] = 3
    with pytest.raises(ValueError, match="unknown rules switch"):
        check_record(old)
