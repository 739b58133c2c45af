"""hgin play answers a plain word with what a move is, not "malformed card"."""

from __future__ import annotations

import io

import pytest

from hgin_env.apps.play import main


@pytest.mark.parametrize("word", ["hello", "help me", "what now"])
def test_a_plain_word_is_not_a_malformed_card(word: str) -> None:
    answers = iter([word, "quit"])
    out = io.StringIO()
    assert main(["--opponent", "random", "--seed", "7", "--color", "never"],
                input_fn=lambda _prompt: next(answers), out=out) == 0
    text = out.getvalue()
    assert "malformed card" not in text
    assert (f"I don't understand {word!r}: it is not a move (a move's number, a card to "
            "discard such as 7H, draw, take, pass or knock 7H). Type 'help' for the "
            "commands.") in text


def test_a_card_like_typo_still_says_what_a_card_is() -> None:
    answers = iter(["7Z", "quit"])
    out = io.StringIO()
    main(["--opponent", "random", "--seed", "7", "--color", "never"],
         input_fn=lambda _prompt: next(answers), out=out)
    assert "malformed card '7Z'" in out.getvalue()
