"""One hand of RLCard's gin rummy (docs/rules.md §R), on hgin's meld code.

RLCard's game (``rlcard/games/gin_rummy``, what PettingZoo's ``gin_rummy_v4``
wrapped) is one hand with a turn order of its own: the non-dealer is dealt 11
cards and there is no upcard, a player who can go gin must, a knock may discard
the card just taken, the stock is dead at 2 cards but the discard may still be
taken, and two scoring steps (actions 0 and 1) close every hand.  hgin's engine
(:class:`~hgin_env.engine.SingleGame`) plays none of these (an upcard offer, a
dead hand the moment the stock reaches 2, no knock with the taken card), so this
module plays the turn order itself and leaves the hard part, the meld search,
to :func:`hgin_env.int_melds.discard_table` and :func:`~hgin_env.int_melds.min_deadwood`.
The two switches RLCard shares with hgin (``knock_limit``,
``forbid_discard_of_taken``) come from the ``rlcard`` rule profile.

Cards here are RLCard's (and PettingZoo's) ids: ``suit * 13 + rank`` with
spades, hearts, diamonds, clubs = 0..3 and ace = 0; :func:`to_hgin_mask` turns
a mask of them into hgin's (clubs first) for the meld code.  Every random
choice is RLCard's own: :func:`rlcard_rng` seeds numpy's ``RandomState`` exactly
as ``rlcard.utils.seeding.np_random`` does, so a seed deals what it deals in
PettingZoo 1.26.
"""

from __future__ import annotations

import hashlib
import operator
import os
import struct
from typing import Any

import numpy as np

from hgin_env.int_melds import discard_table, min_deadwood
from hgin_env.rules import Rules, load_rules

__all__ = [
    "DEAD_HAND", "DISCARD", "DRAW", "GIN", "KNOCK", "NUM_ACTIONS", "PICK_UP", "SCORE_0",
    "SCORE_1", "RLCardHand", "rlcard_gin_card", "rlcard_rng", "to_hgin_mask",
]

#: RLCard's action ids (``rlcard/games/gin_rummy/utils/action_event.py`` lines 23-30).
SCORE_0, SCORE_1, DRAW, PICK_UP, DEAD_HAND, GIN = 0, 1, 2, 3, 4, 5
DISCARD, KNOCK = 6, 58
NUM_ACTIONS = 110
#: Stock cards that are never drawn (``settings.py`` line 34, ``judge.py`` line 73).
STOCK_DEAD_CARDS = 2
#: Moves after which only a dead hand may be declared, the deal counting as one
#: (``settings.py`` line 37, ``judge.py`` lines 78-80).
MAX_MOVES = 200

#: Phases: the mover holds 11 cards and discards (or knocks, or goes gin); the
#: mover draws or picks up; the two scoring steps; the hand is over.
PHASE_DISCARD, PHASE_DRAW, PHASE_SCORE_0, PHASE_SCORE_1, PHASE_OVER = range(5)

_SUIT = (1 << 13) - 1
_RANKS = "A23456789TJQK"


def to_hgin_mask(mask: int) -> int:
    """A mask of RLCard card ids as hgin's: the four 13-bit suits in reverse order
    (RLCard spades first, hgin clubs first); its own inverse."""
    return ((mask >> 39) | (mask >> 26 & _SUIT) << 13 | (mask >> 13 & _SUIT) << 26
            | (mask & _SUIT) << 39)


def _mask(cards: Any) -> int:
    out = 0
    for c in cards:
        out |= 1 << c
    return out


# ----------------------------------------------------------------------------- seeding


def _bigint_from_bytes(data: bytes) -> int:
    # rlcard/utils/seeding.py _bigint_from_bytes, padding quirk included (8 bytes get 4 more).
    padding = 4 - len(data) % 4
    data += b"\0" * padding
    count = len(data) // 4
    total = 0
    for i, value in enumerate(struct.unpack(f"{count}I", data)):
        total += 2 ** (32 * i) * value
    return total


def rlcard_rng(seed: int | None) -> np.random.RandomState:
    """``rlcard.utils.seeding.np_random(seed)``'s generator: the seed's SHA-512 digest,
    its first 8 bytes as 32-bit words.  ``None``: 8 bytes of OS entropy, as RLCard."""
    if seed is None:
        seed = _bigint_from_bytes(os.urandom(8))
    else:
        try:
            seed = operator.index(seed)
        except TypeError:
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}"
                             ) from None
        if isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
        seed %= 2 ** 64
    big = _bigint_from_bytes(hashlib.sha512(str(seed).encode("utf8")).digest()[:8])
    words = [0] if big == 0 else []
    while big > 0:
        big, low = divmod(big, 2 ** 32)
        words.append(low)
    rng = np.random.RandomState()
    rng.seed(words)
    return rng


# ----------------------------------------------------------------------------- gin card


class _Card:
    """A card with RLCard's hash (``rlcard/games/base.py`` ``Card.__hash__``: rank +
    100 * suit), so that Python's sets order cards exactly as they order RLCard's."""

    __slots__ = ("cid", "rank", "rank_char", "suit")

    def __init__(self, cid: int) -> None:
        self.cid = cid
        self.rank = cid % 13
        self.suit = cid // 13
        self.rank_char = _RANKS[self.rank]

    def __hash__(self) -> int:
        return self.rank + 100 * self.suit

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Card) and other.cid == self.cid


def _run_melds(hand: list[_Card]) -> list[list[_Card]]:
    # melding.py get_all_run_melds (lines 69-96), line for line.
    count = len(hand)
    by_suit = sorted(hand, key=lambda c: c.cid)
    longest = []
    i = 0
    while i < count - 2:
        card_i = by_suit[i]
        j = i + 1
        card_j = by_suit[j]
        while card_j.rank == card_i.rank + j - i and card_j.suit == card_i.suit:
            j += 1
            if j < count:
                card_j = by_suit[j]
            else:
                break
        run = by_suit[i:j]
        if len(run) >= 3:
            longest.append(run)
        i = j
    return [run[a:b] for run in longest for a in range(len(run) - 2)
            for b in range(a + 3, len(run) + 1)]


def _set_melds(hand: list[_Card]) -> list[list[_Card]]:
    # melding.py get_all_set_melds (lines 99-120): sorted by the rank's *letter*.
    groups = []
    current: list[_Card] = []
    rank = None
    for card in sorted(hand, key=lambda c: c.rank_char):
        if rank is None or rank == card.rank_char:
            current.append(card)
        else:
            if len(current) >= 3:
                groups.append(current)
            current = [card]
        rank = card.rank_char
    if len(current) >= 3:
        groups.append(current)
    out = []
    for group in groups:
        out.append(group)
        if len(group) == 4:
            out += [[c for c in group if c != left_out] for left_out in group]
    return out


def rlcard_gin_card(hand_order: list[int]) -> int:
    """The card RLCard's ``round.gin`` lays away (``round.py`` lines 146-147): the first
    of ``judge.get_going_out_cards``' gin cards, a Python set of its ``Card`` objects.

    ``hand_order`` is the hand as RLCard's list holds it (deal order, then each card
    taken appended); the set's order depends on it, so the port rebuilds the same
    lists, frozensets and set (``melding.py`` lines 25-50, ``judge.py`` lines 119-155).
    """
    hand = [_Card(c) for c in hand_order]
    melds = [frozenset(m) for m in _run_melds(hand)] + [frozenset(m) for m in _set_melds(hand)]
    clusters: list[list[list[_Card]]] = []
    for i, first in enumerate(melds):
        clusters.append([list(first)])
        for j in range(i + 1, len(melds)):
            second = melds[j]
            if not second.isdisjoint(first):
                continue
            clusters.append([list(first), list(second)])
            for k in range(j + 1, len(melds)):
                third = melds[k]
                if not third.isdisjoint(first) or not third.isdisjoint(second):
                    continue
                clusters.append([list(first), list(second), list(third)])
    gin_cards: set[_Card] = set()
    for cluster in clusters:
        meld_cards = [card for pile in cluster for card in pile]
        deadwood = [card for card in hand if card not in meld_cards]
        if not deadwood:
            for pile in cluster:
                if len(pile) >= 4:
                    gin_cards.add(pile[0])
                    break
        elif len(deadwood) == 1:
            gin_cards.add(deadwood[0])
    if not gin_cards:
        raise AssertionError("rlcard_gin_card called on a hand that cannot go gin")
    return list(gin_cards)[0].cid  # noqa: RUF015 (RLCard's own expression, round.py line 147)


# ----------------------------------------------------------------------------- the hand


class RLCardHand:
    """One hand of RLCard's gin rummy: deal, legal actions, steps, payoffs.

    ``hands``/``known`` are ``[seat 0, seat 1]`` masks of RLCard card ids
    (``known``: cards a player picked up from the pile and still holds, which the
    other player has seen), ``order`` the hands as RLCard's lists, ``pile`` and
    ``stock`` lists (the stock is drawn from its end).  ``legal`` is the legal
    actions as a 110-bit mask; while the mover holds 11 cards, ``after`` is hgin's
    deadwood-after-discard table (indexed by hgin's card ids, ``int_melds.discard_table``).
    An illegal action raises ``ValueError``.
    """

    def __init__(self, rules: Rules | str = "rlcard") -> None:
        self.rules = r = load_rules(rules)
        if r.big_gin or r.oklahoma or r.straight_gin:
            raise ValueError("RLCard's game has no big gin, Oklahoma or straight gin; "
                             "use the 'rlcard' profile or one with those switches off")
        self.knock_limit = r.knock_limit
        self.forbid_taken = r.forbid_discard_of_taken
        self.phase = PHASE_OVER
        self.legal = 0

    def deal(self, deck: list[int], dealer: int) -> None:
        """RLCard's deal (``game.py`` lines 35-45, ``dealer.py``): from the end of the
        shuffled ``deck``, 11 cards to the non-dealer, then 10 to the dealer."""
        if sorted(deck) != list(range(52)):
            raise ValueError("deck must hold each of the 52 card ids once")
        if dealer not in (0, 1):
            raise ValueError(f"dealer must be 0 or 1, got {dealer!r}")
        self.deck = list(deck)
        stock = list(deck)
        self.dealer = dealer
        order: list[list[int]] = [[], []]
        for i, count in enumerate((11, 10)):
            seat = (dealer + 1 + i) % 2
            for _ in range(count):
                order[seat].append(stock.pop())
        self.order = order
        self.hands = [_mask(order[0]), _mask(order[1])]
        self.known = [0, 0]
        self.stock = stock
        self.stock_mask = _mask(stock)
        self.pile: list[int] = []
        self.pile_mask = 0
        self.current = 1 - dealer
        self.moves = 1  # RLCard's move sheet starts with the deal
        self.taken = -1
        self.going_out = -1  # the action that ended play: DEAD_HAND, GIN or KNOCK
        self.going_out_player = -1
        self.phase = PHASE_DISCARD
        self._discard_legal()

    # ------------------------------------------------------------------ legality
    def _discard_legal(self) -> None:
        # judge.py lines 40-67: gin if possible, else the discards and knocks.
        p = self.current
        _best, after, knocks = discard_table(to_hgin_mask(self.hands[p]), self.knock_limit)
        self.after = after
        if min(after) == 0:
            self.legal = 1 << GIN
            return
        allowed = self.hands[p]
        if self.forbid_taken and self.taken >= 0:
            allowed &= ~(1 << self.taken)
        self.legal = allowed << DISCARD | to_hgin_mask(knocks) << KNOCK

    def _draw_legal(self) -> None:
        # judge.py lines 72-88.
        if self.moves >= MAX_MOVES:
            self.legal = 1 << DEAD_HAND
        elif len(self.stock) > STOCK_DEAD_CARDS:
            self.legal = 1 << DRAW | 1 << PICK_UP
        else:
            self.legal = 1 << DEAD_HAND | 1 << PICK_UP

    def legal_actions(self) -> list[int]:
        legal = self.legal
        out = []
        while legal:
            low = legal & -legal
            out.append(low.bit_length() - 1)
            legal ^= low
        return out

    @property
    def over(self) -> bool:
        return self.phase == PHASE_OVER

    # ------------------------------------------------------------------ steps
    def step(self, action: int) -> None:
        """Apply ``action`` (an RLCard action id) for the player to move."""
        a = action
        if not (0 <= a < NUM_ACTIONS and self.legal >> a & 1):
            raise ValueError(f"action {a} is not legal now; legal: {self.legal_actions()}")
        p = self.current
        self.moves += 1
        if a >= DISCARD:
            card = a - DISCARD if a < KNOCK else a - KNOCK
            self._lay_away(p, card)
            self.taken = -1
            if a < KNOCK:  # round.py lines 105-118
                self.pile.append(card)
                self.pile_mask |= 1 << card
                self.current = 1 - p
                self.phase = PHASE_DRAW
                self._draw_legal()
            else:  # round.py lines 120-134: the knock card leaves the hand, not onto the pile
                self._go_out(p, KNOCK)
        elif a == DRAW:  # round.py lines 72-80
            card = self.stock.pop()
            self.stock_mask &= ~(1 << card)
            self.order[p].append(card)
            self.hands[p] |= 1 << card
            self.phase = PHASE_DISCARD
            self._discard_legal()
        elif a == PICK_UP:  # round.py lines 82-92
            card = self.pile.pop()
            self.pile_mask &= ~(1 << card)
            self.order[p].append(card)
            self.hands[p] |= 1 << card
            self.known[p] |= 1 << card
            self.taken = card
            self.phase = PHASE_DISCARD
            self._discard_legal()
        elif a == GIN:  # round.py lines 136-151
            self._lay_away(p, rlcard_gin_card(self.order[p]))
            self._go_out(p, GIN)
        elif a == DEAD_HAND:  # round.py lines 94-103
            self._go_out(p, DEAD_HAND)
        elif a == SCORE_0:  # round.py lines 153-166
            self.current = 1
            self.phase = PHASE_SCORE_1
            self.legal = 1 << SCORE_1
        else:  # SCORE_1, round.py lines 168-182
            self.phase = PHASE_OVER
            self.legal = 0

    def _lay_away(self, p: int, card: int) -> None:
        self.order[p].remove(card)
        self.hands[p] &= ~(1 << card)
        self.known[p] &= ~(1 << card)

    def _go_out(self, p: int, kind: int) -> None:
        self.going_out = kind
        self.going_out_player = p
        self.current = 0
        self.phase = PHASE_SCORE_0
        self.legal = 1 << SCORE_0

    # ------------------------------------------------------------------ results
    def deadwood(self, seat: int) -> int:
        """The least deadwood of ``seat``'s hand (no layoffs: RLCard has none)."""
        return min_deadwood(to_hgin_mask(self.hands[seat]))

    def payoffs(self, knock_reward: float, gin_reward: float) -> tuple[float, float]:
        """PettingZoo 1.26's ``_get_payoff`` for both seats (0 before the hand is over):
        the knocker ``knock_reward``, the player who went gin ``gin_reward``, every other
        seat (both after a dead hand) minus its deadwood / 100."""
        if self.phase != PHASE_OVER:
            return 0.0, 0.0
        out = []
        for seat in (0, 1):
            if seat == self.going_out_player and self.going_out == KNOCK:
                out.append(knock_reward)
            elif seat == self.going_out_player and self.going_out == GIN:
                out.append(gin_reward)
            else:
                out.append(-self.deadwood(seat) / 100)
        return out[0], out[1]

    def planes(self, seat: int) -> int:
        """RLCard's five observation planes for ``seat`` as one 260-bit int (plane k at
        bit 52 k): hand, top discard, the rest of the pile, the other player's known
        cards, the unknown cards (stock and the other hand's unseen cards); all zero
        once the hand is over (``rlcard/envs/gin_rummy.py`` lines 41-61)."""
        if self.phase == PHASE_OVER:
            return 0
        top = 1 << self.pile[-1] if self.pile else 0
        other = 1 - seat
        known = self.known[other]
        unknown = self.stock_mask | (self.hands[other] & ~known)
        return (self.hands[seat] | top << 52 | (self.pile_mask & ~top) << 104 | known << 156
                | unknown << 208)
