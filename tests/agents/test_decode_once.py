"""A torch policy decodes each batch of observations once: ``TorchAgent.act`` and
``policy``, a pool snapshot's ``act``, and every step of a rollout decode the rows they
are handed once, and the PPO update decodes nothing (it learns from the network inputs
the rollout stored).  The features read the decoded view; decoding again would double
the numpy work of every move.

A decode is counted as the construction of a top-level :class:`ObsView` (one with no
parent rows): ``decode`` builds exactly one, and a subset view (``ObsView.take``) is not
a new decode.  Counting at the class catches every caller however it imports ``decode``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from agents.features import ObsView
from agents.model import FEATURE_SETS, PolicyValueNet
from agents.torch_agent import PRETRAINED_PATH, TorchAgent, load_torch_agent
from agents.training.config import validate
from agents.training.ppo import PoolAgent, Trainer
from hgin_env.engine import VectorGame

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/agents/conftest.py


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The row count of every decode from now on, in order."""
    sizes: list[int] = []
    real = ObsView.__init__

    def counting(self: ObsView, obs: np.ndarray, mask: np.ndarray | None = None,
                 rows: np.ndarray | None = None) -> None:
        if rows is None:
            sizes.append(int(obs.shape[0]))
        real(self, obs, mask, rows)

    monkeypatch.setattr(ObsView, "__init__", counting)
    return sizes


def _positions(games: int = 24, steps: int = 30) -> list[dict[str, np.ndarray]]:
    """Observations of ``steps`` steps of ``games`` games (offers, draws and discards)."""
    game = VectorGame(games, "classic", seed=11)
    rng = np.random.default_rng(5)
    out = []
    for _ in range(steps):
        ob = game.observe()
        out.append({k: np.array(v) for k, v in ob.items()})
        u = rng.random(ob["action_mask"].shape) * (ob["action_mask"] > 0)
        game.step(u.argmax(axis=1))
    return out


@pytest.mark.parametrize("features", FEATURE_SETS)
@pytest.mark.parametrize("greedy", [True, False])
def test_torch_agent_decodes_each_batch_once(decodes: list[int], features: str,
                                             greedy: bool) -> None:
    agent = TorchAgent(PolicyValueNet(hidden=[8], features=features), greedy=greedy, seed=0)
    for ob in _positions()[::3]:
        b = ob["action_mask"].shape[0]
        decodes.clear()
        agent.act(ob)
        assert decodes == [b]
        decodes.clear()
        agent.policy(ob)
        assert decodes == [b]
        decodes.clear()
        agent.act({"observation": ob["observation"][:1], "action_mask": ob["action_mask"][:1]})
        assert decodes == [1]


@pytest.mark.skipif(not PRETRAINED_PATH.exists(), reason="no shipped pretrained agent")
def test_shipped_agent_decodes_each_batch_once(decodes: list[int]) -> None:
    agent = load_torch_agent(PRETRAINED_PATH)
    obs = np.concatenate([ob["observation"] for ob in _positions()])
    mask = np.concatenate([ob["action_mask"] for ob in _positions()])
    decodes.clear()
    agent.act({"observation": obs, "action_mask": mask})
    assert decodes == [obs.shape[0]]


def test_featurize_decodes_raw_observations_once(decodes: list[int]) -> None:
    ob = _positions()[7]
    for features, want in (("none", []), ("draw", [24]), ("knock", [24])):
        decodes.clear()
        PolicyValueNet(hidden=[8], features=features).featurize(ob["observation"])
        assert decodes == want, features


def test_pool_agent_decodes_each_batch_once(decodes: list[int]) -> None:
    model = PolicyValueNet(hidden=[8], features="knock")
    agent = PoolAgent(model, torch.Generator().manual_seed(0), False, torch.device("cpu"), "p")
    for ob in _positions()[::5]:
        decodes.clear()
        agent.act(ob)
        assert decodes == [ob["action_mask"].shape[0]]


def _trainer(features: str, **opponents: float) -> Trainer:
    mix = {"self_play": 1.0, "pool": 0.0, "simple": 0.0, "strong": 0.0} | opponents
    return Trainer(validate({
        "run": {"seed": 3, "total_steps": 16 * 8 * 4, "threads": 1, "pipeline": False},
        "env": {"num_games": 16, "rollout_steps": 8},
        "model": {"hidden": [16], "features": features},
        "ppo": {"epochs": 2, "minibatch_size": 48},
        "opponents": mix | {"blocks": 4, "snapshot_every": 1, "pool_size": 2},
    }))


def _per_step(trainer: Trainer, monkeypatch: pytest.MonkeyPatch
              ) -> tuple[list[list[int]], list[int]]:
    """Run one unpipelined update: the row counts of the decodes of each rollout step
    (those after its ``observe()``), and of the learning step."""
    steps: list[list[int]] = []
    learned: list[int] = []
    phase: list[str] = ["idle"]
    game = trainer.collector.game
    observe, learn = game.observe, trainer.learn

    def marked() -> dict[str, np.ndarray]:
        steps.append([])
        return observe()

    def learning(batch: Any) -> dict[str, float]:
        phase[0] = "learn"
        try:
            return learn(batch)
        finally:
            phase[0] = "idle"

    real_init = ObsView.__init__

    def tagged(self: ObsView, obs: np.ndarray, mask: np.ndarray | None = None,
               rows: np.ndarray | None = None) -> None:
        if rows is None:
            (learned if phase[0] == "learn" else steps[-1]).append(int(obs.shape[0]))
        real_init(self, obs, mask, rows)

    monkeypatch.setattr(game, "observe", marked)
    monkeypatch.setattr(trainer, "learn", learning)
    monkeypatch.setattr(ObsView, "__init__", tagged)
    trainer.update()
    return steps, learned


@pytest.mark.parametrize("features", FEATURE_SETS)
def test_self_play_rollout_decodes_each_step_once(features: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Self-play: every game's mover is the learner, so each step is one batch of all 16
    games, decoded once (by the actor's features; none with ``features="none"``); the
    PPO update learns from the stored network inputs and decodes nothing."""
    trainer = _trainer(features)
    steps, learned = _per_step(trainer, monkeypatch)
    assert len(steps) == 8
    want = [] if features == "none" else [16]
    assert all(s == want for s in steps), steps
    assert learned == []


def test_mixed_rollout_decodes_each_observation_once_per_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Against a pool snapshot and the simple heuristic as well as itself, the learner's
    rows and each opponent's rows are separate batches, each decoded once: per step the
    decoded rows add up to the 16 games, none twice."""
    trainer = _trainer("knock", self_play=0.5, pool=0.25, simple=0.25)
    trainer.snapshot()  # a pool snapshot to play against
    assert sorted(trainer.assign_opponents().kinds) == ["pool", "simple"]
    steps, learned = _per_step(trainer, monkeypatch)
    assert len(steps) == 8
    assert all(sum(s) == 16 for s in steps), steps
    assert max(len(s) for s in steps) >= 2  # opponents did move in their own batches
    assert learned == []
