"""The names ``hgin_env`` itself exposes, each loaded on first use: ``env``, ``raw_env``,
``parallel_env`` (from ``hgin_env.envs.aec``) and the ``gin_rummy_v4`` module, the drop-in
for ``from pettingzoo.classic import gin_rummy_v4`` (PettingZoo 1.27 removed it)."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

import hgin_env
from hgin_env.envs import aec
from hgin_env.envs import gin_rummy_v4 as module


def test_parallel_env_is_the_aec_modules_and_passes_parallel_api_test() -> None:
    assert hgin_env.parallel_env is aec.parallel_env
    parallel_api_test(hgin_env.parallel_env(), num_cycles=60)


def _first_legal(observations: dict) -> dict[str, int]:
    # the agent not to move has an all-zero mask; its action is ignored by the wrapper
    return {agent: int(np.argmax(obs["action_mask"])) for agent, obs in observations.items()}


def test_parallel_env_repeats_from_a_seed() -> None:
    first, second = hgin_env.parallel_env(), hgin_env.parallel_env()
    (obs_a, _), (obs_b, _) = first.reset(seed=5), second.reset(seed=5)
    for _ in range(30):
        assert obs_a.keys() == obs_b.keys()
        for agent in obs_a:
            np.testing.assert_array_equal(obs_a[agent]["observation"],
                                          obs_b[agent]["observation"])
            np.testing.assert_array_equal(obs_a[agent]["action_mask"],
                                          obs_b[agent]["action_mask"])
        assert sum(int(obs["action_mask"].any()) for obs in obs_a.values()) == 1
        obs_a, rew_a, *_ = first.step(_first_legal(obs_a))
        obs_b, rew_b, *_ = second.step(_first_legal(obs_b))
        assert rew_a == rew_b


def test_gin_rummy_v4_is_an_alias_of_the_envs_module() -> None:
    from hgin_env import gin_rummy_v4

    assert gin_rummy_v4 is module is hgin_env.gin_rummy_v4
    assert {"env", "raw_env", "parallel_env"} <= set(dir(gin_rummy_v4))
    env = gin_rummy_v4.env()
    env.reset(seed=42)
    assert env.possible_agents == ["player_0", "player_1"]
    assert env.observation_space("player_0")["observation"].shape == (4, 52)
    assert env.action_space("player_1").n == 110


def test_unknown_names_are_one_line_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'gin_rummy_v5'"):
        _ = hgin_env.gin_rummy_v5
