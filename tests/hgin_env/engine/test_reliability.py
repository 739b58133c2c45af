"""Bad input never crashes deep inside numpy, never hangs and never changes state silently.

A soak over every rule configuration checks the invariants on every step, and
fuzz tests feed random values and bytes into the public entry points.
Marked ``slow`` parts scale with ``HGIN_SLOW_EXAMPLES`` (CI runs them short).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hgin_env
from hgin_env import actions as A
from hgin_env import cards
from hgin_env.engine import VectorGame
from hgin_env.rules import load_rules
from hgin_env.state import validate
from tests.helpers.engine_reference import check_info_batch, check_invariants_batch

SLOW_EXAMPLES = int(os.environ.get("HGIN_SLOW_EXAMPLES", "300"))
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Every switch that changes play, alone and combined.
CONFIGS = {
    "friendly": {},
    "classic": {"profile": "classic"},
    "bonus": {"profile": "bonus"},
    "oklahoma": {"oklahoma": True},
    "straight_gin": {"profile": "classic", "straight_gin": True},
    "big_gin": {"profile": "bonus", "big_gin": True, "big_gin_bonus": 50},
    "open_take": {"forbid_discard_of_taken": False, "max_discard_takes": 3},
    "one_column": {"columns": 1, "target": 250, "dead_hand_dealer": "same"},
    "knock_0": {"knock_limit": 0, "next_dealer": "winner"},
}


def _rules(name: str):
    spec = dict(CONFIGS[name])
    return load_rules(spec.pop("profile", "friendly")).replace(**spec)


# ---------------------------------------------------------------------- soak


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_soak_every_rule_configuration(name: str) -> None:
    """Random (knock-leaning) play; the invariants and the info hold after every step."""
    rules = _rules(name)
    game = VectorGame(64, rules, seed=len(name), reward="points")
    rng = np.random.default_rng(len(name))
    decisions = 0
    for _ in range(4 * SLOW_EXAMPLES):
        mask = game.legal_action_mask()
        noise = rng.random(mask.shape)
        noise[:, A.KNOCK : A.DRAW_STOCK] += 0.5
        noise[mask == 0] = -1
        rewards, info = game.step(noise.argmax(axis=1))
        decisions += game.num_games
        check_invariants_batch(game)
        check_info_batch(rules, rewards, info)
        assert np.allclose(rewards.sum(axis=1), 0.0, atol=1e-6)  # zero-sum every step
    validate(game.state)
    assert decisions == 64 * 4 * SLOW_EXAMPLES


# ---------------------------------------------------------------------- cards


def test_card_text_edge_cases() -> None:
    assert cards.parse("7♥️ 8♥") == cards.parse("7H 8H")  # a pasted emoji carries U+FE0F
    for bad in (None, 3.5, b"7H", ["7H"]):
        with pytest.raises(ValueError, match="must be a string"):
            cards.parse(bad)
    for bad in (3.5, True, "3"):
        with pytest.raises(ValueError, match="must be an integer"):
            cards.mask_to_cards(bad)
    assert cards.mask_to_cards(np.uint64(6)) == [1, 2]


@given(st.text(max_size=40))
@FUZZ
def test_fuzz_parse(text: str) -> None:
    try:
        mask = cards.parse(text)
    except ValueError:
        return
    assert 0 <= mask < 1 << 52
    assert cards.parse(cards.format(mask)) == mask


# ---------------------------------------------------------------------- rules files


def test_rules_profile_chain_is_relative_and_cycle_safe(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "base.toml").write_text('profile = "classic"\ncolumns = 1\n')
    (tmp_path / "sub" / "mine.toml").write_text('profile = "../base.toml"\ntarget = 250\n')
    rules = load_rules(tmp_path / "sub" / "mine.toml")  # resolved from the file, not the cwd
    assert (rules.columns, rules.target, rules.undercut_bonus) == (1, 250, 10)
    (tmp_path / "a.toml").write_text('profile = "b.toml"\n')
    (tmp_path / "b.toml").write_text('profile = "a.toml"\n')
    with pytest.raises(ValueError, match=r"cycle: .*a\.toml -> .*b\.toml -> .*a\.toml"):
        load_rules(tmp_path / "a.toml")
    (tmp_path / "utf16.toml").write_text("target = 250\n", encoding="utf-16")
    with pytest.raises(ValueError, match=r"utf16\.toml"):
        load_rules(tmp_path / "utf16.toml")
    with pytest.raises(ValueError, match="TOML path"):
        load_rules(5)


@given(st.binary(max_size=200))
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzz_rules_files(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "r.toml"
    path.write_bytes(data)
    try:
        rules = load_rules(path)
    except ValueError as err:
        assert str(err)
        return
    assert rules == load_rules(rules)


# ---------------------------------------------------------------------- engine


def test_engine_argument_edge_cases() -> None:
    for bad in (True, 2.5, 0, -1, "4"):
        with pytest.raises(ValueError, match="num_games"):
            VectorGame(bad)
    game = VectorGame(2, seed=0)
    with pytest.raises(ValueError, match=f"action {2**64 - 1} "):
        game.step(np.array([2**64 - 1, 2**64 - 1], np.uint64))


def test_reset_without_seed_continues_the_stream() -> None:
    """As Gymnasium: reset() never replays old deals; reset(seed=s) starts s afresh."""
    game = VectorGame(4, seed=3)
    first = game.deck.copy()
    game.reset()
    assert not np.array_equal(game.deck, first)
    game.reset(seed=3)
    assert np.array_equal(game.deck, first)
    unseeded = VectorGame(4)
    before = unseeded.deck.copy()
    unseeded.reset()
    assert not np.array_equal(unseeded.deck, before)


@given(st.lists(st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                          st.booleans(), st.text(max_size=3)), min_size=3, max_size=3))
@FUZZ
def test_fuzz_vector_step(values: list) -> None:
    game = VectorGame(3, seed=1)
    before = game.state.clone()
    try:
        arr = np.array(values)
    except (OverflowError, ValueError):
        return
    try:
        game.step(arr)
    except ValueError as err:
        assert str(err)
        after = game.state.to_dict()
        for key, value in before.to_dict().items():  # nothing changed
            assert np.array_equal(after[key], value), key
        return
    validate(game.state)


@given(st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True), st.booleans(),
                 st.text(max_size=3), st.none()))
@FUZZ
def test_fuzz_aec_and_gym_step(value) -> None:
    env = hgin_env.env(strict=True)
    env.reset(seed=0)
    try:
        env.step(value)
    except ValueError as err:
        assert str(err)
    from hgin_env.envs.gym_env import HollywoodGinEnv

    gym_env = HollywoodGinEnv(seat=0, opponent="random")
    gym_env.reset(seed=0)
    try:
        gym_env.step(value)
    except ValueError as err:
        assert str(err)
