"""The observation decoder (agents/features.py) and the network's features (agents/model.py)
read the observation through ``observation.LAYOUT``'s scales; these tests pin their
outputs to what they were before (digests recorded from the code that hard-wired the
divisors) and check the decoded values against the engine's own state."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

from agents import PRETRAINED
from agents.features import decode
from agents.model import PolicyValueNet, draw_features, knock_features, masked_logits
from agents.torch_agent import load_torch_agent
from hgin_env.engine import VectorGame
from hgin_env.melds import min_deadwood
from hgin_env.rules import PROFILES
from tests.helpers.paths import DATA

#: Recorded from commit bf7171a (literal 100/31/10 in view.py and model.py).
EXPECTED = {
    "observations": 3840,
    "actions": "9d10415769d289d8",
    "features": "07995b9cec9b4bd0",
    "view": "0a2a4b5c4346ed23",
}


def _uniform_legal(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row (self-contained, so the digests only
    depend on the engine and the code under test)."""
    u = rng.random(mask.shape) * (mask > 0)
    return u.argmax(axis=1).astype(np.int64)


def _sampled_positions(games: int, steps: int, every: int, seed: int, rng_seed: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of every ``every``-th step of ``games`` games x ``steps``
    steps of uniform random play, in each Hollywood profile."""
    obs, masks = [], []
    for i, profile in enumerate(("friendly", "classic", "bonus")):
        game = VectorGame(games, profile, seed=seed + i)
        rng = np.random.default_rng(rng_seed + i)
        for t in range(steps):
            ob = game.observe()
            if t % every == 0:
                obs.append(np.array(ob["observation"]))
                masks.append(np.array(ob["action_mask"]))
            game.step(_uniform_legal(ob["action_mask"], rng))
    return np.concatenate(obs), np.concatenate(masks)


def seeded_observations() -> tuple[np.ndarray, np.ndarray]:
    """3840 observations (every third step of 64 games x 60 steps, each profile)."""
    return _sampled_positions(64, 60, 3, seed=100, rng_seed=0)


def digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


@pytest.fixture(scope="module")
def observations() -> tuple[np.ndarray, np.ndarray]:
    return seeded_observations()


def test_features_and_view_are_unchanged(observations) -> None:
    obs, mask = observations
    assert obs.shape[0] == EXPECTED["observations"]
    assert digest(draw_features(obs), knock_features(obs)) == EXPECTED["features"]
    v = decode({"observation": obs, "action_mask": mask})
    fields = [getattr(v, f) for f in ("hand", "top", "pile", "opp_known", "unseen",
                                      "after_discard", "phase", "stock_size", "knock_limit",
                                      "deadwood", "own_score", "opp_score")]
    assert digest(*fields) == EXPECTED["view"]


#: The network these pins were recorded with: the first shipped ``pretrained``, kept as
#: ``pretrained-v1`` (what they check is the decoding and features, not which network ships).
V1_PATH = PRETRAINED["pretrained-v1"]


def test_pretrained_agent_acts_as_before(observations) -> None:
    torch.set_num_threads(1)
    obs, mask = observations
    agent = load_torch_agent(V1_PATH)
    actions = agent.act({"observation": obs, "action_mask": mask})
    assert digest(actions) == EXPECTED["actions"]


@pytest.mark.parametrize("profile", PROFILES)
def test_decoded_scalars_match_the_engine(profile: str) -> None:
    game = VectorGame(48, profile, seed=7)
    rng = np.random.default_rng(3)
    for _ in range(80):
        seats = game.current_player.astype(np.int64)
        ob = game.observe()
        v = decode(ob)
        rows = np.arange(game.num_games)
        np.testing.assert_array_equal(v.stock_size, game.stock_size)
        np.testing.assert_array_equal(v.knock_limit, game.knock_limit)
        np.testing.assert_array_equal(v.deadwood, min_deadwood(game.hands[rows, seats]))
        np.testing.assert_array_equal(v.hand, game.hands[rows, seats])
        assert v.to_move.all()
        game.step(_uniform_legal(ob["action_mask"], rng))


def test_subset_views_decode_the_same_rows(observations) -> None:
    obs, mask = observations
    v = decode({"observation": obs, "action_mask": mask})
    rows = np.arange(0, obs.shape[0], 7)
    sub = v.take(rows).take(np.arange(0, rows.size, 2))
    picked = rows[::2]
    assert sub.size == picked.size
    for name in ("hand", "top", "after_discard", "deadwood", "knock_limit", "own_score"):
        np.testing.assert_array_equal(getattr(sub, name), getattr(v, name)[picked], name)
    np.testing.assert_array_equal(sub.mask, mask[picked])
    np.testing.assert_array_equal(sub.obs, obs[picked])
    bare = decode(obs[:5])
    assert bare.mask is None and bare.size == 5


def test_featurize_reuses_one_decoding(observations) -> None:
    obs, _ = observations
    model = PolicyValueNet(hidden=[8], features="knock")
    x = model.featurize(obs)
    np.testing.assert_array_equal(x[:, obs.shape[1]:],
                                  np.concatenate([draw_features(obs), knock_features(obs)], 1))


#: ``pretrained-v1`` on 480 seeded positions, recorded before ``TorchAgent.act`` decoded
#: the observation once and handed the view to the features (and before small batches
#: ran on one thread): the digest of its actions (integers: the same on every machine).
DECODE_ONCE = {"positions": 480, "actions": "22504222fa0575ed"}
#: Its raw logits and values on those positions, as arrays: float kernels differ by CPU
#: (a digest of floats recorded on one machine fails on another), so they are compared
#: within a tolerance far below any change of the network or its features.
LOGITS_FILE = DATA / "pretrained_v1_logits_480.npz"


def _positions() -> tuple[np.ndarray, np.ndarray]:
    """480 positions: every fourth step of 16 games x 40 steps, each profile."""
    return _sampled_positions(16, 40, 4, seed=500, rng_seed=50)


def test_decoding_once_leaves_every_move_and_logit_unchanged() -> None:
    obs, mask = _positions()
    assert obs.shape[0] == DECODE_ONCE["positions"]
    agent = load_torch_agent(V1_PATH)
    batch = {"observation": obs, "action_mask": mask}
    actions = agent.act(batch)
    assert digest(actions) == DECODE_ONCE["actions"]
    want = np.load(LOGITS_FILE)
    raw, viewed = agent.model.featurize(obs), agent.model.featurize(decode(batch))
    np.testing.assert_array_equal(raw, viewed)  # one decoding or two: the same features
    with torch.inference_mode():
        logits, value = agent.model(torch.from_numpy(raw))
    np.testing.assert_allclose(logits.numpy(), want["logits"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(value.numpy(), want["value"], rtol=1e-4, atol=1e-4)
    probs, values = agent.policy(batch)
    expected = torch.softmax(masked_logits(logits, torch.from_numpy(mask)), dim=-1).numpy()
    np.testing.assert_allclose(probs, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values, value.numpy(), rtol=1e-5, atol=1e-6)
    # One position at a time (the one-thread path) plays the same moves.
    one = [agent.act({"observation": obs[i:i + 1], "action_mask": mask[i:i + 1]})[0]
           for i in range(0, obs.shape[0], 3)]
    np.testing.assert_array_equal(one, actions[::3])


def test_act_decodes_each_slice_of_each_row_once(monkeypatch) -> None:
    """``act`` decodes once: the features of both sets read the same view, and a subset
    view reuses what its parent decoded, so no observation entry is read twice."""
    from agents.features import ObsView
    from agents.torch_agent import TorchAgent
    from hgin_env import actions as A

    obs, mask = _positions()
    phases = set(decode(obs).phase.tolist())  # offers, draws and discards
    assert {A.PHASE_OFFER_NONDEALER, A.PHASE_DRAW, A.PHASE_DISCARD} <= phases
    reads = np.zeros(obs.shape, np.int64)
    real = ObsView._cols

    def counting(self: ObsView, start: int, stop: int) -> np.ndarray:
        rows = np.arange(obs.shape[0]) if self._rows is None else self._rows
        reads[rows, start:stop] += 1
        return real(self, start, stop)

    monkeypatch.setattr(ObsView, "_cols", counting)
    agent = TorchAgent(PolicyValueNet(hidden=[8], features="knock"))
    agent.act({"observation": obs, "action_mask": mask})
    assert reads.max() == 1
