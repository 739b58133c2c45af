"""The privileged critic (``model.critic = "privileged"``): the hidden cards it reads are
exactly what the mover cannot see, it values the rollouts, it never reaches an agent
file, and runs with it are as deterministic and resumable as without."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.base import sample_uniform_legal
from agents.torch_agent import CheckpointError, load_checkpoint, save_agent
from agents.training.config import validate
from agents.training.ppo import Trainer
from hgin_env.cards import NUM_CARDS, unpack_masks
from hgin_env.engine import VectorGame
from hgin_env.hidden import HIDDEN_DIM, encode_hidden
from hgin_env.observation import observation_spec

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/agents/conftest.py


def hidden_reference(state, seat_of_game) -> np.ndarray:
    """One game at a time, from the deal's card order: the opponent's cards, the stock
    ``deck[stock_pos:]`` and its top card."""
    out = np.zeros((state.num_games, HIDDEN_DIM), np.float32)
    for g in range(state.num_games):
        seat = int(seat_of_game[g])
        hand = int(state.hands[g, 1 - seat])
        for card in range(NUM_CARDS):
            if hand >> card & 1:
                out[g, card] = 1
        pos = int(state.stock_pos[g])
        for card in state.deck[g, pos:]:
            out[g, NUM_CARDS + int(card)] = 1
        if pos < NUM_CARDS:
            out[g, 2 * NUM_CARDS + int(state.deck[g, pos])] = 1
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(0, 120))
def test_hidden_cards_are_what_the_mover_cannot_see(seed: int, steps: int) -> None:
    game = VectorGame(16, "friendly", seed=seed)
    rng = np.random.default_rng(seed)
    spec = observation_spec()
    for _ in range(steps):
        game.step(sample_uniform_legal(game.observe()["action_mask"], rng))
    state = game.state
    mover = state.current_player.astype(np.int64)
    hidden = encode_hidden(state, mover)
    assert np.array_equal(hidden, hidden_reference(state, mover))
    obs = game.observe()["observation"]
    own = obs[:, spec["hand"]]
    pile = obs[:, spec["top_discard"]] + obs[:, spec["pile_below_top"]]
    opp, stock = hidden[:, :NUM_CARDS], hidden[:, NUM_CARDS : 2 * NUM_CARDS]
    # The 52 cards: the mover's hand, the pile, the opponent's hand and the stock.
    assert np.array_equal(own + pile + opp + stock, np.ones_like(own))
    # What the mover knows of the opponent's hand is part of it; the unseen cards are
    # the opponent's unknown ones and the stock.
    known = obs[:, spec["opponent_known"]]
    assert (known <= opp).all()
    assert np.array_equal(obs[:, spec["unseen"]], opp + stock - known)
    assert np.array_equal(opp, unpack_masks(state.hands[np.arange(16), 1 - mover]))


def critic_config(**sections: dict) -> dict:
    raw = {
        "run": {"seed": 2, "total_steps": 32 * 8 * 20, "threads": 1},
        "env": {"num_games": 32, "rollout_steps": 8},
        "model": {"hidden": [32], "critic": "privileged", "critic_hidden": [48]},
        "ppo": {"epochs": 2, "minibatch_size": 64},
        "imitation": {"teacher": "strong", "steps": 256},
        "opponents": {"self_play": 0.5, "pool": 0.2, "strong": 0.3, "simple": 0.0,
                      "blocks": 4, "snapshot_every": 1, "pool_size": 2},
    }
    for name, keys in sections.items():
        raw.setdefault(name, {}).update(keys)
    return validate(raw)


def _digest(trainer: Trainer) -> list[torch.Tensor]:
    assert trainer.critic is not None
    return [*trainer.model.state_dict().values(), *trainer.critic.state_dict().values()]


def test_the_critic_learns_values_the_rollouts_and_stays_out_of_agent_files(tmp_path) -> None:
    trainer = Trainer(critic_config())
    assert trainer.critic is not None
    before = [p.clone() for p in trainer.critic.parameters()]
    for _ in range(3):
        out = trainer.update()
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.critic.parameters(),
                                                     strict=True))
    assert np.isfinite(out["loss/value"]) and "loss/policy_value_head" in out
    assert trainer.collection.shard.buffers().hidden.shape[1] == HIDDEN_DIM
    path = tmp_path / "agent.pt"
    save_agent(path, trainer.model, trainer.cfg, {})
    saved = load_checkpoint(path)
    assert not any(k.startswith("critic") for k in saved["model"])
    assert "critic" in trainer.checkpoint()["trainer"]


def test_runs_with_the_critic_repeat_and_resume_exactly() -> None:
    whole = Trainer(critic_config())
    for _ in range(4):
        whole.update()
    again = Trainer(critic_config())
    for _ in range(2):
        again.update()
    ckpt = again.checkpoint()
    resumed = Trainer(critic_config())
    resumed.load_trainer_state(ckpt, "critic.pt")
    for _ in range(2):
        resumed.update()
    for a, b in zip(_digest(whole), _digest(resumed), strict=True):
        assert torch.equal(a, b)
    with pytest.raises(CheckpointError, match="critic of its own"):
        Trainer(critic_config(model={"critic": "shared"})).load_trainer_state(ckpt, "c.pt")


def test_a_separate_critic_sees_what_the_policy_sees() -> None:
    """``model.critic = "separate"``: a value network of its own without the hidden cards
    (the control for the privileged one); it values the rollouts and resumes exactly."""
    config = critic_config(model={"critic": "separate"})
    whole = Trainer(config)
    assert whole.critic is not None and whole.critic.hidden_dim == 0
    assert whole.collection.shard.buffers().hidden.shape[1] == 0
    for _ in range(3):
        out = whole.update()
    assert np.isfinite(out["loss/value"]) and "loss/policy_value_head" in out
    first = Trainer(config)
    first.update()
    resumed = Trainer(config)
    resumed.load_trainer_state(first.checkpoint(), "separate.pt")
    for _ in range(2):
        resumed.update()
    for a, b in zip(_digest(whole), _digest(resumed), strict=True):
        assert torch.equal(a, b)
