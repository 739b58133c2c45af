"""The published "simple" gin player, batched.

* Take the upcard / the top discard only when it joins a meld of a
  minimum-deadwood arrangement of the 11 cards, or when it allows an
  immediate knock.
* Knock as soon as it is legal (choosing the discard that leaves the least
  deadwood).
* Otherwise discard the card that leaves the least deadwood, breaking ties
  by the highest card value: the highest-value deadwood card.

Everything is decided from the observation vector (:mod:`agents.view`).
"""

from __future__ import annotations

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import CARD_VALUES
from hgin_env.melds import SENTINEL, deadwood_after_discard, min_deadwood

from .view import ObsView, card_bit, decode

_VALUES = CARD_VALUES.astype(np.int64)


def discard_choice(after: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Per row, the legal card leaving the least deadwood, ties to the highest value."""
    cost = np.where(legal, after * 16 - _VALUES, np.iinfo(np.int64).max)
    return np.argmin(cost, axis=1)


def take_is_useful(view: ObsView, rows: np.ndarray) -> np.ndarray:
    """Whether the top discard joins a meld or allows a knock, for ``rows`` with a top card."""
    top = view.top[rows]
    hand = view.hand[rows]
    new = hand | card_bit(top)
    melds = min_deadwood(new) < view.deadwood[rows] + _VALUES[top]
    after = deadwood_after_discard(new).astype(np.int64)
    after[np.arange(rows.size), top] = SENTINEL
    knock = after.min(axis=1) <= view.knock_limit[rows]
    return melds | knock


class SimpleAgent:
    """Take only melding upcards, knock at once, shed the highest deadwood."""

    name = "simple"

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None) -> np.ndarray:
        view = decode(obs)
        return simple_actions(view)


def simple_actions(view: ObsView) -> np.ndarray:
    mask = view.mask.astype(bool)
    b = view.size
    actions = np.full(b, A.DRAW_STOCK, np.int64)

    discard_rows = np.flatnonzero(view.phase == A.PHASE_DISCARD)
    if discard_rows.size:
        m = mask[discard_rows]
        after = view.after_discard[discard_rows]
        knock_legal = m[:, A.KNOCK : A.DRAW_STOCK]
        can_knock = knock_legal.any(axis=1)
        knock_card = discard_choice(after, knock_legal)
        plain_card = discard_choice(after, m[:, : A.KNOCK])
        actions[discard_rows] = np.where(can_knock, A.KNOCK + knock_card, plain_card)
        big = m[:, A.BIG_GIN]
        actions[discard_rows[big]] = A.BIG_GIN

    draw_rows = np.flatnonzero(view.phase != A.PHASE_DISCARD)
    if draw_rows.size:
        m = mask[draw_rows]
        can_take = m[:, A.TAKE_DISCARD] & (view.top[draw_rows] >= 0)
        fallback = np.where(m[:, A.PASS], A.PASS, A.DRAW_STOCK)
        take = np.zeros(draw_rows.size, bool)
        idx = np.flatnonzero(can_take)
        if idx.size:
            take[idx] = take_is_useful(view, draw_rows[idx])
        actions[draw_rows] = np.where(take, A.TAKE_DISCARD, fallback)
    return actions


__all__ = ["SimpleAgent", "discard_choice", "simple_actions", "take_is_useful"]
