"""The OpenSpiel game ``python_hollywood_gin``: OpenSpiel's own checks, and the same seeded
deals played through it and through ``VectorGame`` step by step (legal sets, actions,
observations, returns), so the binding cannot drift from hgin's engine."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="needs OpenSpiel: pip install 'hgin[openspiel]'")

from hgin_env import actions as A  # noqa: E402
from hgin_env.engine import VectorGame  # noqa: E402
from hgin_env.envs import openspiel as og  # noqa: E402
from hgin_env.observation import encode  # noqa: E402
from hgin_env.rules import load_rules  # noqa: E402
from hgin_env.state import validate  # noqa: E402
from tests.helpers.paths import ROOT  # noqa: E402


def _greedy(vg: VectorGame, rng: np.random.Generator) -> int:
    """Knock when allowed, else the discard leaving the least deadwood; draws at random.
    Quick hands, so whole matches (all three columns) fit in a test."""
    legal = np.flatnonzero(vg.legal_action_mask()[0])
    knocks = legal[(legal >= A.KNOCK) & (legal < A.DRAW_STOCK)]
    if knocks.size or A.BIG_GIN in legal:
        return int(A.BIG_GIN if A.BIG_GIN in legal else knocks[0])
    discards = legal[legal < A.KNOCK]
    if discards.size:
        after = vg.state.discard_deadwood[0][discards]
        return int(discards[np.argmin(after)])
    return int(rng.choice(legal))


def _feed_deal(state: pyspiel.State, vg: VectorGame) -> None:
    """The 21 chance outcomes of ``vg``'s current deal, each checked to be on offer."""
    for card in vg.state.deck[0, :og.DEAL_CARDS].tolist():
        assert state.is_chance_node()
        outcomes = dict(state.chance_outcomes())
        assert card in outcomes and sum(outcomes.values()) == pytest.approx(1.0)
        state.apply_action(card)


def _play_both(params: dict, seed: int) -> int:
    """One match through both engines; returns the number of hands played."""
    game = pyspiel.load_game(og.GAME_NAME, params)
    vg = VectorGame(1, game.rules, seed=seed, reward=params.get("reward", "match"),
                    autoreset=False)
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    assert dict(state.chance_outcomes()) == {0: 0.5, 1: 0.5}
    state.apply_action(int(vg.state.dealer[0]))
    _feed_deal(state, vg)
    totals = np.zeros(2)
    hands = 1
    while True:
        seat = int(vg.state.current_player[0])
        assert state.current_player() == seat
        assert state.legal_actions() == np.flatnonzero(vg.legal_action_mask()[0]).tolist()
        for p in (0, 1):
            np.testing.assert_array_equal(state.observation_tensor(p),
                                          vg.observe(p)["observation"][0])
        action = _greedy(vg, rng)
        next_card = int(vg.state.deck[0, vg.state.stock_pos[0]])
        rewards, info = vg.step(np.array([action]))
        totals += rewards[0]
        state.apply_action(action)
        if action == A.DRAW_STOCK:
            assert state.is_chance_node() and next_card in dict(state.chance_outcomes())
            state.apply_action(next_card)
        if info["match_over"][0]:
            break
        if info["hand_over"][0]:
            hands += 1
            _feed_deal(state, vg)
    assert state.is_terminal()
    assert state.returns() == pytest.approx(totals.tolist())
    return hands


@pytest.mark.parametrize(("params", "seed"), [
    ({}, 0),
    ({"rules": "classic", "columns": 1, "reward": "columns"}, 1),
    ({"rules": "bonus", "big_gin": 1, "oklahoma": 1, "reward": "points"}, 2),
    ({"rules": "friendly", "straight_gin": 1, "max_discard_takes": 2, "columns": 1}, 3),
])
def test_same_deals_play_the_same_as_vector_game(params: dict, seed: int) -> None:
    assert _play_both(params, seed) >= 1


@pytest.mark.parametrize("name", [
    "python_hollywood_gin(columns=1,max_hands=2)",
    "python_hollywood_gin(rules=bonus,big_gin=1,reward=points,max_hands=1)",
])
def test_openspiel_random_sim_test(name: str) -> None:
    pyspiel.random_sim_test(pyspiel.load_game(name), num_sims=2, serialize=True, verbose=False)


def test_parameters_name_a_profile_and_overrides() -> None:
    game = pyspiel.load_game("python_hollywood_gin(rules=classic,columns=1,oklahoma=1)")
    assert game.rules == load_rules("classic").replace(columns=1, oklahoma=True)
    assert pyspiel.load_game("python_hollywood_gin").rules == load_rules("friendly")
    with pytest.raises(Exception, match="knock_limit"):
        pyspiel.load_game("python_hollywood_gin(knock_limit=11)")
    with pytest.raises(Exception, match="0 or 1"):
        pyspiel.load_game("python_hollywood_gin(big_gin=2)")
    with pytest.raises(Exception, match="reward"):
        pyspiel.load_game("python_hollywood_gin(reward=chips)")


def _random_state(game: pyspiel.Game, seed: int, steps: int) -> pyspiel.State:
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    for _ in range(steps):
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    return state


def test_serialize_round_trip_continues_the_same_game() -> None:
    game = pyspiel.load_game("python_hollywood_gin(columns=1)")
    state = _random_state(game, seed=4, steps=140)
    text = pyspiel.serialize_game_and_state(game, state)
    _, copy = pyspiel.deserialize_game_and_state(text)
    for _ in range(400):
        if state.is_terminal():
            break
        assert str(copy) == str(state) and copy.history() == state.history()
        assert copy.legal_actions() == state.legal_actions()
        for p in (0, 1):
            assert copy.information_state_string(p) == state.information_state_string(p)
            assert copy.observation_tensor(p) == state.observation_tensor(p)
        action = state.legal_actions()[len(state.history()) % len(state.legal_actions())]
        state.apply_action(action)
        copy.apply_action(action)
    assert copy.returns() == state.returns()


def test_clone_is_independent() -> None:
    game = pyspiel.load_game("python_hollywood_gin")
    state = _random_state(game, seed=5, steps=60)
    before = str(state)
    twin = state.clone()
    for _ in range(30):
        twin.apply_action(twin.legal_actions()[0] if not twin.is_chance_node()
                          else twin.chance_outcomes()[0][0])
    assert str(state) == before


def test_deal_nodes_observe_the_cards_dealt_so_far() -> None:
    game = pyspiel.load_game("python_hollywood_gin")
    state = _random_state(game, seed=6, steps=9)  # the first dealer and eight cards
    assert state.is_chance_node()
    for p in (0, 1):
        view = state.between_hands_state()
        np.testing.assert_array_equal(state.observation_tensor(p),
                                      encode(view, np.array([p]))[0])
        assert sum(state.observation_tensor(p)[:52]) == 4  # four cards each so far


def test_resample_keeps_what_the_player_knows() -> None:
    game = pyspiel.load_game("python_hollywood_gin")
    state = _random_state(game, seed=7, steps=70)
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    me = state.current_player()
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    hidden_hands = set()
    for _ in range(5):
        world = state.resample_from_infostate(me, sampler)
        validate(world.hgin_state())
        assert world.information_state_string(me) == state.information_state_string(me)
        assert world.observation_tensor(me) == state.observation_tensor(me)
        assert world.legal_actions() == state.legal_actions()
        hidden_hands.add(str(world))
    assert len(hidden_hands) > 1


def test_hgin_bots_play_a_match_through_evaluate_bots() -> None:
    from open_spiel.python.algorithms.evaluate_bots import evaluate_bots

    game = pyspiel.load_game("python_hollywood_gin(columns=1)")
    bots = [og.HginBot(game, 0, "simple", seed=1), og.HginBot(game, 1, "strong")]
    returns = evaluate_bots(game.new_initial_state(), bots, np.random.RandomState(0))
    assert sorted(returns) == [-1.0, 1.0]


def test_example_plays_is_mcts_against_hgin_agents() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "hgin_env" / "examples" / "openspiel_bots.py"), "--games", "1",
         "--simulations", "3", "--opponents", "simple"],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "ismcts vs simple" in result.stdout
