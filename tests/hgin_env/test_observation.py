"""``VectorGame.observe`` and ``hgin_env.observation`` (docs/api.md).

The key property is NO LEAK: a seat's observation is a function of what that
seat may know.  Two games whose decks differ only in cards the seat has not
seen (the opponent's hidden cards, the stock order) must look identical to
it at every step, while the opponent's view of them does differ.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agents.base import sample_uniform_legal
from hgin_env import actions as A
from hgin_env.engine import VectorGame
from hgin_env.observation import OBS_DIM, observation_spec
from hgin_env.rules import Rules, load_rules

KNOCK, DRAW_STOCK, BIG_GIN = 52, 104, 107
SHIFTS = np.arange(52, dtype=np.uint64)


def unpack(masks: np.ndarray) -> np.ndarray:
    return ((np.asarray(masks, np.uint64)[..., None] >> SHIFTS) & np.uint64(1)).astype(bool)


def play(game: VectorGame, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        game.step(sample_uniform_legal(game.legal_action_mask(), rng))


# ---------------------------------------------------------------- shape


@pytest.mark.parametrize("columns", [1, 3])
@pytest.mark.parametrize("b", [1, 7])
def test_shapes_and_dtypes(b: int, columns: int) -> None:
    game = VectorGame(b, Rules().replace(columns=columns), seed=2)
    play(game, 30, 0)
    for player in (None, 0, 1):
        out = game.observe() if player is None else game.observe(player=player)
        assert set(out) >= {"observation", "action_mask"}
        obs, mask = out["observation"], out["action_mask"]
        assert obs.shape == (b, OBS_DIM) and obs.dtype == np.float32
        assert mask.shape == (b, 108) and mask.dtype == np.int8
        assert np.isfinite(obs).all()
        assert set(np.unique(mask).tolist()) <= {0, 1}


def test_spec_covers_the_vector_exactly() -> None:
    spec = observation_spec()
    assert spec, "empty spec"
    covered = np.zeros(OBS_DIM, int)
    for name, sl in spec.items():
        assert isinstance(name, str) and isinstance(sl, slice), name
        start, stop, step = sl.indices(OBS_DIM)
        assert step == 1 and sl.start == start and sl.stop == stop, f"{name}: {sl}"
        assert 0 <= start < stop <= OBS_DIM, f"{name}: {sl} empty or outside 0..{OBS_DIM}"
        covered[start:stop] += 1
    assert (covered == 1).all(), (
        f"uncovered {np.flatnonzero(covered == 0).tolist()}, "
        f"overlapping {np.flatnonzero(covered > 1).tolist()}")
    # and the slices are laid out in order, back to back
    ordered = sorted(spec.values(), key=lambda s: s.start)
    assert ordered[0].start == 0 and ordered[-1].stop == OBS_DIM
    assert all(a.stop == b.start for a, b in itertools.pairwise(ordered))


def test_card_slices_partition_the_deck_from_each_seat() -> None:
    """Every card is, to a seat, exactly one of: own hand, top discard, below
    the top of the pile, known in the opponent's hand, or unseen."""
    spec = observation_spec()
    parts = ["hand", "top_discard", "pile_below_top", "opponent_known", "unseen"]
    for name in parts:
        assert spec[name].stop - spec[name].start == 52, name
    game = VectorGame(64, "friendly", seed=4)
    rng = np.random.default_rng(4)
    rows = np.arange(64)
    for _ in range(120):
        game.step(sample_uniform_legal(game.legal_action_mask(), rng))
        for seat in (0, 1):
            obs = game.observe(player=seat)["observation"]
            total = sum(obs[:, spec[n]] for n in parts)
            np.testing.assert_array_equal(total, 1.0)
            np.testing.assert_array_equal(obs[:, spec["hand"]], unpack(game.hands[:, seat]))
            np.testing.assert_array_equal(obs[:, spec["opponent_known"]],
                                          unpack(game.known[:, 1 - seat]))
            top = game.top_discard()
            want_top = np.zeros((64, 52), bool)
            want_top[rows[top >= 0], top[top >= 0]] = True
            np.testing.assert_array_equal(obs[:, spec["top_discard"]], want_top)


# ---------------------------------------------------------------- masks


def test_seat_mask_is_zero_off_turn_and_legal_on_turn() -> None:
    game = VectorGame(32, "classic", seed=6)
    rng = np.random.default_rng(6)
    for _ in range(150):
        legal = game.legal_action_mask()
        mover = game.current_player
        mine = game.observe()
        np.testing.assert_array_equal(mine["action_mask"], legal)
        for seat in (0, 1):
            out = game.observe(player=seat)
            on = mover == seat
            assert not out["action_mask"][~on].any(), "mask set for a seat not to move"
            np.testing.assert_array_equal(out["action_mask"][on], legal[on])
            np.testing.assert_array_equal(out["observation"][on], mine["observation"][on])
        game.step(sample_uniform_legal(legal, rng))


def test_observe_does_not_change_the_game() -> None:
    game = VectorGame(8, "bonus", seed=1)
    play(game, 40, 1)
    before = game.state_dict()
    game.observe()
    game.observe(player=0)
    game.observe(player=1)
    after = game.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)


# ---------------------------------------------------------------- no leak


def _no_knock_mask(game: VectorGame) -> np.ndarray:
    mask = game.legal_action_mask().copy()
    mask[:, KNOCK:DRAW_STOCK] = 0
    mask[:, BIG_GIN] = 0
    return mask


LEAK_RULES = [
    ("friendly", load_rules("friendly")),
    ("classic-oklahoma", load_rules("classic").replace(oklahoma=True)),
    ("bonus-big_gin-columns1", load_rules("bonus").replace(big_gin=True, columns=1)),
    ("take-discardable", Rules().replace(forbid_discard_of_taken=False)),
]


@pytest.mark.parametrize("rules", [r for _, r in LEAK_RULES], ids=[n for n, _ in LEAK_RULES])
def test_no_leak_of_hidden_cards_or_stock_order(rules: Rules) -> None:
    b, steps = 48, 50  # 50 steps hold at most 25 stock draws: the hand cannot die
    rng = np.random.default_rng(12)
    decks = np.stack([rng.permutation(52) for _ in range(b)])
    dealers = rng.integers(0, 2, b)
    game = VectorGame(b, rules, seed=1)
    game.reset(decks=decks, dealer=dealers)
    actions, views, states = [], [], []

    def record() -> None:
        views.append([game.observe(player=s) for s in (0, 1)])
        states.append((game.hands.copy(), game.known.copy(), game.stock_pos.copy()))

    record()
    for _ in range(steps):
        a = sample_uniform_legal(_no_knock_mask(game), rng)
        _, info = game.step(a)
        assert not info["hand_over"].any()
        actions.append(a)
        record()

    position = np.argsort(decks, axis=1)  # where each card lies in the deck
    for checkpoint in (0, 7, 20, steps):
        hands, known, stock_pos = states[checkpoint]
        for seat in (0, 1):
            # cards seat has not seen by the checkpoint (nor at any earlier step)
            hidden = unpack(hands[:, 1 - seat] & ~known[:, 1 - seat])
            hidden |= unpack_stock(decks, stock_pos)
            other = decks.copy()
            moved = 0
            for i in range(b):
                cards = np.flatnonzero(hidden[i])
                assert cards.size >= 10 + 52 - 21 - 25 - 10, cards.size
                slots = position[i, cards]
                other[i, slots] = rng.permutation(cards)
                moved += int((other[i] != decks[i]).any())
            assert moved >= b - 1
            twin = VectorGame(b, rules, seed=99)  # another seed: later deals differ too
            twin.reset(decks=other, dealer=dealers)
            opp_differs = 0
            for t in range(checkpoint + 1):
                if t:
                    twin.step(actions[t - 1])
                got = twin.observe(player=seat)
                want = views[t][seat]
                for key in ("observation", "action_mask"):
                    diff = np.flatnonzero((got[key] != want[key]).any(axis=1))
                    if diff.size:
                        i = int(diff[0])
                        cols = np.flatnonzero(got[key][i] != want[key][i])
                        names = [n for n, sl in observation_spec().items()
                                 if any(sl.start <= c < sl.stop for c in cols)]
                        raise AssertionError(
                            f"seat {seat} sees the opponent's hidden cards or the stock order: "
                            f"game {i}, step {t}, {key} differs at {cols.tolist()} ({names})")
                opp = twin.observe(player=1 - seat)["observation"]
                opp_differs += int((opp != views[t][1 - seat]["observation"]).any(axis=1).sum())
            # the twin games really differ: the other seat can tell them apart
            assert opp_differs > 0


def unpack_stock(decks: np.ndarray, stock_pos: np.ndarray) -> np.ndarray:
    """(B, 52) bool: the cards still in each stock."""
    out = np.zeros(decks.shape, bool)
    in_stock = np.arange(52)[None, :] >= stock_pos[:, None]
    rows = np.broadcast_to(np.arange(decks.shape[0])[:, None], decks.shape)
    out[rows[in_stock], decks[in_stock]] = True
    return out


def test_observation_depends_on_own_cards() -> None:
    """Positive control for the leak test: swapping one of the seat's own cards shows."""
    rng = np.random.default_rng(3)
    deck = rng.permutation(52)
    other = deck.copy()
    other[[0, 1]] = other[[1, 0]]  # first card of each hand swapped
    a = VectorGame(1, "friendly", seed=0)
    a.reset(decks=deck[None], dealer=np.array([0]))
    b = VectorGame(1, "friendly", seed=0)
    b.reset(decks=other[None], dealer=np.array([0]))
    for seat in (0, 1):
        assert not np.array_equal(a.observe(player=seat)["observation"],
                                  b.observe(player=seat)["observation"])


def test_phase_and_turn_features() -> None:
    spec = observation_spec()
    game = VectorGame(16, "friendly", seed=9)
    rng = np.random.default_rng(9)
    for _ in range(60):
        for seat in (0, 1):
            obs = game.observe(player=seat)["observation"]
            phase = obs[:, spec["phase"]]
            assert phase.shape[1] == A.NUM_PHASES
            np.testing.assert_array_equal(phase.argmax(axis=1), game.phase)
            np.testing.assert_array_equal(phase.sum(axis=1), 1.0)
            np.testing.assert_array_equal(obs[:, spec["to_move"]][:, 0],
                                          game.current_player == seat)
            np.testing.assert_array_equal(obs[:, spec["is_dealer"]][:, 0], game.dealer == seat)
        game.step(sample_uniform_legal(game.legal_action_mask(), rng))
