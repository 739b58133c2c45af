"""The ``eaai`` profile: the rules of Todd Neller's Java gin rummy framework (docs/eaai.md).

Each switch is checked against the constant or the line of ``GinRummyGame.java`` /
``GinRummyUtil.java`` it comes from, the worked layoff example is played through the
engine, and seeded games check the game-level rules (one game to 100, who starts next).
"""

from __future__ import annotations

import numpy as np
import pytest

from agents.base import sample_uniform_legal
from hgin_env import actions as A
from hgin_env.cards import parse, parse_cards
from hgin_env.engine import VectorGame
from hgin_env.rules import PROFILES, Rules, load_rules
from hgin_env.showdown import showdown
from tests.helpers.reference import value

KNOCKER = "7C 7H 7S 4D 5D 6D AC 2C 3C 2H"
DEFENDER = "7D 8D KC KH QS JS 9C 5S 3H TD"


def test_profile_is_the_java_frameworks_rules() -> None:
    """GinRummyUtil: GOAL_SCORE 100, GIN_BONUS 25, UNDERCUT_BONUS 25, MAX_DEADWOOD 10."""
    eaai = load_rules("eaai")
    assert (eaai.target, eaai.gin_bonus, eaai.undercut_bonus, eaai.knock_limit) == (
        100, 25, 25, 10)
    assert eaai.columns == 1                       # one game, no Hollywood columns
    assert eaai.next_dealer == "alternate"         # "starting player alternates"
    assert eaai.dead_hand_dealer == "same"         # a cancelled hand: the same player starts
    assert eaai.forbid_discard_of_taken            # discardCard == faceUpCard forfeits
    assert eaai.max_discard_takes == 10_000        # no take limit (the switch's maximum)
    assert eaai.layoff == "declared-greedy"
    assert not (eaai.oklahoma or eaai.straight_gin or eaai.big_gin)
    assert (eaai.game_bonus, eaai.shutout_bonus, eaai.box_bonus) == (0, 0, 0)
    # Against friendly, exactly these switches differ.
    friendly = load_rules("friendly").to_dict()
    changed = {k for k, v in eaai.to_dict().items() if friendly[k] != v}
    assert changed == {"columns", "dead_hand_dealer", "max_discard_takes", "layoff"}
    assert {load_rules(p).layoff for p in PROFILES if p != "eaai"} == {"optimal"}
    assert Rules().layoff == "optimal"


def test_layoff_switch_is_validated() -> None:
    with pytest.raises(ValueError, match="layoff"):
        Rules(layoff="greedy")
    with pytest.raises(ValueError, match="layoff"):
        load_rules("friendly").replace(layoff=1)


def _stacked(nondealer: str, dealer: str, upcard: str) -> np.ndarray:
    first, second = parse_cards(nondealer), parse_cards(dealer)
    order = [c for pair in zip(first, second, strict=True) for c in pair] + parse_cards(upcard)
    return np.array(order + [c for c in range(52) if c not in order])


@pytest.mark.parametrize(("profile", "award"), [("friendly", 67 - 2), ("eaai", 75 - 2)])
def test_worked_example_through_the_engine(profile: str, award: int) -> None:
    """The non-dealer takes the upcard 2H and knocks with 2 deadwood, discarding KS: the
    referee's greedy layoff (7D onto the declared set of sevens) leaves 75, hgin's 67."""
    deck = _stacked("7C 7H 7S 4D 5D 6D AC 2C 3C KS", DEFENDER, "2H")
    game = VectorGame(1, profile, seed=0)
    game.reset(decks=deck[None], dealer=np.array([0]))
    game.step(np.array([A.TAKE_DISCARD]))
    _, info = game.step(np.array([A.KNOCK + parse_cards("KS")[0]]))
    assert info["hand_over"][0] and int(info["knocker"][0]) == 1
    assert int(info["knocker_deadwood"][0]) == 2
    assert int(info["defender_deadwood"][0]) == award + 2
    assert int(info["award"][0]) == award
    assert int(game.last_hand.layoffs[0]) == (
        parse("7D") if profile == "eaai" else parse("7D 8D"))


def test_greedy_layoff_never_helps_the_defender() -> None:
    """The referee's layoffs are one of the choices hgin's optimum ranges over, so on
    knocks from random play the knocker's margin d - k is never smaller under it."""
    rng = np.random.default_rng(3)
    game = VectorGame(256, "friendly", seed=4)
    knockers, defenders = [], []
    for _ in range(400):
        mask = game.legal_action_mask()
        knocks = mask[:, A.KNOCK:A.DRAW_STOCK].any(axis=1)
        acts = sample_uniform_legal(mask, rng)
        acts[knocks] = A.KNOCK + mask[knocks, A.KNOCK:A.DRAW_STOCK].argmax(axis=1)
        _, info = game.step(acts)
        done = np.flatnonzero(info["hand_over"] & ~info["dead_hand"] & ~info["gin"])
        knockers += [int(m) for m in game.last_hand.knocker_hand[done]]
        defenders += [int(m) for m in game.last_hand.defender_hand[done]]
    assert len(knockers) > 50
    for k, d in zip(knockers, defenders, strict=True):
        opt = showdown(k, d, Rules())
        greedy = showdown(k, d, Rules(layoff="declared-greedy"))
        margin = greedy.defender_deadwood - greedy.knocker_deadwood
        assert margin >= opt.defender_deadwood - opt.knocker_deadwood
        assert greedy.layoffs & ~d == 0 and greedy.defender_deadwood <= value(d)


def test_one_game_to_100_and_who_starts_next() -> None:
    """columns = 1: a match is one game, over when a score reaches 100; after a scored
    hand the deal alternates, after a cancelled (dead) hand the same player deals."""
    rng = np.random.default_rng(0)
    game = VectorGame(24, "eaai", seed=2)
    seen = {"alternate": 0, "same": 0, "over": 0}
    running = np.ones(24, bool)
    for _ in range(20_000):  # each game's first match; later ones are not looked at
        if not running.any():
            break
        dealer = game.dealer.copy()
        mask = game.legal_action_mask()
        acts = sample_uniform_legal(mask, rng)
        knocks = mask[:, A.KNOCK:A.DRAW_STOCK].any(axis=1) & (rng.random(24) < 0.8)
        acts[knocks] = A.KNOCK + mask[knocks, A.KNOCK:A.DRAW_STOCK].argmax(axis=1)
        _, info = game.step(acts)
        ended = running & info["hand_over"]
        over = ended & info["match_over"]
        for row in np.flatnonzero(over):
            scores = info["final_scores"][row, :, 0]
            winner = int(info["match_winner"][row])
            assert scores[winner] >= 100 > scores[1 - winner]
            seen["over"] += 1
        going = ended & ~over
        dead = going & info["dead_hand"]
        assert (game.dealer[dead] == dealer[dead]).all()
        assert (game.dealer[going & ~dead] != dealer[going & ~dead]).all()
        seen["same"] += int(dead.sum())
        seen["alternate"] += int((going & ~dead).sum())
        running &= ~over
    assert seen["over"] == 24 and seen["same"] > 0 and seen["alternate"] > 0
