"""hgin_env/examples/cleanrl_ppo.py: CleanRL-style masked PPO on the vector env, run small."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from hgin_env.examples import cleanrl_ppo
from tests.helpers.paths import ROOT

SMALL = ["--total-timesteps", "2048", "--num-envs", "16", "--num-steps", "64",
         "--hidden", "32", "--eval-matches", "2"]


def _without_speed(curve: list[dict[str, float]]) -> list[dict[str, float]]:
    return [{k: v for k, v in row.items() if k != "sps"} for row in curve]


def test_a_short_run_trains_evaluates_and_repeats_for_its_seed() -> None:
    one = cleanrl_ppo.main([*SMALL, "--seed", "3"])
    assert one["steps"] == 2048 and len(one["curve"]) == 2
    assert all(row["hands"] > 0 and np.isfinite(row["value_loss"]) for row in one["curve"])
    assert one["evaluation"]["matches"] == 2
    assert 0.0 <= one["evaluation"]["match"]["rate"] <= 1.0
    two = cleanrl_ppo.main([*SMALL, "--seed", "3", "--eval-matches", "0"])
    assert _without_speed(two["curve"]) == _without_speed(one["curve"])
    for a, b in zip(one["agent"].parameters(), two["agent"].parameters(), strict=True):
        assert torch.equal(a, b)


def test_the_masked_policy_never_picks_an_illegal_action() -> None:
    agent = cleanrl_ppo.Agent(8, 5, 16)
    x = torch.randn(64, 8)
    mask = torch.zeros(64, 5, dtype=torch.bool)
    mask[torch.arange(64), torch.randint(0, 5, (64,))] = True
    mask[::2, 4] = True
    action, logprob, entropy, _ = agent.get_action_and_value(x, mask)
    assert mask[torch.arange(64), action].all()
    assert torch.isfinite(logprob).all() and (entropy >= 0).all()
    only_one = mask.sum(-1) == 1
    assert torch.allclose(entropy[only_one], torch.zeros(int(only_one.sum())), atol=1e-6)


@pytest.mark.parametrize(("args", "words"), [
    (["--num-envs", "0"], "--num-envs must be >= 1"),
    (["--num-envs", "3", "--num-steps", "3", "--num-minibatches", "4"], "must divide"),
    (["--opponent", "nobody"], "unknown agent spec 'nobody'"),
])
def test_bad_options_are_one_line_naming_them(args: list[str], words: str) -> None:
    done = subprocess.run([sys.executable, "-m", "hgin_env.examples.cleanrl_ppo", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr
