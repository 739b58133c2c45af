"""SuperSuit's observation wrappers on hgin's PettingZoo env (issue 36): they need a
``Box`` observation, which ``mask_in_infos=True`` gives (the flat vector, with each
agent's mask in ``infos[agent]["action_mask"]``, AgileRL's and Shimmy's convention)."""

from __future__ import annotations

import numpy as np
import pytest

ss = pytest.importorskip(
    "supersuit", reason="needs supersuit (3.11.x): pip install 'supersuit>=3.11,<3.12'")

from pettingzoo.test import api_test, parallel_api_test  # noqa: E402

from hgin_env.envs.aec import env as make_env  # noqa: E402
from hgin_env.envs.aec import parallel_env  # noqa: E402
from hgin_env.observation import OBS_DIM  # noqa: E402

AEC_WRAPPERS = {
    "flatten_v0": lambda e: ss.flatten_v0(e),
    "dtype_v0": lambda e: ss.dtype_v0(e, np.float64),
    "normalize_obs_v0": lambda e: ss.normalize_obs_v0(e),
    "frame_stack_v1": lambda e: ss.frame_stack_v1(e, 3),
    "pad_observations_v0": lambda e: ss.pad_observations_v0(e),
    "agent_indicator_v0": lambda e: ss.agent_indicator_v0(e),
    "clip_reward_v0": lambda e: ss.clip_reward_v0(e),
}


def _play(env, seed: int = 0, turns: int = 300) -> int:
    """Masked random play read from infos; returns the turns played."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    n = 0
    for agent in env.agent_iter(max_iter=turns):
        obs, _, term, trunc, info = env.last()
        assert obs.shape == env.observation_space(agent).shape
        if term or trunc:
            env.step(None)
            continue
        mask = info["action_mask"]
        assert mask.shape == (108,) and mask.any()
        env.step(int(rng.choice(np.flatnonzero(mask))))
        n += 1
    return n


@pytest.mark.parametrize("name", sorted(AEC_WRAPPERS))
def test_observation_wrappers(name: str) -> None:
    env = AEC_WRAPPERS[name](make_env(mask_in_infos=True))
    assert _play(env) > 0
    if name == "agent_indicator_v0":
        # SuperSuit 3.11 writes the indicator as max(space.high) (2.24 here: hgin's score
        # features exceed 1) but bounds it by 1 in its own space, so its api_test fails
        # for any Box with a bound over 1; the wrapped observations are right otherwise.
        obs = env.observe(env.agent_selection)
        assert obs.shape == (OBS_DIM + 2,) and sorted(obs[-2:].tolist())[0] == 0.0
        return
    api_test(AEC_WRAPPERS[name](make_env(mask_in_infos=True)), num_cycles=50)


def test_the_flat_form() -> None:
    env = make_env(mask_in_infos=True)
    env.reset(seed=3)
    obs, _, _, _, info = env.last()
    assert obs.shape == (OBS_DIM,) and obs.dtype == np.float32
    full = make_env()
    full.reset(seed=3)
    want, _, _, _, _ = full.last()
    assert np.array_equal(obs, want["observation"])
    assert np.array_equal(info["action_mask"], want["action_mask"])
    other = next(a for a in env.agents if a != env.agent_selection)
    assert not env.infos[other]["action_mask"].any()  # not its turn
    with pytest.raises(ValueError, match="history"):
        make_env(mask_in_infos=True, history=True)


def test_parallel_form_and_black_death() -> None:
    parallel_api_test(parallel_env(mask_in_infos=True), num_cycles=100)
    env = ss.black_death_v3(parallel_env(mask_in_infos=True))
    obs, infos = env.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(100):
        # black_death keeps every agent in ``agents``: act for the agent to move only
        mover = next(a for a in env.agents if infos[a]["action_mask"].any())
        actions = {a: 0 for a in env.agents}
        actions[mover] = int(rng.choice(np.flatnonzero(infos[mover]["action_mask"])))
        obs, _, terms, truncs, infos = env.step(actions)
        assert all(o.shape == (OBS_DIM,) for o in obs.values())
        if all(terms.values()) or all(truncs.values()):
            break
