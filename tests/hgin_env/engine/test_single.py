"""``hgin_env.engine.single.SingleGame`` against the batched engine it mirrors.

* Differential soaks: B one-game ``SingleGame``s and one ``VectorGame(B)``
  with the same per-game seeds (a game plays the same alone or in a batch)
  take the same actions; after every step the whole state (sheets, last hand
  and last match included), the legal masks, both seats' observations,
  rewards and info must be identical.  Random and knock-happy policies, every
  profile, the Oklahoma / straight gin / big gin / one column / target 250
  switches, all reward modes, with and without autoreset.
* The scalar deadwood code against ``melds`` (hypothesis and large batches).
* Seeding, stacked decks, illegal actions, the array view.
  (The AEC layer's own pieces are tested in tests/hgin_env/envs/test_wrappers.py.)

``HGIN_SLOW_EXAMPLES`` (default 300) scales the ``slow`` soaks (2 x that many
steps of 16 games per configuration; about 30 s in all at the default).
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest
from hypothesis import given

from hgin_env import actions as A
from hgin_env.cards import parse_cards
from hgin_env.engine import MAX_HANDS_PER_MATCH, VectorGame
from hgin_env.engine.single import SingleGame, discard_table, min_deadwood
from hgin_env.melds import deadwood_after_discard
from hgin_env.melds import min_deadwood as batched_min_deadwood
from hgin_env.observation import OBS_DIM, encode
from hgin_env.rules import Rules, load_rules
from hgin_env.state import FIELD_NAMES
from tests.helpers.strategies import fast_settings, hands, meld_dense_hands

SLOW_EXAMPLES = int(os.environ.get("HGIN_SLOW_EXAMPLES", "300"))
SHEET_FIELDS = ("scores", "decided", "column_winner", "wins", "boxes", "match_winner")
HAND_FIELDS = ("knocker", "knocker_hand", "defender_hand", "knocker_meld_mask",
               "knocker_set_mask", "defender_meld_mask", "defender_set_mask", "layoffs",
               "knocker_deadwood", "defender_deadwood", "winner", "award", "gin", "big_gin",
               "undercut", "dead", "valid")


def _rules(name: str) -> Rules:
    variants = {
        "oklahoma": load_rules("friendly").replace(oklahoma=True),
        "straight_gin_1": load_rules("classic").replace(straight_gin=True, columns=1,
                                                         undercut_bonus=20),
        "big_gin_1": load_rules("bonus").replace(big_gin=True, columns=1),
        "oklahoma_big_gin_1": load_rules("classic").replace(oklahoma=True, big_gin=True,
                                                            columns=1, gin_bonus=20,
                                                            big_gin_bonus=40),
        "one_column_250": load_rules("bonus").replace(columns=1, target=250),
    }
    return variants[name] if name in variants else load_rules(name)


# ============================================================== differential soak


def _stacked_state(games: list[SingleGame]) -> dict[str, np.ndarray]:
    """The singles' state in ``VectorGame.state_dict`` layout, plus sheets and records."""
    states = [g.state_dict() for g in games]  # every field of hgin_env.state.FIELDS
    out = {name: np.concatenate([s[name] for s in states]) for name in states[0]}
    for name in FIELD_NAMES:  # the per-step mirrors agree with the synced state
        mirrors = np.array([getattr(g, name) for g in games])
        assert np.array_equal(mirrors.reshape(out[name].shape), out[name]), name
    for name in SHEET_FIELDS:
        out[f"last_match_{name}"] = np.concatenate([getattr(g.last_match, name) for g in games])
    for name in HAND_FIELDS:
        out[f"hand_{name}"] = np.concatenate([getattr(g.last_hand, name) for g in games])
    return out


def _engine_state(vec: VectorGame) -> dict[str, np.ndarray]:
    out = vec.state_dict()
    for name in SHEET_FIELDS:
        out[f"last_match_{name}"] = getattr(vec.last_match, name)
    for name in HAND_FIELDS:
        out[f"hand_{name}"] = getattr(vec.last_hand, name)
    return out


def _assert_same(games: list[SingleGame], vec: VectorGame, step: int, full: bool = True) -> None:
    """Everything observable agrees; ``full`` adds the dict APIs (``observe``,
    ``legal_actions``), which the per-step byte checks below cover otherwise."""
    mine, theirs = _stacked_state(games), _engine_state(vec)
    for name, value in theirs.items():
        # Arrays of Python ints come out int64; compare values, not dtypes.
        assert np.array_equal(mine[name], value), (step, name, mine[name], value)
    mask = vec.legal_action_mask()
    assert b"".join(g.legal_mask_bytes() for g in games) == mask.tobytes(), step
    packed = np.packbits(mask, axis=1, bitorder="little")
    assert [g.legal for g in games] == [int.from_bytes(row.tobytes(), "little") for row in packed]
    for seat in (0, 1):
        ref = vec.observe(seat)["observation"]
        got = b"".join(g.observation_bytes(seat) for g in games)
        if got != ref.tobytes():
            mine_obs = np.frombuffer(got, np.float32).reshape(ref.shape)
            bad = np.argwhere(mine_obs != ref)[0]
            raise AssertionError(f"step {step}, seat {seat}: observation differs at "
                                 f"game {bad[0]} entry {bad[1]}")
    if not full:
        return
    for g, row in zip(games, mask, strict=True):
        assert g.legal_actions() == np.flatnonzero(row).tolist()
    for player in (0, 1, None):
        ref = vec.observe(player)
        obs = [g.observe(player) for g in games]
        got = np.stack([o["observation"] for o in obs])
        assert got.dtype == np.float32 and got.shape == (len(games), OBS_DIM)
        assert np.array_equal(got, ref["observation"]), (step, player)
        assert np.array_equal(np.stack([o["action_mask"] for o in obs]), ref["action_mask"])


def _choose(vec: VectorGame, rng: np.random.Generator, knocky: np.ndarray) -> np.ndarray:
    """Random legal actions, except in the ``knocky`` games, which play to finish hands:
    big gin and gin whenever legal, other knocks usually, the discard leaving the least
    deadwood, and the top discard when it lowers their deadwood."""
    mask = vec.legal_action_mask()
    b = mask.shape[0]
    rows = np.arange(b)
    acts = np.argmax(rng.random(mask.shape) * mask, axis=1)
    drawing = knocky & (mask[:, A.TAKE_DISCARD] == 1)
    if drawing.any():
        g = np.flatnonzero(drawing)
        hand = vec.hands[g, vec.current_player[g]]
        top = vec.top_discard()[g].astype(np.uint64)
        after = deadwood_after_discard(hand | (np.uint64(1) << top))
        after[np.arange(g.size), top.astype(np.int64)] = 10_000  # may not discard it again
        better = after.min(axis=1) < batched_min_deadwood(hand)
        decline = np.where(mask[g, A.PASS] == 1, A.PASS, A.DRAW_STOCK)
        acts[g] = np.where(better, A.TAKE_DISCARD, decline)
    discarding = knocky & (vec.phase == A.PHASE_DISCARD)
    after = np.where(mask[:, :A.KNOCK] == 1, vec.discard_deadwood, 10_000)
    acts = np.where(discarding & (rng.random(b) < 0.9), np.argmin(after, axis=1), acts)
    knocks = np.where(mask[:, A.KNOCK:A.DRAW_STOCK] == 1, vec.discard_deadwood, 10_000)
    best_knock = np.argmin(knocks, axis=1)
    knock_dead = knocks[rows, best_knock]
    knock = discarding & ((knock_dead == 0) | ((knock_dead < 10_000) & (rng.random(b) < 0.5)))
    acts = np.where(knock, A.KNOCK + best_knock, acts)
    acts = np.where(knocky & (mask[:, A.BIG_GIN] == 1), A.BIG_GIN, acts)
    assert (mask[rows, acts] == 1).all()
    return acts.astype(np.int64)


def soak(rules: Rules, reward: str, autoreset: bool, num_games: int, steps: int,
         seed: int, hands_dealt: int = 1) -> Counter:
    """Play ``steps`` steps of ``num_games`` games in lockstep; return event counts.

    ``hands_dealt`` starts the first matches as if that many hands had been dealt
    (the match bound's count), so that they reach the bound quickly."""
    rng = np.random.default_rng(seed)
    vec = VectorGame(num_games, rules, seed=seed, reward=reward, autoreset=autoreset)
    games = [SingleGame(rules, seed=vec.seeds[i : i + 1], reward=reward, autoreset=autoreset)
             for i in range(num_games)]
    vec.state.hands_in_match[:] = hands_dealt
    for g in games:
        g.state.hands_in_match[0] = hands_dealt
    knocky = np.arange(num_games) % 4 != 0  # one game in four plays at random
    seen: Counter = Counter()
    _assert_same(games, vec, -1)
    for step in range(steps):
        acts = _choose(vec, rng, knocky)
        rewards, info = vec.step(acts)
        results = [g.step(int(a)) for g, a in zip(games, acts, strict=True)]
        got_rewards = np.array([r for r, _ in results], np.float32)
        assert np.array_equal(got_rewards, rewards), step
        for key, value in info.items():
            got = np.array([i[key] for _, i in results])
            assert np.array_equal(got, value), (step, key, got, value)
            assert all(isinstance(i[key], (bool, int)) for _, i in results
                       if key != "final_scores")
        _assert_same(games, vec, step, full=step % 16 == 0)
        seen["hands"] += int(info["hand_over"].sum())
        seen["dead"] += int(info["dead_hand"].sum())
        seen["gin"] += int(info["gin"].sum())
        seen["big_gin"] += int(info["big_gin"].sum())
        seen["undercut"] += int(info["undercut"].sum())
        seen["matches"] += int(info["match_over"].sum())
        seen["truncated"] += int(info["truncated"].sum())
        seen["rewarded"] += int((rewards != 0).any(axis=1).sum())
        over = np.flatnonzero(vec.phase == A.PHASE_MATCH_OVER)
        if over.size:
            assert not autoreset
            for i in over:
                assert games[i].match_over and games[i].legal == 0
                assert games[i].sheet().to_dict() == vec.sheet(int(i)).to_dict()
                games[i].next_match()
            vec.reset_games(over)
            _assert_same(games, vec, step)
    return seen


SOAKS = [
    # (rules, reward, autoreset, games, steps): 3-column matches take ~300+ steps
    ("bonus", "match", True, 16, 400),
    ("classic", "points", False, 16, 400),
    ("friendly", "columns", True, 16, 150),
    ("oklahoma", "columns", False, 16, 120),
    ("straight_gin_1", "columns", True, 16, 150),
    ("big_gin_1", "match", False, 16, 200),
    ("oklahoma_big_gin_1", "points", True, 16, 200),
    ("one_column_250", "points", True, 16, 150),
]


@pytest.mark.parametrize(("rules", "reward", "autoreset", "games", "steps"), SOAKS,
                         ids=[s[0] for s in SOAKS])
def test_single_game_equals_vector_game_every_step(
    rules: str, reward: str, autoreset: bool, games: int, steps: int
) -> None:
    seen = soak(_rules(rules), reward, autoreset, games, steps, seed=len(rules))
    assert seen["hands"] > games and seen["dead"] > 0
    assert seen["rewarded"] > 0 or reward != "points"
    if rules in ("bonus", "classic", "big_gin_1", "oklahoma_big_gin_1"):
        assert seen["matches"] > 0 and seen["undercut"] > 0 and seen["gin"] > 0


@pytest.mark.parametrize("autoreset", [True, False])
def test_truncated_matches_equal_the_engine(autoreset: bool) -> None:
    """Matches started in their last hand before the match bound: the truncation (info,
    sheet, last match, parking, the next match) is the same in both engines."""
    rules = _rules("straight_gin_1")
    seen = soak(rules, "columns", autoreset, 16, 200, seed=8, hands_dealt=MAX_HANDS_PER_MATCH)
    assert seen["truncated"] > 8 and seen["truncated"] + seen["matches"] >= 16


def _deck(nondealer: str, dealer: str, upcard: str, stock_top: str) -> np.ndarray:
    a, b = parse_cards(nondealer), parse_cards(dealer)
    head = [card for pair in zip(a, b, strict=True) for card in pair]
    head += parse_cards(upcard) + parse_cards(stock_top)
    return np.array(head + [c for c in range(52) if c not in head])


@pytest.mark.parametrize("autoreset", [True, False])
@pytest.mark.parametrize("reward", ["columns", "points", "match"])
def test_big_gin_that_ends_the_match(autoreset: bool, reward: str) -> None:
    """The drawn 8♥ melds all 11 cards; a big gin bonus of 100 decides the only column."""
    rules = load_rules("bonus").replace(big_gin=True, columns=1, big_gin_bonus=100)
    deck = _deck("AC 2C 3C 4H 5H 6H 7H 9C 9D 9S", "TC JC QC 7C 7D 7S 8D 6S 4C 2D", "2H", "8H")
    single = SingleGame(rules, seed=3, reward=reward, autoreset=autoreset)
    vec = VectorGame(1, rules, seed=3, reward=reward, autoreset=autoreset)
    single.reset(deck=deck, dealer=1)
    vec.reset(decks=deck[None], dealer=np.array([1]))
    _assert_same([single], vec, -1)
    for step, action in enumerate([A.PASS, A.PASS, A.DRAW_STOCK, A.BIG_GIN]):
        if action == A.BIG_GIN:
            assert single.big_gin_ready and single.legal >> A.BIG_GIN & 1
        (r0, r1), info = single.step(action)
        rewards, vinfo = vec.step(np.array([action]))
        # SingleGame's rewards are float64 (exact returns); the engine's are float32.
        assert np.array_equal(np.array([r0, r1], np.float32), rewards[0])
        for key, value in vinfo.items():
            assert np.array_equal(np.asarray(info[key]), value[0]), key
        _assert_same([single], vec, step)
    assert info["big_gin"] and info["award"] == 100 + 20 and info["match_over"]
    assert info["match_winner"] == 0 and info["final_scores"].tolist() == [[120], [0]]
    assert single.match_over != autoreset
    won = 1.2 if reward == "points" else 1.0  # 120 points / (target 100 x 1 column), exact
    assert (r0, r1) == (won, -won)


LONG_SOAKS = [
    ("friendly", "points", False),
    ("classic", "match", True),
    ("bonus", "columns", False),
    ("oklahoma", "match", True),
    ("straight_gin_1", "points", False),
    ("oklahoma_big_gin_1", "columns", False),
    ("one_column_250", "match", True),
]


@pytest.mark.slow
@pytest.mark.parametrize(("rules", "reward", "autoreset"), LONG_SOAKS,
                         ids=[s[0] for s in LONG_SOAKS])
def test_single_game_equals_vector_game_long(rules: str, reward: str, autoreset: bool) -> None:
    """Longer soaks: 2 x ``HGIN_SLOW_EXAMPLES`` steps of 16 games (600 by default)."""
    seen = soak(_rules(rules), reward, autoreset, 16, max(2 * SLOW_EXAMPLES, 100), seed=1000)
    assert seen["hands"] > 16


# ============================================================== scalar deadwood


def _check_scalar_deadwood(hand: int, limit: int) -> None:
    best, after, knocks = discard_table(hand, limit)
    assert best == int(batched_min_deadwood(np.uint64(hand)))
    assert min_deadwood(hand) == best
    assert after == deadwood_after_discard(np.uint64(hand)).tolist()
    expected = sum(1 << c for c, v in enumerate(after) if (hand >> c & 1) and v <= limit)
    assert knocks == expected


@fast_settings()
@given(hands(11))
def test_discard_table_random_hands(hand: int) -> None:
    _check_scalar_deadwood(hand, 10)


@fast_settings()
@given(meld_dense_hands(11))
def test_discard_table_meld_dense_hands(hand: int) -> None:
    _check_scalar_deadwood(hand, hand % 11)


@fast_settings()
@given(meld_dense_hands(10))
def test_min_deadwood_ten_cards(hand: int) -> None:
    assert min_deadwood(hand) == int(batched_min_deadwood(np.uint64(hand)))


def _random_hands(rng: np.random.Generator, n: int, size: int, ranks: int) -> list[int]:
    """``n`` hands of ``size`` cards drawn from ``ranks`` random ranks (small = set-heavy)."""
    out = []
    for _ in range(n):
        chosen = rng.choice(13, ranks, replace=False)
        pool = np.array([s * 13 + r for r in chosen for s in range(4)])
        cards = rng.choice(pool, size, replace=False)
        out.append(int(sum(1 << int(c) for c in cards)))
    return out


@pytest.mark.parametrize("ranks", [13, 6, 4, 3])
def test_discard_table_large_batches(ranks: int) -> None:
    """Thousands of hands against one batched call; few ranks means many sets and
    four-of-a-kinds competing with runs."""
    rng = np.random.default_rng(ranks)
    hands_11 = _random_hands(rng, 1500, 11, ranks)
    masks = np.array(hands_11, np.uint64)
    after = deadwood_after_discard(masks).tolist()
    best = batched_min_deadwood(masks).tolist()
    for hand, row, b in zip(hands_11, after, best, strict=True):
        got_best, got_after, _ = discard_table(hand)
        assert (got_best, got_after) == (b, row), hand
    hands_10 = _random_hands(rng, 1500, 10, ranks)
    got = [min_deadwood(h) for h in hands_10]
    assert got == batched_min_deadwood(np.array(hands_10, np.uint64)).tolist()


# ============================================================== seeding and decks


@pytest.mark.parametrize("seed", [0, 7, 2**40 + 3])
def test_int_seed_deals_like_vector_game(seed: int) -> None:
    single = SingleGame("classic", seed=seed)
    vec = VectorGame(1, "classic", seed=seed)
    assert single.hands == vec.hands[0].tolist() and single.dealer == int(vec.dealer[0])
    single.reset(seed=seed + 1)
    vec.reset(seed=seed + 1)
    assert single.state_dict().keys() == vec.state_dict().keys()
    for name, value in vec.state_dict().items():
        assert np.array_equal(single.state_dict()[name], value), name


def test_reset_with_deck_and_dealer_and_next_match() -> None:
    rng = np.random.default_rng(3)
    deck = rng.permutation(52)
    single = SingleGame("bonus", seed=5, autoreset=False)
    vec = VectorGame(1, "bonus", seed=5, autoreset=False)
    single.reset(deck=deck, dealer=1)
    vec.reset(decks=deck[None, :], dealer=np.array([1]))
    assert single.deck == deck.tolist() and single.dealer == 1
    _assert_same([single], vec, 0)
    single.next_match()
    vec.reset_games([0])
    _assert_same([single], vec, 1)
    with pytest.raises(ValueError, match="permutation"):
        single.reset(deck=np.zeros(52, int))
    with pytest.raises(ValueError, match="dealer"):
        single.reset(dealer=2)
    with pytest.raises(ValueError, match="reward"):
        SingleGame(reward="bogus")


def test_illegal_actions_raise_and_change_nothing() -> None:
    single = SingleGame("friendly", seed=1)
    before = single.state_dict()
    for bad in (0, A.DRAW_STOCK, 108, -1, 3.0, "pass", True, None):
        with pytest.raises(ValueError):
            single.step(bad)
        assert not single.is_legal(bad)
    after = single.state_dict()
    assert all(np.array_equal(after[k], v) for k, v in before.items())
    assert single.is_legal(np.int32(A.PASS)) and single.is_legal(A.TAKE_DISCARD)
    single.step(np.int64(A.PASS))
    assert single.phase == A.PHASE_OFFER_DEALER
    with pytest.raises(ValueError, match=r"legal actions: \[105, 106\]"):
        single.step(A.KNOCK)


def test_array_view_is_live_and_encodes_like_the_engine() -> None:
    single = SingleGame("friendly", seed=4)
    view = single.arrays
    rng = np.random.default_rng(0)
    for _ in range(200):
        for seat in (0, 1):
            assert np.array_equal(encode(view, np.array([seat]))[0], single.observation(seat))
        assert view.hands.tolist() == [single.hands]
        assert view.legal_action_mask().shape == (1, A.NUM_ACTIONS)
        assert int(view.top_discard()[0]) == single.top_discard
        legal = single.legal_actions()
        single.step(legal[int(rng.integers(len(legal)))])
    obs = single.observation(0)
    obs[:] = 0  # observations are fresh, writable arrays
    assert single.observation(0).any()
