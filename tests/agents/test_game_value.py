"""The win table of one game to ``target`` (agents.game_value) and search's use of it."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.game_value import (
    hand_outcomes,
    load_win_table,
    save_win_table,
    win_table,
    win_values,
)
from agents.search import SearchAgent, parse_search_spec
from hgin_env import actions as A
from hgin_env.engine import VectorGame
from hgin_env.rules import load_rules


def _reference(counts: np.ndarray, target: int):
    """W by plain recursion over the next hand, memoised: the obviously correct one."""
    p = np.asarray(counts, float).copy()
    p[:, 0] = 0
    p /= p.sum()

    @cache
    def w(a: int, b: int, i_deal: int) -> float:
        if a >= target:
            return 1.0
        if b >= target:
            return 0.0
        total = 0.0
        for x in range(1, p.shape[1]):
            dealer_wins, other_wins = p[0, x], p[1, x]
            mine, theirs = (dealer_wins, other_wins) if i_deal else (other_wins, dealer_wins)
            total += mine * w(a + x, b, 1 - i_deal) + theirs * w(a, b + x, 1 - i_deal)
        return total

    return w


def test_win_table_matches_the_plain_recursion() -> None:
    rng = np.random.default_rng(4)
    counts = rng.integers(0, 50, (2, 23))
    target = 17
    table = win_table(counts, target)
    w = _reference(counts, target)
    for a in range(target):
        for b in range(target):
            for d in (0, 1):
                assert table[a, b, d] == pytest.approx(w(a, b, d), abs=1e-12)
    # Two players' chances add up to one; more points never hurt.
    assert np.allclose(table[:, :, 1] + table[:, :, 0].T, 1.0)
    assert (np.diff(table, axis=0) >= -1e-12).all() and (np.diff(table, axis=1) <= 1e-12).all()


def test_win_table_of_a_game_the_dealer_always_wins_at_once() -> None:
    counts = np.zeros((2, 30))
    counts[0, 25] = 1  # the dealer wins every hand with 25 points: four hands reach 100
    table = win_table(counts, 100)
    assert table[0, 0, 1] == 1.0  # I deal hands 1, 3, 5 and 7, which reaches 100 first
    assert table[0, 0, 0] == 0.0
    assert table[75, 75, 1] == 1.0 and table[99, 75, 0] == 0.0


def test_win_values_read_the_target_and_the_table() -> None:
    table = win_table(np.ones((2, 40)), 100)
    got = win_values(table, np.array([100, 10, 50, 50]), np.array([30, 120, 50, 50]),
                     np.array([False, True, True, False]))
    assert got.tolist() == [1.0, 0.0, table[50, 50, 1], table[50, 50, 0]]


def test_win_table_rejects_bad_counts() -> None:
    with pytest.raises(ValueError, match="no finished hand"):
        win_table(np.zeros((2, 5)), 100)
    with pytest.raises(ValueError, match=r"\(2, awards\)"):
        win_table(np.ones((3, 5)), 100)


def test_hand_outcomes_count_finished_hands_the_same_way_each_time() -> None:
    agent = make_agent("strong", rules="eaai")
    first = hand_outcomes(agent, "eaai", 120, seed=5, batch=40)
    again = hand_outcomes(agent, "eaai", 120, seed=5, batch=40)
    assert np.array_equal(first, again)
    assert first.sum() >= 120 and first[:, 0].sum() == 0  # every scored hand posts points
    assert first[:, 25:].sum() > 0  # gins and undercuts score their bonus
    with pytest.raises(ValueError, match="columns = 1"):
        hand_outcomes(agent, "friendly", 10)
    with pytest.raises(ValueError, match="keep no history"):
        hand_outcomes(make_agent("search-v1:samples=2,particles=4", rules="eaai"), "eaai", 10)


def test_saved_tables_are_checked_against_the_rules(tmp_path: Path) -> None:
    counts = np.ones((2, 40))
    path = tmp_path / "w.npz"
    save_win_table(path, win_table(counts, 50), counts, {"hands": 80})
    with pytest.raises(ValueError, match="game to 50, these rules play to 100"):
        load_win_table(path, load_rules("eaai"))
    big = tmp_path / "big.npz"
    save_win_table(big, np.zeros((400, 400, 2)), counts, {})
    with pytest.raises(ValueError, match="a game to 100 needs at most"):
        load_win_table(big, load_rules("eaai"))
    (tmp_path / "bad.npz").write_text("not a table")
    with pytest.raises(ValueError, match="cannot read a win table"):
        load_win_table(tmp_path / "bad.npz", load_rules("eaai"))
    with pytest.raises(ValueError, match="columns = 1"):
        load_win_table(path, load_rules("friendly"))


def test_a_table_whose_header_claims_a_huge_shape_is_refused_unread(tmp_path: Path) -> None:
    # A 100-byte file whose .npy header declares 100 000 x 100 000 x 2 cells: np.load would
    # allocate the declared shape before reading (a MemoryError, or 149 GiB on overcommit).
    import io
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (100_000, 100_000, 2)})
    path = tmp_path / "lie.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("table.npy", header.getvalue())
    with pytest.raises(ValueError, match=r"\(100000, 100000, 2\) of float64, a game to 100"):
        load_win_table(path, load_rules("eaai"))


def test_game_value_spec_needs_full_rollouts() -> None:
    config = parse_search_spec("search:game_value=w.npz", rules="eaai")
    assert config.game_value == "w.npz" and not config.depth  # search-v1: full rollouts
    with pytest.raises(ValueError, match="game_value values the end of full rollouts"):
        parse_search_spec("search:game_value=w.npz,depth=1", rules="eaai")
    with pytest.raises(ValueError, match="game_value values the end of full rollouts"):
        parse_search_spec("search:game_value=w.npz,value_file=v.pt", rules="eaai")


def test_rollouts_end_at_the_win_chance_of_the_new_score(tmp_path: Path) -> None:
    """Each rollout's value is 2 W - 1 at the score and dealer the hand leaves, as one game
    played alone to the hand's end by the blueprint says."""
    rules = load_rules("eaai")
    counts = np.ones((2, 60))
    table = win_table(counts, rules.target)
    path = tmp_path / "w.npz"
    save_win_table(path, table, counts, {})
    blueprint = make_agent("pretrained-eaai", rules=rules)
    agent = SearchAgent(parse_search_spec(f"search:game_value={path}", rules=rules),
                        rules=rules, blueprint=blueprint, seed=0)
    assert agent.depth == 0
    game = VectorGame(48, rules, seed=9)
    rng = np.random.default_rng(0)
    game.state.sheets.scores[:, :, 0] = rng.integers(0, 95, (48, 2))
    for _ in range(rng.integers(5, 15)):
        game.step(blueprint.act(game.observe()))
    rows = np.flatnonzero((game.state.current_player == 0)
                          & (game.state.phase != A.PHASE_MATCH_OVER))
    assert rows.size >= 10
    state = game.state.take(rows)
    first = blueprint.act(VectorGame.from_state(state).observe())
    got = agent._play_out(state, first)
    for i in range(rows.size):
        alone = VectorGame.from_state(state.take([i]), autoreset=False)
        _, info = alone.step(first[i : i + 1])
        while not info["hand_over"][0]:
            _, info = alone.step(blueprint.act(alone.observe()))
        mine, theirs = alone.scores[0, :, 0]
        if mine >= rules.target or theirs >= rules.target:
            want = 1.0 if mine >= rules.target else -1.0
        else:
            want = 2 * table[mine, theirs, int(alone.state.dealer[0] == 0)] - 1
        assert got[i] == pytest.approx(want), i
