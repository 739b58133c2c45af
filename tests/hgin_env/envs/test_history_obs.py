"""The PettingZoo env's ``history=True`` switch: every observation carries the hand's
public history from the observer's seat, so any PettingZoo loop can seat ``search``."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import api_test

import hgin_env
from hgin_env.engine import VectorGame
from hgin_env.envs.aec import raw_env
from hgin_env.history import HISTORY_KEYS, PublicHistory
from hgin_env.rules import load_rules


def _first_legal(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[-1])


def test_history_observations_match_an_independent_history() -> None:
    """The env's history equals a PublicHistory kept beside a VectorGame(1) that plays
    the same actions from the same seed, for both seats, through several hands."""
    rules = load_rules("classic")
    env = raw_env(rules=rules, history=True)
    env.reset(seed=17)
    game = VectorGame(1, rules, seed=17, autoreset=False)
    reference = PublicHistory(game)
    hands = 0
    for _ in range(600):
        if env.match_over:
            break
        for agent in env.agents:
            seat = env.possible_agents.index(agent)
            obs = env.observe(agent)
            assert env.observation_space(agent).contains(obs)
            expected = reference.observe(np.array([seat]))
            for key in HISTORY_KEYS:
                np.testing.assert_array_equal(obs[key], expected[key][0])
        mover = int(game.current_player[0])
        action = _first_legal(env.observe(env.agent_selection)["action_mask"])
        env.step(action)
        _, info = game.step(np.array([action]))
        reference.step(game, np.array([mover]), np.array([action]), info)
        hands += bool(info["hand_over"][0])
    assert hands >= 2


def test_without_the_switch_observations_are_unchanged() -> None:
    env = hgin_env.env()
    env.reset(seed=0)
    assert set(env.observe(env.agent_selection)) == {"observation", "action_mask"}
    assert set(env.observation_space(env.agent_selection).spaces) == {"observation",
                                                                     "action_mask"}


def test_the_history_env_passes_pettingzoos_api_test() -> None:
    api_test(hgin_env.env(history=True), num_cycles=200)


def test_a_plain_pettingzoo_loop_can_seat_search() -> None:
    from agents import make_agent

    search = make_agent("search:samples=2,particles=8,top_k=2", seed=3)
    env = hgin_env.env(rules="friendly", history=True)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    moves = 0
    for agent in env.agent_iter(max_iter=30):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        if agent == "player_0":  # search, from the env's own observation
            action = int(search.act({k: v[None] for k, v in obs.items()}, rng=rng)[0])
            moves += 1
        else:
            action = _first_legal(obs["action_mask"])
        assert obs["action_mask"][action] == 1
        env.step(action)
    assert moves > 5


def test_search_refuses_an_observation_without_history() -> None:
    from agents import make_agent

    search = make_agent("search:samples=2,particles=8,top_k=2", seed=3)
    env = hgin_env.env()
    env.reset(seed=5)
    obs = env.observe(env.agent_selection)
    with pytest.raises(ValueError, match="public history"):
        search.act({k: v[None] for k, v in obs.items()})


def test_history_switch_is_checked() -> None:
    with pytest.raises(ValueError, match="history"):
        raw_env(history="yes")  # type: ignore[arg-type]
