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


@pytest.mark.parametrize("belief", ["net", "hand"])
def test_the_shipped_network_plays_in_search_legally_and_the_same_by_seed(belief: str) -> None:
    """``search:belief=net`` (``hand``) loads the shipped ``belief.pt`` (``belief_hand.pt``,
    the conditional network) and plays whole matches (the arena refuses an illegal move);
    a seed gives the same matches twice."""
    pytest.importorskip("torch")
    from agents import make_agent
    from agents.belief import BELIEF_PATH, HAND_BELIEF_PATH
    from agents.evaluation.arena import play_matches

    path = HAND_BELIEF_PATH if belief == "hand" else BELIEF_PATH
    assert path.is_file()
    net = load_belief(path)
    assert net.hidden > 0 and net.conditional == (belief == "hand")
    results = []
    for _ in range(2):
        agent = make_agent(f"search:belief={belief},samples=4,particles=8,uncertain=1", seed=0)
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


class _Pairs:
    """A stand-in conditional network: the hidden hand is {0, 1} or {2, 3}, never a mix.

    With nothing drawn every one of the four cards is as likely; once a card is drawn,
    only its partner stays likely.  Independent marginals would mix the pairs half the
    time; a card-by-card draw must never.
    """

    def __call__(self, x):
        import torch

        drawn = x[:, FEATURES:]
        logits = torch.full((x.shape[0], NUM_CARDS), -20.0)
        logits[:, :4] = 0.0
        for card, partner in ((0, 1), (1, 0), (2, 3), (3, 2)):
            held = drawn[:, card] > 0.5
            logits[held, :4] = -20.0
            logits[held, partner] = 20.0
        return logits


def test_a_conditional_network_draws_whole_hands_card_by_card() -> None:
    pytest.importorskip("torch")
    net = BeliefNet(hidden=8, conditional=True)
    net.module = _Pairs()
    f = np.zeros((2, FEATURES), np.float32)
    unseen = np.zeros((2, NUM_CARDS), bool)
    unseen[:, :10] = True
    hands = net.sample(f, unseen, np.array([2, 0]), 400, [np.random.default_rng(s)
                                                           for s in (1, 2)])
    first = hands[0]
    assert set(first.tolist()) == {0b0011, 0b1100}  # pairs only, both of them
    assert 0.4 < (first == 0b0011).mean() < 0.6
    assert (hands[1] == 0).all()  # nothing hidden: empty hands
    # The same generator gives the same hands, whatever else is in the batch, and is
    # left in the same state (the search draws its stock orders from it next).
    gens = [np.random.default_rng(1), np.random.default_rng(2)]
    wide = net.sample(f, unseen, np.array([2, 5]), 400, gens)
    alone_gen = np.random.default_rng(1)
    alone = net.sample(f[:1], unseen[:1], np.array([2]), 400, [alone_gen])
    assert (alone[0] == first).all() and (wide[0] == first).all()
    assert gens[0].random() == alone_gen.random()
    with pytest.raises(ValueError, match="one each per row"):
        net.sample(f, unseen, np.array([2, 0]), 4, [np.random.default_rng(1)])
    # The plain network's marginals of the same cards would mix the pairs.
    p = np.zeros(NUM_CARDS)
    p[:4] = 0.5
    mixed = sample_hands(p, 2, 400, np.random.default_rng(3))
    assert not np.isin(mixed, [0b0011, 0b1100]).all()


def test_a_conditional_network_saves_loads_and_is_checked(tmp_path: Path) -> None:
    import torch

    net = BeliefNet(hidden=8, conditional=True)
    path = tmp_path / "hand.pt"
    net.save(path)
    again = load_belief(path)
    assert again.conditional
    f = np.random.default_rng(1).random((3, FEATURES)).astype(np.float32)
    unseen = np.ones((3, NUM_CARDS), bool)
    drawn = np.zeros((3, NUM_CARDS), np.float32)
    drawn[:, 5] = 1
    unseen[:, 5] = False
    p = again.marginals(f, unseen, [9, 9, 9], drawn)
    assert np.allclose(p, net.marginals(f, unseen, [9, 9, 9], drawn))
    assert np.allclose(p.sum(axis=1), 9) and (p[:, 5] == 0).all()
    hands = again.sample(f, unseen, np.array([9, 3, 0]), 16,
                         [np.random.default_rng(k) for k in range(3)])
    assert [set(popcount64(h).tolist()) for h in hands] == [{9}, {3}, {0}]
    assert not any((h & np.uint64(1 << 5)).any() for h in hands)
    torch.save({"kind": "hgin-belief", "features": FEATURES, "hidden": 8, "conditional": "yes",
                "state": net.module.state_dict()}, str(path))
    with pytest.raises(ValueError, match="'conditional' must be true or false"):
        load_belief(path)


def test_newton_calibration_agrees_with_bisection() -> None:
    """The card-by-card draws calibrate by Newton's method; the marginals by halving."""
    from agents.belief import _calibrate, _calibrate_newton

    gen = np.random.default_rng(4)
    logits = gen.normal(0.0, 3.0, (200, NUM_CARDS))
    unseen = gen.random((200, NUM_CARDS)) < 0.6
    count = np.minimum(gen.integers(1, 11, 200), unseen.sum(axis=1) - 1)
    p = _calibrate_newton(logits, unseen, count)
    assert np.allclose(p.sum(axis=1), count, atol=1e-6)
    assert np.allclose(p, _calibrate(logits, unseen, count), atol=1e-6)


@pytest.mark.parametrize("belief", ["net", "hand", "netlik"])
def test_a_belief_file_of_the_other_kind_is_a_one_line_error(tmp_path: Path, belief: str
                                                             ) -> None:
    """``hand`` draws card by card and needs a conditional network; ``net`` and ``netlik``
    read card marginals and need a plain one."""
    from agents import make_agent

    path = tmp_path / "other.pt"
    BeliefNet(hidden=8, conditional=belief != "hand").save(path)
    with pytest.raises(ValueError, match=r"needs a .* belief network") as err:
        make_agent(f"search:belief={belief},belief_file={path}", seed=0)
    assert "\n" not in str(err.value)
