"""``model.init``: a run that starts from a saved network (a fine-tune) starts from exactly
its weights, or from the same function in a wider network; it refuses a network of
another shape with a message naming what differs, and resumes from its own checkpoint
without reading the file it started from again."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents import PRETRAINED, make_agent
from agents.torch_agent import load_checkpoint, save_agent
from agents.training.config import validate
from agents.training.ppo import Trainer
from hgin_env.engine import VectorGame

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/agents/conftest.py

#: The shipped network's [model] section.
SHIPPED_MODEL = {"hidden": [256, 128], "card_head": True, "features": "knock"}


def init_config(**sections: dict) -> dict:
    raw = {
        "run": {"seed": 3, "total_steps": 32 * 8 * 20, "threads": 1},
        "env": {"num_games": 32, "rollout_steps": 8},
        "model": {"hidden": [32], "critic": "privileged", "critic_hidden": [32]},
        "ppo": {"epochs": 1, "minibatch_size": 64},
        "opponents": {"self_play": 0.5, "pool": 0.0, "strong": 0.5, "simple": 0.0,
                      "blocks": 4},
    }
    for name, keys in sections.items():
        raw.setdefault(name, {}).update(keys)
    return validate(raw)


def test_a_fine_tune_starts_from_the_shipped_network() -> None:
    trainer = Trainer(init_config(model={**SHIPPED_MODEL, "init": "pretrained"}))
    shipped = load_checkpoint(PRETRAINED["pretrained"])["model"]
    start = trainer.model.state_dict()
    assert start.keys() == shipped.keys()
    assert all(torch.equal(start[k], shipped[k]) for k in shipped)
    # The network that plays the first rollout is that network too.
    assert all(torch.equal(trainer.actor.state_dict()[k], shipped[k]) for k in shipped)
    trainer.update()
    assert any(not torch.equal(trainer.model.state_dict()[k], shipped[k]) for k in shipped)


def test_init_takes_a_checkpoint_path_and_resumes_without_it(tmp_path) -> None:
    first = Trainer(init_config())
    first.update()
    path = tmp_path / "agent.pt"
    save_agent(path, first.model, first.cfg, {})
    cfg = init_config(model={"init": f"ckpt:{path}"})
    tuned = Trainer(cfg)
    assert all(torch.equal(a, b) for a, b in zip(tuned.model.state_dict().values(),
                                                 first.model.state_dict().values(), strict=True))
    tuned.update()
    ckpt = tuned.checkpoint()
    whole = Trainer(cfg)
    for _ in range(2):
        whole.update()
    path.unlink()  # the resume loads the checkpoint's weights, not the init file
    resumed = Trainer(init_config())
    resumed.load_trainer_state(ckpt, "tuned.pt")
    resumed.update()
    assert all(torch.equal(a, b) for a, b in zip(resumed.model.state_dict().values(),
                                                 whole.model.state_dict().values(), strict=True))


def test_a_network_of_another_shape_is_refused_naming_what_differs() -> None:
    with pytest.raises(ValueError, match=r"model\.init.*hidden = \[256, 128\] in the file, "
                                         r"\[32\] in the config"):
        Trainer(init_config(model={"init": "pretrained"}))
    with pytest.raises(ValueError, match=r"features = 'knock' in the file, 'draw' in the config"):
        Trainer(init_config(model={**SHIPPED_MODEL, "features": "draw", "init": "pretrained"}))


@pytest.mark.parametrize(("spec", "message"), [
    ("strong", "is not a network"),
    ("search", "is not a network"),
    ("ckpt:no/such/file.pt", "not found"),
    ("ckpt:", "lacks its path"),
])
def test_bad_init_specs_are_config_errors(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"model.init.*{message}"):
        init_config(model={"init": spec})


def _logits(model, obs) -> torch.Tensor:
    with torch.inference_mode():
        logits, _ = model.eval()(torch.from_numpy(model.featurize(obs["observation"])))
    return logits.masked_fill(~torch.from_numpy(obs["action_mask"].copy()).bool(), -torch.inf)


@pytest.mark.parametrize("hidden", [[256, 128], [300, 128], [512, 256]])
def test_the_start_has_the_files_policy_and_values_widened_or_not(hidden) -> None:
    """As it is ([256, 128]) or widened (Net2Net), the network a fine-tune starts from
    gives the file's logits and values (to float rounding), so it plays the agent's
    greedy moves, and a widened one's new units are not copies that would stay equal
    under training."""
    trainer = Trainer(init_config(model={**SHIPPED_MODEL, "hidden": hidden,
                                         "init": "pretrained"}))
    agent = make_agent("pretrained")
    game = VectorGame(64, "friendly", seed=11)
    rng = np.random.default_rng(11)
    for _ in range(40):
        obs = game.observe()
        moves = agent.act(obs, rng=rng)
        wide, narrow = _logits(trainer.model, obs), _logits(agent.model, obs)
        legal = torch.from_numpy(obs["action_mask"].copy()).bool()
        assert torch.allclose(wide[legal], narrow[legal], rtol=1e-4, atol=1e-3)
        assert np.array_equal(wide.argmax(dim=1).numpy(), moves)
        game.step(moves)
    x = torch.randn(256, agent.model.in_dim)
    with torch.inference_mode():
        assert torch.allclose(trainer.model(x)[1], agent.model(x)[1], rtol=1e-4, atol=1e-4)
    first = trainer.model.trunk[0].weight
    if hidden[0] > 256:  # the copies' outgoing weights differ, so their gradients will
        second = trainer.model.trunk[2].weight
        copies = [j for j in range(256, hidden[0]) if torch.equal(first[j], first[j % 256])]
        assert all(not torch.equal(second[:, j], second[:, j % 256]) for j in copies)


@pytest.mark.parametrize(("hidden", "what"), [
    ([128, 128], r"hidden = \[256, 128\] in the file, \[128, 128\]"),
    ([256, 128, 64], "not add, remove or narrow"),
])
def test_a_narrower_or_deeper_network_is_refused(hidden, what) -> None:
    with pytest.raises(ValueError, match=f"model.init.*{what}"):
        Trainer(init_config(model={**SHIPPED_MODEL, "hidden": hidden, "init": "pretrained"}))
