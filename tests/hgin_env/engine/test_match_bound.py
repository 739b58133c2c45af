"""The match bound (docs/rules.md Appendix C): every match ends, and a match cut off by
``MAX_HANDS_PER_MATCH`` is reported as truncation by the engines and both environments.

Before the bound, random legal play under ``straight_gin`` finished no match in 200,000
steps: every hand was bounded by the take limit, the number of hands was not.
"""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest

import hgin_env
from hgin_env import actions as A
from hgin_env.cards import parse_card, parse_cards
from hgin_env.engine import VectorGame
from hgin_env.engine.hand import MAX_HANDS_PER_MATCH, max_hand_steps, max_match_steps
from hgin_env.engine.single import SingleGame
from hgin_env.envs.gym_env import ENV_ID, MAX_EPISODE_STEPS, HollywoodGinEnv, HollywoodGinVectorEnv
from hgin_env.rules import RANGES, Rules, load_rules
from hgin_env.state import from_position

STRAIGHT = load_rules("classic").replace(straight_gin=True)

VARIANTS = {
    "friendly": load_rules("friendly"),
    "classic": load_rules("classic"),
    "bonus": load_rules("bonus"),
    "straight_gin": STRAIGHT,
    "straight_big_gin_bonus": load_rules("bonus").replace(straight_gin=True, big_gin=True),
    "oklahoma": load_rules("friendly").replace(oklahoma=True),
    "knock_limit_0": load_rules("friendly").replace(knock_limit=0),
    "one_column_big_gin": load_rules("classic").replace(columns=1, big_gin=True),
    "straight_gin_250": STRAIGHT.replace(target=250),
    "take_limit_1": load_rules("friendly").replace(max_discard_takes=1),
}
#: Variants whose uniformly random matches all but never end: only the bound stops them.
ENDLESS = {"straight_gin", "straight_big_gin_bonus", "knock_limit_0", "straight_gin_250"}


def _never_knock(mask: np.ndarray) -> int:
    """Pass the upcard, draw from the stock, discard the first card: the hand ends dead."""
    for action in (A.PASS, A.DRAW_STOCK):
        if mask[action]:
            return action
    return int(np.flatnonzero(mask[: A.KNOCK])[0])


def _never_knock_batch(obs: dict[str, np.ndarray]) -> np.ndarray:
    """:func:`_never_knock` for a batch of observations (an opponent policy)."""
    return np.array([_never_knock(row) for row in obs["action_mask"]])


def test_the_bounds_follow_from_the_rules() -> None:
    """The derivations of docs/rules.md Appendix C, and that the longest hand is reached."""
    assert MAX_HANDS_PER_MATCH == 2000
    assert max_hand_steps(load_rules()) == 160
    assert max_match_steps(load_rules()) == 320_000
    largest = Rules(max_discard_takes=RANGES["max_discard_takes"][1])
    assert MAX_EPISODE_STEPS == max_match_steps(largest) == 40_120_000
    # Both players pass, then always take when they may and never knock: the longest hand.
    rules = load_rules("friendly").replace(max_discard_takes=4)
    game = SingleGame(rules, seed=2, autoreset=False)
    steps, info = 0, {"hand_over": False}
    while not info["hand_over"]:
        mask = game.legal_action_mask()
        take = mask[A.TAKE_DISCARD] and game.phase == A.PHASE_DRAW
        _, info = game.step(A.TAKE_DISCARD if take else _never_knock(mask))
        steps += 1
    assert info["dead_hand"] and steps == max_hand_steps(rules) == 2 + 2 * (29 + 4)


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.slow) if name in ENDLESS else name
    for name in sorted(VARIANTS)])
def test_every_variant_ends_under_random_play(name: str) -> None:
    """Matches of uniformly random legal play end, by the rules or by the bound (one
    match of an endless variant: 2000 hands, some 240,000 steps)."""
    rules = VARIANTS[name]
    game = SingleGame(rules, seed=7, autoreset=False)
    pick = random.Random(name)
    for _ in range(1 if name in ENDLESS else 2):
        hands = 0
        for _ in range(max_match_steps(rules)):
            _, info = game.step(pick.choice(game.legal_actions()))
            hands += info["hand_over"]
            if info["match_over"] or info["truncated"]:
                break
        else:
            pytest.fail(f"{name}: a match ran past {max_match_steps(rules)} steps")
        assert game.match_over and game.hands_in_match == hands <= MAX_HANDS_PER_MATCH
        assert game.truncated == info["truncated"] == (name in ENDLESS)
        if info["truncated"]:
            assert hands == MAX_HANDS_PER_MATCH and info["match_winner"] == -1
            assert not game.sheets.match_over[0]
        else:
            assert info["match_winner"] in (0, 1) and game.sheets.match_over[0]
        assert info["final_scores"].tolist() == game.sheet().scores.tolist()
        game.next_match()


def _to_the_last_hand(game: VectorGame) -> None:
    game.state.hands_in_match[:] = MAX_HANDS_PER_MATCH


def _play_dead_hand(game: VectorGame) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    while True:
        mask = game.legal_action_mask()
        rewards, info = game.step(np.array([_never_knock(row) for row in mask]))
        if info["hand_over"].all():
            return rewards, info
        assert not info["hand_over"].any()


@pytest.mark.parametrize("autoreset", [True, False])
def test_vector_game_reports_truncation(autoreset: bool) -> None:
    game = VectorGame(3, STRAIGHT, seed=4, reward="match", autoreset=autoreset)
    before = game.sheets.copy()
    game.state.hands_in_match[:] = [MAX_HANDS_PER_MATCH - 1, MAX_HANDS_PER_MATCH, 5000]
    rewards, info = _play_dead_hand(game)
    assert info["dead_hand"].all() and not info["match_over"].any() and not rewards.any()
    assert info["truncated"].tolist() == [False, True, True]
    assert info["match_winner"].tolist() == [-1, -1, -1]
    assert (info["final_scores"][1:] == before.scores[1:]).all()
    assert (game.last_match.scores[1:] == before.scores[1:]).all()
    assert (game.last_match.match_winner == -1).all()
    assert int(game.hands_in_match[0]) == MAX_HANDS_PER_MATCH  # the last hand is dealt
    if autoreset:  # fresh matches, first hand dealt
        assert game.hands_in_match.tolist()[1:] == [1, 1]
        assert game.match_number.tolist() == [0, 1, 1] and not game.truncated.any()
    else:  # parked in the final position until reset_games
        assert game.truncated.tolist() == [False, True, True]
        assert not game.legal_action_mask()[1:].any() and game.legal_action_mask()[0].any()
        game.reset_games([1, 2])
        assert not game.truncated.any() and game.hands_in_match.tolist()[1:] == [1, 1]


@pytest.mark.parametrize("autoreset", [True, False])
def test_a_match_decided_in_its_last_hand_is_not_truncated(autoreset: bool) -> None:
    """The last hand decides the match: a normal match end, with its winner."""
    knocker = parse_cards("4H 5H 6H 7H 9C 9D 9S AC 2C 3C KD")
    rest = [c for c in range(52) if c not in knocker]
    state = from_position(
        STRAIGHT, hands=[knocker, rest[:10]], stock=rest[10:25], pile=rest[25:],
        dealer=1, current_player=0, phase=A.PHASE_DISCARD,
        sheet={"scores": [[99, 99, 99], [0, 0, 0]], "wins": [5, 0]},
        hands_in_match=MAX_HANDS_PER_MATCH)
    game = VectorGame.from_state(state, reward="match", autoreset=autoreset)
    rewards, info = game.step(np.array([A.KNOCK + parse_card("KD")]))  # gin
    assert info["gin"][0] and info["match_over"][0] and not info["truncated"][0]
    assert int(info["match_winner"][0]) == 0 and rewards.tolist() == [[1.0, -1.0]]
    assert not game.truncated[0]


def test_single_game_reports_truncation_as_the_engine_does() -> None:
    for autoreset in (True, False):
        vec = VectorGame(1, STRAIGHT, seed=9, autoreset=autoreset)
        single = SingleGame(STRAIGHT, seed=vec.seeds, autoreset=autoreset)
        _to_the_last_hand(vec)
        single.state.hands_in_match[0] = MAX_HANDS_PER_MATCH
        while True:
            action = _never_knock(vec.legal_action_mask()[0])
            rewards, info = vec.step(np.array([action]))
            got, got_info = single.step(action)
            assert got == tuple(rewards[0].tolist())
            for key, value in info.items():
                assert np.array_equal(np.asarray(got_info[key]), value[0]), key
            if got_info["hand_over"]:
                break
        assert got_info["truncated"] and single.truncated != autoreset
        assert single.state_dict().keys() == vec.state_dict().keys()
        for key, value in vec.state_dict().items():
            assert np.array_equal(single.state_dict()[key], value), key


def _aec_to_the_end(env: object, policy: object) -> tuple[int, dict[str, float]]:
    """Play ``env`` (PettingZoo AEC) to the end; (steps, returns per agent)."""
    returns = dict.fromkeys(env.possible_agents, 0.0)
    steps = 0
    for agent in env.agent_iter():
        obs, reward, termination, truncation, _ = env.last()
        returns[agent] += reward
        env.step(None if termination or truncation else policy(obs["action_mask"]))
        steps += 1
    return steps, returns


@pytest.mark.slow
def test_pettingzoo_truncates_a_random_straight_gin_match() -> None:
    """The case of the issue: uniformly random play under straight gin now ends."""
    env = hgin_env.env(rules=load_rules("bonus").replace(straight_gin=True, big_gin=True))
    env.reset(seed=3)
    space = env.action_space("player_0")
    space.seed(3)
    raw = env.unwrapped
    steps, returns = _aec_to_the_end(env, space.sample)
    assert raw.truncated and raw.match_over and raw.hands_played == MAX_HANDS_PER_MATCH
    assert steps <= max_match_steps(raw.rules) + 2
    assert returns["player_0"] == -returns["player_1"]


def test_pettingzoo_reports_truncation() -> None:
    env = hgin_env.env(rules=STRAIGHT)
    env.reset(seed=5)
    raw = env.unwrapped
    raw.single.state.hands_in_match[0] = MAX_HANDS_PER_MATCH
    while not raw.match_over:
        env.step(_never_knock(env.observe(env.agent_selection)["action_mask"]))
    assert all(env.truncations.values()) and not any(env.terminations.values())
    assert env.rewards == {"player_0": 0.0, "player_1": 0.0}
    for agent in env.agents:
        info = env.infos[agent]
        assert info["hand_over"] and info["truncated"] and info["match_winner"] is None
        assert info["final_scores"] == {a: [0, 0, 0] for a in env.possible_agents}
    _, _, termination, truncation, _ = env.last()
    assert truncation and not termination
    assert env.observe("player_0")["action_mask"].sum() == 1  # the terminal placeholder
    assert "cut off" in raw.render_text()
    env.step(None)
    env.step(None)
    assert env.agents == []


def test_gymnasium_reports_truncation_below_its_time_limit() -> None:
    env = gym.make(ENV_ID, rules=STRAIGHT, opponent=_never_knock_batch,
                   max_episode_steps=MAX_EPISODE_STEPS)
    obs, _ = env.reset(seed=1)
    base = env.unwrapped
    assert isinstance(base, HollywoodGinEnv)
    base.table.single.state.hands_in_match[0] = MAX_HANDS_PER_MATCH
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(_never_knock(obs["action_mask"]))
        steps += 1
    assert truncated and not terminated and reward == 0.0 and steps < MAX_EPISODE_STEPS
    assert info["truncated"] and not info["match_over"] and not info["match_won"]
    assert info["final_scores"].tolist() == [[0, 0, 0], [0, 0, 0]]
    with pytest.raises(RuntimeError, match="reset"):
        env.step(A.PASS)


def test_gymnasium_vector_env_reports_truncation() -> None:
    env = HollywoodGinVectorEnv(2, opponent=_never_knock_batch, rules=STRAIGHT, seat=0)
    obs, _ = env.reset(seed=2)
    env.game.state.hands_in_match[0] = MAX_HANDS_PER_MATCH
    for _ in range(max_hand_steps(STRAIGHT)):
        acts = np.array([_never_knock(row) for row in obs["action_mask"]])
        obs, rewards, terminations, truncations, info = env.step(acts)
        if truncations.any():
            break
    assert truncations.tolist() == [True, False] and not terminations.any()
    assert info["truncated"].tolist() == [True, False] and not info["match_over"].any()
    assert info["_final_obs"].tolist() == [True, False]
    assert info["final_info"]["truncated"][0] and not rewards.any()
    assert int(env.game.hands_in_match[0]) == 1  # the next match has begun
