"""Agents: legality everywhere, observation decoding, the simple player's rules,
the arena (act_split, duplicate pairing, compaction) and make_agent."""

from __future__ import annotations

import numpy as np
import pytest

from agents import (
    AGENT_SPECS,
    DeterministicSimpleAgent,
    RandomAgent,
    SimpleAgent,
    StrongAgent,
    make_agent,
)
from agents.evaluation.arena import Arena, act_split, match_seeds, play_matches
from agents.evaluation.stats import clustered_wilson, design_effect, elo_ratings, wilson_interval
from agents.features import decode
from hgin_env import actions as A
from hgin_env.cards import parse_cards, unpack_masks
from hgin_env.engine import VectorGame
from hgin_env.melds import SENTINEL
from hgin_env.rules import load_rules


class NeverTake(DeterministicSimpleAgent):
    """A cheap deterministic player that differs from ``simple-det``: never takes a discard."""

    name = "never-take"

    def act(self, obs, rng=None):
        out = super().act(obs, rng)
        mask = obs["action_mask"]
        rows = np.flatnonzero(out == A.TAKE_DISCARD)
        out[rows] = np.where(mask[rows, A.PASS] == 1, A.PASS, A.DRAW_STOCK)
        return out


def _rule_sets():
    friendly = load_rules("friendly")
    return [
        friendly,
        load_rules("classic").replace(oklahoma=True),
        load_rules("bonus").replace(big_gin=True, forbid_discard_of_taken=False),
        friendly.replace(straight_gin=True, columns=1, target=250),
    ]


def _check_legal(mask: np.ndarray, actions: np.ndarray, who: str) -> None:
    assert actions.dtype == np.int64, who
    assert actions.shape == (mask.shape[0],), who
    ok = mask[np.arange(mask.shape[0]), actions] == 1
    assert ok.all(), f"{who}: illegal action {actions[~ok][0]} in row {np.flatnonzero(~ok)[0]}"


@pytest.mark.parametrize("rules", _rule_sets(), ids=lambda r: f"okl{int(r.oklahoma)}"
                         f"-sg{int(r.straight_gin)}-bg{int(r.big_gin)}-{r.next_dealer}"
                         f"-c{r.columns}")
def test_every_agent_action_is_legal_over_random_positions(rules) -> None:
    """Positions reached by a mix of random, simple and strong play; every agent
    is asked for an action in every game at every step."""
    b = 24
    game = VectorGame(b, rules, seed=11)
    rng = np.random.default_rng(5)
    agents = [RandomAgent(1), SimpleAgent(2), DeterministicSimpleAgent(), StrongAgent(rules=rules)]
    seen_phases = set()
    for _step in range(90):
        obs = game.observe()
        seen_phases.update(np.unique(game.phase).tolist())
        outs = [agent.act(obs, rng) for agent in agents]
        for agent, out in zip(agents, outs, strict=True):
            _check_legal(obs["action_mask"], out, agent.name)
        driver = rng.integers(0, len(agents), size=b)
        actions = np.choose(driver, outs)
        game.step(actions)
    assert {A.PHASE_DRAW, A.PHASE_DISCARD, A.PHASE_OFFER_NONDEALER} <= seen_phases


def test_agents_accept_single_rows_and_subsets() -> None:
    game = VectorGame(8, "friendly", seed=3)
    for _ in range(5):
        obs = game.observe()
        for agent in (SimpleAgent(0), DeterministicSimpleAgent(), StrongAgent()):
            one = {k: v[2:3] for k, v in obs.items()}
            _check_legal(one["action_mask"], agent.act(one), agent.name)
        game.step(SimpleAgent(1).act(obs))


def test_decode_matches_engine_state() -> None:
    game = VectorGame(64, "friendly", seed=21)
    agent = SimpleAgent(0)
    rows = np.arange(64)
    for _ in range(120):
        obs = game.observe()
        view = decode(obs)
        cur = game.current_player.astype(np.int64)
        assert (view.hand == game.hands[rows, cur]).all()
        assert (view.top == game.top_discard()).all()
        assert (view.pile == game.pile_mask).all()
        assert (view.opp_known == game.known[rows, 1 - cur]).all()
        assert (view.phase == game.phase).all()
        assert (view.stock_size == game.stock_size).all()
        assert (view.knock_limit == game.knock_limit).all()
        everything = view.hand | view.pile | view.opp_known | view.unseen
        assert (everything == np.uint64((1 << 52) - 1)).all()
        disc = game.phase == A.PHASE_DISCARD
        held = unpack_masks(game.hands[rows, cur]).astype(bool)
        want = np.where(disc[:, None] & held, game.discard_deadwood, SENTINEL)
        assert (view.after_discard == want).all()
        game.step(agent.act(obs))


def _deck(nondealer: str, dealer: str, upcard: str, stock: str = "") -> np.ndarray:
    """A 52-card order dealing these hands (non-dealer first) and this upcard."""
    nd, de, up = parse_cards(nondealer), parse_cards(dealer), parse_cards(upcard)
    first = [c for pair in zip(nd, de, strict=True) for c in pair] + up + parse_cards(stock)
    rest = [c for c in range(52) if c not in first]
    return np.array(first + rest, dtype=np.int64)


def test_simple_takes_a_melding_upcard_and_passes_a_useless_one() -> None:
    nondealer = "4H 5H 9C 9D KS QD 2C 7S 8D JC"
    dealer = "AC 3D 5S 6C TH TC 2H 4S 6D 8S"
    decks = np.stack([_deck(nondealer, dealer, "6H"), _deck(nondealer, dealer, "KH")])
    game = VectorGame(2, "friendly", seed=0)
    game.reset(decks=decks, dealer=np.array([1, 1]))
    for agent in (SimpleAgent(0), DeterministicSimpleAgent()):
        assert agent.act(game.observe()).tolist() == [A.TAKE_DISCARD, A.PASS]


def test_simple_knocks_as_soon_as_legal_and_sheds_the_highest_deadwood() -> None:
    # 7H joins the run 4H 5H 6H and the hand goes gin shedding KD.
    nondealer = "4H 5H 6H 9C 9D 9S AC 2C 3C KD"
    dealer = "TH TC 2H 4S 6D 8S JS QS 5D 7C"
    game = VectorGame(1, "friendly", seed=0)
    kd = parse_cards("KD")[0]
    for agent in (SimpleAgent(0), DeterministicSimpleAgent()):
        game.reset(decks=_deck(nondealer, dealer, "7H")[None], dealer=np.array([1]))
        assert agent.act(game.observe())[0] == A.TAKE_DISCARD
        game.step(np.array([A.TAKE_DISCARD]))
        assert agent.act(game.observe())[0] == A.KNOCK + kd  # gin, shedding the king
    # A hand that cannot knock discards a highest deadwood card (both leave the least).
    nondealer = "4H 5H 6H 9C 9D KS QD 2C 7S 8D"
    for agent in (SimpleAgent(0), DeterministicSimpleAgent()):
        game.reset(decks=_deck(nondealer, dealer, "3S", "AD")[None], dealer=np.array([1]))
        game.step(np.array([A.PASS]))
        game.step(np.array([A.PASS]))
        game.step(np.array([A.DRAW_STOCK]))  # draws AD
        assert agent.act(game.observe())[0] in parse_cards("KS QD")


def test_strong_goes_gin_and_takes_big_gin() -> None:
    nondealer = "4H 5H 6H 9C 9D 9S AC 2C 3C KD"
    dealer = "TH TC 2H 4S 6D 8S JS QS 5D 7C"
    rules = load_rules("friendly").replace(big_gin=True)
    game = VectorGame(1, rules, seed=0)
    game.reset(decks=_deck(nondealer, dealer, "7H")[None], dealer=np.array([1]))
    agent = StrongAgent(rules=rules)
    assert agent.act(game.observe())[0] == A.TAKE_DISCARD
    game.step(np.array([A.TAKE_DISCARD]))
    assert agent.act(game.observe())[0] == A.KNOCK + parse_cards("KD")[0]
    # 11 cards all melded after the draw: big gin.
    nondealer = "4H 5H 6H 9C 9D 9S AC 2C 3C 7H"
    game.reset(decks=_deck(nondealer, dealer, "QC", "8H")[None], dealer=np.array([1]))
    for act in (A.PASS, A.PASS, A.DRAW_STOCK):
        game.step(np.array([act]))
    assert agent.act(game.observe())[0] == A.BIG_GIN


def test_strong_avoids_feeding_the_opponents_picked_cards() -> None:
    """7C or 7D to shed: ``simple-det`` breaks the tie by card id (7C), ``simple``
    at random; the strong player keeps 7C because the opponent picked up 8C."""
    game = VectorGame(1, "friendly", seed=0)
    nondealer = "AH 2H 3H 4S 5S 6S 2C 4D 5H 7C"
    dealer = "9S TD 2D QH 2S 3D 3C 6H KH 8H"
    game.reset(decks=_deck(nondealer, dealer, "8C", "7D")[None], dealer=np.array([1]))
    game.step(np.array([A.PASS]))
    game.step(np.array([A.TAKE_DISCARD]))  # the dealer takes 8C ...
    game.step(np.array([parse_cards("QH")[0]]))  # ... and sheds QH
    game.step(np.array([A.DRAW_STOCK]))  # the non-dealer draws 7D
    obs = game.observe()
    assert DeterministicSimpleAgent().act(obs)[0] == parse_cards("7C")[0]
    assert SimpleAgent(0).act(obs)[0] in parse_cards("7C 7D")
    assert StrongAgent().act(obs)[0] == parse_cards("7D")[0]


def test_act_split_calls_each_agent_on_its_rows_and_checks_legality() -> None:
    game = VectorGame(10, "friendly", seed=4)
    obs = game.observe()
    calls = []

    class Recorder:
        name = "rec"

        def act(self, o, rng=None):
            calls.append(o["observation"].shape[0])
            return SimpleAgent().act(o)

    who = np.array([0, 1, 0, 1, -1, 0, 0, 1, -1, 0])
    out = act_split([Recorder(), Recorder()], who, obs)
    assert calls == [5, 3]
    _check_legal(obs["action_mask"], out, "split")

    class Cheater:
        name = "cheater"

        def act(self, o, rng=None):
            return np.full(o["observation"].shape[0], A.BIG_GIN, np.int64)

    with pytest.raises(ValueError, match="cheater"):
        act_split([Cheater()], np.zeros(10, np.int64), obs)


def test_duplicate_pairs_replay_the_same_deals_with_seats_swapped() -> None:
    arena = Arena(DeterministicSimpleAgent(), NeverTake(), 8, load_rules("friendly"), seed=9,
                  compact=False)
    game = arena.game
    # Same first dealer seat in both games of a pair, so seat 0 gets the same cards.
    assert (game.dealer[0::2] == game.dealer[1::2]).all()
    assert (game.hands[0::2] == game.hands[1::2]).all()
    assert (arena.seating[0::2] == arena.seating[1::2][:, ::-1]).all()
    deals: list[dict[int, tuple]] = [{} for _ in range(8)]

    def record() -> None:
        for i in np.flatnonzero(arena.active):
            deals[i].setdefault(int(game.deal_number[i]), (
                game.deck[i].tobytes(), int(game.dealer[i]), int(game.hands[i, 0])))

    record()
    while arena.active.any():
        arena.step()
        record()
    compared = 0
    for i in range(0, 8, 2):
        common = set(deals[i]) & set(deals[i + 1])
        assert len(common) >= 5
        for n in common:
            # Same shuffle, same dealing seat (friendly: alternate), same seat-0 cards.
            assert deals[i][n] == deals[i + 1][n]
            compared += 1
    assert compared >= 20
    stats = arena.stats()
    assert stats.num_matches == 8
    assert (stats.a_seat == np.tile([0, 1], 4)).all()
    assert (stats.pair == np.repeat(np.arange(4), 2)).all()


def test_identical_deterministic_agents_split_every_duplicate_pair() -> None:
    stats = play_matches(DeterministicSimpleAgent(), DeterministicSimpleAgent(), 10, "friendly",
                         seed=2)
    assert stats.num_matches == 10
    wins = stats.a_won.reshape(-1, 2).sum(axis=1)
    assert (wins == 1).all()  # each pair: one win for each agent
    assert stats.a_hands.sum() == stats.b_hands.sum()


def test_compaction_and_batching_do_not_change_results() -> None:
    det = DeterministicSimpleAgent()
    full = Arena(det, NeverTake(), 10, load_rules("classic"), seed=5, compact=False).run()
    compact = Arena(det, NeverTake(), 10, load_rules("classic"), seed=5, compact=True).run()
    batched = play_matches(det, NeverTake(), 10, "classic", seed=5, batch_size=4)
    for other in (compact, batched):
        assert (other.a_won == full.a_won).all()
        assert (other.a_points == full.a_points).all()
        assert (other.hands == full.hands).all()
    arena = Arena(SimpleAgent(), SimpleAgent(), 10, load_rules("friendly"), seed=5)
    assert (match_seeds(5, 5) == arena.game.seeds[::2]).all()


def test_match_stats_are_consistent() -> None:
    stats = play_matches(RandomAgent(0), SimpleAgent(), 8, "friendly", seed=1)
    assert (stats.hands == stats.a_hands + stats.b_hands + stats.dead).all()
    assert ((stats.a_columns >= 2) == stats.a_won).all()
    assert (stats.a_columns + stats.b_columns == 3).all()
    assert (stats.a_gins <= stats.a_hands).all()
    sw = stats.swapped()
    assert (sw.a_points == stats.b_points).all() and (sw.a_won == stats.b_won).all()


def test_simple_beats_random() -> None:
    stats = play_matches(SimpleAgent(), RandomAgent(0), 40, "friendly", seed=8)
    assert stats.a_won.mean() >= 0.99


def test_make_agent_specs() -> None:
    assert make_agent("random").name == "random"
    assert isinstance(make_agent("simple"), SimpleAgent)
    assert make_agent("simple", seed=3).name == "simple"
    assert isinstance(make_agent("simple-det"), DeterministicSimpleAgent)
    assert make_agent("Simple-Det").name == "simple-det"
    assert isinstance(make_agent("strong"), StrongAgent)
    heuristic = make_agent("heuristic")
    assert isinstance(heuristic, StrongAgent) and heuristic.name == "heuristic"
    agent = SimpleAgent()
    assert make_agent(agent) is agent
    with pytest.raises(ValueError, match="valid specs") as err:
        make_agent("nonsense")
    for spec in ("random", "simple", "simple-det", "strong", "pretrained", "pretrained-v1",
                 "pretrained-eaai", "ckpt:PATH"):
        assert spec in str(err.value)
    with pytest.raises(ValueError, match="needs a path"):
        make_agent("ckpt:")
    with pytest.raises((ValueError, OSError)):
        make_agent("ckpt:/nonexistent/model.pt")
    assert "strong" in AGENT_SPECS


def test_random_agent_seeding() -> None:
    obs = VectorGame(32, "friendly", seed=0).observe()
    a = make_agent("random", seed=4).act(obs)
    b = make_agent("random", seed=4).act(obs)
    assert (a == b).all()


def test_wilson_and_elo() -> None:
    lo, hi = wilson_interval(55, 100)
    assert lo == pytest.approx(0.4524, abs=1e-3) and hi == pytest.approx(0.6438, abs=1e-3)
    assert wilson_interval(0, 10)[0] == pytest.approx(0.0, abs=1e-12)
    assert wilson_interval(10, 10)[1] == pytest.approx(1.0)
    assert np.isnan(wilson_interval(0, 0)[0])
    wins = np.array([[0, 60, 100], [40, 0, 90], [0, 10, 0]])
    elo = elo_ratings(wins)
    assert elo[0] > elo[1] > elo[2]
    assert elo.mean() == pytest.approx(1500)
    even = elo_ratings(np.array([[0, 50], [50, 0]]))
    assert even[0] == pytest.approx(even[1])
    # 76% expected score is about +200 Elo.
    two = elo_ratings(np.array([[0, 760], [240, 0]]), prior=0)
    assert two[0] - two[1] == pytest.approx(200, abs=2)


def test_clustered_wilson_widens_for_correlated_pairs() -> None:
    twos = np.full(200, 2)
    same = np.repeat([0, 2], 100)  # each pair won or lost as a block: deff 2
    split = np.ones(200)  # every pair split: no information lost, floored at 1
    assert design_effect(same, twos) == pytest.approx(2.0, rel=0.02)
    assert design_effect(split, twos) == 1.0
    lo, hi, deff = clustered_wilson(same, twos)
    plain = wilson_interval(200, 400)
    assert lo < plain[0] and hi > plain[1] and deff > 1.9
    # Half the sample size gives the same interval as the clustered one.
    half = wilson_interval(100, 200)
    assert lo == pytest.approx(half[0], abs=2e-3) and hi == pytest.approx(half[1], abs=2e-3)
    assert clustered_wilson(np.zeros(5), np.full(5, 2))[0] == 0.0


def test_strong_knock_settings_follow_the_undercut_bonus() -> None:
    costly = StrongAgent(rules="friendly").knock  # undercut bonus 25
    cheap = StrongAgent(rules="classic").knock  # undercut bonus 10
    middle = StrongAgent(rules=load_rules("friendly").replace(undercut_bonus=20)).knock
    assert costly["early"] == 8.0 and cheap["early"] == 10.0
    assert cheap["early"] > middle["early"] > costly["early"]
    assert make_agent("strong", rules="classic").knock == cheap


@pytest.mark.parametrize("spec", ["simple", "random"])
def test_row_generators_draw_exactly_as_one_row_at_a_time(spec: str) -> None:
    """An agent with ``draws_per_row`` called once with every row's generator chooses what
    it chooses called on each row alone with that row's generator (the arena relies on it)."""
    from agents.base import RowGenerators

    agent = make_agent(spec, seed=0)
    assert agent.draws_per_row
    game = VectorGame(48, seed=3)
    rng = np.random.default_rng(1)
    for _ in range(150):
        obs = game.observe()
        batched = agent.act(obs, rng=RowGenerators([np.random.default_rng(i) for i in range(48)]))
        alone = [agent.act({k: v[i : i + 1] for k, v in obs.items()},
                           rng=np.random.default_rng(i))[0] for i in range(48)]
        assert batched.tolist() == alone
        mask = obs["action_mask"]
        noise = rng.random(mask.shape)
        noise[mask == 0] = -1
        game.step(noise.argmax(axis=1))
    with pytest.raises(ValueError, match="per row"):
        RowGenerators([np.random.default_rng(0)]).random(3)


def _threads_in_forward(agent) -> list[int]:
    """Record the torch thread count every forward pass of ``agent``'s network runs on."""
    import torch

    seen: list[int] = []
    agent.model.register_forward_pre_hook(lambda module, args: seen.append(
        torch.get_num_threads()))
    return seen


def test_small_batches_run_on_one_thread_and_restore_the_callers_setting() -> None:
    torch = pytest.importorskip("torch")
    from agents.model import PolicyValueNet
    from agents.torch_agent import SMALL_BATCH, TorchAgent

    agent = TorchAgent(PolicyValueNet(hidden=[16]), greedy=False, seed=0)
    seen = _threads_in_forward(agent)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        small = VectorGame(1, "friendly", seed=0).observe()
        agent.act(small)
        agent.policy(small)
        assert seen == [1, 1]  # the small-batch path
        assert torch.get_num_threads() == 3  # what the caller had
        agent.act(VectorGame(SMALL_BATCH, "friendly", seed=0).observe())
        assert seen[-1] == 3  # a large batch keeps the caller's threads
        agent.small_batch = 0  # the switch off: every batch on the caller's threads
        agent.act(small)
        assert seen[-1] == 3 and torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_thread_count_is_restored_when_the_forward_pass_fails() -> None:
    torch = pytest.importorskip("torch")
    from agents.model import PolicyValueNet
    from agents.torch_agent import TorchAgent, torch_threads

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        with pytest.raises(RuntimeError, match="boom"), torch_threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError("boom")
        assert torch.get_num_threads() == 2
        agent = TorchAgent(PolicyValueNet(hidden=[16]))

        def fail(module, args) -> None:
            raise RuntimeError("boom")

        agent.model.register_forward_pre_hook(fail)
        with pytest.raises(RuntimeError, match="boom"):
            agent.act(VectorGame(1, "friendly", seed=0).observe())
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_shipped_agent_is_named_by_its_spec() -> None:
    pytest.importorskip("torch")
    from agents import make_agent

    assert make_agent("pretrained").name == "pretrained"
