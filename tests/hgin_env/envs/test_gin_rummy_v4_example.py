"""hgin_env/examples/gin_rummy_v4_maskable_ppo.py: its one-seat env and a short MaskablePPO run."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import numpy as np
import pytest

from hgin_env.envs import rlcard_game as G
from tests.helpers.paths import ROOT

EXAMPLE = ROOT / "hgin_env" / "examples" / "gin_rummy_v4_maskable_ppo.py"


def _example() -> ModuleType:
    pytest.importorskip("sb3_contrib", reason="needs the sb3 extra")
    name = "gin_rummy_v4_maskable_ppo"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_one_seat_env_passes_sb3s_checker_and_only_asks_for_choices() -> None:
    example = _example()
    from stable_baselines3.common.env_checker import check_env

    env = example.OneSeat("simple", seed=3)
    check_env(env, warn=False)
    rng = np.random.default_rng(0)
    seats = set()
    for i in range(6):
        env.reset(seed=i)
        seats.add(env.learner)
        over = False
        while not over:
            mask = env.action_masks()
            assert mask.sum() > 1 and env.env.agent_selection == env.learner
            _obs, reward, over, _, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        hand = env.env.unwrapped.hand
        seat = env.env.possible_agents.index(env.learner)
        # the learner's own payoff at either seat (player_1's once read 0: env.rewards is
        # cleared by player_0's dead step, which comes first)
        assert hand.over and reward == hand.payoffs(0.5, 1.0)[seat]
        if hand.going_out == G.KNOCK and hand.going_out_player == seat:
            assert reward == 0.5
    assert seats == {"player_0", "player_1"}


def test_a_hand_without_a_choice_for_the_learner_is_skipped_not_started() -> None:
    # Seed 1's hand 475: the learner, player_1 and the non-dealer, is dealt gin, so its
    # only action is the forced gin and the hand is over before it chooses.  reset() once
    # returned that finished hand, and MaskablePPO's next step crashed on the dead agent
    # ("when an agent is dead, the only valid action is None").
    example = _example()
    env = example.OneSeat("random", seed=1)
    env.hands = 475
    obs, reward, over = env.deal()
    hand = env.env.unwrapped.hand
    assert over and env.learner == "player_1" and hand.going_out == G.GIN
    assert hand.going_out_player == 1 and reward == 1.0
    env.hands = 475
    obs, info = env.reset()
    assert env.hands == 477 and info["rewards of hands without a choice"] == [1.0]
    assert not env.env.unwrapped.hand.over and env.env.agent_selection == env.learner
    assert env.action_masks().sum() > 1 and obs.shape == (4, 52)
    env.step(int(np.flatnonzero(env.action_masks())[0]))


def test_a_short_training_run_reports_before_and_after() -> None:
    result = _example().main(["--timesteps", "512", "--eval-hands", "4",
                              "--eval-opponents", "random"])
    rows = result["evaluation"]["random"]
    assert set(rows) == {"untrained", "trained"}
    for row in rows.values():
        assert -1.0 <= row["mean reward"] <= 1.0 and 0.0 <= row["hands gone out"] <= 1.0
