"""The evaluate figure "mean deadwood at the knock", checked against the match records."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agents import make_agent
from agents.evaluation.arena import play_matches
from agents.evaluation.stats import mean_knock_deadwood
from agents.evaluation.tournament import PairResult, run_tournament
from hgin_env.cards import cards_to_mask
from hgin_env.melds import min_deadwood


@pytest.mark.parametrize(("a", "b", "rules"), [("ginhunter", "simple", "friendly"),
                                               ("strong", "random", "classic")])
def test_knock_deadwood_is_the_knockers_deadwood_of_the_recorded_hands(a: str, b: str,
                                                                       rules: str) -> None:
    """Per match and seat, the arena's sum is the knocker's deadwood as scored in the
    recorded showdowns: at least the least deadwood of its hand (computed here from the
    cards; the knocker lays down the arrangement best for it, docs/rules.md §7) and at
    most the knock limit, 0 for gin."""
    records: list[dict] = []
    stats = play_matches(make_agent(a, rules=rules), make_agent(b, seed=0, rules=rules), 6,
                         rules, seed=4, record=records.append)
    assert len(records) == stats.num_matches
    for i, record in enumerate(records):
        sums, knocks = np.zeros(2, np.int64), np.zeros(2, np.int64)
        for hand in record["hands"]:
            show = hand["showdown"]
            if show["dead"]:
                continue
            k = show["knocker"]
            scored = show["deadwood"][k]
            least = int(min_deadwood(np.array([cards_to_mask(show["hands"][k])],
                                              np.uint64))[0])
            assert least <= scored <= 10 and (scored == 0) == (show["gin"] or least == 0)
            sums[k] += scored
            knocks[k] += 1
        seat = record["a_seat"]
        assert (stats.a_knock_deadwood[i], stats.a_knocks[i]) == (sums[seat], knocks[seat])
        assert (stats.b_knock_deadwood[i], stats.b_knocks[i]) == (sums[1 - seat],
                                                                  knocks[1 - seat])
    summary = PairResult(a, b, stats).summary()
    assert summary["a_knock_deadwood"] == pytest.approx(
        stats.a_knock_deadwood.sum() / stats.a_knocks.sum())
    assert PairResult(a, b, stats).swapped().summary()["a_knock_deadwood"] == pytest.approx(
        summary["b_knock_deadwood"], nan_ok=True)


def test_mean_knock_deadwood_without_knocks_is_nan() -> None:
    assert math.isnan(mean_knock_deadwood(np.zeros(3), np.zeros(3)))
    assert mean_knock_deadwood(np.array([10, 4]), np.array([2, 1])) == pytest.approx(14 / 3)


def test_the_hand_table_shows_it() -> None:
    from rich.console import Console

    result = run_tournament(["simple", "ginhunter"], matches=2, seed=1)
    console = Console(record=True, width=200)
    result.print(console)
    text = console.export_text()
    s = result.pair("simple", "ginhunter")
    assert "dw at knock" in text
    assert f"{s['a_knock_deadwood']:.1f} / {s['b_knock_deadwood']:.1f}" in text
    assert "a_knock_deadwood" in result.csv_rows()[0]
