"""Text rendering (``hgin_env.ui.render``) and the terminal game (``hgin_env.apps.play``),
the latter driven by scripted input."""

from __future__ import annotations

import io
import itertools
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hgin_env import actions as A
from hgin_env.apps.play import main
from hgin_env.cards import parse, parse_card
from hgin_env.engine import VectorGame
from hgin_env.hollywood import replay
from hgin_env.rules import load_rules
from hgin_env.ui import render as R
from hgin_env.ui.moves import move_options, parse_command
from tests.helpers.paths import ROOT
from tests.helpers.signals import sigint_default

# ----------------------------------------------------------------------------- render


def test_arrangement_groups_melds_and_marks_deadwood() -> None:
    text = R.arrangement_text(parse("KD 3C 9S 4H AC 6H 9C 5H 2C 9D 7H"))
    assert text == "[A♣ 2♣ 3♣] [4♥ 5♥ 6♥ 7♥] [9♣ 9♦ 9♠]   deadwood: K♦ = 10"
    assert R.arrangement_text(parse("KD QS")) == "deadwood: Q♠ K♦ = 20"


def test_colour_only_when_asked() -> None:
    plain = R.card_text(parse_card("7H"))
    coloured = R.card_text(parse_card("7H"), R.Style(True))
    assert plain == "7♥" and coloured == "\x1b[31m7♥\x1b[0m"
    assert R.card_text(parse_card("TS"), R.Style(True)) == "10♠"  # black suits stay plain
    assert not R.supports_color(io.StringIO())


def test_supports_color_respects_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert R.supports_color(Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not R.supports_color(Tty())
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert R.supports_color(io.StringIO())


def test_sheet_shows_scores_open_columns_winners_and_wins() -> None:
    # docs/rules.md example 3 (friendly): A = player 0 wins 30, 43, 35.
    sheet = replay("friendly", [(0, 30), (0, 43), (0, 35)])
    text = R.sheet_text(sheet, load_rules("friendly"))
    lines = text.splitlines()
    assert lines[0] == "Score sheet (target 100 per column)"
    assert lines[2].split() == ["player_0", "108*", "78", "35", "3"]
    assert lines[3].split() == ["player_1", "-", "-", "-", "0"]  # no column opened yet
    assert "won by player_0" in lines[4] and lines[4].count("open") == 2
    assert "bonus" not in text


def test_sheet_shows_bonuses_and_totals_in_bonus_profile() -> None:
    rules = load_rules("bonus")
    sheet = replay(rules, [(1, 60), (1, 50)])
    text = R.sheet_text(sheet, rules, names=("Ann", "Bob"))
    assert "bonus" in text and "total" in text
    bob = next(line for line in text.splitlines() if line.startswith("Bob")).split()
    # Column I decided for Bob, Ann at 0: shutout bonus 200 + 2 boxes of 25.
    assert bob[:4] == ["Bob", "110*", "50", "-"]
    assert bob[-2:] == ["250", str(160 + 250)]


def test_table_hides_the_opponent_hand_but_shows_known_cards() -> None:
    game = VectorGame(1, "friendly", seed=4)
    game.step(np.array([A.TAKE_DISCARD]))  # the non-dealer takes the upcard
    mover = int(game.current_player[0])
    taken = int(game.taken_card[0])
    other = 1 - mover
    text = R.table_text(game, 0, viewer=other)
    assert f"took from the pile: {R.card_text(taken)}" in text
    assert "10 cards hidden" not in text and "11 cards hidden" in text
    spectator = R.table_text(game, 0, viewer=None)
    assert "hidden" not in spectator
    assert "may not discard it" in spectator
    assert "Stock: 31 cards" in spectator
    assert "Discard pile: empty   Stock" in spectator and "(empty)" not in spectator


def test_dead_hand_and_empty_showdown_text(monkeypatch: pytest.MonkeyPatch) -> None:
    game = VectorGame(1, "friendly", seed=0)
    assert R.showdown_text(game) == "No hand has finished yet."
    record = game.last_hand  # a copy: the engine's own record is not written here
    record.valid[0] = record.dead[0] = True
    monkeypatch.setattr(VectorGame, "last_hand", property(lambda self: record))
    assert R.showdown_text(game).startswith("Dead hand")


# ----------------------------------------------------------------------------- play


def _one_column_rules(tmp_path: Path) -> str:
    path = tmp_path / "one.toml"
    path.write_text('profile = "bonus"\ncolumns = 1\n', encoding="utf-8")
    return str(path)


def test_scripted_full_match_with_bad_input(tmp_path: Path) -> None:
    junk = ["", "zz", "99", "7Z", "knock QQ", "discard", "sheet", "table", "moves", "help",
            "x 2X", "\t", "k", "0", "1"]
    script = itertools.cycle(junk)
    prompts = []

    def scripted(prompt: str) -> str:
        prompts.append(prompt)
        return next(script)

    out = io.StringIO()
    rc = main(["--opponent", "random", "--seed", "7", "--rules", _one_column_rules(tmp_path),
               "--color", "never"], input_fn=scripted, out=out)
    text = out.getvalue()
    assert rc == 0
    assert "wins the match" in text or "You win the match" in text
    assert "there is no move 99" in text and "I don't understand 'zz'" in text
    assert "type a move number" in text and "Commands:" in text
    assert "Score sheet" in text and "points to" in text
    assert "\x1b[" not in text
    assert len(prompts) > 15
    _check_narration(text)


def _check_narration(text: str) -> None:
    """Each hand's header comes before its first move, whoever makes it, and a
    knock is told once, by the showdown ("... knocked with 5 deadwood")."""
    chunks = text.split("── Hand ")
    assert not any(line.startswith(("Opponent ", "You ")) for line in chunks[0].splitlines())
    assert [int(c.split()[0]) for c in chunks[1:]] == list(range(1, len(chunks)))
    for chunk in chunks[1:-1]:  # every hand but the last ended before the next header
        assert "points to" in chunk or "Dead hand" in chunk
    assert "knocks!" not in text and "You knock!" not in text
    assert "knocked with" in text or "went GIN" in text or "BIG GIN" in text


@pytest.mark.parametrize("seat", ["0", "1"])
def test_hand_header_comes_before_the_opponents_first_move(seat: str, tmp_path: Path) -> None:
    out = io.StringIO()
    first = itertools.repeat("1")  # always the first listed move: knocks come first
    assert main(["--opponent", "random", "--seed", "11", "--seat", seat, "--rules",
                 _one_column_rules(tmp_path), "--color", "never"],
                input_fn=lambda p: next(first), out=out) == 0
    _check_narration(out.getvalue())


def test_scripted_game_by_card_names(tmp_path: Path) -> None:
    """A player who only types words and card names (never numbers)."""
    holder = {}

    def scripted(prompt: str) -> str:
        options = holder["options"]()
        actions = [a for a, _ in options]
        knocks = [a for a in actions if A.KNOCK <= a < A.DRAW_STOCK]
        if knocks:
            return f"knock {R.card_text(knocks[0] - A.KNOCK)}"
        discards = [a for a in actions if a < A.KNOCK]
        if discards:
            card = R.card_text(discards[0])
            return card.replace("♥", "h").replace("♦", "D") if len(card) == 2 else card
        return {A.DRAW_STOCK: "draw", A.PASS: "pass", A.TAKE_DISCARD: "take"}[actions[-1]]

    import hgin_env.apps.play as play_module

    real = play_module.move_options

    def spy(game, seat, style):
        result = real(game, seat, style)
        holder["options"] = lambda: result
        return result

    play_module.move_options = spy
    try:
        out = io.StringIO()
        rc = main(["--opponent", "random", "--seed", "3", "--rules",
                   _one_column_rules(tmp_path)], input_fn=scripted, out=out)
    finally:
        play_module.move_options = real
    assert rc == 0 and "the match" in out.getvalue().splitlines()[-1]


def test_end_of_input_and_quit_exit_cleanly() -> None:
    def eof(prompt: str) -> str:
        raise EOFError

    out = io.StringIO()
    assert main(["--opponent", "random", "--seed", "1"], input_fn=eof, out=out) == 0
    assert "abandoned" in out.getvalue()
    out = io.StringIO()
    assert main(["--opponent", "random", "--seed", "1"], input_fn=lambda p: "quit", out=out) == 0
    assert "Goodbye" in out.getvalue()


def test_bad_opponent_or_rules_give_a_message() -> None:
    out = io.StringIO()
    assert main(["--opponent", "nobody"], input_fn=lambda p: "quit", out=out) == 2
    assert "cannot load opponent 'nobody'" in out.getvalue()
    out = io.StringIO()
    assert main(["--rules", "nope"], input_fn=lambda p: "quit", out=out) == 2
    assert "unknown rules" in out.getvalue()


def test_negative_seed_is_a_one_line_error() -> None:
    out = io.StringIO()
    assert main(["--seed", "-1"], input_fn=lambda p: "quit", out=out) == 2
    assert out.getvalue() == "error: --seed must be a non-negative integer, got -1\n"


def test_cli_turns_ctrl_c_into_one_line(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    import hgin_env.apps.play as play_module

    def interrupted(argv: list[str] | None = None, prog: str = "") -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(play_module, "main", interrupted)
    assert play_module.cli([]) == 130
    assert capsys.readouterr().err.strip() == "Interrupted."


def _script_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), PYTHONIOENCODING="utf-8")


def test_sigint_gives_one_line_and_exit_130() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "hgin_env.apps.play", "--opponent", "random", "--seed", "2"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=_script_env(), cwd=ROOT, encoding="utf-8", preexec_fn=sigint_default)
    try:
        assert "Hollywood gin against random" in proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1


def test_closed_output_gives_one_line() -> None:
    """``python -m hgin_env.play ... | head -1``: the output closes early."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "hgin_env.apps.play", "--opponent", "random", "--seed", "2"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=_script_env(), cwd=ROOT)
    try:
        proc.stdout.readline()
        proc.stdout.close()  # what head does after its first line
        _, err = proc.communicate(input=b"help\n" * 2000 + b"quit\n", timeout=60)
    finally:
        proc.kill()
    text = err.decode("utf-8")
    assert proc.returncode == 1, text
    assert "Traceback" not in text
    assert text.strip().splitlines() == [
        "error: the output was closed (broken pipe); the match was abandoned."]


def _discard_phase_game() -> VectorGame:
    game = VectorGame(1, "friendly", seed=4)
    game.step(np.array([A.TAKE_DISCARD]))
    return game


def test_parse_command_accepts_card_text_and_words() -> None:
    game = _discard_phase_game()
    seat = int(game.current_player[0])
    options = move_options(game, seat, R.Style())
    held = [c for c in range(52) if int(game.hands[0, seat]) >> c & 1]
    taken = int(game.taken_card[0])
    card = next(c for c in held if c != taken)
    text = R.card_text(card)  # e.g. "10♥"
    letters = text.replace("♣", "C").replace("♦", "D").replace("♥", "H").replace("♠", "S")
    for typed in (text, letters, letters.lower(), f"discard {letters}", f"x {text}"):
        assert parse_command(typed, options, game, seat) == ("move", card, ""), typed
    kind, _, message = parse_command(R.card_text(taken), options, game, seat)
    assert kind == "error" and "may not discard it" in message
    not_held = next(c for c in range(52) if c not in held)
    kind, _, message = parse_command(R.card_text(not_held), options, game, seat)
    assert kind == "error" and "don't hold" in message
    kind, _, message = parse_command("d", options, game, seat)
    assert kind == "error" and "already drawn" in message
    kind, _, message = parse_command(f"knock {letters}", options, game, seat)
    if A.KNOCK + card not in [a for a, _ in options]:
        assert kind == "error" and "knock limit" in message
    assert parse_command("2", options, game, seat) == ("move", options[1][0], "")


def test_parse_command_in_draw_phases() -> None:
    game = VectorGame(1, "friendly", seed=4)
    seat = int(game.current_player[0])
    options = move_options(game, seat, R.Style())
    assert [a for a, _ in options] == [A.TAKE_DISCARD, A.PASS]
    assert parse_command("t", options, game, seat)[:2] == ("move", A.TAKE_DISCARD)
    assert parse_command("PASS", options, game, seat)[:2] == ("move", A.PASS)
    kind, _, message = parse_command("draw", options, game, seat)
    assert kind == "error" and "upcard" in message
    kind, _, message = parse_command("7h", options, game, seat)
    assert kind == "error" and "upcard" in message
    for junk in ("", "   ", "foo bar", "11", "-1", "knock", "1.5", "♥", "ZZZZ"):
        kind, _, message = parse_command(junk, options, game, seat)
        assert kind == "error" and message, junk


def test_module_runs_as_a_script() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONIOENCODING="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "hgin_env.apps.play", "--opponent", "random", "--seed", "2"],
        input="help\n1\nbogus\nquit\n", capture_output=True, text=True, env=env, cwd=ROOT,
        timeout=120, encoding="utf-8",
    )
    assert result.returncode == 0, result.stderr
    assert "Your moves:" in result.stdout and "Goodbye" in result.stdout
    assert "Traceback" not in result.stderr


def test_terminal_without_unicode_gets_suit_letters() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    answers = iter(["7♥", "quit"])
    assert main(["--opponent", "random", "--seed", "1"], input_fn=lambda p: next(answers),
                out=stream) == 0
    stream.flush()
    text = raw.getvalue().decode("ascii")
    assert "Your moves:" in text and "Goodbye" in text


def test_refusals_name_the_keys_only_where_there_are_keys() -> None:
    """The terminal game quotes its keys; the play page (buttons, keys=False) does not."""
    from hgin_env.ui.moves import why_illegal

    game = VectorGame(1, "friendly", seed=4)  # the upcard offer
    seat = int(game.current_player[0])
    terminal = why_illegal(game, seat, A.DRAW_STOCK)
    page = why_illegal(game, seat, A.DRAW_STOCK, keys=False)
    assert "(t)" in terminal and "(p)" in terminal
    assert "(t)" not in page and "(p)" not in page and "take the upcard" in page
    game.step(np.array([A.PASS]))
    game.step(np.array([A.PASS]))  # both passed: the non-dealer must draw from the stock
    seat = int(game.current_player[0])
    assert why_illegal(game, seat, A.PASS).endswith("(d)")
    assert why_illegal(game, seat, A.PASS, keys=False).endswith("draw from the stock")
    game.step(np.array([A.DRAW_STOCK]))
    held = int(game.hands[0, seat])
    game.step(np.array([(held & -held).bit_length() - 1]))  # a discard: the other must draw
    seat = int(game.current_player[0])
    terminal = why_illegal(game, seat, A.PASS)
    page = why_illegal(game, seat, A.PASS, keys=False)
    assert terminal.startswith("draw first: 'd' for the stock or 't' to take ")
    assert page.startswith("draw first: draw from the stock or take ")
    assert "'" not in page


def test_a_closed_pile_is_named_as_the_reason() -> None:
    """After the take limit, 'take' is refused because the pile is closed, not with the
    generic 'draw first' (which would wrongly offer the take)."""
    from hgin_env.rules import load_rules
    from hgin_env.ui.moves import why_illegal

    game = VectorGame(1, load_rules("friendly").replace(max_discard_takes=1), seed=4)
    game.step(np.array([A.TAKE_DISCARD]))  # the upcard: the one take this hand allows
    held = int(game.hands[0, int(game.current_player[0])]) & ~(1 << int(game.taken_card[0]))
    game.step(np.array([(held & -held).bit_length() - 1]))
    seat = int(game.current_player[0])
    assert game.phase[0] == A.PHASE_DRAW and not game.legal_action_mask()[0, A.TAKE_DISCARD]
    for keys in (True, False):
        reason = why_illegal(game, seat, A.TAKE_DISCARD, keys=keys)
        assert "pile is closed" in reason and "take limit" in reason
        assert reason.endswith("(d)") == keys


def test_a_match_cut_off_at_the_bound_ends_the_terminal_game(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The match bound (lowered here) ends the game with 'nobody wins', not a winner."""
    from hgin_env.apps.play import play
    from hgin_env.engine import hand as hand
    from hgin_env.envs.opponents import load_agent
    from hgin_env.rules import load_rules

    monkeypatch.setattr(hand, "MAX_HANDS_PER_MATCH", 2)
    rules = load_rules("friendly").replace(straight_gin=True, max_discard_takes=2)
    out = io.StringIO()
    draws = itertools.repeat("d")  # never knock: draw, then the first listed discard
    answers = (line for pair in zip(draws, itertools.repeat("1")) for line in pair)
    assert play(load_agent("random"), rules, seed=2, input_fn=lambda p: next(answers),
                out=out, color=False) == 0
    text = out.getvalue()
    assert "cut off undecided" in text and "wins the match" not in text
