"""Tests of the Hollywood score sheet (docs/rules.md §10, §12).

The batched sheet is checked three ways: the worked examples of docs/rules.md
§12, hand-built edge cases in every profile, and a property test against a
slow, obviously-correct pure-Python reference written straight from the
rule text below.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hgin_env.hollywood import PostResult, Sheet, SheetBatch, post, replay
from hgin_env.rules import PROFILES, Rules, load_rules

SLOW_EXAMPLES = int(os.environ.get("HGIN_SLOW_EXAMPLES", "200"))


# --------------------------------------------------------------------------- reference


class RefSheet:
    """docs/rules.md §10 transcribed line by line, one match, plain Python."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        c = rules.columns
        self.scores = [[0] * c, [0] * c]
        self.boxes = [[0] * c, [0] * c]
        self.decided = [False] * c
        self.column_winner = [-1] * c
        self.wins = [0, 0]
        self.match_winner = -1

    def post(self, winner: int, award: int) -> dict:
        assert self.match_winner == -1, "reference: post to a finished match"
        c = self.rules.columns
        self.wins[winner] += 1
        # 1st win: column I; 2nd: I and II; 3rd and later: I, II and III.
        if self.wins[winner] == 1:
            eligible = [0]
        elif self.wins[winner] == 2:
            eligible = [0, 1]
        else:
            eligible = [0, 1, 2]
        eligible = [j for j in eligible if j < c]
        posted = [False] * c
        newly = [False] * c
        for j in eligible:
            if self.decided[j]:
                continue
            self.scores[winner][j] += award
            self.boxes[winner][j] += 1
            posted[j] = True
            for p in (0, 1):
                if self.scores[p][j] >= self.rules.target:
                    self.decided[j] = True
                    self.column_winner[j] = p
                    newly[j] = True
        if all(self.decided):
            won0 = self.column_winner.count(0)
            won1 = self.column_winner.count(1)
            self.match_winner = 0 if won0 > won1 else 1
        delta = [0.0, 0.0]
        delta[winner] = float(sum(newly))
        delta[1 - winner] = -float(sum(newly))
        return {
            "posted": posted,
            "newly": newly,
            "delta": delta,
            "over": self.match_winner != -1,
            "match_winner": self.match_winner,
        }

    def bonuses(self) -> list[list[int]]:
        r = self.rules
        c = r.columns
        out = [[0] * c, [0] * c]
        for j in range(c):
            if not self.decided[j]:
                continue
            w = self.column_winner[j]
            loser = 1 - w
            out[w][j] += r.shutout_bonus if self.scores[loser][j] == 0 else r.game_bonus
            for p in (0, 1):
                out[p][j] += r.box_bonus * self.boxes[p][j]
        return out

    def state(self) -> dict:
        bon = self.bonuses()
        return {
            "scores": self.scores,
            "decided": self.decided,
            "column_winner": self.column_winner,
            "wins": self.wins,
            "boxes": self.boxes,
            "bonuses": bon,
            "totals": [sum(self.scores[p]) + sum(bon[p]) for p in (0, 1)],
            "match_winner": self.match_winner,
        }


def batch_state(sheets: SheetBatch, i: int, bonuses: np.ndarray, totals: np.ndarray) -> dict:
    return {
        "scores": sheets.scores[i].tolist(),
        "decided": sheets.decided[i].tolist(),
        "column_winner": sheets.column_winner[i].tolist(),
        "wins": sheets.wins[i].tolist(),
        "boxes": sheets.boxes[i].tolist(),
        "bonuses": bonuses[i].tolist(),
        "totals": totals[i].tolist(),
        "match_winner": int(sheets.match_winner[i]),
    }


def sheet_state(sheet: Sheet) -> dict:
    d = sheet.to_dict()
    del d["target"]
    return d


# --------------------------------------------------------------------------- helpers


def rules_for(profile: str, **changes) -> Rules:
    return load_rules(profile).replace(**changes) if changes else load_rules(profile)


def post_one(rules: Rules, sheets: SheetBatch, row: int, winner: int, award: int) -> PostResult:
    return post(rules, sheets, np.array([row]), np.array([winner]), np.array([award]))


def check_invariants(sheets: SheetBatch) -> None:
    rules = sheets.rules
    top = sheets.scores.max(axis=1)
    assert (sheets.decided == (top >= rules.target)).all()
    argmax = sheets.scores.argmax(axis=1)
    assert (sheets.column_winner == np.where(sheets.decided, argmax, -1)).all()
    # Only one player can pass the target in a column: the other froze below it.
    assert ((sheets.scores >= rules.target).sum(axis=1) <= 1).all()
    assert (sheets.match_over == (sheets.match_winner >= 0)).all()
    # Column j can only hold the boxes of a player's (j+1)-th and later wins.
    opened = np.maximum(sheets.wins[:, :, None] - np.arange(rules.columns), 0)
    assert (sheets.boxes <= opened).all()
    bon = sheets.bonuses()
    assert (bon * ~sheets.decided[:, None, :] == 0).all()
    assert (sheets.totals() == sheets.scores.sum(2) + bon.sum(2)).all()


# The three-column sheet's behaviour, in every profile that plays one (eaai is one game).
ALL_PROFILES = pytest.mark.parametrize(
    "profile", [name for name in PROFILES if load_rules(name).columns == 3])


# --------------------------------------------------------------------------- docs/rules.md §12


def test_worked_example_1_classic() -> None:
    rules = load_rules("classic")
    sheet = replay(rules, [(1, 10), (0, 18), (1, 30), (1, 4)])
    assert sheet.scores.tolist() == [[18, 0, 0], [44, 34, 4]]
    assert sheet.wins.tolist() == [1, 3]
    assert sheet.decided.tolist() == [False, False, False]
    assert sheet.column_winner.tolist() == [-1, -1, -1]
    assert sheet.match_winner == -1
    assert sheet.bonuses.tolist() == [[0, 0, 0], [0, 0, 0]]
    assert sheet.totals.tolist() == [18, 82]


def test_worked_example_1_batched_in_one_game_of_many() -> None:
    rules = load_rules("classic")
    sheets = SheetBatch.new(4, rules)
    for winner, award in [(1, 10), (0, 18), (1, 30), (1, 4)]:
        post_one(rules, sheets, 2, winner, award)
    assert sheets.scores[2].tolist() == [[18, 0, 0], [44, 34, 4]]
    assert (sheets.scores[[0, 1, 3]] == 0).all()
    assert (sheets.wins[[0, 1, 3]] == 0).all()


@pytest.mark.parametrize("a", [0, 1])
def test_worked_example_3_friendly(a: int) -> None:
    rules = load_rules("friendly")
    b = 1 - a
    gin_award = rules.gin_bonus + 18  # docs/rules.md §12 example 2
    assert gin_award == 43
    steps = [
        (30, [30, 0, 0], [False, False, False]),
        (gin_award, [73, 43, 0], [False, False, False]),
        (35, [108, 78, 35], [True, False, False]),
    ]
    sheets = SheetBatch.new(1, rules)
    results = []
    for award, expected, decided in steps:
        res = post_one(rules, sheets, 0, a, award)
        results.append((a, award))
        assert sheets.scores[0, a].tolist() == expected
        assert sheets.scores[0, b].tolist() == [0, 0, 0]  # B's columns unaffected
        assert sheets.decided[0].tolist() == decided
        assert replay(rules, results).scores[a].tolist() == expected
    # The third win decided column I *and* was posted in the newly opened III.
    assert res.posted.tolist() == [[True, True, True]]
    assert res.newly_decided.tolist() == [[True, False, False]]
    assert sheets.column_winner[0].tolist() == [a, -1, -1]
    assert res.column_delta[0, a] == 1 and res.column_delta[0, b] == -1
    assert not res.match_over[0] and res.match_winner[0] == -1


# --------------------------------------------------------------------------- edge cases


@ALL_PROFILES
def test_column_decided_mid_win_other_columns_still_posted(profile: str) -> None:
    rules = load_rules(profile)
    sheets = SheetBatch.new(1, rules)
    for award in (40, 40, 30):
        post_one(rules, sheets, 0, 0, award)
    assert sheets.scores[0, 0].tolist() == [110, 70, 30]
    res = post_one(rules, sheets, 0, 0, 60)
    assert res.posted.tolist() == [[False, True, True]]
    assert res.points.tolist() == [[0, 60, 60]]
    assert res.newly_decided.tolist() == [[False, True, False]]
    assert sheets.scores[0, 0].tolist() == [110, 130, 90]
    assert sheets.decided[0].tolist() == [True, True, False]
    assert res.column_delta.tolist() == [[1.0, -1.0]]
    check_invariants(sheets)


@ALL_PROFILES
def test_win_posted_nowhere_still_counts(profile: str) -> None:
    rules = load_rules(profile)
    sheets = SheetBatch.new(1, rules)
    post_one(rules, sheets, 0, 1, 100)  # player 1 takes column I at once
    res = post_one(rules, sheets, 0, 0, 30)  # player 0's 1st win: column I only, decided
    assert res.posted.tolist() == [[False, False, False]]
    assert res.points.tolist() == [[0, 0, 0]]
    assert res.column_delta.tolist() == [[0.0, 0.0]]
    assert sheets.wins[0].tolist() == [1, 1]
    assert sheets.scores[0].tolist() == [[0, 0, 0], [100, 0, 0]]
    assert sheets.boxes[0, 0].tolist() == [0, 0, 0]
    # The win still counted: player 0's next win is their 2nd and opens column II.
    res = post_one(rules, sheets, 0, 0, 20)
    assert res.posted.tolist() == [[False, True, False]]
    assert sheets.scores[0].tolist() == [[0, 20, 0], [100, 0, 0]]
    assert replay(rules, [(1, 100), (0, 30), (0, 20)]).scores.tolist() == [
        [0, 20, 0],
        [100, 0, 0],
    ]
    check_invariants(sheets)


def test_rivals_wins_never_open_your_columns() -> None:
    sheet = replay("friendly", [(1, 5), (1, 5), (1, 5), (0, 7)])
    # Player 1 has 3 wins, but player 0's first win goes to column I only.
    assert sheet.scores.tolist() == [[7, 0, 0], [15, 10, 5]]


@pytest.mark.parametrize("winner", [0, 1])
def test_shutout_versus_game_bonus(winner: int) -> None:
    rules = load_rules("bonus")
    loser = 1 - winner
    shutout = replay(rules, [(winner, 100)])
    assert shutout.bonuses[winner].tolist() == [rules.shutout_bonus + rules.box_bonus, 0, 0]
    assert shutout.bonuses[loser].tolist() == [0, 0, 0]
    assert shutout.totals[winner] == 100 + 200 + 25
    game = replay(rules, [(loser, 10), (winner, 100)])
    assert game.bonuses[winner].tolist() == [rules.game_bonus + rules.box_bonus, 0, 0]
    assert game.bonuses[loser].tolist() == [rules.box_bonus, 0, 0]  # the loser's box
    assert game.totals.tolist()[winner] == 100 + 100 + 25
    assert game.totals.tolist()[loser] == 10 + 25


def test_shutout_bonus_replaces_game_bonus() -> None:
    rules = load_rules("bonus").replace(game_bonus=100, shutout_bonus=40, box_bonus=0)
    assert replay(rules, [(0, 100)]).bonuses[0, 0] == 40  # instead of, not on top of
    assert replay(rules, [(1, 1), (0, 100)]).bonuses[0, 0] == 100


@pytest.mark.parametrize("profile", ["friendly", "classic"])
def test_no_bonuses_in_friendly_and_classic(profile: str) -> None:
    sheet = replay(profile, [(0, 100), (1, 10), (1, 100), (0, 50), (0, 60)])
    assert (sheet.bonuses == 0).all()
    assert sheet.totals.tolist() == sheet.scores.sum(axis=1).tolist()


def test_box_bonus_counting_only_in_decided_columns() -> None:
    rules = load_rules("bonus")
    sheet = replay(rules, [(0, 20), (1, 20), (0, 20), (1, 20), (0, 70)])
    assert sheet.scores.tolist() == [[110, 90, 70], [40, 20, 0]]
    assert sheet.boxes.tolist() == [[3, 2, 1], [2, 1, 0]]
    assert sheet.decided.tolist() == [True, False, False]
    # Column I: game bonus + 3 boxes for player 0, 2 boxes for player 1;
    # the open columns pay nothing yet.
    assert sheet.bonuses.tolist() == [[100 + 3 * 25, 0, 0], [2 * 25, 0, 0]]
    assert sheet.totals.tolist() == [270 + 175, 60 + 50]


@ALL_PROFILES
def test_single_column(profile: str) -> None:
    rules = rules_for(profile, columns=1)
    sheet = replay(rules, [(0, 30), (0, 40), (1, 50), (0, 29)])
    assert sheet.scores.tolist() == [[99], [50]]
    assert sheet.wins.tolist() == [3, 1]
    assert sheet.match_winner == -1
    sheet = replay(rules, [(0, 30), (0, 40), (1, 50), (0, 29), (1, 60)])
    assert sheet.scores.tolist() == [[99], [110]]
    assert sheet.decided.tolist() == [True]
    assert sheet.match_over and sheet.match_winner == 1
    bonus = rules.game_bonus + 1 * rules.box_bonus
    assert sheet.bonuses.tolist() == [[3 * rules.box_bonus], [bonus + rules.box_bonus]]
    sheets = SheetBatch.new(2, rules)
    res = post_one(rules, sheets, 1, 1, 100)
    assert res.match_over.tolist() == [True] and res.match_winner.tolist() == [1]
    assert res.column_delta.tolist() == [[-1.0, 1.0]]


@ALL_PROFILES
def test_target_250(profile: str) -> None:
    rules = rules_for(profile, target=250)
    sheet = replay(rules, [(0, 100), (0, 100)])
    assert sheet.scores[0].tolist() == [200, 100, 0]
    assert not sheet.decided.any()
    sheet = replay(rules, [(0, 100), (0, 100), (0, 60)])
    assert sheet.scores[0].tolist() == [260, 160, 60]
    assert sheet.decided.tolist() == [True, False, False]
    # Exactly the target decides.
    assert replay(rules, [(1, 250)]).decided.tolist() == [True, False, False]
    assert not replay(rules, [(1, 249)]).decided.any()


@ALL_PROFILES
def test_match_end_and_majority_winner(profile: str) -> None:
    rules = load_rules(profile)
    results = [(0, 100), (1, 20), (1, 20), (1, 90)]
    sheet = replay(rules, results)
    assert sheet.column_winner.tolist() == [0, 1, -1]
    assert sheet.match_winner == -1 and not sheet.match_over
    sheets = SheetBatch.new(1, rules)
    for w, a in results:
        post_one(rules, sheets, 0, w, a)
    res = post_one(rules, sheets, 0, 1, 10)
    assert res.match_over.tolist() == [True] and res.match_winner.tolist() == [1]
    sheet = replay(rules, [*results, (1, 10)])
    assert sheet.scores.tolist() == [[100, 0, 0], [0, 110, 100]]
    assert sheet.column_winner.tolist() == [0, 1, 1]
    assert sheet.match_over and sheet.match_winner == 1
    with pytest.raises(ValueError, match="already over"):
        replay(rules, [*results, (1, 10), (0, 5)])


def test_total_never_decides_the_winner() -> None:
    results = [(0, 150), (0, 90), (1, 1), (1, 100), (0, 95), (1, 100)]
    sheet = replay("classic", results)
    assert sheet.column_winner.tolist() == [0, 1, 1]
    assert sheet.totals.tolist() == [335, 200]
    assert sheet.match_winner == 1


@ALL_PROFILES
def test_scores_frozen_after_decision(profile: str) -> None:
    rules = load_rules(profile)
    sheet = replay(rules, [(0, 120), (1, 40), (1, 40), (0, 10), (1, 70), (0, 20)])
    # Column I froze at 120 : 0 after the first hand; every later win skipped it.
    assert sheet.scores[:, 0].tolist() == [120, 0]
    assert sheet.wins.tolist() == [3, 3]
    # Column II froze at 10 : 110; player 0's last win reached only column III.
    assert sheet.scores[:, 1].tolist() == [10, 110]
    assert sheet.decided.tolist() == [True, True, False]
    assert sheet.scores[:, 2].tolist() == [20, 70]


def test_bonuses_never_count_toward_target() -> None:
    rules = load_rules("bonus")
    sheet = replay(rules, [(0, 100), (0, 99)])
    assert sheet.scores[0].tolist() == [100, 99, 0]
    assert sheet.totals[0] == 100 + 99 + 225 > rules.target
    assert sheet.decided.tolist() == [True, False, False]
    rules = rules.replace(box_bonus=1000, game_bonus=1000, shutout_bonus=1000)
    sheet = replay(rules, [(1, 1), (0, 99), (0, 100), (0, 99)])
    assert sheet.scores.tolist() == [[199, 100, 99], [1, 0, 0]]
    assert sheet.decided.tolist() == [True, True, False]  # III open at 99
    assert sheet.bonuses[0].tolist() == [1000 + 2000, 1000 + 1000, 0]


def test_zero_award_is_posted_and_boxed() -> None:
    sheet = replay("bonus", [(0, 0), (0, 100)])
    assert sheet.boxes[0].tolist() == [2, 1, 0]
    assert sheet.scores[0].tolist() == [100, 100, 0]
    # Player 1 scored 0 in both columns: shutouts.
    assert sheet.bonuses[0].tolist() == [200 + 50, 200 + 25, 0]


def test_dead_hands_are_skipped() -> None:
    plain = replay("classic", [(1, 10), (0, 18), (1, 30), (1, 4)])
    dead = replay("classic", [(None, 0), (1, 10), (None, 99), (0, 18), (1, 30), (1, 4)])
    assert sheet_state(plain) == sheet_state(dead)


def test_batched_post_touches_only_its_rows() -> None:
    rules = load_rules("bonus")
    sheets = SheetBatch.new(5, rules)
    res = post(rules, sheets, np.array([3, 0, 4]), np.array([1, 0, 1]), np.array([100, 5, 7]))
    assert res.rows.tolist() == [3, 0, 4]
    assert res.newly_decided.tolist() == [
        [True, False, False],
        [False, False, False],
        [False, False, False],
    ]
    assert res.column_delta.tolist() == [[-1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    assert sheets.scores[:, :, 0].tolist() == [[5, 0], [0, 0], [0, 0], [0, 100], [0, 7]]
    assert sheets.wins.tolist() == [[1, 0], [0, 0], [0, 0], [0, 1], [0, 1]]
    assert sheets.bonuses()[3].tolist() == [[0, 0, 0], [225, 0, 0]]
    # Empty posts are fine and change nothing.
    before = sheets.copy()
    res = post(rules, sheets, np.array([], int), np.array([], int), np.array([], int))
    assert res.posted.shape == (0, 3) and res.column_delta.shape == (0, 2)
    np.testing.assert_array_equal(before.scores, sheets.scores)
    check_invariants(sheets)


def test_reset_rows_gives_fresh_sheets() -> None:
    rules = load_rules("friendly").replace(columns=1)
    sheets = SheetBatch.new(3, rules)
    post(rules, sheets, [0, 1, 2], [0, 1, 0], [100, 40, 3])
    assert sheets.match_over.tolist() == [True, False, False]
    sheets.reset_rows([0, 1])
    fresh = SheetBatch.new(1, rules)
    for i in (0, 1):
        assert sheet_state(sheets.sheet(i)) == sheet_state(fresh.sheet(0))
    assert sheets.scores[2].tolist() == [[3], [0]]
    post_one(rules, sheets, 0, 1, 20)  # a reset match accepts posts again
    assert sheets.scores[0].tolist() == [[0], [20]]


def test_sheet_is_a_copy_and_formats() -> None:
    rules = load_rules("bonus")
    sheets = SheetBatch.new(2, rules)
    for w, a in [(0, 100), (1, 20), (1, 20), (1, 90)]:
        post_one(rules, sheets, 1, w, a)
    sheet = sheets.sheet(1)
    sheet.scores[0, 0] = 7
    assert sheets.scores[1, 0, 0] == 100
    text = str(sheets.sheet(1))
    assert text == sheets.sheet(1).format()
    for token in (" I ", " II ", " III", "player 0", "player 1", "100*", "110*", "total"):
        assert token in text
    assert "match in progress" in text
    post_one(rules, sheets, 1, 1, 10)
    assert "match won by player 1" in str(sheets.sheet(1))
    one = replay(rules.replace(columns=1), [(0, 5)]).format()
    assert " I " in one and "II" not in one


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("winner", [2, -1, True, "0", 0.5, 1.0])
def test_replay_rejects_bad_winner(winner) -> None:
    with pytest.raises(ValueError, match="winner"):
        replay("friendly", [(0, 10), (winner, 10)])


@pytest.mark.parametrize("award", [-1, 2.5, "10", None, False, float("nan"), 10**9])
def test_replay_rejects_bad_award(award) -> None:
    with pytest.raises(ValueError, match="award"):
        replay("friendly", [(1, award)])


def test_replay_accepts_whole_float_and_numpy_awards() -> None:
    sheet = replay("friendly", [(np.int64(1), np.int32(10)), (0, 12.0)])
    assert sheet.scores.tolist() == [[12, 0, 0], [10, 0, 0]]


@pytest.mark.parametrize("item", [(0,), (0, 1, 2), 5, "01", None])
def test_replay_rejects_malformed_results(item) -> None:
    with pytest.raises(ValueError, match="pair"):
        replay("friendly", [item])


def test_replay_rejects_posting_to_finished_match() -> None:
    rules = load_rules("classic").replace(columns=1)
    with pytest.raises(ValueError, match=r"result #1.*already over"):
        replay(rules, [(0, 100), (1, 5)])
    # A dead hand after the end is harmless: nothing is posted.
    assert replay(rules, [(0, 100), (None, 0)]).match_winner == 0


def test_post_rejects_bad_input_and_leaves_sheets_unchanged() -> None:
    rules = load_rules("friendly")
    sheets = SheetBatch.new(3, rules)
    post_one(rules, sheets, 0, 0, 10)
    before = sheets.copy()
    cases = [
        (([1, 1], [0, 1], [5, 5]), "distinct"),
        (([3], [0], [5]), "out of range"),
        (([-1], [0], [5]), "out of range"),
        (([0, 1], [0], [5, 5]), "winner must have shape"),
        (([0, 1], [0, 1], [5]), "award must have shape"),
        (([0, 1], [0, 2], [5, 5]), "winner must be 0 or 1"),
        (([0, 1], [0.0, 1.0], [5, 5]), "winner"),
        (([0, 1], [0, 1], [5, -5]), "award must be in"),
        (([0, 1], [0, 1], [5, 5.5]), "award must be whole"),
        (([0.0], [0], [5]), "rows must be integer"),
        (([[0]], [0], [5]), "rows must be a 1-D"),
    ]
    for (rows, winner, award), message in cases:
        with pytest.raises(ValueError, match=message):
            post(rules, sheets, np.array(rows), np.array(winner), np.array(award))
    with pytest.raises(ValueError, match="column"):
        post(rules.replace(columns=1), sheets, np.array([0]), np.array([0]), np.array([5]))
    np.testing.assert_array_equal(before.scores, sheets.scores)
    np.testing.assert_array_equal(before.wins, sheets.wins)

    rules1 = rules.replace(columns=1)
    done = SheetBatch.new(2, rules1)
    post_one(rules1, done, 1, 0, 100)
    with pytest.raises(ValueError, match=r"finished match.*\[1\]"):
        post(rules1, done, np.array([0, 1]), np.array([0, 0]), np.array([5, 5]))
    assert done.scores[0].tolist() == [[0], [0]]  # the good row was not posted either


def test_sheet_batch_new_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="num_games"):
        SheetBatch.new(-1, load_rules("friendly"))
    with pytest.raises(ValueError, match="num_games"):
        SheetBatch.new(2.0, load_rules("friendly"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="out of range"):
        SheetBatch.new(2, load_rules("friendly")).sheet(2)


# --------------------------------------------------------------------------- properties

bonus_values = st.integers(0, 1000)
rules_strategy = st.builds(
    lambda profile, columns, target, bonuses: load_rules(profile).replace(
        columns=columns,
        target=target,
        **(
            {}
            if bonuses is None
            else dict(zip(("game_bonus", "shutout_bonus", "box_bonus"), bonuses, strict=True))
        ),
    ),
    st.sampled_from(PROFILES),
    st.sampled_from([1, 3]),
    st.sampled_from([100, 250]),
    st.none() | st.tuples(bonus_values, bonus_values, bonus_values),
)
result_strategy = st.tuples(st.none() | st.integers(0, 1), st.integers(0, 130))


@settings(max_examples=150, deadline=None)
@given(rules=rules_strategy, results=st.lists(result_strategy, max_size=60))
def test_replay_matches_reference(rules: Rules, results: list) -> None:
    ref = RefSheet(rules)
    played = []
    for winner, award in results:
        if ref.match_winner != -1:
            break
        played.append((winner, award))
        if winner is not None:
            ref.post(winner, award)
    sheet = replay(rules, played)
    assert sheet_state(sheet) == ref.state()
    assert sheet.target == rules.target
    if ref.match_winner != -1:
        with pytest.raises(ValueError, match="already over"):
            replay(rules, [*played, (0, 1)])
    str(sheet)


def random_award(rng: np.random.Generator, size: int) -> np.ndarray:
    """Mostly realistic awards, some large ones (big undercuts, gins) and zeros."""
    kind = rng.random(size)
    small = rng.integers(1, 41, size)
    medium = rng.integers(20, 81, size)
    large = rng.integers(80, 161, size)
    award = np.where(kind < 0.7, small, np.where(kind < 0.9, medium, large))
    return np.where(kind > 0.98, 0, award)


def run_batched_against_reference(rules: Rules, num_games: int, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sheets = SheetBatch.new(num_games, rules)
    refs = [RefSheet(rules) for _ in range(num_games)]
    histories: list[list] = [[] for _ in range(num_games)]
    bias = rng.uniform(0.2, 0.8)  # one player wins more often in this run
    finished = 0
    for _ in range(steps):
        mask = rng.random(num_games) < rng.uniform(0.2, 1.0)
        rows = rng.permutation(np.flatnonzero(mask))
        winner = (rng.random(rows.size) < bias).astype(np.int64)
        award = random_award(rng, rows.size)
        for i in np.flatnonzero(~mask):  # dead hands in the other games, now and then
            if rng.random() < 0.1:
                histories[i].append((None, 0))
        res = post(rules, sheets, rows, winner, award)
        for k, i in enumerate(rows.tolist()):
            histories[i].append((int(winner[k]), int(award[k])))
            expected = refs[i].post(int(winner[k]), int(award[k]))
            assert res.posted[k].tolist() == expected["posted"]
            assert res.newly_decided[k].tolist() == expected["newly"]
            assert res.column_delta[k].tolist() == expected["delta"]
            assert bool(res.match_over[k]) == expected["over"]
            assert int(res.match_winner[k]) == expected["match_winner"]
            assert res.points[k].tolist() == [int(award[k]) if p else 0 for p in expected["posted"]]
        assert (res.column_delta.sum(axis=1) == 0).all()
        assert (np.abs(res.column_delta) <= rules.columns).all()
        check_invariants(sheets)
        bonuses, totals = sheets.bonuses(), sheets.totals()
        for i in range(num_games):
            assert batch_state(sheets, i, bonuses, totals) == refs[i].state()
        # Autoreset the finished matches (checking some against replay first),
        # and now and then abandon a live one.
        over = np.flatnonzero(res.match_over)
        for k in over.tolist():
            i = int(rows[k])
            if rng.random() < 0.3:
                assert sheet_state(replay(rules, histories[i])) == refs[i].state()
        abandon = np.flatnonzero(rng.random(num_games) < 0.01)
        reset = np.union1d(rows[over], abandon).astype(np.int64)
        if reset.size:
            finished += over.size
            sheets.reset_rows(reset)
            for i in reset.tolist():
                refs[i] = RefSheet(rules)
                histories[i] = []
    for i in range(num_games):
        assert sheet_state(replay(rules, histories[i])) == sheet_state(sheets.sheet(i))
        assert sheet_state(sheets.sheet(i)) == refs[i].state()


batched_args = {
    "rules": rules_strategy,
    "num_games": st.integers(1, 6),
    "steps": st.integers(1, 80),
    "seed": st.integers(0, 2**32 - 1),
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**batched_args)
def test_batched_post_matches_reference(
    rules: Rules, num_games: int, steps: int, seed: int
) -> None:
    run_batched_against_reference(rules, num_games, steps, seed)


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    rules=rules_strategy,
    num_games=st.integers(1, 12),
    steps=st.integers(20, 150),
    seed=st.integers(0, 2**32 - 1),
)
def test_batched_post_matches_reference_slow(
    rules: Rules, num_games: int, steps: int, seed: int
) -> None:
    run_batched_against_reference(rules, num_games, steps, seed)
