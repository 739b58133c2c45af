"""The engine state as one value: clone, take/put, files, validation, mid-hand positions."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hgin_env import actions as A
from hgin_env.cards import parse, parse_cards
from hgin_env.engine import VectorGame
from hgin_env.engine.single import SingleGame
from hgin_env.state import FIELD_NAMES, FIELDS, GameState, from_position, validate
from tests.helpers.strategies import fast_settings

RULE_SETS = ["friendly", "classic", "bonus"]


def _random_play(game: VectorGame, rng: np.random.Generator, steps: int) -> None:
    for _ in range(steps):
        mask = game.legal_action_mask()
        noise = rng.random(mask.shape)
        noise[:, A.KNOCK : A.DRAW_STOCK] += 1.0  # knock when possible, so hands and matches end
        noise[mask == 0] = -1
        game.step(noise.argmax(axis=1))


def _same_state(a: GameState, b: GameState) -> None:
    da, db = a.to_dict(), b.to_dict()
    assert da.keys() == db.keys()
    for key in da:
        assert np.array_equal(da[key], db[key]), key


def test_field_list_is_the_one_source() -> None:
    game = VectorGame(3, seed=0)
    keys = set(game.state_dict())
    assert {f.name for f in FIELDS} <= keys
    assert {k for k in keys if not k.startswith("sheet_")} == set(FIELD_NAMES)
    for name in FIELD_NAMES:  # the engine's attributes are copies of the state's arrays
        assert getattr(game, name) is not getattr(game.state, name)
        np.testing.assert_array_equal(getattr(game, name), getattr(game.state, name))
    assert SingleGame(seed=0).state.to_dict().keys() == keys


def test_clone_is_independent() -> None:
    game = VectorGame(16, seed=1)
    _random_play(game, np.random.default_rng(0), 40)
    copy = game.state.clone()
    _same_state(copy, game.state)
    _random_play(game, np.random.default_rng(1), 40)
    with pytest.raises(AssertionError):
        _same_state(copy, game.state)
    # An engine built from the clone replays exactly what the original did.
    again = VectorGame.from_state(copy)
    assert not np.shares_memory(again.hands, copy.hands)


@given(seed=st.integers(0, 2**31), steps=st.integers(0, 200), rules=st.sampled_from(RULE_SETS))
@fast_settings(25)
def test_taken_rows_play_like_the_batch(seed: int, steps: int, rules: str) -> None:
    """take(rows) then continuing alone gives the same games as continuing in the batch."""
    game = VectorGame(12, rules, seed=seed)
    _random_play(game, np.random.default_rng(seed), steps)
    rows = np.array([7, 2, 11])
    alone = VectorGame.from_state(game.state.take(rows))
    rng = np.random.default_rng(seed + 1)
    for _ in range(150):
        mask = game.legal_action_mask()
        assert np.array_equal(mask[rows], alone.legal_action_mask())
        noise = rng.random(mask.shape)
        noise[mask == 0] = -1
        acts = noise.argmax(axis=1)
        r_all, info_all = game.step(acts)
        r_alone, info_alone = alone.step(acts[rows])
        assert np.array_equal(r_all[rows], r_alone)
        for key in info_all:
            assert np.array_equal(info_all[key][rows], info_alone[key]), key
    _same_state(game.state.take(rows), alone.state)


def test_put_overwrites_only_the_listed_rows() -> None:
    a, b = VectorGame(6, seed=2), VectorGame(6, seed=3)
    _random_play(a, np.random.default_rng(0), 30)
    before = a.state.clone()
    a.state.put([1, 4], b.state.take([0, 5]))
    _same_state(a.state.take([1, 4]), b.state.take([0, 5]))
    _same_state(a.state.take([0, 2, 3, 5]), before.take([0, 2, 3, 5]))
    with pytest.raises(ValueError, match="rows"):
        a.state.put([1], b.state.take([0, 5]))
    with pytest.raises(ValueError, match="different rules"):
        a.state.put([0], VectorGame(1, "classic", seed=0).state)


@pytest.mark.parametrize("rules", RULE_SETS)
def test_state_dict_round_trip_and_validation(rules: str) -> None:
    game = VectorGame(32, rules, seed=4)
    _random_play(game, np.random.default_rng(2), 300)
    saved = game.state_dict()
    other = VectorGame(32, rules, seed=99)
    other.load_state_dict(saved)
    _same_state(other.state, game.state)
    validate(game.state)


def _tampered(change) -> dict:
    game = VectorGame(4, seed=5)
    _random_play(game, np.random.default_rng(3), 25)
    state = game.state_dict()
    change(state)
    return state


@pytest.mark.parametrize(
    ("what", "change"),
    [
        ("52 cards", lambda s: s["hands"].__setitem__((1, 0), np.uint64((1 << 52) - 1))),
        ("pile_mask", lambda s: s["pile_mask"].__setitem__(0, s["pile_mask"][0] ^ np.uint64(1))),
        ("phase", lambda s: s["phase"].__setitem__(2, 9)),
        ("shape", lambda s: s.__setitem__("deck", s["deck"][:, :40])),
        ("no 'takes'", lambda s: s.pop("takes")),
        ("integers", lambda s: s.__setitem__("stock_pos", s["stock_pos"].astype(float))),
        ("decided", lambda s: s["sheet_scores"].__setitem__((0, 0, 0), 150)),
        ("knock_limit", lambda s: s["knock_limit"].__setitem__(3, 4)),
        ("takes", lambda s: s["takes"].__setitem__(0, 51)),
        ("outside int8", lambda s: s.__setitem__("phase", s["phase"].astype(np.int64) + 300)),
    ],
)
def test_tampered_state_is_refused_quickly(what: str, change) -> None:
    """A corrupted or hostile state file fails with a clear error, before any meld search."""
    state = _tampered(change)
    game = VectorGame(4, seed=5)
    before = game.state.clone()
    start = time.perf_counter()
    with pytest.raises(ValueError, match=what):
        game.load_state_dict(state)
    assert time.perf_counter() - start < 1.0
    _same_state(game.state, before)  # nothing changed


def test_from_position_builds_a_playable_mid_hand_state() -> None:
    hands = [parse("AC 2C 3C 4H 5H 6H 9C 9D 9S KD"), parse("TC JC QC 7C 7D 7S 8D 6S 4C 2D")]
    pile = parse_cards("2H 3D")
    held = hands[0] | hands[1]
    stock = [c for c in range(52) if not held >> c & 1 and c not in pile]
    state = from_position("friendly", hands, stock, pile, dealer=1, current_player=0,
                          phase=A.PHASE_DRAW, takes=3,
                          sheet={"scores": [[40, 0, 0], [10, 0, 0]], "wins": [2, 1]})
    assert state.num_games == 1 and int(state.stock_size[0]) == len(stock)
    game = VectorGame.from_state(state)
    mask = game.legal_action_mask()[0]
    assert mask[A.DRAW_STOCK] and mask[A.TAKE_DISCARD] and mask.sum() == 2
    game.step(np.array([A.TAKE_DISCARD]))  # takes 3D
    assert game.hands[0, 0] >> np.uint64(parse_cards("3D")[0]) & np.uint64(1)
    assert game.legal_action_mask()[0, A.KNOCK + parse_cards("KD")[0]]  # 3D joins nothing: KD
    assert int(game.takes[0]) == 4 and game.sheets.scores[0, 0, 0] == 40


def test_from_position_checks_the_cards_and_the_phase() -> None:
    hands = [parse("AC 2C 3C 4H 5H 6H 9C 9D 9S KD"), parse("TC JC QC 7C 7D 7S 8D 6S 4C 2D")]
    pile = parse_cards("2H")
    held = hands[0] | hands[1]
    stock = [c for c in range(52) if not held >> c & 1 and c not in pile]
    with pytest.raises(ValueError, match="not conserved"):
        from_position("friendly", hands, stock[1:], pile, dealer=0, current_player=1)
    with pytest.raises(ValueError, match="not conserved"):
        from_position("friendly", hands, [*stock, pile[0]], pile, dealer=0, current_player=1)
    with pytest.raises(ValueError, match="wrong number of cards"):
        from_position("friendly", hands, stock, pile, dealer=0, current_player=1,
                      phase=A.PHASE_DISCARD)
    with pytest.raises(ValueError, match="dealer"):
        from_position("friendly", hands, stock, pile, dealer=2, current_player=1)
    with pytest.raises(ValueError, match="ids outside"):
        from_position("friendly", hands, [*stock[:-1], 60], pile, dealer=0, current_player=1)


def test_hidden_cards_do_not_change_the_movers_view() -> None:
    """Two positions that differ only in the opponent's hand and the stock order look the
    same to the mover: what a search agent's determinisations rely on."""
    mine = parse("AC 2C 3C 4H 5H 6H 9C 9D 9S KD")
    pile = parse_cards("2H 3D")
    rest = [c for c in range(52) if not mine >> c & 1 and c not in pile]
    rng = np.random.default_rng(0)
    views = []
    for _ in range(2):
        order = rng.permutation(rest).tolist()
        theirs = sum(1 << c for c in order[:10])
        state = from_position("classic", [mine, theirs], order[10:], pile, dealer=1,
                              current_player=0)
        views.append(VectorGame.from_state(state).observe(0))
    for key in views[0]:
        assert np.array_equal(views[0][key], views[1][key])


def test_single_game_state_is_the_same_value() -> None:
    single = SingleGame("bonus", seed=7)
    vec = VectorGame(1, "bonus", seed=single.seeds)
    rng = np.random.default_rng(4)
    for _ in range(300):
        legal = single.legal_actions()
        action = legal[rng.integers(len(legal))]
        single.step(action)
        vec.step(np.array([action]))
    _same_state(single.state, vec.state)
    validate(single.state)
