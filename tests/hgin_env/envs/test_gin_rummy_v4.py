"""gin_rummy_v4: PettingZoo's own checks, the spaces, and each RLCard rule of docs/rules.md §R
on a dealt deck.  The step-by-step comparison with the original is
test_gin_rummy_v4_lockstep.py (it needs the ``pz-legacy`` extra)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, render_test, seed_test
from pettingzoo.test.seed_test import parallel_seed_test

from hgin_env.envs import gin_rummy_v4
from hgin_env.envs import rlcard_game as G
from hgin_env.int_melds import min_deadwood

SUITS = "SHDC"
RANKS = "A23456789TJQK"


def cid(text: str) -> int:
    """RLCard's card id of ``"TS"`` (rank letter, suit letter)."""
    return SUITS.index(text[1]) * 13 + RANKS.index(text[0])


def ids(text: str) -> list[int]:
    return [cid(t) for t in text.split()]


def deck_for(nondealer: str, dealer: str, draws: str = "") -> list[int]:
    """A deck in RLCard's order that deals ``nondealer`` (11 cards) and ``dealer`` (10),
    with ``draws`` the first cards of the stock; the rest of the stock in id order."""
    first = ids(nondealer) + ids(dealer) + ids(draws)
    assert len(set(first)) == len(first) and len(ids(nondealer)) == 11
    rest = [c for c in range(52) if c not in first]
    return rest + first[::-1]


def dealt(nondealer: str, dealer: str, draws: str = "", **kwargs: object):
    env = gin_rummy_v4.env(**kwargs)
    env.reset(options={"deck": deck_for(nondealer, dealer, draws), "dealer": 0})
    return env


def legal(env) -> list[int]:
    return np.flatnonzero(env.last()[0]["action_mask"]).tolist()


def deadwood(cards: list[int]) -> int:
    return min_deadwood(G.to_hgin_mask(sum(1 << c for c in cards)))


# ----------------------------------------------------------------------------- PettingZoo


def test_pettingzoo_api_tests_pass() -> None:
    api_test(gin_rummy_v4.env(), num_cycles=400)
    api_test(gin_rummy_v4.env(opponents_hand_visible=True), num_cycles=100)
    parallel_api_test(gin_rummy_v4.parallel_env(), num_cycles=400)


def test_pettingzoo_seed_and_render_tests_pass() -> None:
    seed_test(gin_rummy_v4.env, num_cycles=200)
    parallel_seed_test(gin_rummy_v4.parallel_env, num_cycles=200)
    render_test(gin_rummy_v4.env)


def test_spaces_and_arguments_are_pettingzoo_1_26s() -> None:
    env = gin_rummy_v4.env()
    assert env.possible_agents == ["player_0", "player_1"]
    assert env.metadata["name"] == "gin_rummy_v4"
    for visible, planes in ((False, 4), (True, 5)):
        raw = gin_rummy_v4.raw_env(knock_reward=0.25, gin_reward=2.0,
                                   opponents_hand_visible=visible)
        space = raw.observation_space("player_1")
        assert space["observation"].shape == (planes, 52)
        assert space["observation"].dtype == np.int8
        assert space["action_mask"].shape == (110,)
        assert raw.action_space("player_0").n == 110
        raw.reset(seed=3)
        obs = raw.observe(raw.agent_selection)
        assert obs["observation"].shape == (planes, 52)
        assert space.contains(obs)
    with pytest.raises(ValueError, match="knock_reward must be a number"):
        gin_rummy_v4.raw_env(knock_reward="high")
    with pytest.raises(ValueError, match="render_mode"):
        gin_rummy_v4.raw_env(render_mode="video")
    with pytest.raises(ValueError, match="non-negative integer"):
        gin_rummy_v4.raw_env().reset(seed=-1)


def test_pickled_env_keeps_its_arguments() -> None:
    """PettingZoo 1.26's EzPickle dropped ``opponents_hand_visible``; this one keeps it."""
    raw = pickle.loads(pickle.dumps(gin_rummy_v4.raw_env(opponents_hand_visible=True,
                                                         knock_reward=0.3)))
    assert raw.observation_space("player_0")["observation"].shape == (5, 52)
    assert raw._knock_reward == 0.3


def test_rgb_array_and_ansi_renders() -> None:
    for mode in ("rgb_array", "ansi"):
        env = gin_rummy_v4.env(render_mode=mode)
        env.reset(seed=1)
        out = env.render()
        if mode == "rgb_array":
            assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] == 3
            assert len(np.unique(out.reshape(-1, 3), axis=0)) > 10  # cards were drawn
        else:
            assert "player_0" in out and "stock 31" in out


# ----------------------------------------------------------------------------- the rules

JUNK_DEALER = "5D 9H JS 3C 6D TH QS 5C TD 2H"


def test_deal_gives_the_non_dealer_11_cards_and_no_upcard() -> None:
    env = gin_rummy_v4.env(opponents_hand_visible=True)
    env.reset(seed=11)
    raw = env.unwrapped
    mover = env.agent_selection
    assert mover == f"player_{1 - raw.hand.dealer}"
    obs = env.last()[0]["observation"]
    assert obs[0].sum() == 11 and obs[1].sum() == 0 and obs[2].sum() == 0
    assert obs[3].sum() == 0 and obs[4].sum() == 41  # stock 31 + the dealer's 10
    mask = legal(env)
    assert G.DRAW not in mask and G.PICK_UP not in mask
    assert [a - G.DISCARD for a in mask if G.DISCARD <= a < G.KNOCK] == sorted(
        np.flatnonzero(obs[0]).tolist())  # the first discard may be any of the 11


def test_a_player_who_can_go_gin_must() -> None:
    env = dealt("AS 2S 3S 4S 7H 7D 7C KD KC KH 9C", JUNK_DEALER)
    assert legal(env) == [G.GIN]
    env.step(G.GIN)
    assert env.agent_selection == "player_0" and legal(env) == [G.SCORE_0]
    assert env.last()[0]["observation"][0].sum() == 10  # the gin card left the hand
    env.step(G.SCORE_0)
    assert env.agent_selection == "player_1" and legal(env) == [G.SCORE_1]
    env.step(G.SCORE_1)
    assert all(env.terminations.values())
    dealer_deadwood = deadwood(ids(JUNK_DEALER))
    assert env.rewards == {"player_1": 1.0, "player_0": -dealer_deadwood / 100}


def test_knock_choices_and_the_taken_card() -> None:
    """A knock may lay away the card just picked up; a discard may not."""
    # player_1 (non-dealer) discards 9C; player_0 holds melds and picks it up.
    dealer = "AS 2S 3S 4H 4D 4C 8C 8D 8H 2C"
    env = dealt("9C KS QH JD 5S 6H 7D TC KC QD 3H", dealer)
    env.step(G.DISCARD + cid("9C"))
    assert env.agent_selection == "player_0" and legal(env) == [G.DRAW, G.PICK_UP]
    env.step(G.PICK_UP)
    mask = legal(env)
    assert G.DISCARD + cid("9C") not in mask  # forbid_discard_of_taken
    assert G.KNOCK + cid("9C") in mask  # ... but the knock may lay it away
    after_2c = deadwood([c for c in [*ids(dealer), cid("9C")] if c != cid("2C")])
    assert (G.KNOCK + cid("2C") in mask) == (after_2c <= 10)
    env.step(G.KNOCK + cid("9C"))
    obs = env.last()[0]["observation"]
    assert obs[:, cid("9C")].sum() == 0  # the knock card left the hand and is not on the pile
    env.step(G.SCORE_0)
    env.step(G.SCORE_1)
    other = ids("KS QH JD 5S 6H 7D TC KC QD 3H")
    assert env.rewards == {"player_0": 0.5, "player_1": -deadwood(other) / 100}


def test_dead_hand_at_two_stock_cards_while_the_pile_may_still_be_taken() -> None:
    env = gin_rummy_v4.env()
    env.reset(seed=5)
    raw = env.unwrapped
    while len(raw.hand.stock) > 2 or raw.hand.phase != G.PHASE_DRAW:
        mask = legal(env)
        if G.DRAW in mask:
            env.step(G.DRAW)
        else:  # discard, never knock (this seed never forces a gin)
            env.step([a for a in mask if G.DISCARD <= a < G.KNOCK][-1])
    assert legal(env) == [G.PICK_UP, G.DEAD_HAND]
    hands = [list(np.flatnonzero(raw.observe(a)["observation"][0])) for a in raw.agents]
    env.step(G.DEAD_HAND)
    env.step(G.SCORE_0)
    env.step(G.SCORE_1)
    expected = {a: -deadwood(h) / 100 for a, h in zip(raw.possible_agents, hands, strict=True)}
    assert env.rewards == expected


def test_only_a_dead_hand_after_200_moves() -> None:
    hand = G.RLCardHand()
    # 21 cards among which no three can ever meld: two of each rank at most, and the
    # cards of a suit two ranks apart
    hand.deal(deck_for("AS 3S 5S 7S 9S JS KS AH 3H 5H 7H", "9H JH KH 2D 4D 6D 8D TD QD 2C"),
              dealer=0)
    while hand.legal != 1 << G.DEAD_HAND:
        assert hand.moves < G.MAX_MOVES
        if hand.phase == G.PHASE_DRAW:
            hand.step(G.PICK_UP)
        else:
            # swap the picked-up card for the lowest other card, never knocking
            assert hand.legal != 1 << G.GIN
            discards = [a for a in hand.legal_actions() if G.DISCARD <= a < G.KNOCK]
            hand.step(discards[0])
    assert hand.moves == G.MAX_MOVES and hand.phase == G.PHASE_DRAW


def test_illegal_move_ends_the_game_with_minus_one() -> None:
    env = gin_rummy_v4.env()
    env.reset(seed=2)
    mover = env.agent_selection
    env.step(G.DRAW)  # the first player holds 11 cards and must discard
    assert all(env.terminations.values())
    assert env.rewards == {mover: -1, ("player_1" if mover == "player_0" else "player_0"): 0}


def test_raw_env_refuses_illegal_and_non_integer_actions() -> None:
    raw = gin_rummy_v4.raw_env()
    raw.reset(seed=2)
    with pytest.raises(ValueError, match="not legal"):
        raw.step(G.DRAW)
    with pytest.raises(ValueError, match="integer action ids"):
        raw.step("draw")


def test_each_agent_observes_its_own_view() -> None:
    """PettingZoo 1.26 gave every agent the mover's planes and mask; here the waiting
    agent sees its own hand and an all-zero mask, as the original's docs say."""
    raw = gin_rummy_v4.raw_env()
    raw.reset(seed=4)
    mover, waiting = raw.agent_selection, next(a for a in raw.agents if a != raw.agent_selection)
    a, b = raw.observe(mover), raw.observe(waiting)
    assert a["observation"][0].sum() == 11 and b["observation"][0].sum() == 10
    assert not (a["observation"][0] & b["observation"][0]).any()
    assert a["action_mask"].any() and not b["action_mask"].any()


def test_knock_reward_survives_a_seeded_reset() -> None:
    """PettingZoo #1312: 1.26's seeded reset made a new RLCard game whose scorer paid
    RLCard's 0.2 for a knock; here the argument always holds."""
    env = dealt("AS 2S 3S 4H 4D 4C 8C 8D 8H 2C KS", JUNK_DEALER, knock_reward=0.75)
    env.reset(seed=9)
    env.reset(options={"deck": deck_for("AS 2S 3S 4H 4D 4C 8C 8D 8H 2C KS", JUNK_DEALER),
                       "dealer": 0})
    env.step(G.KNOCK + cid("KS"))
    env.step(G.SCORE_0)
    env.step(G.SCORE_1)
    assert env.rewards["player_1"] == 0.75


def test_the_gin_card_is_the_lone_deadwood_card() -> None:
    order = ids("AS 2S 3S 4S 7H 7D 7C KD KC KH 9C")
    assert G.rlcard_gin_card(order) == cid("9C")
    with pytest.raises(AssertionError):
        G.rlcard_gin_card(ids("AS 2S 3S 4S 7H 7D 7C KD KC QH 9C"))


def test_seeds_repeat_and_the_stream_goes_on() -> None:
    a, b = gin_rummy_v4.raw_env(), gin_rummy_v4.raw_env()
    a.reset(seed=123)
    b.reset(seed=123)
    assert a.hand.deck == b.hand.deck and a.hand.dealer == b.hand.dealer
    first = a.hand.deck
    a.reset()
    assert a.hand.deck != first
    b.reset(seed=np.int64(123))
    assert b.hand.deck == first


def test_env_wrapper_behaves_as_pettingzoos_three_wrappers() -> None:
    """``env()``'s one layer against PettingZoo's stack around the same raw env, on random
    play with illegal moves, steps after the end, and out-of-space actions."""
    from pettingzoo.utils import wrappers

    ours = gin_rummy_v4.env()
    stack = wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(
        wrappers.TerminateIllegalWrapper(gin_rummy_v4.raw_env(), illegal_reward=-1)))
    for env in (ours, stack):
        with pytest.raises(AttributeError, match="before reset"):
            env.agent_selection  # noqa: B018
    rng = np.random.default_rng(1)
    for seed in range(40):
        ours.reset(seed=seed)
        stack.reset(seed=seed)
        while True:
            assert ours.agents == stack.agents
            if not ours.agents:
                break
            a, b = ours.last(), stack.last()
            assert a[1:] == b[1:] and ours.agent_selection == stack.agent_selection
            np.testing.assert_array_equal(a[0]["observation"], b[0]["observation"])
            np.testing.assert_array_equal(a[0]["action_mask"], b[0]["action_mask"])
            assert ours.rewards == stack.rewards
            assert ours.unwrapped.cumulative_rewards == stack.unwrapped._cumulative_rewards
            if a[2] or a[3]:
                action = None
            elif rng.random() < 0.03:
                action = int(rng.integers(110))  # legal or not
            else:
                action = int(rng.choice(np.flatnonzero(a[0]["action_mask"])))
            ours.step(action)
            stack.step(action)
        for env in (ours, stack):
            env.reset(seed=seed)
            with pytest.raises(AssertionError, match="not in action space"):
                env.step(110)


def test_the_module_docs_example_runs() -> None:
    doc = gin_rummy_v4.__doc__
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, object] = {}
    exec(compile(code, "gin_rummy_v4 docstring", "exec"), namespace)
    assert not namespace["env"].agents  # the loop played the hand to its end
