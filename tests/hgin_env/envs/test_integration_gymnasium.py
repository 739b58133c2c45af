"""Gymnasium's own wrappers on hgin's envs, as Gymnasium's docs use them (issue 36):
the vector env in every autoreset mode under ``gymnasium.wrappers.vector``, the mask's
place in ``FlattenObservation``, bool masks, and illegal moves that are never silent."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import FlattenObservation
from gymnasium.wrappers.vector import FlattenObservation as VectorFlattenObservation

from hgin_env import ENV_ID
from hgin_env import actions as A
from hgin_env.envs.aec import TERMINAL_MASK_ACTION
from hgin_env.envs.gym_env import HollywoodGinEnv, HollywoodGinVectorEnv
from hgin_env.envs.spaces import IllegalMoveWarning, flat_slices, observation_space
from hgin_env.envs.wrappers import FlatObservation
from hgin_env.rules import load_rules

SHORT = load_rules("bonus").replace(columns=1)  # one column: short matches
# Knock whenever allowed, else draw, else discard the highest card: stateless, so two
# envs that step the same games in a different order still play the same matches.
_WEIGHT = np.concatenate([1 + np.arange(52) % 13 / 13, np.full(52, 5.0), [3.0, 0.5, 1.0, 4.0]])


def policy(obs: dict[str, np.ndarray]) -> np.ndarray:
    return np.argmax(np.asarray(obs["action_mask"], np.float64) * _WEIGHT, axis=-1)


def _matches(mode: AutoresetMode, steps: int) -> list[list[tuple[float, list[int]]]]:
    """Per game: (return, final scores) of each match finished within ``steps`` steps."""
    env = HollywoodGinVectorEnv(3, opponent=policy, rules=SHORT, reward="match", seat=0,
                                autoreset_mode=mode)
    assert env.autoreset_mode == mode and env.metadata["autoreset_mode"] == mode
    obs, _ = env.reset(seed=11)
    returns = np.zeros(3)
    done: list[list[tuple[float, list[int]]]] = [[], [], []]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        returns += reward
        for i in np.flatnonzero(terminated | truncated):
            assert info["_final_info"][i]
            if mode == AutoresetMode.SAME_STEP:
                assert info["_final_obs"][i]
            else:  # the observation is the final one: only the placeholder is legal
                assert "final_obs" not in info
                assert np.flatnonzero(obs["action_mask"][i]).tolist() == [TERMINAL_MASK_ACTION]
            done[i].append((float(returns[i]), info["final_info"]["final_scores"][i].tolist()))
            returns[i] = 0.0
    return done


def test_next_step_and_disabled_play_the_same_matches_as_same_step() -> None:
    same = _matches(AutoresetMode.SAME_STEP, 300)
    nxt = _matches(AutoresetMode.NEXT_STEP, 300)
    assert sum(len(m) for m in same) >= 3
    for a, b in zip(same, nxt, strict=True):  # NEXT_STEP spends one step per restart
        assert b == a[:len(b)] and len(b) >= len(a) - 1
        assert all(abs(r) == 1.0 for r, _ in a)


def test_disabled_waits_for_a_partial_reset() -> None:
    env = HollywoodGinVectorEnv(2, opponent=policy, rules=SHORT, seat=0,
                                autoreset_mode=AutoresetMode.DISABLED)
    obs, _ = env.reset(seed=11)
    for _ in range(400):
        obs, _, terminated, truncated, _ = env.step(policy(obs))
        if (terminated | truncated).any():
            break
    ended = terminated | truncated
    assert ended.any()
    with pytest.raises(ValueError, match=r"match is over.*reset_mask"):
        env.step(policy(obs))
    with pytest.raises(ValueError, match="reset_mask"):
        env.reset(options={"reset_mask": np.array([1, 0])})
    obs, _ = env.reset(options={"reset_mask": ended})
    assert obs["action_mask"][ended].sum() > 0 and env.observation_space.contains(obs)
    env.step(policy(obs))  # every game is live again


def test_same_step_refuses_partial_resets_and_bad_modes() -> None:
    with pytest.raises(ValueError, match="partial resets"):
        HollywoodGinVectorEnv(2).reset(options={"reset_mask": np.ones(2, bool)})
    with pytest.raises(ValueError, match="autoreset_mode must be one of"):
        HollywoodGinVectorEnv(2, autoreset_mode="sometimes")
    assert HollywoodGinVectorEnv(2, autoreset_mode="NextStep").autoreset_mode \
        == AutoresetMode.NEXT_STEP


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED])
def test_gymnasium_vector_flatten_observation(mode: AutoresetMode) -> None:
    env = gym.make_vec(ENV_ID, num_envs=3, autoreset_mode=mode, rules=SHORT, opponent=policy)
    assert isinstance(env.unwrapped, HollywoodGinVectorEnv) and env.autoreset_mode == mode
    flat = VectorFlattenObservation(env)
    where = flat_slices(env.single_observation_space)
    obs, _ = flat.reset(seed=0)
    assert obs.shape == (3, 506) and where["action_mask"] == slice(0, 108)
    for _ in range(20):
        obs, *_ = flat.step(policy({"action_mask": obs[:, where["action_mask"]]}))
    with pytest.raises(ValueError, match="SAME_STEP"):
        VectorFlattenObservation(gym.make_vec(ENV_ID, num_envs=2))  # the default mode


def test_flatten_observation_puts_the_mask_first() -> None:
    env = FlattenObservation(HollywoodGinEnv(opponent="random", seat=0))
    where = flat_slices(env.env.observation_space)
    assert where == {"action_mask": slice(0, 108), "observation": slice(108, 506)}
    raw, _ = env.env.reset(seed=0)
    flat, _ = env.reset(seed=0)
    assert np.array_equal(flat[where["action_mask"]], raw["action_mask"])
    assert np.array_equal(flat[where["observation"]], raw["observation"])
    history = flat_slices(observation_space(SHORT, history=True))  # sorted keys
    assert history["action_mask"] == slice(0, 108) and history["observation"].stop == 506 + \
        history["history"].stop - history["history"].start + 1
    with pytest.raises(ValueError, match="Dict"):
        flat_slices(env.observation_space)


def test_an_illegal_move_warns_and_strict_raises() -> None:
    env = FlatObservation(HollywoodGinEnv(opponent="random", seat=0))
    env.reset(seed=0)
    bad = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.warns(IllegalMoveWarning, match=rf"illegal action {bad} .*strict=True"):
        _, reward, terminated, _, info = env.step(bad)
    assert terminated and reward == -1.0 and info["illegal_move"]["action"] == bad
    strict = HollywoodGinEnv(opponent="random", seat=0, strict=True)
    strict.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=f"illegal action {bad}"):
            strict.step(bad)


def test_bool_masks() -> None:
    env = HollywoodGinEnv(opponent="random", seat=0, mask_dtype=bool)
    obs, _ = env.reset(seed=0)
    assert obs["action_mask"].dtype == np.bool_ and env.observation_space.contains(obs)
    int8 = HollywoodGinEnv(opponent="random", seat=0)
    assert np.array_equal(int8.reset(seed=0)[0]["action_mask"], obs["action_mask"])
    venv = HollywoodGinVectorEnv(2, rules=SHORT, mask_dtype=bool)
    vobs, _ = venv.reset(seed=0)
    assert vobs["action_mask"].dtype == np.bool_ and venv.observation_space.contains(vobs)
    with pytest.raises(ValueError, match="mask_dtype must be"):
        HollywoodGinEnv(mask_dtype=np.float32)
    assert env.action_space.n == A.NUM_ACTIONS


def test_mask_in_infos() -> None:
    env = HollywoodGinEnv(opponent="random", seat=0, mask_in_infos=True)
    plain = HollywoodGinEnv(opponent="random", seat=0)
    obs, info = env.reset(seed=3)
    want, _ = plain.reset(seed=3)
    assert env.observation_space.contains(obs) and obs.shape == (398,)
    assert np.array_equal(obs, want["observation"])
    assert np.array_equal(info["action_mask"], want["action_mask"])
    bad = int(np.flatnonzero(info["action_mask"] == 0)[0])
    with pytest.warns(IllegalMoveWarning):
        obs, _, terminated, _, info = env.step(bad)
    assert terminated and np.flatnonzero(info["action_mask"]).tolist() == [TERMINAL_MASK_ACTION]
    flat = HollywoodGinEnv(opponent="random", seat=0, mask_in_infos=True, mask_dtype=bool)
    assert flat.reset(seed=3)[1]["action_mask"].dtype == np.bool_
    with pytest.raises(ValueError, match="mask_in_infos"):
        HollywoodGinEnv(mask_in_infos=1)
