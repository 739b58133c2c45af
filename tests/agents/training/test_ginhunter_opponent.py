"""``opponents.ginhunter``: an opponent kind of the training pool, with its weight and schedule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agents.ginhunter import GinHunterAgent
from agents.training.config import OPPONENT_KINDS, load_config, validate
from agents.training.ppo import Trainer
from agents.training.shard import KINDS

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/agents/conftest.py

_OFF = {"self_play": 0.0, "pool": 0.0, "random": 0.0, "simple": 0.0, "strong": 0.0}


def _config(**opponents: float) -> dict:
    return validate({
        "run": {"seed": 5, "total_steps": 16 * 8 * 3, "threads": 1, "checkpoint_every": 1,
                "eval_every": 100, "eval_matches": 2, "final_eval_matches": 2,
                "eval_opponents": ["random"]},
        "env": {"num_games": 16, "rollout_steps": 8, "points_coef": 0.5},
        "model": {"hidden": [32]},
        "ppo": {"epochs": 1, "minibatch_size": 64},
        "opponents": {**_OFF, "blocks": 4, "snapshot_every": 1, "pool_size": 2, **opponents},
    })


def test_ginhunter_is_an_opponent_kind_off_by_default() -> None:
    assert "ginhunter" in OPPONENT_KINDS and KINDS == OPPONENT_KINDS
    for name in ("quick", "default"):
        cfg = load_config(name, ["env.num_games=64"])
        assert cfg["opponents"]["ginhunter"] == 0.0 and cfg["opponents"]["ginhunter_end"] < 0
    with pytest.raises(ValueError, match=r"opponents\.ginhunter"):
        validate({"opponents": {"ginhunter": -1}})


def test_ginhunter_weight_follows_its_schedule() -> None:
    cfg = _config(self_play=1.0, self_play_end=0.0, ginhunter=0.0, ginhunter_end=1.0)
    trainer = Trainer(cfg)
    total = cfg["run"]["total_steps"]
    g = KINDS.index("ginhunter")
    assert trainer.opponent_weights(0)[g] == 0.0
    assert trainer.opponent_weights(total // 2)[g] == pytest.approx(0.5)
    assert trainer.opponent_weights(total)[g] == pytest.approx(1.0)
    assert trainer.assign_opponents(total).kinds == ["ginhunter"] * trainer.num_blocks


def test_a_ginhunter_pool_trains_and_the_ginhunter_plays(monkeypatch) -> None:
    """Every block plays the ginhunter for three updates (384 steps): it is asked for the
    moves of the opponent's seat, only those, and training goes on with finite losses."""
    asked: list[int] = []
    act = GinHunterAgent.act

    def counting(self, obs, rng=None):
        asked.append(int(obs["action_mask"].shape[0]))
        return act(self, obs, rng)

    monkeypatch.setattr(GinHunterAgent, "act", counting)
    trainer = Trainer(_config(ginhunter=1.0))
    assert trainer.assign_opponents().kinds == ["ginhunter"] * trainer.num_blocks
    for _ in range(3):
        out = trainer.update()
        assert math.isfinite(out["loss/policy"])
    assert trainer.env_steps == 384
    # About half the decisions of 16 games over 24 steps are the opponent's, asked in batches.
    assert len(asked) >= 20 and sum(asked) >= 16 * 24 // 4
    assert max(asked) <= 16


def test_shipped_weights_are_unchanged_by_the_new_kind() -> None:
    """A zero ginhunter weight leaves the other kinds' weights (and the draws) as they were."""
    cfg = load_config("quick", ["env.num_games=64"])
    trainer = Trainer(cfg)
    weights = trainer.opponent_weights(0)
    assert weights[KINDS.index("ginhunter")] == 0.0
    np.testing.assert_allclose(weights[: KINDS.index("ginhunter")],
                               [cfg["opponents"][k] for k in KINDS[:-1]])
    assert "ginhunter" not in trainer.assign_opponents().kinds
