"""``simple``: Todd Neller's published ``SimpleGinRummyPlayer``, batched.

The gin rummy literature (the EAAI undergraduate challenge and the papers
that came out of it) measures agents against this player, so ``simple``
follows its Java source (``SimpleGinRummyPlayer.java`` in
github.com/tneller/gin-rummy-eaai) rule for rule:

* **Face-up card** (``willDrawFaceUpCard``, asked for the first upcard too):
  take it exactly when it belongs to *some* meld among the 10 held cards plus
  that card (any set of three or four, or run of three or more, containing it),
  whether or not that lowers the deadwood; otherwise pass the offer or draw
  from the stock.
* **Discard** (``getDiscard``): over every held card except a face-up card
  just taken, the deadwood of the 10 cards left (best arrangement); pick
  uniformly at random among the cards that leave the least.
* **Knock** (``getFinalMelds``): right after that discard, whenever the 10
  cards left may knock (gin is a knock with no deadwood) -- as early as it may.

Where hgin differs from the Java game:

* *No repeat of a draw-and-discard pair.*  The Java player remembers every
  ``{drawn card, discarded card}`` pair of the hand and never discards so as
  to repeat one.  hgin agents see only the observation, which does not record
  the seat's own past draws and discards, so ``simple`` does not apply that
  rule.  It can only bind after the player takes back a face-up card it held
  earlier in the hand (a stock card was never in its hand before): in
  ``simple`` self-play (friendly rules) it would change about 4 discards in
  100 000, and ``tests/agents/test_simple.py`` checks it stays under 1 in 1000.
  The Java rule exists to stop endless take-and-discard loops; hgin's take
  limit (docs/rules.md §5) ends those instead.
* *The just-taken card* is known from ``forbidden_discard``, which the
  observation fills only under ``forbid_discard_of_taken`` (on in every
  profile).  With that switch off, ``simple`` may discard the taken card.
* *Big gin* (switch ``big_gin``, off in every profile) does not exist in the
  Java game; ``simple`` declares it whenever legal, the earliest way out.
* The knock limit is hgin's (``oklahoma``, ``straight_gin``), read from the
  action mask.
* Not the player's choice but the engine's: at a knock hgin lays down the
  arrangement best for the knocker (docs/rules.md §7), where the Java player lays
  down a random one of least deadwood (same deadwood; the defender's layoffs
  may differ); and hgin scores the Hollywood sheet, not a 100-point game.

``simple-det`` (:class:`DeterministicSimpleAgent`) is hgin's earlier,
deterministic variant, kept because published figures used it: it takes a
card only when it lowers the deadwood or allows a knock, and breaks discard
ties by the highest value, then the lowest card id.
"""

from __future__ import annotations

import numpy as np

from agents.base import RowGenerators
from agents.features import ObsView, card_bit, decode
from hgin_env import actions as A
from hgin_env.cards import CARD_VALUES, NUM_CARDS, NUM_RANKS, NUM_SUITS
from hgin_env.melds import SENTINEL, deadwood_after_discard, min_deadwood

_VALUES = CARD_VALUES.astype(np.int64)
#: A pair mask no hand can hold (bit 63 is no card): fills unused slots of MELD_PARTNERS.
_NEVER = np.uint64(1) << np.uint64(63)


def _meld_partners() -> np.ndarray:
    """(52, 6) ``uint64``: for each card, the pairs of cards that make a
    three-card meld with it -- the run neighbours below / around / above it
    and each two of the other three cards of its rank.  Every longer meld
    containing the card contains one of these, so the card joins some meld of
    a hand exactly when the hand holds one of its pairs."""
    out = np.full((NUM_CARDS, 6), _NEVER, np.uint64)
    for suit in range(NUM_SUITS):
        for rank in range(NUM_RANKS):
            card = suit * NUM_RANKS + rank
            slots = []
            for start in (rank - 2, rank - 1, rank):  # runs start..start+2 through rank
                if 0 <= start and start + 2 < NUM_RANKS:
                    others = [r for r in range(start, start + 3) if r != rank]
                    slots.append(sum(1 << (suit * NUM_RANKS + r) for r in others))
            same = [s * NUM_RANKS + rank for s in range(NUM_SUITS) if s != suit]
            slots += [(1 << same[i]) | (1 << same[j]) for i, j in ((0, 1), (0, 2), (1, 2))]
            out[card, : len(slots)] = np.array(slots, np.uint64)
    return out


MELD_PARTNERS = _meld_partners()


def joins_a_meld(hand: np.ndarray, card: np.ndarray) -> np.ndarray:
    """Whether each ``card`` (ids >= 0) belongs to some meld of ``hand`` plus that card."""
    partners = MELD_PARTNERS[card]
    return ((hand[:, None] & partners) == partners).any(axis=1)


def published_discard(view: ObsView, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The action of the published player in discard-phase ``rows``.

    Candidates are the held cards it may discard (legal as a discard or a
    knock, and not the card just taken); one of those leaving the least
    deadwood is drawn uniformly with ``rng``, then knocked with when legal.
    """
    mask = view.mask[rows] > 0
    legal = mask[:, : A.KNOCK] | mask[:, A.KNOCK : A.DRAW_STOCK]
    allowed = view.hand_bits[rows] & legal & ~view.forbidden_bits[rows]
    empty = ~allowed.any(axis=1)
    if empty.any():
        row = int(rows[np.flatnonzero(empty)[0]])
        raise ValueError(f"row {row} is in the discard phase but has no legal discard")
    after = np.where(allowed, view.after_discard[rows], np.iinfo(np.int64).max)
    best = allowed & (after == after.min(axis=1, keepdims=True))
    counts = best.sum(axis=1)
    draws = rng.random_rows(rows) if isinstance(rng, RowGenerators) else rng.random(rows.size)
    nth = (draws * counts).astype(np.int64)
    card = np.argmax(np.cumsum(best, axis=1) > nth[:, None], axis=1)
    knock = mask[np.arange(rows.size), A.KNOCK + card]
    action = np.where(knock, A.KNOCK + card, card)
    return np.where(mask[:, A.BIG_GIN], A.BIG_GIN, action)


def published_draw(view: ObsView, rows: np.ndarray) -> np.ndarray:
    """The action of the published player in the offer and draw phases ``rows``."""
    mask = view.mask[rows] > 0
    top = view.top[rows]
    can_take = mask[:, A.TAKE_DISCARD] & (top >= 0)
    take = np.zeros(rows.size, bool)
    idx = np.flatnonzero(can_take)
    if idx.size:
        take[idx] = joins_a_meld(view.hand[rows[idx]], top[idx])
    decline = np.where(mask[:, A.PASS], A.PASS, A.DRAW_STOCK)
    return np.where(take, A.TAKE_DISCARD, decline)


def published_simple_actions(view: ObsView, rng: np.random.Generator) -> np.ndarray:
    """One action per row of ``view``: the published simple player's choice."""
    actions = np.empty(view.size, np.int64)
    discarding = view.phase == A.PHASE_DISCARD
    rows = np.flatnonzero(discarding)
    if rows.size:
        actions[rows] = published_discard(view, rows, rng)
    rows = np.flatnonzero(~discarding)
    if rows.size:
        actions[rows] = published_draw(view, rows)
    return actions


class SimpleAgent:
    """Neller's ``SimpleGinRummyPlayer`` (see the module docstring).

    Its discard ties are drawn from ``rng`` when ``act`` gets one, else from
    its own generator seeded by ``seed``, so a fixed seed replays exactly.
    """

    name = "simple"
    #: Draws only one number per discarding row (see ``agents.base.RowGenerators``).
    draws_per_row = True

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None) -> np.ndarray:
        return published_simple_actions(decode(obs), rng if rng is not None else self._rng)


# --------------------------------------------------------------------------- simple-det


def discard_choice(after: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Per row, the legal card leaving the least deadwood, ties to the highest value."""
    cost = np.where(legal, after * 16 - _VALUES, np.iinfo(np.int64).max)
    return np.argmin(cost, axis=1)


def take_is_useful(view: ObsView, rows: np.ndarray) -> np.ndarray:
    """Whether the top discard lowers the deadwood or allows a knock (``rows`` with a top card)."""
    top = view.top[rows]
    hand = view.hand[rows]
    new = hand | card_bit(top)
    melds = min_deadwood(new) < view.deadwood[rows] + _VALUES[top]
    after = deadwood_after_discard(new).astype(np.int64)
    after[np.arange(rows.size), top] = SENTINEL
    knock = after.min(axis=1) <= view.knock_limit[rows]
    return melds | knock


def deterministic_simple_actions(view: ObsView) -> np.ndarray:
    """One action per row of ``view``: the ``simple-det`` player's choice."""
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


class DeterministicSimpleAgent:
    """``simple-det``: take only deadwood-lowering cards, knock at once, shed the highest value."""

    name = "simple-det"

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None) -> np.ndarray:
        return deterministic_simple_actions(decode(obs))


__all__ = [
    "MELD_PARTNERS",
    "DeterministicSimpleAgent",
    "SimpleAgent",
    "deterministic_simple_actions",
    "discard_choice",
    "joins_a_meld",
    "published_discard",
    "published_draw",
    "published_simple_actions",
    "take_is_useful",
]
