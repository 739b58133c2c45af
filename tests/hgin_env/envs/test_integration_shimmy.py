"""Shimmy's OpenSpiel-to-PettingZoo wrapper on hgin's OpenSpiel game (issue 36).

``OpenSpielCompatibilityV0(game_name="python_hollywood_gin", config={...})`` is the way
in: Shimmy re-loads the game by its short name on every ``reset``, so a game passed as
``env=pyspiel.load_game("python_hollywood_gin(columns=1)")`` loses its parameters at the
first reset.  The last test shows that, so the warning in docs/integrations.md is checked
against the Shimmy it names."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyspiel", reason="needs OpenSpiel: pip install 'hgin[openspiel]'")
shimmy = pytest.importorskip(
    "shimmy", reason="needs shimmy (2.0.x): pip install 'hgin[shimmy]'")

import pyspiel  # noqa: E402
from pettingzoo.test import api_test  # noqa: E402
from shimmy import OpenSpielCompatibilityV0  # noqa: E402

import hgin_env.envs.openspiel  # noqa: E402,F401  (registers python_hollywood_gin)
from hgin_env import actions as A  # noqa: E402
from hgin_env.observation import OBS_DIM  # noqa: E402

GAME = "python_hollywood_gin"


def _play_out(env, seed: int) -> tuple[int, list[float]]:
    """Masked play to the end (the mask is in infos, Shimmy's convention): a knock when
    one is legal, else a random legal move, so that hands end and the match is decided
    (Shimmy truncates at the game's max_game_length counting chance nodes too, which a
    purely random match of draws and discards can reach first)."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    turns = 0
    for _agent in env.agent_iter(max_iter=100_000):
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        assert obs.shape == (OBS_DIM,)
        legal = np.flatnonzero(info["action_mask"])
        knocks = legal[(legal >= A.KNOCK) & (legal < A.DRAW_STOCK)]
        env.step(int(knocks[0]) if knocks.size else int(rng.choice(legal)))
        turns += 1
    return turns, list(env.game_state.returns())


def test_a_configured_game_plays_to_the_end_with_its_parameters() -> None:
    env = OpenSpielCompatibilityV0(game_name=GAME, config={"columns": 1})
    turns, returns = _play_out(env, seed=0)
    assert env._env.get_parameters()["columns"] == 1  # kept across the reset
    assert turns > 10 and env.agents == [] and not any(env.truncations.values())
    assert env.game_state.is_terminal() and sorted(returns) == [-1.0, 1.0]  # one winner
    again = OpenSpielCompatibilityV0(game_name=GAME, config={"columns": 1})
    assert _play_out(again, seed=0) == (turns, returns)  # Shimmy's seed fixes the chance


def test_shimmys_own_api_test_passes() -> None:
    api_test(OpenSpielCompatibilityV0(game_name=GAME, config={"columns": 1}), num_cycles=200)


def test_a_game_passed_as_env_loses_its_parameters_at_reset() -> None:
    """Shimmy 2.0.1 reloads by short name: the warning docs/integrations.md gives."""
    game = pyspiel.load_game(f"{GAME}(columns=1)")
    env = OpenSpielCompatibilityV0(env=game)
    assert env._env.get_parameters()["columns"] == 1
    env.reset(seed=0)
    default = pyspiel.load_game(GAME).get_parameters()["columns"]
    assert default != 1
    assert env._env.get_parameters()["columns"] == default
