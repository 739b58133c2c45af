"""``ginhunter``: legal everywhere, deterministic for any batch, knocks only under its rule,
and its spec options parse (bad ones give one-line errors)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents import AGENT_SPECS, SimpleAgent, make_agent
from agents.ginhunter import (
    INITIAL_STOCK,
    GinHunterAgent,
    GinHunterParams,
    isolated_count,
    parse_ginhunter_spec,
)
from agents.random_agent import RandomAgent
from hgin_env import actions as A
from hgin_env.cards import cards_to_mask, parse_cards
from hgin_env.engine import VectorGame
from hgin_env.rules import load_rules
from tests.helpers.strategies import fast_settings

PROFILES = ("friendly", "classic", "bonus", "eaai")


def _deck(nondealer: str, dealer: str, upcard: str, stock: str = "") -> np.ndarray:
    """A 52-card order dealing these hands (non-dealer first) and this upcard."""
    nd, de, up = parse_cards(nondealer), parse_cards(dealer), parse_cards(upcard)
    first = [c for pair in zip(nd, de, strict=True) for c in pair] + up + parse_cards(stock)
    rest = [c for c in range(52) if c not in first]
    return np.array(first + rest, dtype=np.int64)


def _play(rules, hunter: GinHunterAgent, games: int, steps: int, seed: int):
    """Seeded games of the hunter against a mix of random and simple play; yields, before
    each step, the game, its observation, the hunter's actions and its seat's rows."""
    game = VectorGame(games, rules, seed=seed)
    others = (RandomAgent(seed), SimpleAgent(seed + 1))
    hunter_seat = np.arange(games) % 2
    which = np.arange(games) // 2 % 2
    for _ in range(steps):
        obs = game.observe()
        mine = hunter.act(obs)
        yield game, obs, mine, game.current_player == hunter_seat
        theirs = np.where(which == 0, others[0].act(obs), others[1].act(obs))
        game.step(np.where(game.current_player == hunter_seat, mine, theirs))


@pytest.mark.parametrize("profile", [*PROFILES, "switches"])
def test_every_action_is_legal_in_every_profile(profile: str) -> None:
    """Every row, every step (both seats' positions), over many seeded games."""
    if profile == "switches":  # the knock-limit and big-gin switches no profile turns on
        rules = load_rules("friendly").replace(oklahoma=True, big_gin=True, straight_gin=False)
    else:
        rules = load_rules(profile)
    hunter = make_agent("ginhunter", rules=rules)
    phases, knocks = set(), 0
    for _game, obs, actions, _mine in _play(rules, hunter, games=64, steps=300, seed=7):
        mask = obs["action_mask"]
        assert actions.dtype == np.int64 and actions.shape == (mask.shape[0],)
        ok = mask[np.arange(mask.shape[0]), actions] == 1
        assert ok.all(), f"illegal action {actions[~ok][0]} in row {np.flatnonzero(~ok)[0]}"
        phases.update(np.unique(_game.phase).tolist())
        knocks += int(((actions >= A.KNOCK) & (actions < A.DRAW_STOCK)).sum())
    assert {A.PHASE_OFFER_NONDEALER, A.PHASE_DRAW, A.PHASE_DISCARD} <= phases
    assert knocks > 0


def test_same_actions_for_batch_sizes_1_and_64() -> None:
    hunter = make_agent("ginhunter:turns=6,deadwood=8")
    for _game, obs, actions, _mine in _play(load_rules("friendly"), hunter, 64, 60, seed=3):
        one = [hunter.act({k: v[i : i + 1] for k, v in obs.items()})[0] for i in range(64)]
        np.testing.assert_array_equal(actions, np.array(one))
        # A subset in another order gets the same actions too.
        rows = np.arange(63, -1, -3)
        np.testing.assert_array_equal(hunter.act({k: v[rows] for k, v in obs.items()}),
                                      actions[rows])


@fast_settings(15)
@given(seed=st.integers(0, 2**31 - 1), profile=st.sampled_from(PROFILES),
       turns=st.integers(0, 14), deadwood=st.integers(0, 10))
def test_knocks_only_with_gin_or_while_young_and_low(seed: int, profile: str, turns: int,
                                                     deadwood: int) -> None:
    """Whenever it knocks (or declares big gin), the deadwood after its discard is 0, or at
    most ``turns`` stock draws happened and the deadwood is at most ``deadwood``; read
    from the engine's state, not from the agent's decoding of the observation."""
    rules = load_rules(profile)
    hunter = make_agent(f"ginhunter:turns={turns},deadwood={deadwood}", rules=rules)
    for game, _obs, actions, mine in _play(rules, hunter, games=12, steps=150, seed=seed):
        knock = mine & (actions >= A.KNOCK) & (actions < A.DRAW_STOCK)
        rows = np.flatnonzero(knock)
        dw = game.discard_deadwood[rows, actions[rows] - A.KNOCK]
        draws = INITIAL_STOCK - game.stock_size[rows]
        assert ((dw == 0) | ((draws <= turns) & (dw <= deadwood))).all(), (dw, draws)
        assert (~mine | (actions != A.BIG_GIN) | game.big_gin_ready).all()


def test_knock_rule_on_one_hand() -> None:
    """One hand, 7 deadwood after shedding KD: knocked with on the first turn when
    deadwood=10 allows it, not with deadwood=6 or when the stock shows more draws."""
    nondealer = "4H 5H 6H 9C 9D 9S AC 2C 7S KD"
    dealer = "TH TC 2H 4S 6D 8S JS QS 5D 7C"
    kd = parse_cards("KD")[0]
    game = VectorGame(1, "friendly", seed=0)

    def first_discard(spec: str) -> int:
        game.reset(decks=_deck(nondealer, dealer, "3S", "3C")[None], dealer=np.array([1]))
        for act in (A.PASS, A.PASS, A.DRAW_STOCK):  # the non-dealer draws 3C: AC 2C 3C
            game.step(np.array([act]))
        assert INITIAL_STOCK - int(game.stock_size[0]) == 1
        return int(make_agent(spec).act(game.observe())[0])

    assert first_discard("ginhunter:turns=1,deadwood=10") == A.KNOCK + kd
    assert first_discard("ginhunter:turns=0,deadwood=10") < A.KNOCK
    assert first_discard("ginhunter:turns=3,deadwood=6") < A.KNOCK
    assert first_discard("ginhunter:turns=3,deadwood=7") == A.KNOCK + kd
    # Gin is knocked with at any time: 7H completes the run, turns=0.
    game.reset(decks=_deck("4H 5H 6H 9C 9D 9S AC 2C 3C KD", dealer, "7H")[None],
               dealer=np.array([1]))
    hunter = make_agent("ginhunter:turns=0,deadwood=0")
    assert hunter.act(game.observe())[0] == A.TAKE_DISCARD
    game.step(np.array([A.TAKE_DISCARD]))
    assert hunter.act(game.observe())[0] == A.KNOCK + kd


def test_isolated_count() -> None:
    # AC 2C pair, 9C 9D pair, KD alone, 5H alone (7H is two ranks away: not alone), 7H.
    hand = cards_to_mask(parse_cards("AC 2C 9C 9D KD 5H 7H QS"))
    # QS: no queen, no spade within two ranks -> alone; KD alone; 5H/7H near each other.
    assert isolated_count(np.array([hand], np.uint64))[0] == 2


def test_spec_options_parse() -> None:
    assert "ginhunter[:key=value,...]" in AGENT_SPECS
    agent = make_agent("ginhunter:turns=3,deadwood=10")
    assert isinstance(agent, GinHunterAgent)
    assert agent.name == "ginhunter:turns=3,deadwood=10"
    assert (agent.hunter.turns, agent.hunter.deadwood) == (3, 10)
    assert make_agent("GinHunter").hunter == GinHunterParams()
    assert parse_ginhunter_spec("ginhunter: Turns = 5 , isolated=1.5").isolated == 1.5


@pytest.mark.parametrize(("spec", "match"), [
    ("ginhunter:turns", r"expected key=value with key one of turns, deadwood"),
    ("ginhunter:speed=3", r"expected key=value with key one of"),
    ("ginhunter:turns=three", r"bad value for turns: 'three' \(expected an integer\)"),
    ("ginhunter:turns=2.5", r"bad value for turns"),
    ("ginhunter:potential=x", r"bad value for potential: 'x' \(expected a number\)"),
    ("ginhunter:danger=nan", r"expected a finite number"),
    ("ginhunter:turns=-1", r"turns=-1 is outside 0\.\.31"),
    ("ginhunter:deadwood=200", r"deadwood=200 is outside"),
])
def test_bad_options_give_a_one_line_value_error(spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        make_agent(spec)
    assert "\n" not in str(info.value) and spec in str(info.value)
