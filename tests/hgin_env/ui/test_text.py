"""The text interface (hgin_env.ui.text) and the external-program agent (agents.text_agent).

Positions come from seeded random play, so every phase and most kinds of legal
move are met; the agent is driven by small scripted programs written to
``tmp_path``, including ones that answer badly, late or not at all.
"""

from __future__ import annotations

import gc
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.evaluation.tournament import run_tournament
from agents.text_agent import END_MARKER, TextAgent, TextAgentError, parse_text_spec
from agents.training.config import check_agent_spec
from hgin_env import actions as A
from hgin_env.engine import VectorGame
from hgin_env.ui.moves import move_options, parse_command
from hgin_env.ui.render import RANK_TEXT, Style, card_text
from hgin_env.ui.text import describe, legal_moves, move_code, parse_move

RANK_WORDS = ("ace", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
              "jack", "queen", "king")
SUIT_WORDS = ("clubs", "diamonds", "hearts", "spades")


def positions(games: int = 16, steps: int = 160, seed: int = 0, rules: str = "friendly",
              ) -> Iterator[tuple[VectorGame, dict[str, np.ndarray]]]:
    """Positions of ``games`` games, one observation batch per step, played by the
    ``simple`` player (which knocks as soon as it may) with one move in three random."""
    game = VectorGame(games, rules=rules, seed=seed)
    rng = np.random.default_rng(seed)
    simple = make_agent("simple", seed=seed)
    for _ in range(steps):
        obs = game.observe()
        yield game, obs
        mask = obs["action_mask"]
        chosen = simple.act(obs, rng=rng)
        wild = rng.random(games) < 1 / 3
        chosen[wild] = [rng.choice(np.flatnonzero(row)) for row in mask[wild]]
        game.step(chosen)


def phrasings(action: int, top: int) -> list[str]:
    """Free-text ways of saying ``action`` (``top``: the card on the pile)."""
    if action < A.DRAW_STOCK:
        card = action % A.KNOCK
        words = f"{RANK_WORDS[card % 13]} of {SUIT_WORDS[card // 13]}"
        digits = f"{RANK_TEXT[card % 13]} of {SUIT_WORDS[card // 13]}"
        if action < A.KNOCK:
            return [f"discard the {words}", f"Discard {card_text(card)}.", f"`{digits}`",
                    f"I'll throw the {words}", move_code(card).lower()]
        return [f"knock, discarding {card_text(card)} face down", f"knock with the {words}",
                f"Knock {move_code(card)}", f"k {move_code(card)}"]
    return {A.DRAW_STOCK: ["draw from the stock", "I'll draw", "d", "Draw."],
            A.TAKE_DISCARD: ["take the upcard", "pick up the top discard", "t",
                             f"take {card_text(top)}"],
            A.PASS: ["pass on the upcard", "I decline", "p", "PASS"]}[action]


def test_every_listed_code_and_phrasing_parses_back_to_its_action() -> None:
    seen: set[str] = set()
    checked = 0
    for _, obs in positions(games=6, steps=90):
        for row in range(obs["action_mask"].shape[0]):
            mask, vec = obs["action_mask"][row], obs["observation"][row]
            moves = legal_moves(obs, row)
            assert sorted(m.action for m in moves) == np.flatnonzero(mask).tolist()
            text = describe(obs, row)
            for move in moves:
                assert f"\n  {move.code}  " in text
                assert parse_move(move.code, mask, vec) == move.action
                assert parse_move(move.code, mask) == move.action  # from the mask alone
                # The listed words, and one free-text phrasing in turn of each kind.
                said = [move.words, *phrasings(move.action, _top(vec))]
                text_said = said[checked % len(said)]
                assert parse_move(text_said, mask, vec) == move.action, text_said
                seen.add("knock" if A.KNOCK <= move.action < A.DRAW_STOCK else move.code
                         if move.action >= A.DRAW_STOCK else "discard")
                checked += 1
    assert seen == {"discard", "knock", "draw", "take", "pass"}
    assert checked > 3000


def test_each_phrasing_of_each_kind_of_move() -> None:
    """Every phrasing of :func:`phrasings`, on the first position offering each kind."""
    done: set[str] = set()
    for _, obs in positions(games=4, steps=120, seed=1):
        for row in range(4):
            mask, vec = obs["action_mask"][row], obs["observation"][row]
            for move in legal_moves(obs, row):
                kind = ("knock" if A.KNOCK <= move.action < A.DRAW_STOCK else "discard"
                        if move.action < A.KNOCK else move.code)
                if kind in done:
                    continue
                for said in phrasings(move.action, _top(vec)):
                    assert parse_move(said, mask, vec) == move.action, said
                done.add(kind)
    assert done == {"discard", "knock", "draw", "take", "pass"}


def _top(vec: np.ndarray) -> int:
    from hgin_env.observation import observation_spec

    bits = np.flatnonzero(vec[observation_spec()["top_discard"]] > 0.5)
    return int(bits[0]) if bits.size else -1


def test_the_text_view_lists_and_refuses_moves_as_the_terminal_game_does() -> None:
    """From the observation alone, the same list and the same reasons as the terminal
    game computes from the whole engine state: one implementation for both."""
    texts = ["draw", "take", "pass", "knock", "AC", "knock KS", "10h", "big gin", "x 2D"]
    compared = 0
    for seed in range(3):
        for game, obs in positions(games=1, steps=150, seed=seed):
            seat = int(game.current_player[0])
            options = move_options(game, seat, Style(False))
            assert [(m.action, m.words) for m in legal_moves(obs)] == options
            for text in texts:
                kind, action, message = parse_command(text, options, game, seat)
                if kind == "move":
                    assert parse_move(text, obs["action_mask"][0], obs["observation"][0]) \
                        == action
                else:
                    with pytest.raises(ValueError) as err:
                        parse_move(text, obs["action_mask"][0], obs["observation"][0])
                    assert message.split(" Type 'help'")[0].rstrip(".") in str(err.value)
                compared += 1
    assert compared > 3000


def test_refusals_say_why_and_list_the_legal_moves() -> None:
    for _, obs in positions(games=1, steps=400, seed=3):
        mask, vec = obs["action_mask"][0], obs["observation"][0]
        if not mask[:A.KNOCK].any() or mask[A.KNOCK:A.DRAW_STOCK].any():
            continue  # wanted: a discard turn in which no knock is allowed
        held = int(np.flatnonzero(mask[:A.KNOCK])[0])
        with pytest.raises(ValueError) as err:
            parse_move(f"knock {move_code(held)}", mask, vec)
        message = str(err.value)
        assert "knock limit" in message and "Legal moves:" in message
        assert all(move_code(int(a)) in message for a in np.flatnonzero(mask))
        for bad, why in [("banana", "not a move"), ("", "empty"), ("3", "not a number"),
                         ("draw", "already drawn"), ("discard 7H and then draw", "several"),
                         ("discard 7H 8H", "several cards")]:
            with pytest.raises(ValueError, match=why):
                parse_move(bad, mask, vec)
        with pytest.raises(ValueError, match="not legal now"):
            parse_move("draw", mask)  # the mask alone gives the bare reason
        break
    else:  # pragma: no cover - the seeded game has such a turn
        pytest.fail("no discard turn without a knock was met")
    offer = VectorGame(1, seed=0).observe()
    top = _top(offer["observation"][0])
    wrong = (top + 1) % 52
    with pytest.raises(ValueError, match=f"card to take is {card_text(top)}"):
        parse_move(f"take {card_text(wrong)}", offer["action_mask"][0], offer["observation"][0])
    big = np.zeros(A.NUM_ACTIONS, np.int8)
    big[[A.BIG_GIN, 5]] = 1
    assert parse_move("big gin", big) == A.BIG_GIN
    assert parse_move("Big gin!", big) == A.BIG_GIN


def test_the_description_shows_one_seats_view_only() -> None:
    described = 0
    for game, obs in positions(games=8, steps=120, seed=5):
        for row in range(8):
            seat = int(game.current_player[row])
            text = describe(obs, row)
            lines = text.splitlines()
            hidden = int(game.hands[row, 1 - seat]) & ~int(game.known[row, 1 - seat])
            shown = [line for line in lines if not line.startswith("Unseen")]
            for card in range(52):
                if hidden >> card & 1:
                    assert not any(f" {card_text(card)}" in line for line in shown), (
                        card_text(card), text)
            hand = int(game.hands[row, seat])
            assert all(card_text(c) in lines[1] for c in range(52) if hand >> c & 1)
            top = int(game.top_discard()[row])
            if top >= 0:
                assert f"{card_text(top)} on top" in text
            known = int(game.known[row, 1 - seat])
            opp_line = next(line for line in lines if line.startswith("Opponent:"))
            assert all(card_text(c) in opp_line for c in range(52) if known >> c & 1)
            assert "Sheet (target 100" in text and "Legal moves" in text
            described += 1
    assert described == 960
    waiting = game.observe(player=1 - int(game.current_player[0]))
    assert describe(waiting, 0).endswith("It is not your turn.")
    assert legal_moves(waiting, 0) == []


# ----------------------------------------------------------------------------- the agent

BOT = f"""
import sys, time
mode = sys.argv[1]
if mode == "exit":
    sys.exit(3)
position = []
for line in sys.stdin:
    line = line.rstrip("\\n")
    if line != {END_MARKER!r}:
        position.append(line)
        continue
    if mode == "log":
        with open(sys.argv[2], "a", encoding="utf-8") as log:
            log.write("\\n".join(position) + "\\n=====\\n")
    start = position.index("Legal moves (answer with one code, or the move in words):")
    first = position[start + 1].strip().split("  ")[0]
    position = []
    if mode == "slow":
        time.sleep(30)
    answer = {{"banana": "banana", "illegal": "knock KS"}}.get(mode, first)
    print(answer, flush=True)
    if mode == "twice":
        print("and another thing", flush=True)
"""


Bot = Callable[..., TextAgent]


@pytest.fixture
def bot(tmp_path: Path) -> Iterator[Bot]:
    """``bot(mode, timeout)`` starts the scripted program in ``mode``; all are closed after."""
    script = tmp_path / "bot.py"
    script.write_text(BOT, encoding="utf-8")
    started: list[TextAgent] = []

    def start(mode: str, *extra: str, timeout: float | None = None) -> TextAgent:
        command = shlex.join([sys.executable, str(script), mode, *extra])
        spec = f"text:{command}" if timeout is None else f"text:timeout={timeout}:{command}"
        agent = make_agent(spec)
        assert isinstance(agent, TextAgent)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.close()


def _gone(pid: int, seconds: float = 5.0) -> bool:
    """Whether ``pid`` is dead and reaped (a zombie still takes signal 0)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def test_a_scripted_program_plays_full_matches(bot: Bot, tmp_path: Path) -> None:
    log = tmp_path / "positions.txt"
    agent = bot("log", str(log))
    result = run_tournament([agent, "random"], matches=2, rules="friendly", seed=0)
    assert result.pair(agent.name, "random")["match"]["rate"] == 1.0
    assert agent.moves > 50
    written = log.read_text(encoding="utf-8").split("=====\n")[:-1]
    assert len(written) == agent.moves
    assert all(p.startswith(("You are the dealer.", "The opponent is the dealer."))
               and "Legal moves" in p for p in written)
    pid = agent.pid
    agent.close()
    assert _gone(pid) and not agent.running
    with pytest.raises(TextAgentError, match="closed"):
        agent.act(VectorGame(1, seed=0).observe())


@pytest.mark.parametrize(("mode", "expected"), [
    ("banana", r"move 1 of .*answer 'banana' refused: .*not a move.*Legal moves: take"),
    ("illegal", r"move 1 of .*answer 'knock KS' refused: .*on the first turn you may only "
                r"take the upcard.*Legal moves: take = take the upcard"),
    ("exit", r"move 1 of .*exited \(code 3\) without answering; legal moves: take"),
])
def test_bad_answers_are_reported_not_replaced(bot: Bot, mode: str, expected: str) -> None:
    agent = bot(mode)
    obs = VectorGame(2, seed=0).observe()
    with pytest.raises(TextAgentError, match=expected):
        agent.act(obs)
    if mode == "exit":
        assert not agent.running
    else:  # a refused answer leaves the program running: it may be asked again
        assert agent.running
        with pytest.raises(TextAgentError, match="move 2 of"):
            agent.act(obs)


def test_a_late_answer_kills_the_program(bot: Bot) -> None:
    agent = bot("slow", timeout=0.3)
    assert agent.timeout == 0.3
    start = time.monotonic()
    with pytest.raises(TextAgentError, match=r"no answer within 0.3 s .*legal moves: take"):
        agent.act(VectorGame(1, seed=0).observe())
    assert time.monotonic() - start < 5
    assert _gone(agent.pid) and not agent.running


def test_output_nobody_asked_for_is_a_protocol_error(bot: Bot) -> None:
    agent = bot("twice")
    obs = VectorGame(1, seed=0).observe()
    agent.act(obs)
    time.sleep(0.5)  # the stray second line has arrived by now
    with pytest.raises(TextAgentError, match="wrote 'and another thing' before it was asked"):
        agent.act(obs)
    assert _gone(agent.pid)


def test_garbage_collection_reaps_the_program(tmp_path: Path) -> None:
    script = tmp_path / "bot.py"
    script.write_text(BOT, encoding="utf-8")
    agent = TextAgent([sys.executable, str(script), "first"], timeout=5)
    assert agent.act(VectorGame(2, seed=2).observe()).shape == (2,)
    pid = agent.pid
    del agent
    gc.collect()
    assert _gone(pid)


def test_spec_parsing() -> None:
    assert parse_text_spec("text:python bot.py") == ("python bot.py", 30.0)
    assert parse_text_spec("text:timeout=2.5:python bot.py") == ("python bot.py", 2.5)
    assert parse_text_spec("text:python -c 'a: b'") == ("python -c 'a: b'", 30.0)
    for spec, why in [("text:", "needs a command"), ("text:timeout=2:", "needs a command"),
                      ("text:timeout=0:x", "positive"), ("text:timeout=soon:x", "positive"),
                      ("text:speed=1:x", "unknown option 'speed'")]:
        with pytest.raises(ValueError, match=why):
            make_agent(spec)
        with pytest.raises(ValueError, match=why):
            check_agent_spec("opponents.agents", spec)
    check_agent_spec("opponents.agents", "text:timeout=5:python bot.py")
    with pytest.raises(FileNotFoundError):
        make_agent("text:/no/such/program --flag")
