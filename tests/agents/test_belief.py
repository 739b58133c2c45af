"""The belief network's pieces: features from the public history, marginals, hand draws."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.belief import (
    FEATURES,
    BeliefNet,
    belief_features,
    hidden_flags,
    load_belief,
    sample_hands,
)
from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS, popcount64, unpack_masks
from hgin_env.engine.vector import VectorGame, legal_mask
from hgin_env.history import PublicHistory
from hgin_env.observation import encode
from hgin_env.rules import load_rules


def _positions(games: int = 6, steps: int = 40, seed: int = 3):
    """Seeded random play with a public history: (obs, history keys, true state) per step."""
    rules = load_rules()
    game = VectorGame(games, rules, seed=seed)
    hist = PublicHistory(game)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        cur = game.current_player.astype(np.int64)
        x = encode(game, cur)
        keys = hist.observe(cur)
        out.append((x, keys, game.state.hands.copy(), game.state.known.copy(), cur.copy()))
        mask = legal_mask(game)
        # Never knock: the hand stays live, so the history stays one hand's.
        mask[:, A.KNOCK:A.DRAW_STOCK] = 0
        mask[mask.sum(axis=1) == 0, A.DRAW_STOCK] = 1
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        _, info = game.step(acts)
        hist.step(game, cur, acts, info)
    return out


def test_features_agree_with_the_observation_and_the_truth() -> None:
    for x, keys, hands, known, cur in _positions():
        f = belief_features(x, keys["history"], keys["history_len"], keys["upcard"])
        assert f.shape == (x.shape[0], FEATURES) and f.dtype == np.float32
        planes = f[:, : 9 * NUM_CARDS].reshape(-1, 9, NUM_CARDS)
        rows = np.arange(x.shape[0])
        own = unpack_masks(hands[rows, cur]).astype(bool)
        opp_hidden = unpack_masks(hands[rows, 1 - cur] & ~known[rows, 1 - cur]).astype(bool)
        assert (planes[:, 0].astype(bool) == own).all()
        # The opponent's hidden cards are all unseen, never discarded by it and still held.
        assert (planes[:, 2].astype(bool) | ~opp_hidden).all()
        assert not (planes[:, 3].astype(bool) & opp_hidden).any()
        # Recency weights lie in (0, 1] and only on cards of their plane.
        for flag, recent in ((4, 5), (6, 7)):
            assert ((planes[:, recent] > 0) == (planes[:, flag] > 0)).all()
            assert (planes[:, recent] <= 1).all()


def test_marginals_sum_to_the_hidden_count_on_unseen_cards() -> None:
    net = BeliefNet(hidden=16)
    x, keys, *_ = _positions(games=4, steps=12)[-1]
    f = belief_features(x, keys["history"], keys["history_len"], keys["upcard"])
    unseen = f[:, 2 * NUM_CARDS:3 * NUM_CARDS] > 0.5
    counts = np.array([10, 7, 3, 0])
    p = net.marginals(f, unseen, counts)
    assert np.allclose(p.sum(axis=1), counts, atol=1e-6)
    assert (p[~unseen] == 0).all() and (p >= 0).all() and (p <= 1).all()


def test_sample_hands_draws_count_cards_of_the_likely_ones() -> None:
    gen = np.random.default_rng(0)
    p = np.zeros(NUM_CARDS)
    p[:20] = 0.05
    p[20:30] = 0.9
    hands = sample_hands(p, 10, 2000, gen)
    assert (popcount64(hands) == 10).all()
    flags = unpack_masks(hands).astype(bool)
    assert not flags[:, 30:].any()
    freq = flags.mean(axis=0)
    assert freq[20:30].min() > 3 * freq[:20].max()
    assert (sample_hands(p, 0, 5, gen) == 0).all()
    assert (hidden_flags(hands[:3]) == flags[:3]).all()


def test_save_load_and_clear_errors(tmp_path: Path) -> None:
    net = BeliefNet(hidden=8)
    path = tmp_path / "b.pt"
    net.save(path)
    again = load_belief(path)
    f = np.random.default_rng(1).random((3, FEATURES)).astype(np.float32)
    unseen = np.ones((3, NUM_CARDS), bool)
    assert np.allclose(net.marginals(f, unseen, [10, 10, 10]),
                       again.marginals(f, unseen, [10, 10, 10]))
    with pytest.raises(FileNotFoundError, match="train one with"):
        load_belief(tmp_path / "missing.pt")
    import torch

    torch.save({"kind": "something else"}, str(tmp_path / "other.pt"))
    with pytest.raises(ValueError, match="not a belief network"):
        load_belief(tmp_path / "other.pt")


def test_the_shipped_network_plays_in_search_legally_and_the_same_by_seed() -> None:
    """``search:belief=net`` loads the shipped ``belief.pt`` and plays whole matches (the
    arena refuses an illegal move); a seed gives the same matches twice."""
    pytest.importorskip("torch")
    from agents import make_agent
    from agents.belief import BELIEF_PATH
    from agents.evaluation.arena import play_matches

    assert BELIEF_PATH.is_file()
    net = load_belief()
    assert net.hidden > 0
    results = []
    for _ in range(2):
        agent = make_agent("search:belief=net,samples=4,particles=8,uncertain=1", seed=0)
        stats = play_matches(agent, make_agent("simple", seed=0), 1, seed=5, duplicate=False)
        results.append((stats.a_won.tolist(), stats.b_won.tolist(), stats.a_columns.tolist()))
        assert agent._belief_net is not None  # it searched, with the network
    assert results[0] == results[1]


@pytest.mark.parametrize("kind", ["not a zip", "too wide", "wrong weights", "a list"])
def test_a_bad_belief_file_is_a_one_line_error_when_search_is_built(tmp_path: Path,
                                                                    kind: str) -> None:
    """``belief_file=PATH`` is a user's input: bounded, never unpickled, refused in one line
    when the agent is made (not in the middle of a match)."""
    import torch

    from agents import make_agent

    path = tmp_path / "belief.pt"
    if kind == "not a zip":
        path.write_bytes(b"x" * 100)
    elif kind == "too wide":
        torch.save({"kind": "hgin-belief", "features": FEATURES, "hidden": 10**9,
                    "state": {}}, str(path))
    elif kind == "wrong weights":
        torch.save({"kind": "hgin-belief", "features": FEATURES, "hidden": 8,
                    "state": {"a": torch.zeros(2)}}, str(path))
    else:
        torch.save([1, 2, 3], str(path))
    with pytest.raises(ValueError, match=r"belief\.pt") as err:
        make_agent(f"search:belief=net,belief_file={path}", seed=0)
    assert "\n" not in str(err.value)
