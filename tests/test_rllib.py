"""RLlib (Ray) integration: the action-masking RLModule and a real self-play PPO run.

Needs the ``rllib`` extra (``pip install -e '.[rllib]'``); skipped without it.
CI does not install that extra; run these with
``pip install -e '.[dev,rllib]' && python -m pytest -q tests/test_rllib.py``.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray.rllib", reason="needs the rllib extra (ray[rllib]): "
                                        "pip install -e '.[rllib]'")
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.torch_utils import FLOAT_MIN

from hgin_env import actions as A
from hgin_env.engine import VectorGame

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "rllib_selfplay.py"


def load_example():
    name = "hgin_example_rllib_selfplay"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_masked_module_only_allows_legal_actions():
    example = load_example()
    env = example.env_creator({"rules": "friendly", "reward": "points"})
    space = env.observation_spaces["player_0"]
    module = RLModuleSpec(module_class=example.MaskedPPOTorchRLModule,
                          observation_space=space, action_space=env.action_spaces["player_0"],
                          model_config={"fcnet_hiddens": [32]}).build()
    game = VectorGame(64, "friendly", seed=5)
    rng = np.random.default_rng(0)
    for _ in range(30):
        obs = game.observe()
        mask = torch.tensor(obs["action_mask"])
        batch = {Columns.OBS: {"observation": torch.tensor(obs["observation"]),
                               "action_mask": mask}}
        for forward in (module.forward_inference, module.forward_exploration):
            logits = forward(dict(batch))[Columns.ACTION_DIST_INPUTS]
            assert torch.all(logits[mask == 0] == FLOAT_MIN)
            assert torch.all(logits[mask == 1] > FLOAT_MIN)
        values = module.compute_values(dict(batch))
        assert values.shape == (64,)
        assert isinstance(batch[Columns.OBS], dict)  # the caller's batch is left alone
        actions = example.RLlibAgent(module).act(obs)
        assert np.all(obs["action_mask"][np.arange(64), actions] == 1)
        game.step(np.where(rng.random(64) < 0.5, actions,
                           example.RandomAgent(0).act(obs, rng)))
    with pytest.raises(ValueError, match="action_mask"):
        RLModuleSpec(module_class=example.MaskedPPOTorchRLModule,
                     observation_space=space["observation"],
                     action_space=env.action_spaces["player_0"]).build()
    assert env.action_spaces["player_0"].n == A.NUM_ACTIONS


@pytest.mark.slow
def test_rllib_selfplay_trains_and_evaluates():
    example = load_example()
    t0 = time.perf_counter()
    # One remote EnvRunner: the module class travels to a Ray worker as on a cluster.
    result = example.main(["--iterations", "2", "--num-env-runners", "1",
                           "--train-batch-size", "256", "--minibatch-size", "64",
                           "--num-epochs", "1", "--eval-matches", "4", "--seed", "1"])
    elapsed = time.perf_counter() - t0
    assert result["iterations"] == 2
    assert result["env_steps"] >= 512
    learner = result["last_result"]["learners"][example.POLICY]
    assert learner["num_module_steps_trained"] > 0
    for name in ("eval_rllib", "eval_random"):
        r = result[name]
        assert r["matches"] == 4
        for key in ("match", "column", "hand"):
            assert 0.0 <= r[key]["rate"] <= 1.0
    print(f"rllib test: {elapsed:.1f} s (Ray start {result['ray_start_seconds']:.1f} s, "
          f"training {result['train_seconds']:.1f} s)")
