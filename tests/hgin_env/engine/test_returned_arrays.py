"""What the engines hand out never changes under the caller afterwards.

``VectorGame`` writes its state arrays in place every step, so its public
attributes (the state fields, ``sheets``, ``scores``, ``last_hand``,
``last_match`` ...) are copies, and the legal mask is a read-only array the
engine replaces, never writes.  Each test keeps every array the engine
returned (step's rewards and info included) at every step, copies their
values, plays on (hands and matches ending, ``reset_games``, ``reset``) and
checks that the kept arrays still hold the copied values.  The same for
``SingleGameArrays``, the ``VectorGame`` layout of one ``SingleGame``.
"""

from __future__ import annotations

import pickle
from dataclasses import fields
from typing import Any

import numpy as np
import pytest

from hgin_env import actions as A
from hgin_env.engine import SingleGame, VectorGame
from hgin_env.state import FIELD_NAMES

Arrays = dict[str, np.ndarray]
B = 4
STEPS = 240


def _public_arrays(game: Any, vector: bool) -> Arrays:
    """Every array ``game`` (a VectorGame or SingleGameArrays) hands out, by name."""
    out = {name: getattr(game, name) for name in FIELD_NAMES}
    for name in ("stock_size", "scores", "wins", "column_winner"):
        out[name] = getattr(game, name)
    if vector:
        out["truncated"] = game.truncated
    out["top_discard()"] = game.top_discard()
    out["legal_action_mask()"] = game.legal_action_mask()
    for seat in (None, 0, 1):
        for key, value in game.observe(seat).items():
            out[f"observe({seat})[{key}]"] = value
    for name in ("sheets", "last_match"):
        for key, value in getattr(game, name).arrays().items():
            out[f"{name}.{key}"] = value
    record = game.last_hand
    for f in fields(record):
        out[f"last_hand.{f.name}"] = getattr(record, f.name)
    sheet = game.sheet(0)
    for key in ("scores", "wins", "boxes", "totals"):
        out[f"sheet(0).{key}"] = getattr(sheet, key)
    return out


class Kept:
    """Arrays held on to, with copies of their values when they were handed out."""

    def __init__(self) -> None:
        self.items: list[tuple[str, np.ndarray, np.ndarray]] = []

    def keep(self, when: str, arrays: Arrays) -> None:
        for name, value in arrays.items():
            assert isinstance(value, np.ndarray), f"{name} is not an array"
            self.items.append((f"{when}: {name}", value, value.copy()))

    def check(self) -> None:
        changed = [name for name, kept, then in self.items if not np.array_equal(kept, then)]
        assert changed == [], f"{len(changed)} kept arrays changed, first: {changed[:5]}"


def _greedy(mask: np.ndarray, deadwood: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per row: big gin or a knock when legal, else the discard leaving the least deadwood,
    else a random legal action (0 where none is legal), so that hands end fast."""
    mask = np.atleast_2d(mask)
    score = rng.random(mask.shape)  # random order among draws, takes and passes
    score[:, : A.KNOCK] = 10.0 - deadwood / 1000.0
    score[:, A.KNOCK : A.DRAW_STOCK] = 20.0 - deadwood / 1000.0
    score[:, A.BIG_GIN :] = 30.0
    return np.where(mask > 0, score, -1.0).argmax(axis=1)


def _near_the_end(game: VectorGame) -> None:
    """Every column one point short of the target for both seats, so the next won hand of
    each game ends its match (exercises ``last_match`` and the autoreset)."""
    data = game.state_dict()
    data["sheet_scores"][:] = game.rules.target - 1
    data["sheet_wins"][:] = 3
    data["sheet_boxes"][:] = 1
    game.load_state_dict(data)


@pytest.mark.parametrize("autoreset", [True, False])
def test_vector_game_returns_never_change(autoreset: bool) -> None:
    rng = np.random.default_rng(7)
    game = VectorGame(B, "friendly", seed=11, autoreset=autoreset)
    _near_the_end(game)
    kept = Kept()
    hands = matches = 0
    for t in range(STEPS):
        kept.keep(f"step {t}", _public_arrays(game, vector=True))
        mask = game.legal_action_mask()
        live = mask.any(axis=1)
        acts = _greedy(mask, game.discard_deadwood, rng)
        rewards, info = game.step(acts, active=None if live.all() else live)
        kept.keep(f"step {t} returned", {"rewards": rewards, **info})
        hands += int(info["hand_over"].sum())
        matches += int((info["match_over"] | info["truncated"]).sum())
        if not autoreset and t % 5 == 4:
            over = np.flatnonzero(game.phase == A.PHASE_MATCH_OVER)
            kept.keep(f"before reset_games {t}", _public_arrays(game, vector=True))
            game.reset_games(over)
        if t == STEPS // 2:
            kept.keep("before reset", _public_arrays(game, vector=True))
            game.reset()
            _near_the_end(game)
    assert hands >= B and matches >= 2, (hands, matches)  # the run ended hands and matches
    kept.check()


def test_current_player_kept_across_a_step() -> None:
    """The bug that started this: ``current_player`` was the engine's own array."""
    game = VectorGame(B, "friendly", seed=3)
    cp = game.current_player
    old = cp.copy()
    assert (game.phase == A.PHASE_OFFER_NONDEALER).all()
    game.step(np.full(B, A.PASS))  # the non-dealer passes: the dealer moves next
    assert (cp == old).all()
    assert (game.current_player != old).all()


def test_vector_game_arrays_are_copies_or_read_only() -> None:
    game = VectorGame(B, "classic", seed=5)
    before = game.state_dict()
    # The state's arrays are read-only copies: a write fails loudly, since it could not
    # change the game (that is what ``game.state`` is for).
    for array in (game.hands, game.phase, game.scores, game.wins, game.column_winner):
        with pytest.raises(ValueError, match="read-only"):
            array[...] = 0
    # The sheets' and the hand record's copies are the caller's own: harmless to write.
    game.last_hand.valid[:] = True
    game.sheets.wins[:] = 7
    game.last_match.match_winner[:] = 1
    after = game.state_dict()
    assert all(np.array_equal(before[key], after[key]) for key in before)
    assert not game.last_hand.valid.any() and (game.last_match.match_winner == -1).all()
    # The legal mask is the engine's own (read-only) array: writes fail loudly, and it
    # cannot be made writable again.
    for mask in (game.legal_action_mask(), game.observe()["action_mask"]):
        with pytest.raises(ValueError):
            mask[0, A.DRAW_STOCK] = 1
        with pytest.raises(ValueError):
            mask.flags.writeable = True
    assert game.legal_action_mask()[0, A.DRAW_STOCK] == 0  # an upcard offer
    # What is computed per call is the caller's own.
    for value in (game.observe(0)["action_mask"], game.observe()["observation"],
                  game.top_discard(), game.stock_size, game.truncated):
        assert value.flags.writeable


def test_pickled_vector_game_keeps_its_mask_read_only() -> None:
    game = VectorGame(2, "friendly", seed=1)
    game.legal_action_mask()  # cached
    twin = pickle.loads(pickle.dumps(game))
    with pytest.raises(ValueError):
        twin.legal_action_mask()[0, 0] = 1
    np.testing.assert_array_equal(twin.legal_action_mask(), game.legal_action_mask())
    rng = np.random.default_rng(0)
    for _ in range(40):
        acts = _greedy(game.legal_action_mask(), game.discard_deadwood, rng)
        for g in (game, twin):
            g.step(acts)
    for name in FIELD_NAMES:
        np.testing.assert_array_equal(getattr(twin, name), getattr(game, name))
    for name in ("last_hand", "last_match"):
        a, b = getattr(twin, name), getattr(game, name)
        for f in fields(a):
            if f.name != "rules":
                np.testing.assert_array_equal(getattr(a, f.name), getattr(b, f.name))


@pytest.mark.parametrize("autoreset", [True, False])
def test_single_game_arrays_never_change(autoreset: bool) -> None:
    rng = np.random.default_rng(9)
    game = SingleGame("friendly", seed=4, autoreset=autoreset)
    view = game.arrays

    def near_the_end() -> None:
        sheets = game.state.sheets  # the game's own sheets (SingleGame.state is live)
        sheets.scores[:] = game.rules.target - 1
        sheets.wins[:] = 3

    near_the_end()
    kept = Kept()
    hands = matches = 0
    for t in range(STEPS):
        kept.keep(f"step {t}", _public_arrays(view, vector=False))
        if game.match_over:
            game.reset()
            near_the_end()
            continue
        action = int(_greedy(view.legal_action_mask(), view.discard_deadwood, rng)[0])
        _rewards, info = game.step(action)
        kept.keep(f"step {t} final_scores", {"final_scores": info["final_scores"]})
        hands += info["hand_over"]
        matches += info["match_over"] or info["truncated"]
    assert hands >= 2 and matches >= 1, (hands, matches)
    kept.check()
    for value in (view.legal_action_mask(), *view.observe().values(), view.hands,
                  view.sheets.scores):
        assert value.flags.writeable  # new arrays, the caller's own


def test_single_game_with_its_arrays_view_pickles() -> None:
    """The view reaches the game lazily, so an unpickled one (``_g`` not set yet while
    pickle looks up its hooks) does not recurse."""
    game = SingleGame("classic", seed=2)
    hands = game.arrays.hands
    twin = pickle.loads(pickle.dumps(game))
    np.testing.assert_array_equal(twin.arrays.hands, hands)
    assert twin.arrays.sheets.scores.shape == game.arrays.sheets.scores.shape
