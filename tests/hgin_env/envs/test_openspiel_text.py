"""``python_hollywood_gin``'s own text form of a state (never a pickle), and moves that are
refused without changing the state.

Both were holes: pyspiel's form of a Python game's state ends in a base64 pickle that
``game.deserialize_state`` unpickled (a crafted string ran a shell command), and a refused
action had already written to the players' histories.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pyspiel = pytest.importorskip("pyspiel", reason="needs OpenSpiel: pip install 'hgin[openspiel]'")

from hgin_env import actions as A  # noqa: E402
from hgin_env.envs import openspiel as og  # noqa: E402
from hgin_env.envs import openspiel_text  # noqa: E402


class _Payload:
    """Unpickling this runs ``touch PATH``: what a hostile state string carried."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return (os.system, (f"touch {self.path}",))


def _random_state(game: pyspiel.Game, seed: int, steps: int) -> pyspiel.State:
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    for _ in range(steps):
        if state.is_terminal():
            break
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    return state


def _same(a: pyspiel.State, b: pyspiel.State) -> None:
    assert a.serialize() == b.serialize()
    assert str(a) == str(b) and a.history() == b.history()
    assert a.move_number() == b.move_number() and a.current_player() == b.current_player()
    assert a.is_terminal() == b.is_terminal()
    if a.is_terminal():
        assert a.returns() == b.returns()
        return
    if a.is_chance_node():
        assert a.chance_outcomes() == b.chance_outcomes()
    else:
        assert a.legal_actions() == b.legal_actions()
    for p in (0, 1):
        assert a.information_state_string(p) == b.information_state_string(p)
        assert a.observation_string(p) == b.observation_string(p)
        assert a.observation_tensor(p) == b.observation_tensor(p)


# ----------------------------------------------------------------------------- security


def test_pickled_state_string_runs_no_code_and_is_refused(tmp_path: Path) -> None:
    game = pyspiel.load_game("python_hollywood_gin")
    target = tmp_path / "owned"
    payload = base64.b64encode(pickle.dumps(_Payload(target))).decode()
    crafted = f"history=\nmove_number=0\n__dict__={payload}"
    with pytest.raises(ValueError, match="pickled form is refused"):
        game.deserialize_state(crafted)
    # pyspiel's own serialisation of a real state (a pickle inside) is refused as well.
    real = pyspiel.serialize_game_and_state(game, _random_state(game, 0, 30))
    with pytest.raises(ValueError, match="refused"):
        og.deserialize_game_and_state(real)
    # The payload inside our JSON (where an engine array belongs) is data, never unpickled.
    text = json.loads(_random_state(game, 1, 40).serialize())
    text["engine"]["hands"] = payload
    with pytest.raises(ValueError, match="engine array 'hands'"):
        game.deserialize_state(json.dumps(text))
    assert not target.exists()


def test_own_serialize_is_json_without_a_pickle() -> None:
    game = pyspiel.load_game("python_hollywood_gin")
    text = _random_state(game, 2, 200).serialize()
    body = json.loads(text)
    assert body["format"] == "hgin-openspiel-state" and body["version"] == 1
    assert "__dict__" not in text and len(text) < openspiel_text.max_chars(game.history_limit())


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("params", [
    "python_hollywood_gin(columns=1)",
    "python_hollywood_gin(rules=bonus,big_gin=1,reward=points,max_hands=2)",
    "python_hollywood_gin(rules=classic,max_hands=1)",
])
@pytest.mark.parametrize("steps", [0, 1, 9, 22, 23, 60, 140, 400, 5000])
def test_round_trip_is_exact_and_plays_on_the_same(params: str, steps: int) -> None:
    game = pyspiel.load_game(params)
    state = _random_state(game, seed=steps, steps=steps)
    copy = game.deserialize_state(state.serialize())
    _same(copy, state)
    rng = np.random.default_rng(steps)
    for _ in range(200):  # both continue with the same moves and stay equal
        if state.is_terminal():
            break
        if state.is_chance_node():
            action = int(rng.choice([o for o, _ in state.chance_outcomes()]))
        else:
            action = int(rng.choice(state.legal_actions()))
        state.apply_action(action)
        copy.apply_action(action)
    _same(copy, state)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), steps=st.integers(0, 700))
def test_round_trip_property(seed: int, steps: int) -> None:
    game = pyspiel.load_game("python_hollywood_gin(max_hands=3)")
    state = _random_state(game, seed, steps)
    _same(game.deserialize_state(state.serialize()), state)
    again, copy = og.deserialize_game_and_state(og.serialize_game_and_state(game, state))
    assert again.get_parameters() == game.get_parameters()
    _same(copy, state)


def test_resampled_world_round_trips() -> None:
    """A world from resample_from_infostate has hidden cards no action history gives."""
    game = pyspiel.load_game("python_hollywood_gin")
    state = _random_state(game, seed=8, steps=90)
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    player = state.current_player()
    sampler = iter(np.random.default_rng(3).random(10).tolist())
    world = state.resample_from_infostate(player, lambda: next(sampler))
    assert str(world) != str(state)  # the opponent's hidden cards differ
    copy = game.deserialize_state(world.serialize())
    _same(copy, world)
    assert copy.hgin_state().hands[0].tolist() == world.hgin_state().hands[0].tolist()


# ----------------------------------------------------------------------------- bad strings


def _bad_strings(game: pyspiel.Game) -> list[tuple[object, str]]:
    good = json.loads(_random_state(game, 5, 120).serialize())

    def edited(**changes: object) -> str:
        return json.dumps({**good, **changes})

    def engine_edit(key: str, value: object) -> str:
        return json.dumps({**good, "engine": {**good["engine"], key: value}})

    hands = good["engine"]["hands"]
    return [
        ("", "not a python_hollywood_gin state string"),
        (b"{}", "must be text"),
        ("[" * 100_000, "not a python_hollywood_gin state string"),
        ("{" + '"a":' * 3 + "[" * 100_000, "nests too deeply|not valid JSON"),
        ("{" * 100_000, "not valid JSON"),
        ("{not json", "not valid JSON"),
        (" " * 10_000_000, "more than this game's limit"),
        ('{"format": "hgin-openspiel-state", "version": NaN}', "NaN is not a number"),
        (edited(format="other"), "format must be"),
        (edited(version=2), "version 2 is not supported"),
        (json.dumps({k: v for k, v in good.items() if k != "views"}), r"missing \['views'\]"),
        (edited(extra=1), r"unexpected \['extra'\]"),
        (edited(stage="lunch"), "stage must be one of"),
        (edited(dealer=7), "dealer must be an integer"),
        (edited(dealt=[1, 1]), "dealt holds a card twice"),
        (edited(dealt=[99]), "not a card id"),
        (edited(history="0:5,x"), "history entry 1"),
        (edited(history="2:5"), "history entry 0"),
        (edited(history="0:108"), "history entry 0"),
        (edited(history=",".join(["0:1"] * (game.history_limit() + 1))), "more than one episode"),
        (edited(totals=[0, "x"]), "totals must be two finite numbers"),
        (edited(totals=[1e999, 0]), "Infinity is not a number"),
        (edited(totals=[True, 0]), "totals must be two finite numbers"),
        (edited(views=["zz", ""]), r"views\[0\] must be hex"),
        (edited(views=["", "ff00"]), r"views\[1\] holds an unknown event kind"),
        (edited(past=["x", ""]), r"past\[0\]"),
        (edited(stage="dealer"), "inconsistent"),
        (edited(engine=None), "inconsistent"),
        (edited(hands_done=500), "hands_done must be an integer|inconsistent"),
        (engine_edit("hands", [[1, 2, 3]]), "engine state is refused"),
        (engine_edit("hands", [[hands[0][1], hands[0][0] | 1]]), "engine state is refused"),
        (engine_edit("hands", [[[[[1]]]]]), "nests too deeply"),
        (engine_edit("phase", [1.5]), "not a 64-bit integer"),
        (engine_edit("phase", [2**70]), "not a 64-bit integer"),
        (engine_edit("deck", [list(range(52))[::-1]]), "engine state is refused"),
        (json.dumps({**good, "engine": {k: v for k, v in good["engine"].items()
                                        if k != "pile"}}), "no 'pile' array"),
    ]


def test_bad_state_strings_are_one_line_value_errors() -> None:
    game = pyspiel.load_game("python_hollywood_gin")
    for text, message in _bad_strings(game):
        start = time.process_time()
        with pytest.raises(ValueError, match=message) as info:
            game.deserialize_state(text)
        assert "\n" not in str(info.value), str(info.value)
        assert time.process_time() - start < 2.0, message


def test_bad_game_lines_are_refused() -> None:
    game = pyspiel.load_game("python_hollywood_gin")
    state_line = _random_state(game, 6, 50).serialize()
    head = {"format": og.GAME_FORMAT, "version": 1, "game": {}}
    cases = [
        (state_line, "not an hgin game-and-state string"),
        ("x" * 5000 + "\n" + state_line, "not an hgin game-and-state string"),
        (json.dumps({**head, "format": "x"}) + "\n" + state_line, "must have format"),
        (json.dumps({**head, "version": 9}) + "\n" + state_line, "version 9"),
        (json.dumps({**head, "game": {"shell": "rm"}}) + "\n" + state_line,
         "'shell' is not a parameter"),
        (json.dumps({**head, "game": {"columns": "1"}}) + "\n" + state_line, "must be int"),
        (json.dumps({**head, "game": {"knock_limit": 11}}) + "\n" + state_line,
         "does not load"),
        ("{" + "[" * 3000 + "\n" + state_line, "not valid JSON"),
    ]
    for text, message in cases:
        with pytest.raises(ValueError, match=message) as info:
            og.deserialize_game_and_state(text)
        assert "\n" not in str(info.value)


# ----------------------------------------------------------------------------- refused moves


def _positions(game: pyspiel.Game, count: int) -> list[pyspiel.State]:
    out = []
    for seed in range(count):
        state = _random_state(game, 100 + seed, int(np.random.default_rng(seed).integers(0, 300)))
        if not state.is_terminal():
            out.append(state)
    return out


def test_refused_actions_leave_the_state_exactly_as_it_was() -> None:
    game = pyspiel.load_game("python_hollywood_gin")
    refused = 0
    for state in _positions(game, 60):
        before = state.serialize()
        infos = [state.information_state_string(p) for p in (0, 1)]
        if state.is_chance_node():
            offered = {o for o, _ in state.chance_outcomes()}
            bad = [a for a in (*range(0, 256, 7), 52, 255) if a not in offered]
        else:
            legal = set(state.legal_actions())
            bad = [*[a for a in range(A.NUM_ACTIONS) if a not in legal][:12], A.NUM_ACTIONS, 300]
        for action in bad:
            with pytest.raises(Exception, match=rf"{action}.*(legal|refused)"):
                state.apply_action(action)
            refused += 1
        assert state.serialize() == before
        assert [state.information_state_string(p) for p in (0, 1)] == infos
    assert refused > 500


def test_refused_chance_outcomes_name_the_problem() -> None:
    game = pyspiel.load_game("python_hollywood_gin")
    state = game.new_initial_state()
    with pytest.raises(Exception, match="first dealer must be seat 0 or 1"):
        state.apply_action(5)
    state.apply_action(0)
    state.apply_action(7)
    with pytest.raises(Exception, match="not dealt yet"):
        state.apply_action(7)  # a duplicated card is refused at once, not at the 21st
    with pytest.raises(Exception, match=r"card id 0\.\.51"):
        state.apply_action(60)
    for card in range(20):
        if card != 7:
            state.apply_action(card)
    state.apply_action(30)  # the upcard
    state.apply_action(A.PASS)
    state.apply_action(A.PASS)
    state.apply_action(A.DRAW_STOCK)
    hand = [c for c in range(52) if state.hgin_state().hands[0, 1] >> c & 1]
    with pytest.raises(Exception, match="one of the 31 cards in the stock"):
        state.apply_action(hand[0])  # a card already in hand cannot be drawn
    assert state.is_chance_node() and len(state.chance_outcomes()) == 31
