"""Gymnasium interfaces (``hgin_env.envs.gym_env``): the single-agent env against a
fixed opponent and the batched VectorEnv on one VectorGame."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

from hgin_env import actions as A
from hgin_env.envs.aec import TERMINAL_MASK_ACTION
from hgin_env.envs.gym_env import ENV_ID, HollywoodGinEnv, HollywoodGinVectorEnv
from hgin_env.envs.spaces import IllegalMoveWarning
from hgin_env.rules import load_rules
from tests.helpers.greedy_policy import GreedyAgent, greedy_action, greedy_batch

SHORT = load_rules("bonus").replace(columns=1)  # one column: short matches


@pytest.mark.filterwarnings("ignore:.*not having a spec")
def test_check_env_passes(capsys: pytest.CaptureFixture[str]) -> None:
    check_env(HollywoodGinEnv(opponent="random"))
    made = gym.make(ENV_ID, opponent="random", render_mode="ansi")
    check_env(made.unwrapped)  # has a spec, so every render mode is checked too
    capsys.readouterr()


def test_single_agent_episode_rewards_and_infos() -> None:
    env = HollywoodGinEnv(opponent="random", rules=SHORT, reward="match", seat=1)
    obs, info = env.reset(seed=4)
    assert info["seat"] == 1 and env.observation_space.contains(obs)
    rng = np.random.default_rng(0)
    total, steps, hands = 0.0, 0, 0
    terminated = False
    while not terminated:
        assert obs["action_mask"].any()
        obs, reward, terminated, truncated, info = env.step(greedy_action(obs, rng))
        assert not truncated and env.observation_space.contains(obs)
        total += reward
        hands += info["hand_over"]
        steps += 1
    assert info["match_over"] and hands >= 1
    assert total == (1.0 if info["match_won"] else -1.0)
    assert info["final_scores"].shape == (2, 1)
    assert obs["action_mask"].tolist() == [int(i == TERMINAL_MASK_ACTION) for i in range(108)]
    with pytest.raises(RuntimeError, match="reset"):
        env.step(A.PASS)


def test_single_agent_illegal_action() -> None:
    env = HollywoodGinEnv(opponent="random", seat=0)
    obs, _ = env.reset(seed=0)
    bad = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    with pytest.warns(IllegalMoveWarning, match=f"illegal action {bad}"):
        obs, reward, terminated, _, info = env.step(bad)
    assert terminated and reward == -1.0
    assert info["illegal_move"]["action"] == bad and not info["match_won"]
    strict = HollywoodGinEnv(opponent="random", seat=0, strict=True)
    strict.reset(seed=0)
    with pytest.raises(ValueError, match=f"illegal action {bad}"):
        strict.step(bad)
    with pytest.raises(ValueError, match="action 108 is outside the action space"):
        strict.step(108)


def test_opponent_as_agent_callable_or_spec() -> None:
    for opponent in (GreedyAgent(), greedy_batch, "simple"):
        env = HollywoodGinEnv(opponent=opponent, seat=1)
        obs, _ = env.reset(seed=1)
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    with pytest.raises(ValueError, match="unknown agent spec"):
        HollywoodGinEnv(opponent="no-such-agent")
    with pytest.raises(ValueError, match="opponent must be"):
        HollywoodGinEnv(opponent=42)


@pytest.mark.parametrize("make", [
    lambda a: a, np.int64, np.uint16, np.array, lambda a: np.array([a]), float, np.float32,
    lambda a: np.array([a], np.float64),
])
def test_any_integral_scalar_is_an_action(make: object) -> None:
    """RL libraries hand over numpy scalars and 1-element arrays: never a forfeit."""
    env = HollywoodGinEnv(opponent="random", seat=0, rules=SHORT)
    obs, _ = env.reset(seed=0)
    legal = int(np.flatnonzero(obs["action_mask"])[0])
    obs, reward, terminated, _, info = env.step(make(legal))
    assert "illegal_move" not in info and not (terminated and reward == -1.0)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("action", [105.5, float("nan"), float("inf"), 500, -1, 2**64 - 1,
                                    np.uint64(2**64 - 1), "take", None, True,
                                    np.array([105, 106]), np.zeros((1, 1, 2))])
def test_values_that_are_not_action_ids_raise_value_error(action: object, strict: bool) -> None:
    env = HollywoodGinEnv(opponent="random", seat=0, strict=strict)
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(action)
    # Not a forfeit: the match goes on from the same position.
    legal = int(np.flatnonzero(obs["action_mask"])[0])
    *_, info = env.step(legal)
    assert "illegal_move" not in info and not info["match_over"]


def test_uint64_max_is_reported_as_itself() -> None:
    env = HollywoodGinEnv(opponent="random", seat=0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=str(2**64 - 1)):
        env.step(np.uint64(2**64 - 1))


def test_same_seed_same_episode() -> None:
    def run() -> list[bytes]:
        env = HollywoodGinEnv(opponent="random", rules=SHORT)
        obs, _ = env.reset(seed=9)
        rng = np.random.default_rng(1)
        seen = [obs["observation"].tobytes()]
        terminated = False
        while not terminated:
            obs, reward, terminated, _, _ = env.step(greedy_action(obs, rng))
            seen.append(obs["observation"].tobytes() + np.float64(reward).tobytes())
        return seen

    assert run() == run()


# ----------------------------------------------------------------------------- vector env


def test_vector_env_metadata_and_spaces() -> None:
    env = HollywoodGinVectorEnv(3, opponent="random")
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["observation"].shape == (3, 398) and obs["action_mask"].shape == (3, 108)
    assert env.action_space.shape == (3,) and env.single_action_space.n == 108
    assert (env.game.current_player == info["seat"]).all()
    with pytest.raises(ValueError, match="sub-environment"):
        env.step(np.full(3, A.DRAW_STOCK))  # first turns are offers


def test_vector_env_plays_matches_with_same_step_autoreset() -> None:
    env = HollywoodGinVectorEnv(4, opponent=GreedyAgent(), rules=SHORT, reward="match")
    obs, info = env.reset(seed=2)
    rng = np.random.default_rng(0)
    returns = np.zeros(4)
    finished = []
    for _ in range(400):
        obs, reward, terminated, truncated, info = env.step(greedy_batch(obs, rng))
        assert env.observation_space.contains(obs)
        assert not truncated.any()
        # Every game waits for the learner, whose legal moves are in the mask.
        assert (env.game.current_player == env.seats).all()
        assert (obs["action_mask"].sum(axis=1) > 0).all()
        returns += reward
        for i in np.flatnonzero(terminated):
            assert info["_final_obs"][i]
            final = info["final_obs"][i]
            assert env.single_observation_space.contains(final)
            assert final["action_mask"][TERMINAL_MASK_ACTION] == 1
            assert info["final_info"]["match_won"][i] == info["match_won"][i]
            assert returns[i] == (1.0 if info["match_won"][i] else -1.0)
            finished.append(i)
            returns[i] = 0.0
        if len(finished) >= 3:
            break
    assert len(finished) >= 3


@pytest.mark.parametrize("num_envs", [2.5, True, 0, -3, "4", None])
def test_vector_env_rejects_a_bad_number_of_envs(num_envs: object) -> None:
    with pytest.raises(ValueError, match="num_envs must be a positive integer"):
        HollywoodGinVectorEnv(num_envs, opponent="random")


def test_vector_env_actions_integral_floats_and_bad_values() -> None:
    env = HollywoodGinVectorEnv(2, opponent="random", rules=SHORT, seat=0)
    obs, _ = env.reset(seed=0)
    first = obs["action_mask"].argmax(axis=1)
    for bad in (np.array([first[0], 3.5]), np.array([first[0], np.nan]), np.array([-1, 0]),
                np.array([0, 500], np.uint64), np.array(["a", "b"]), first[:1]):
        with pytest.raises(ValueError):
            env.step(bad)
    obs, *_ = env.step(first.astype(np.float32))  # integral floats are action ids
    assert env.observation_space.contains(obs)


def test_vector_env_is_deterministic() -> None:
    def run() -> list[bytes]:
        env = HollywoodGinVectorEnv(2, opponent="random", rules=SHORT)
        obs, _ = env.reset(seed=5)
        rng = np.random.default_rng(3)
        seen = []
        for _ in range(40):
            obs, reward, *_ = env.step(greedy_batch(obs, rng))
            seen.append(obs["observation"].tobytes() + reward.tobytes())
        return seen

    assert run() == run()


def test_vector_env_restores_games_that_wait() -> None:
    """Games where the opponent does not move are stepped and then restored exactly."""
    env = HollywoodGinVectorEnv(6, opponent="random", rules=SHORT, seat=0)
    env.reset(seed=8)
    game = env.game
    before = game.state_dict()
    active = np.array([True, False, True, False, False, True])
    acts = np.asarray(greedy_batch(game.observe()))
    acc = env._new_accumulator()
    env._engine_step(acts, active, acc)
    after = game.state_dict()
    for name, value in after.items():
        assert np.array_equal(value[~active], before[name][~active]), name
    moved = [bool((after["phase"][i] != before["phase"][i])
                  or (after["hands"][i] != before["hands"][i]).any()) for i in range(6)]
    assert [m for m, a in zip(moved, active, strict=True) if a] == [True] * 3


def test_the_registered_step_limit_cannot_cut_a_legal_match() -> None:
    """The id's ``max_episode_steps`` is the bound derived from the hand limit and the
    largest take limit the rules accept (docs/rules.md, Appendix C)."""
    from hgin_env import ENV_ID
    from hgin_env.envs import gym_env as gym_env

    assert gym.spec(ENV_ID).max_episode_steps == gym_env.MAX_EPISODE_STEPS
