"""Sanity tests of the brute-force references in ``tests/helpers/reference.py``."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hgin_env.cards import CARD_VALUES, parse
from tests.helpers.reference import (
    DECK_MELDS,
    all_arrangements,
    all_melds,
    cards_of,
    deadwood_after_discard_ref,
    defender_best_ref,
    is_meld,
    layoff_search,
    layoffs_feasible,
    min_deadwood_ref,
    showdown_ref,
    union,
    value,
)
from tests.helpers.strategies import fast_settings, hands, knock_cases, meld_dense_hands


def P(text: str) -> int:
    return parse(text)


# ------------------------------------------------------------------ melds


def test_deck_meld_count():
    # 13 ranks x (4 three-sets + 1 four-set) + 4 suits x (11+10+...+1) runs
    assert len(DECK_MELDS) == 13 * 5 + 4 * sum(range(1, 12))
    assert len(set(DECK_MELDS)) == len(DECK_MELDS)


def test_values_match_cards_module():
    assert [value(1 << c) for c in range(52)] == [int(v) for v in CARD_VALUES]


def test_all_melds_four_of_a_kind():
    melds = all_melds(P("7C 7D 7H 7S"))
    assert len(melds) == 5
    assert P("7C 7D 7H 7S") in melds
    assert P("7C 7D 7S") in melds


def test_all_melds_runs_are_every_subrun():
    melds = all_melds(P("3D 4D 5D 6D 7D"))
    assert sorted(m.bit_count() for m in melds) == [3, 3, 3, 4, 4, 5]


@pytest.mark.parametrize(
    "text, ok",
    [
        ("AC 2C 3C", True),
        ("QS KS AS", False),  # no wrap
        ("JH QH KH", True),
        ("4H 5H 7H", False),
        ("4H 5D 6H", False),
        ("9C 9D 9S", True),
        ("9C 9D", False),
        ("9C 9D 9S 9H", True),
        ("9C 9D 9S 8S", False),
    ],
)
def test_is_meld(text, ok):
    assert is_meld(P(text)) is ok


def test_arrangements_small():
    assert all_arrangements(0) == [[]]
    run = P("4H 5H 6H")
    assert sorted(all_arrangements(run), key=len) == [[], [run]]
    # empty, four 3-sets, the 4-set
    assert len(all_arrangements(P("7C 7D 7H 7S"))) == 6


def _arrangements_by_combinations(mask: int) -> set[frozenset[int]]:
    melds = all_melds(mask)
    out = set()
    for r in range(len(melds) + 1):
        if r > 4:  # at most 11 cards, so at most 3 disjoint melds
            break
        for combo in itertools.combinations(melds, r):
            if sum(m.bit_count() for m in combo) == union(combo).bit_count():
                out.add(frozenset(combo))
    return out


@fast_settings()
@given(st.one_of(meld_dense_hands(8), meld_dense_hands(11), hands(10)))
def test_arrangements_match_independent_enumeration(mask):
    arrs = all_arrangements(mask)
    as_sets = [frozenset(a) for a in arrs]
    assert len(as_sets) == len(set(as_sets)), "an arrangement listed twice"
    assert set(as_sets) == _arrangements_by_combinations(mask)
    for a in arrs:
        assert all(is_meld(m) and m & mask == m for m in a)


# --------------------------------------------------------------- deadwood

KNOWN_DEADWOOD = [
    ("4H 5H 6H 7H 9C 9D 9S AC 2C 3C", 0),
    ("4H 5H 6H 9C 9D 9S AC 2C 3C KD", 10),
    # A-4 clubs, A-4 diamonds, AH 2H: 2-3-4C, 2-3-4D and the aces leave 2H
    ("AC 2C 3C 4C AD 2D 3D 4D AH 2H", 2),
    ("KS QS AS 2D 3H", 26),
    ("", 0),
    ("TC JD QH", 30),
    # set of 6s vs run 4-5-6: 4H 5H 6H 6C 6D -> best leaves 4H 5H (9)
    ("4H 5H 6H 6C 6D", 9),
    # 7C 7D 7H + 5H 6H 7H: run 5-6-7 and set 7C 7D 7H conflict on 7H
    ("5H 6H 7H 7C 7D", 11),
    ("5H 6H 7H 7C 7D 7S", 0),  # run 5-7H plus the other three 7s
]


@pytest.mark.parametrize("text, expected", KNOWN_DEADWOOD)
def test_known_deadwood(text, expected):
    assert min_deadwood_ref(P(text)) == expected


def test_openspiel_mistake_hand():
    # the 11-card hand OpenSpiel once got wrong: best discard leaves 9
    hand = P("2S 4S 5S 6S 2C 5C 6D 3H 4H 5H 6H")
    after = deadwood_after_discard_ref(hand)
    assert set(after) == set(cards_of(hand))
    assert min(after.values()) == 9


def test_rules_example_2_discard():
    hand = P("4H 5H 6H 9C 9D 9S AC 2C 3C KD 7H")
    after = deadwood_after_discard_ref(hand)
    assert after[cards_of(P("KD"))[0]] == 0
    assert min_deadwood_ref(P("4H 5H 6H 9C 9D 9S AC 2C 3C KD")) == 10


@fast_settings()
@given(st.one_of(hands(10), hands(11), meld_dense_hands(11)))
def test_min_deadwood_is_attained_and_fast(mask):
    min_deadwood_ref.cache_clear()
    t0 = time.process_time()  # this process's CPU: other jobs on the machine do not count
    d = min_deadwood_ref(mask)
    assert time.process_time() - t0 < 0.25  # bounded search (an exploding one takes seconds)
    assert 0 <= d <= value(mask)
    assert any(value(mask & ~union(a)) == d for a in all_arrangements(mask))


# ---------------------------------------------------------------- layoffs


def test_layoff_chain():
    d, laid = layoff_search([P("4H 5H 6H")], P("7H 8H"))
    assert (d, laid) == (0, P("7H 8H"))
    d, laid = layoff_search([P("4H 5H 6H")], P("8H"))
    assert (d, laid) == (8, 0)
    d, laid = layoff_search([P("4H 5H 6H")], P("2H 3H 8H"))  # chain downwards
    assert (d, laid) == (8, P("2H 3H"))


def test_layoff_fourth_card_of_set_only():
    assert layoff_search([P("9C 9D 9S")], P("9H")) == (0, P("9H"))
    assert layoff_search([P("9C 9D 9S 9H")], P("8S")) == (8, 0)
    assert layoff_search([P("9C 9D 9S")], P("TS")) == (10, 0)


def test_layoff_no_wrap_and_ace_low():
    assert layoff_search([P("JH QH KH")], P("AH")) == (1, 0)
    assert layoff_search([P("AH 2H 3H")], P("KH 4H")) == (10, P("4H"))


def test_layoff_choice_between_set_and_run():
    # 7S onto the 7s would strand 8S; onto 4S5S6S it lets 8S follow
    melds = [P("7C 7D 7H"), P("4S 5S 6S")]
    assert layoff_search(melds, P("7S 8S")) == (0, P("7S 8S"))
    assert layoffs_feasible(melds, P("7S 8S"))
    assert not layoffs_feasible(melds, P("8S"))


def test_defender_keeps_card_back_for_layoff():
    # defender 7C 7D 7H 7S 8H: the 4-set of 7s leaves 8H (8); the 3-set
    # 7C 7D 7S and laying 7H then 8H onto the knocker's 4H5H6H leaves 0
    defender = P("7C 7D 7H 7S 8H")
    d, melds, laid = defender_best_ref([P("4H 5H 6H")], defender)
    assert (d, melds, laid) == (0, [P("7C 7D 7S")], P("7H 8H"))
    d, melds, laid = defender_best_ref([P("4H 5H 6H")], defender, allow_layoff=False)
    assert (d, melds, laid) == (8, [P("7C 7D 7H 7S")], 0)
    # defender 9C 9D 9H 7H 8H: set of 9s plus layoff of 7H 8H (0)
    d, _, laid = defender_best_ref([P("4H 5H 6H")], P("7H 8H 9H 9C 9D"))
    assert (d, laid) == (0, P("7H 8H"))


# --------------------------------------------------------------- showdown


def test_showdown_rules_example_2_gin():
    knocker = P("4H 5H 6H 7H 9C 9D 9S AC 2C 3C")
    defender = P("2D 3D 4D 8S 8H 8C 8D KS 5S 3S")
    assert min_deadwood_ref(defender) == 18
    r = showdown_ref(knocker, defender, 10, 25, 25)
    assert r["gin"] and r["winner"] == 0 and r["award"] == 43
    assert r["knocker_deadwood"] == 0 and r["defender_deadwood"] == 18
    assert r["layoffs"] == 0


def test_showdown_no_layoff_against_gin():
    knocker = P("4H 5H 6H 7H 9C 9D 9S AC 2C 3C")
    defender = P("8H 9H KS QS JD TD 2S 4S 6S 8C")
    r = showdown_ref(knocker, defender, 10, 20, 25)
    assert r["gin"] and r["layoffs"] == 0
    assert r["defender_deadwood"] == value(defender)
    assert r["award"] == 20 + value(defender)


def test_showdown_chain_layoff():
    knocker = P("4H 5H 6H 9C 9D 9S AC 2C 3C 4D")
    defender = P("7H 8H KS QS JD TD 2S 6S 8C 5D")
    r = showdown_ref(knocker, defender, 10, 25, 25)
    assert r["layoffs"] == P("7H 8H")
    assert r["knocker_deadwood"] == 4
    assert r["defender_deadwood"] == value(defender) - 15
    assert r["winner"] == 0 and r["award"] == value(defender) - 15 - 4


def test_showdown_fourth_card_onto_set():
    knocker = P("4H 5H 6H 9C 9D 9S AC 2C 3C 4D")
    defender = P("9H KS QS JD TD 2S 6S 8C 5D 3D")
    r = showdown_ref(knocker, defender, 10, 25, 25)
    assert r["layoffs"] == P("9H")
    assert r["defender_deadwood"] == value(defender) - 9


def test_showdown_undercut_on_tie():
    # knocker deadwood 7 (7D); defender melds all but 7S (7), nothing lays off
    knocker = P("4H 5H 6H 9C 9D 9S JC QC KC 7D")
    defender = P("AS 2S 3S TD JD QD 5C 5D 5S 7S")
    assert min_deadwood_ref(knocker) == 7
    assert min_deadwood_ref(defender) == 7
    r = showdown_ref(knocker, defender, 10, 25, 10)
    assert r["knocker_deadwood"] == 7 and r["defender_deadwood"] == 7
    assert r["winner"] == 1 and r["award"] == 10
    assert not r["gin"]


def test_showdown_knocker_blocks_large_layoff():
    # AH-4H with 4H kept as deadwood (k 9 instead of 5) blocks 5H 6H
    knocker = P("AH 2H 3H 4H 9C 9D 9S AC 2D 2S")
    defender = P("5H 6H KC QD JS 8C 7D TC 3S 5C")
    r = showdown_ref(knocker, defender, 10, 25, 25)
    assert min_deadwood_ref(knocker) == 5
    assert r["knocker_deadwood"] == 9
    assert P("AH 2H 3H") in r["knocker_melds"]
    assert r["layoffs"] == 0
    assert r["defender_deadwood"] == value(defender) == 74
    assert r["winner"] == 0 and r["award"] == 65
    # with a limit of 8 the blocking arrangement is not allowed
    r8 = showdown_ref(knocker, defender, 8, 25, 25)
    assert r8["knocker_deadwood"] in (5, 6)
    assert r8["award"] == 74 - 11 - 5


def test_showdown_set_vs_run_changes_layoffs():
    knocker = P("2H 3H 4H 4C 4D TC JC QC KC AS")
    # 5H 6H would go onto 2-3-4H; 4S onto the set of 4s
    defender = P("5H 6H 4S KD QS 9D 7C 8S 3S JH")
    r = showdown_ref(knocker, defender, 10, 25, 25)
    assert P("4C 4D 4H") in r["knocker_melds"]
    assert r["knocker_deadwood"] == 6 and r["layoffs"] == P("4S")
    assert r["award"] == value(defender) - 4 - 6
    defender2 = P("4S KD QS 9D 7C 8S 3S JH 2D TS")
    r2 = showdown_ref(knocker, defender2, 10, 25, 25)
    assert P("2H 3H 4H") in r2["knocker_melds"]
    assert r2["knocker_deadwood"] == 9 and r2["layoffs"] == 0


def test_showdown_knock_limit_errors():
    knocker = P("4H 5H 6H 9C 9D 9S AC 2C 3C 4D")  # deadwood 4
    defender = P("7H 8H KS QS JD TD 2S 6S 8C 5D")
    with pytest.raises(ValueError):
        showdown_ref(knocker, defender, 0, 25, 25)
    with pytest.raises(ValueError):
        showdown_ref(knocker, defender, 3, 25, 25)
    assert showdown_ref(knocker, defender, 4, 25, 25)["knocker_deadwood"] == 4


@fast_settings(100)
@given(knock_cases())
def test_showdown_ref_consistent(case):
    knocker, defender, limit = case
    t0 = time.process_time()
    r = showdown_ref(knocker, defender, limit, 25, 25)
    assert time.process_time() - t0 < 2.0
    k, d = r["knocker_deadwood"], r["defender_deadwood"]
    melds = r["knocker_melds"]
    assert all(is_meld(m) and m & knocker == m for m in melds)
    assert sum(m.bit_count() for m in melds) == union(melds).bit_count()
    assert value(knocker & ~union(melds)) == k <= limit
    assert r["gin"] == (k == 0) == (min_deadwood_ref(knocker) == 0)
    dm = r["defender_melds"]
    assert all(is_meld(m) and m & defender == m for m in dm)
    assert r["layoffs"] & union(dm) == 0 and r["layoffs"] & defender == r["layoffs"]
    assert value(defender & ~union(dm) & ~r["layoffs"]) == d
    assert layoffs_feasible(melds, r["layoffs"])
    assert d <= min_deadwood_ref(defender)
    if r["gin"]:
        assert (r["winner"], r["award"]) == (0, 25 + d)
    elif k < d:
        assert (r["winner"], r["award"]) == (0, d - k)
    else:
        assert (r["winner"], r["award"]) == (1, 25 + k - d)
