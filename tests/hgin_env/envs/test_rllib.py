"""RLlib (Ray) integration: the action-masking RLModule, the shaped env, the
per-iteration probe against random, and a real self-play PPO run.

Needs the ``rllib`` extra (``pip install -e '.[rllib]'``, which brings pytest
too); skipped without it.  CI does not install that extra; run these with
``pip install -e '.[rllib]' && python -m pytest -q tests/hgin_env/envs/test_rllib.py``.
"""

from __future__ import annotations

import importlib.util
import sys
import time

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
from tests.helpers.paths import ROOT

EXAMPLE = ROOT / "hgin_env" / "examples" / "rllib_selfplay.py"


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


def test_shaped_env_adds_the_deadwood_drop_within_hands():
    example = load_example()
    plain = example.env_creator({"shaping": 0.0})
    shaped = example.env_creator({"shaping": 2.0})
    obs, _ = plain.reset(seed=4)
    obs_s, _ = shaped.reset(seed=4)
    rng = np.random.default_rng(0)
    last: dict[str, np.ndarray] = {agent: o["observation"] for agent, o in obs.items()}
    shaped_steps = 0
    for _ in range(300):
        (agent, o), = obs.items()
        assert np.array_equal(o["observation"], obs_s[agent]["observation"])
        action = int(rng.choice(np.flatnonzero(o["action_mask"])))
        obs, rewards, done, _, _ = plain.step({agent: action})
        obs_s, rewards_s, _, _, _ = shaped.step({agent: action})
        if done["__all__"]:
            break
        for who, o2 in obs.items():
            now, before = o2["observation"], last.get(who)
            same_hand = (before is not None and now[example.STOCK] <= before[example.STOCK]
                         and np.array_equal(now[example.SCORES], before[example.SCORES]))
            drop = float(before[example.DEADWOOD] - now[example.DEADWOOD]) if same_hand else 0.0
            assert rewards_s[who] == pytest.approx(rewards[who] + 2.0 * drop)
            shaped_steps += drop != 0
            last[who] = now
    assert shaped_steps > 0
    with pytest.raises(ValueError, match="shaping coefficient"):
        example.env_creator({"shaping": -1.0})


def test_hand_rates_counts_hands_for_both_seats():
    example = load_example()
    random, simple = example.RandomAgent(0), example.make_agent("simple", seed=0)
    r = example.hand_rates(simple, random, games=16, steps=300, rules="friendly", seed=2)
    assert r["hands"] > 0 and r["won"] + r["lost"] <= r["hands"]
    assert r["win_rate"] == r["won"] / r["hands"]
    # The heuristic wins far more hands than random does against it.
    back = example.hand_rates(random, simple, games=16, steps=300, rules="friendly", seed=2)
    assert r["win_rate"] > back["win_rate"] + 0.3


@pytest.mark.slow
def test_rllib_selfplay_trains_and_beats_its_untrained_self_against_random(capsys):
    example = load_example()
    t0 = time.perf_counter()
    # One remote EnvRunner: the module class travels to a Ray worker as on a cluster.
    # The README's settings, 2 of its 20 iterations: seed 0 goes from 4% of the hands
    # against random untrained to 32% after one iteration.
    result = example.main(["--iterations", "2", "--num-env-runners", "1",
                           "--eval-matches", "4", "--eval-opponents", "simple", "--seed", "0"])
    elapsed = time.perf_counter() - t0
    out = capsys.readouterr().out
    assert result["iterations"] == 2
    assert result["env_steps"] >= 8000
    learner = result["last_result"]["learners"][example.POLICY]
    assert learner["num_module_steps_trained"] > 0
    r = result["eval_simple"]
    assert r["matches"] == 4
    for key in ("match", "column", "hand"):
        assert 0.0 <= r[key]["low"] <= r[key]["rate"] <= r[key]["high"] <= 1.0
    history = result["history"]
    assert [row["iteration"] for row in history] == [0, 1, 2]
    assert "nan" not in out and "hands won vs random" in out
    # The learning signal: hands won against random rise above the untrained policy's.
    untrained = history[0]["probe"]["win_rate"]
    assert max(row["probe"]["win_rate"] for row in history[1:]) > untrained + 0.1
    print(f"rllib test: {elapsed:.1f} s (Ray start {result['ray_start_seconds']:.1f} s, "
          f"training {result['train_seconds']:.1f} s)")


def test_bad_options_are_rejected_before_ray_starts(capsys):
    example = load_example()
    for argv, needle in ((["--shaping", "-1"], "--shaping"),
                         (["--probe-steps", "-5"], "--probe-steps"),
                         (["--iterations", "0"], "--iterations"),
                         (["--eval-opponents", "nobody"], "nobody"),
                         (["--rules", "nope"], "nope")):
        with pytest.raises(SystemExit):
            example.main(argv)
        assert needle in capsys.readouterr().err
