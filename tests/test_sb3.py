"""Stable-Baselines3 integration: the flat-observation wrapper and a real MaskablePPO run.

The training tests need the ``sb3`` extra (``pip install -e '.[sb3]'``) and
are skipped without it; the wrapper test needs only Gymnasium.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hgin_env import actions as A
from hgin_env.gym_env import HollywoodGinEnv
from hgin_env.observation import OBS_DIM
from hgin_env.wrappers import FlatObservation

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sb3_maskable_ppo.py"
SKIP_REASON = "needs the sb3 extra (stable-baselines3, sb3-contrib): pip install -e '.[sb3]'"


def load_example():
    pytest.importorskip("sb3_contrib", reason=SKIP_REASON)
    name = "hgin_example_sb3_maskable_ppo"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_flat_observation_wrapper():
    env = FlatObservation(HollywoodGinEnv(opponent="simple", strict=True))
    assert env.observation_space.shape == (OBS_DIM,)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(200):
        assert obs.shape == (OBS_DIM,) and obs.dtype == np.float32
        assert env.observation_space.contains(obs)
        mask = env.action_masks()
        assert mask.dtype == bool and mask.shape == (A.NUM_ACTIONS,) and mask.any()
        # The mask is the env's own: every action it allows is legal.
        assert np.array_equal(mask, env.unwrapped.aec.observe(env.unwrapped._me)["action_mask"]
                              .astype(bool))
        obs, _, terminated, _, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        if terminated:
            obs, _ = env.reset()
    with pytest.raises(ValueError, match="action_mask"):
        FlatObservation(FlatObservation(HollywoodGinEnv()))


def test_sb3_env_checker_accepts_the_wrapped_env():
    pytest.importorskip("stable_baselines3", reason=SKIP_REASON)
    from stable_baselines3.common.env_checker import check_env

    check_env(FlatObservation(HollywoodGinEnv(opponent="random")), warn=True)


def test_maskable_ppo_trains_and_evaluates():
    example = load_example()
    t0 = time.perf_counter()
    result = example.main(["--timesteps", "512", "--num-envs", "2", "--n-steps", "128",
                           "--batch-size", "64", "--n-epochs", "2", "--eval-matches", "4",
                           "--seed", "1"])
    elapsed = time.perf_counter() - t0
    model = result["model"]
    # Really trained: 2 rollouts of 2 x 128 steps, each followed by 2 epochs of updates.
    assert result["timesteps"] >= 512
    assert model._n_updates >= 4
    for name in ("eval_sb3", "eval_random"):
        r = result[name]
        assert r["matches"] == 4
        for key in ("match", "column", "hand"):
            assert 0.0 <= r[key]["rate"] <= 1.0
    # The trained policy picks legal actions on fresh positions (strict env: illegal raises).
    env = FlatObservation(HollywoodGinEnv(opponent="simple", strict=True))
    obs, _ = env.reset(seed=7)
    for _ in range(100):
        action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=False)
        assert env.action_masks()[int(action)]
        obs, _, terminated, _, _ = env.step(int(action))
        if terminated:
            obs, _ = env.reset()
    print(f"sb3 test: {elapsed:.1f} s")
