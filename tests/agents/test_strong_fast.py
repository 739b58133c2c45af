"""``strong``'s cheaper pieces against what they replace: the expected gain against the
dense definition over every card, the replacement gain against its loop, the partner test
on masks, and :class:`StrongView`'s fields against :class:`ObsView`'s."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from agents.features import decode
from agents.random_agent import RandomAgent
from agents.strong import (
    StrongAgent,
    StrongView,
    _replacement_gain,
    after_discard_rows,
    has_partner,
    meld_partner_cards,
)
from hgin_env import actions as A
from hgin_env.cards import CARD_VALUES
from hgin_env.draw_melds import after_each_draw
from hgin_env.engine import VectorGame
from tests.helpers.strategies import fast_settings, hands, meld_dense_hands

_TEN = st.one_of(hands(10), meld_dense_hands(10))


def _dense_gain(hand: int, dw: int, unseen: int) -> tuple[float, int]:
    """The expected gain as first written: every live card, the exact value for a card
    with two partners, the replacement of the costliest removable card otherwise."""
    after, no_draw = after_each_draw(np.array([hand], np.uint64))
    partners = meld_partner_cards(np.array([hand], np.uint64))[0]
    removal = max(dw - int(no_draw[0]), 0)
    total, live = 0, 0
    for card in range(52):
        if not unseen >> card & 1:
            continue
        live += 1
        cut = dw - int(after[0, card]) if partners[card] else removal - int(CARD_VALUES[card])
        total += max(cut, 0)
    return total / max(live, 1), removal


@fast_settings()
@given(st.lists(st.tuples(_TEN, st.integers(0, (1 << 52) - 1), st.integers(0, 60)),
                min_size=1, max_size=6))
def test_expected_gain_is_the_dense_definition(rows):
    hands_ = np.array([h for h, _, _ in rows], np.uint64)
    unseen = np.array([u & ~h for h, u, _ in rows], np.uint64)
    dw = np.array([d for _, _, d in rows], np.int64)
    gain, removal = StrongAgent()._expected_gain(hands_, dw, unseen)
    for i, (h, _, d) in enumerate(rows):
        want_gain, want_removal = _dense_gain(h, d, int(unseen[i]))
        assert gain[i] == want_gain and removal[i] == want_removal


@fast_settings()
@given(st.lists(st.tuples(st.integers(0, (1 << 52) - 1), st.integers(0, 40)),
                min_size=1, max_size=8))
def test_replacement_gain_is_the_loop(rows):
    cards = np.array([c for c, _ in rows], np.uint64)
    removal = np.array([r for _, r in rows], np.int64)
    want = [sum(max(r - int(CARD_VALUES[c]), 0) for c in range(52) if m >> c & 1)
            for m, r in rows]
    assert _replacement_gain(cards, removal).tolist() == want


@fast_settings()
@given(st.lists(st.tuples(st.integers(0, 11).flatmap(hands), st.integers(0, 51)),
                min_size=1, max_size=8))
def test_has_partner_is_the_loop(rows):
    masks = np.array([m for m, _ in rows], np.uint64)
    cards = np.array([c for _, c in rows])
    want = []
    for mask, card in rows:
        suit, rank = divmod(card, 13)
        same = any(mask >> (s * 13 + rank) & 1 for s in range(4))
        near = any(0 <= rank + d < 13 and mask >> (suit * 13 + rank + d) & 1
                   for d in (-2, -1, 1, 2))
        want.append(bool(same or near))
    assert has_partner(masks, cards).tolist() == want


def test_view_fields_are_obsviews() -> None:
    """On seeded random play: the packed masks, the top card and the discard rows' deadwood
    after each discard are ObsView's."""
    game, player = VectorGame(64, "friendly", seed=5), RandomAgent(5)
    for _ in range(60):
        obs = game.observe()
        base, fast = decode(obs), StrongView.of(obs)
        for name in ("hand", "unseen", "top"):
            assert np.array_equal(getattr(fast, name), getattr(base, name)), name
        rows = np.flatnonzero(base.phase == A.PHASE_DISCARD)
        assert np.array_equal(after_discard_rows(fast, rows), base.after_discard[rows])
        game.step(player.act(obs))
