"""A slow, obviously-correct reference for the game engine (docs/rules.md §3-§10).

The test oracle for ``hgin_env.engine.VectorGame``.  Everything here works on
one game at a time with plain Python ints (hand masks, card lists) and follows
docs/rules.md line by line; deadwood and the showdown come from the brute-force
references of ``tests/helpers/reference.py``, the score sheet from
``hgin_env.hollywood.replay`` (tested on its own against docs/rules.md §10/§12).

Public API
----------
* ``knock_limit_ref(rules, upcard) -> int`` — the hand's knock limit (0 =
  only gin may end the hand).
* ``RefGame`` — one game of a match as docs/rules.md describes it: ``deal``,
  ``legal()``, ``step(action) -> HandEnd | None``; ``RefGame.from_engine``
  snapshots engine game ``i``.
* ``legal_actions_ref(game, i) -> frozenset[int]`` — the legal action ids of
  engine game ``i``, computed from its state arrays by the rules.
* ``check_invariants(game, i, results=None)`` — card conservation, pile,
  hand sizes, phases, ``known``, and the sheet (against ``replay(results)``
  when the match's hand results are given).
* ``check_invariants_batch(game)`` — the same structural checks for every
  game at once, vectorised (cheap enough for every step of a soak).
* ``EngineShadow`` — runs a ``RefGame`` beside chosen games of an engine and
  checks every step: state, legal mask, info, rewards and sheet.
* ``ResultTracker`` — for every game of a batch, cheaply: the step output's
  consistency, the transition (next dealer, new deals, idle games unchanged),
  the sheet against ``replay`` and the rewards at every hand end.
* ``optimal_showdowns_ref`` — every (k, d) an optimal knocker may show.

``VectorGame(autoreset=False)`` (a finished match parked in ``MATCH_OVER``
until ``reset_games``) and ``step(actions, active)`` are supported: pass
``active`` to ``step``/``update`` and call ``reset_rows`` after ``reset_games``.
* ``expected_rewards(rules, mode, before, after, winner)`` — the rewards of
  one finished hand from the sheets before and after it.

Failures are ``AssertionError`` naming the game index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import format as fmt
from hgin_env.hollywood import Sheet, replay
from hgin_env.rules import Rules
from tests.helpers.reference import (
    all_arrangements,
    deadwood_after_discard_ref,
    defender_best_ref,
    min_deadwood_ref,
    showdown_ref,
    union,
    value,
)

# Action ids, written out from docs/api.md (not imported from the engine).
KNOCK = 52
DRAW_STOCK = 104
TAKE = 105
PASS = 106
BIG_GIN = 107
NUM_ACTIONS = 108

# Phases are the engine's own encoding of "whose turn, and what may they do".
OFFER_NONDEALER = A.PHASE_OFFER_NONDEALER
OFFER_DEALER = A.PHASE_OFFER_DEALER
DRAW_ONLY_STOCK = A.PHASE_DRAW_STOCK
DRAW = A.PHASE_DRAW
DISCARD = A.PHASE_DISCARD
#: Only with ``VectorGame(autoreset=False)``: the match is over, nothing is legal.
MATCH_OVER = getattr(A, "PHASE_MATCH_OVER", 5)

FULL = (1 << 52) - 1


def bits(mask: int) -> list[int]:
    return [c for c in range(52) if mask >> c & 1]


def knock_limit_ref(rules: Rules, upcard: int) -> int:
    """docs/rules.md §6: 10, or the first upcard's value (A = gin only) under
    Oklahoma, or gin only under straight gin."""
    if rules.straight_gin:
        return 0
    if rules.oklahoma:
        rank = upcard % 13
        if rank == 0:
            return 0
        return min(rank + 1, 10)
    return rules.knock_limit


@dataclass(frozen=True)
class HandEnd:
    """How a hand ended, as the engine's ``info`` should describe it."""

    dead: bool
    winner: int | None  # seat, None for a dead hand
    award: int
    gin: bool = False
    big_gin: bool = False
    undercut: bool = False
    knocker: int = -1
    knocker_deadwood: int = -1
    defender_deadwood: int = -1
    next_dealer: int = -1


class RefGame:
    """One hand of Hollywood gin between seats 0 and 1, by docs/rules.md."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.hands = [0, 0]
        self.known = [0, 0]
        self.stock: list[int] = []  # next card first
        self.pile: list[int] = []  # top last
        self.phase = OFFER_NONDEALER
        self.mover = 0
        self.dealer = 0
        self.taken = -1
        self.takes = 0
        self.upcard = -1
        self.limit = 10
        self._legal: frozenset[int] | None = None
        self._dd: dict[int, int] | None = None

    # ---------------------------------------------------------------- deal
    @classmethod
    def dealt(cls, rules: Rules, deck, dealer: int) -> RefGame:
        game = cls(rules)
        game.deal(deck, dealer)
        return game

    def deal(self, deck, dealer: int) -> None:
        """docs/rules.md §3 with the docs/api.md deck layout: cards dealt
        alternately from index 0, non-dealer first; 20 the upcard; 21.. the stock."""
        deck = [int(c) for c in deck]
        assert sorted(deck) == list(range(52)), f"not a deck: {deck}"
        dealer = int(dealer)
        nondealer = 1 - dealer
        self.hands = [0, 0]
        for k in range(20):
            seat = nondealer if k % 2 == 0 else dealer
            self.hands[seat] |= 1 << deck[k]
        self.known = [0, 0]
        self.upcard = deck[20]
        self.pile = [deck[20]]
        self.stock = deck[21:]
        self.dealer = dealer
        self.mover = nondealer
        self.phase = OFFER_NONDEALER
        self.taken = -1
        self.takes = 0
        self.limit = knock_limit_ref(self.rules, self.upcard)
        self._legal = self._dd = None

    @classmethod
    def from_engine(cls, game, i: int) -> RefGame:
        """A snapshot of engine game ``i`` (its state arrays read as plain values)."""
        ref = cls(game.rules)
        ref.hands = [int(game.hands[i, 0]), int(game.hands[i, 1])]
        ref.known = [int(game.known[i, 0]), int(game.known[i, 1])]
        pos = int(game.stock_pos[i])
        ref.stock = [int(c) for c in game.deck[i, pos:]]
        ref.pile = [int(c) for c in game.pile[i, : int(game.pile_size[i])]]
        ref.phase = int(game.phase[i])
        ref.mover = int(game.current_player[i])
        ref.dealer = int(game.dealer[i])
        ref.taken = int(game.taken_card[i])
        ref.takes = int(game.takes[i])
        ref.upcard = int(game.deck[i, 20])
        ref.limit = knock_limit_ref(game.rules, ref.upcard)
        return ref

    # ---------------------------------------------------------------- rules
    def discard_deadwoods(self) -> dict[int, int]:
        """In the discard phase: the mover's deadwood after discarding each held card."""
        assert self.phase == DISCARD
        if self._dd is None:
            self._dd = deadwood_after_discard_ref(self.hands[self.mover])
        return self._dd

    def legal(self) -> frozenset[int]:
        """The legal action ids (docs/rules.md Appendix A numbering) for the player to move."""
        if self._legal is None:
            self._legal = self._compute_legal()
        return self._legal

    def _compute_legal(self) -> frozenset[int]:
        phase = self.phase
        # §5 take limit: the pile closes after max_discard_takes takes in a hand.
        pile_open = self.takes < self.rules.max_discard_takes
        if phase in (OFFER_NONDEALER, OFFER_DEALER):  # §4.1-2
            return frozenset({TAKE, PASS} if pile_open else {PASS})
        if phase == DRAW_ONLY_STOCK:  # §4.4: both passed
            return frozenset({DRAW_STOCK})
        if phase == DRAW:  # §5
            out = {DRAW_STOCK}
            if self.pile and pile_open:
                out.add(TAKE)
            return frozenset(out)
        assert phase == DISCARD, f"unknown phase {phase}"
        hand = self.hands[self.mover]
        out: set[int] = set()
        for card, dead in self.discard_deadwoods().items():
            if self.rules.forbid_discard_of_taken and card == self.taken:
                continue  # §5: not the card just taken (face up or face down)
            out.add(card)
            if dead <= self.limit:  # §6
                out.add(KNOCK + card)
        if self.rules.big_gin and min_deadwood_ref(hand) == 0:
            out.add(BIG_GIN)
        return frozenset(out)

    def step(self, action: int) -> HandEnd | None:
        """Apply one legal action; return how the hand ended, if it did."""
        action = int(action)
        legal = self.legal()
        assert action in legal, f"reference: action {action} not legal ({sorted(legal)})"
        self._legal = self._dd = None
        p = self.mover
        phase = self.phase
        if action == PASS:
            if phase == OFFER_NONDEALER:
                self.phase, self.mover = OFFER_DEALER, self.dealer
            else:
                self.phase, self.mover = DRAW_ONLY_STOCK, 1 - self.dealer
            return None
        if action == TAKE:
            card = self.pile.pop()
            self.hands[p] |= 1 << card
            self.known[p] |= 1 << card
            self.taken = card
            self.takes += 1
            self.phase = DISCARD
            return None
        if action == DRAW_STOCK:
            card = self.stock.pop(0)
            self.hands[p] |= 1 << card
            self.taken = -1
            self.phase = DISCARD
            return None
        if action < KNOCK:  # plain discard
            self._remove(p, action)
            self.pile.append(action)
            self.taken = -1
            self.mover, self.phase = 1 - p, DRAW
            if len(self.stock) == 2:  # §5 end of stock
                same = self.rules.dead_hand_dealer == "same"
                return HandEnd(dead=True, winner=None, award=0,
                               next_dealer=self.dealer if same else 1 - self.dealer)
            return None
        if action < DRAW_STOCK:  # knock
            card = action - KNOCK
            self._remove(p, card)
            self.pile.append(card)
            self.taken = -1
            r = self.rules
            sd = showdown_ref(self.hands[p], self.hands[1 - p], self.limit,
                              r.gin_bonus, r.undercut_bonus)
            winner = p if sd["winner"] == 0 else 1 - p
            return HandEnd(
                dead=False, winner=winner, award=sd["award"], gin=sd["gin"],
                undercut=(not sd["gin"]) and sd["winner"] == 1, knocker=p,
                knocker_deadwood=sd["knocker_deadwood"],
                defender_deadwood=sd["defender_deadwood"],
                next_dealer=self._next_dealer(winner),
            )
        assert action == BIG_GIN
        d = min_deadwood_ref(self.hands[1 - p])  # §8: no layoff
        return HandEnd(
            dead=False, winner=p, award=self.rules.big_gin_bonus + d, gin=True, big_gin=True,
            knocker=p, knocker_deadwood=0, defender_deadwood=d, next_dealer=self._next_dealer(p),
        )

    def _remove(self, p: int, card: int) -> None:
        assert self.hands[p] >> card & 1
        self.hands[p] &= ~(1 << card)
        self.known[p] &= ~(1 << card)

    def _next_dealer(self, winner: int) -> int:  # §9
        return winner if self.rules.next_dealer == "winner" else 1 - self.dealer

    # ---------------------------------------------------------------- compare
    def assert_matches(self, game, i: int, where: str = "") -> None:
        """Engine game ``i`` holds exactly this state (and this legal mask)."""
        ctx = f"game {i}{where}"
        got = RefGame.from_engine(game, i)
        for seat in (0, 1):
            assert got.hands[seat] == self.hands[seat], (
                f"{ctx}: hand of seat {seat} is {fmt(got.hands[seat])!r}, "
                f"expected {fmt(self.hands[seat])!r}")
            assert got.known[seat] == self.known[seat], (
                f"{ctx}: known of seat {seat} is {fmt(got.known[seat])!r}, "
                f"expected {fmt(self.known[seat])!r}")
        assert got.stock == self.stock, f"{ctx}: stock {got.stock} != {self.stock}"
        assert got.pile == self.pile, f"{ctx}: pile {got.pile} != {self.pile}"
        for name in ("phase", "mover", "dealer", "taken", "upcard"):
            assert getattr(got, name) == getattr(self, name), (
                f"{ctx}: {name} is {getattr(got, name)}, expected {getattr(self, name)}")
        assert int(game.knock_limit[i]) == self.limit, (
            f"{ctx}: knock_limit {int(game.knock_limit[i])}, expected {self.limit}")
        assert_mask_matches(game, i, self)


def legal_actions_ref(game, i: int) -> frozenset[int]:
    """Legal actions of engine game ``i`` by the rules, from its state arrays."""
    return RefGame.from_engine(game, i).legal()


def assert_mask_matches(game, i: int, ref: RefGame | None = None) -> None:
    """The engine's mask row ``i`` (and ``discard_deadwood``) equal the reference."""
    if ref is None:
        ref = RefGame.from_engine(game, i)
    want = ref.legal()
    row = np.asarray(game.legal_action_mask()[i])
    got = frozenset(np.flatnonzero(row).tolist())
    assert set(np.unique(row).tolist()) <= {0, 1}, f"game {i}: mask values {np.unique(row)}"
    if got != want:
        from hgin_env.actions import PHASE_NAMES

        extra = sorted(got - want)
        missing = sorted(want - got)
        raise AssertionError(
            f"game {i}: engine mask differs from the reference in phase "
            f"{PHASE_NAMES[ref.phase]!r} (mover {ref.mover}, hand "
            f"{fmt(ref.hands[ref.mover])!r}, taken {ref.taken}, limit {ref.limit}): "
            f"engine-only {extra}, reference-only {missing}")
    if ref.phase == DISCARD:
        for card, dead in ref.discard_deadwoods().items():
            assert int(game.discard_deadwood[i, card]) == dead, (
                f"game {i}: discard_deadwood[{card}] = {int(game.discard_deadwood[i, card])}, "
                f"reference {dead}")


# -------------------------------------------------------------------- invariants


def check_sheet_consistent(sheet: Sheet, target: int, where: str = "") -> None:
    """Scores, decided flags, column winners and win counts agree (docs/rules.md §10)."""
    scores = np.asarray(sheet.scores)
    c = scores.shape[1]
    assert (scores >= 0).all(), f"{where}: negative scores {scores.tolist()}"
    for col in range(c):
        top = int(scores[:, col].max())
        decided = bool(sheet.decided[col])
        assert decided == (top >= target), (
            f"{where}: column {col} decided={decided} with scores {scores[:, col].tolist()}")
        winner = int(sheet.column_winner[col])
        if decided:
            assert winner in (0, 1) and scores[winner, col] >= target, (
                f"{where}: column {col} winner {winner}, scores {scores[:, col].tolist()}")
            assert scores[1 - winner, col] < target, (
                f"{where}: both players reached the target in column {col}")
        else:
            assert winner == -1, f"{where}: open column {col} has winner {winner}"
        for p in (0, 1):
            # a player's k-th win is the first that may post in column k-1
            if int(sheet.wins[p]) <= col:
                assert scores[p, col] == 0, (
                    f"{where}: player {p} has {int(sheet.wins[p])} win(s) but scores "
                    f"{int(scores[p, col])} in column {col}")
    assert not bool(np.all(sheet.decided)), f"{where}: a finished match was not reset"
    assert sheet.match_winner == -1, f"{where}: match_winner {sheet.match_winner} while live"


def check_invariants(game, i: int, results=None, sheet: Sheet | None = None) -> None:
    """Every structural invariant of engine game ``i``; with ``results`` (the
    ``(winner, award)`` hand results of the current match so far, ``None``
    winner for a dead hand) also that its sheet equals ``replay(results)``;
    ``sheet``, that replay done already, makes the sheet check cheap."""
    ctx = f"game {i}"
    deck = [int(c) for c in game.deck[i]]
    assert sorted(deck) == list(range(52)), f"{ctx}: deck is not a permutation"
    pos = int(game.stock_pos[i])
    assert 21 <= pos <= 50, f"{ctx}: stock_pos {pos}"
    assert int(game.stock_size[i]) == 52 - pos, f"{ctx}: stock_size {int(game.stock_size[i])}"
    stock = deck[pos:]
    size = int(game.pile_size[i])
    assert 0 <= size <= 52, f"{ctx}: pile_size {size}"
    pile = [int(c) for c in game.pile[i, :size]]
    h0, h1 = int(game.hands[i, 0]), int(game.hands[i, 1])
    assert h0 & ~FULL == 0 and h1 & ~FULL == 0, f"{ctx}: stray bits above 51"
    everything = bits(h0) + bits(h1) + stock + pile
    assert sorted(everything) == list(range(52)), (
        f"{ctx}: cards not conserved: {len(everything)} cards, "
        f"missing {sorted(set(range(52)) - set(everything))}, "
        f"duplicated {sorted({c for c in everything if everything.count(c) > 1})}")
    pile_mask = 0
    for c in pile:
        pile_mask |= 1 << c
    assert int(game.pile_mask[i]) == pile_mask, f"{ctx}: pile_mask does not match the pile"

    phase = int(game.phase[i])
    mover = int(game.current_player[i])
    dealer = int(game.dealer[i])
    assert dealer in (0, 1) and mover in (0, 1), f"{ctx}: dealer {dealer}, mover {mover}"
    if phase == MATCH_OVER:
        assert not getattr(game, "autoreset", True), f"{ctx}: match-over phase with autoreset"
        assert not game.legal_action_mask()[i].any(), f"{ctx}: legal action after the match"
        sheet = game.sheet(i)
        assert sheet.match_over and sheet.match_winner in (0, 1), f"{ctx}: {sheet.to_dict()}"
        if results is not None:
            want = replay(game.rules, list(results))
            assert sheet.to_dict() == want.to_dict(), f"{ctx}: final sheet != replay"
        return
    sizes = [h0.bit_count(), h1.bit_count()]
    want_sizes = [10, 10]
    if phase == DISCARD:
        want_sizes[mover] = 11
    assert sizes == want_sizes, f"{ctx}: hand sizes {sizes} in phase {phase}, mover {mover}"
    if phase in (OFFER_NONDEALER, OFFER_DEALER, DRAW_ONLY_STOCK):
        assert pos == 21 and pile == [deck[20]], f"{ctx}: offer phase after play began"
        want_mover = dealer if phase == OFFER_DEALER else 1 - dealer
        assert mover == want_mover, f"{ctx}: phase {phase} but mover {mover}, dealer {dealer}"
    elif phase == DRAW:
        assert size >= 1, f"{ctx}: draw phase with an empty pile"
        assert 52 - pos >= 3, f"{ctx}: draw phase with {52 - pos} stock cards (hand is dead)"
    else:
        assert phase == DISCARD, f"{ctx}: phase {phase}"
    taken = int(game.taken_card[i])
    if phase == DISCARD and taken >= 0:
        mine = h0 if mover == 0 else h1
        assert mine >> taken & 1, f"{ctx}: taken card {taken} not in the mover's hand"
        assert int(game.known[i, mover]) >> taken & 1, f"{ctx}: taken card not known"
    elif phase != DISCARD:
        assert taken == -1, f"{ctx}: taken_card {taken} outside the discard phase"
    for seat, hand in ((0, h0), (1, h1)):
        known = int(game.known[i, seat])
        assert known & ~hand == 0, (
            f"{ctx}: known cards {fmt(known & ~hand)!r} of seat {seat} not in its hand")
    upcard = deck[20]
    assert int(game.knock_limit[i]) == knock_limit_ref(game.rules, upcard), (
        f"{ctx}: knock_limit {int(game.knock_limit[i])} for upcard {upcard}")

    if results is not None or sheet is None:
        got = game.sheet(i)
        check_sheet_consistent(got, game.rules.target, ctx)
        if results is not None:
            want = replay(game.rules, list(results))
            assert got.to_dict() == want.to_dict(), (
                f"{ctx}: sheet {got.to_dict()} != replay of {list(results)}: {want.to_dict()}")
    else:
        assert_sheet_row(game, i, sheet)


SHEET_FIELDS = ("scores", "decided", "column_winner", "wins", "boxes")


def assert_sheet_row(game, i: int, want: Sheet) -> None:
    """The raw sheet arrays of engine game ``i`` equal ``want`` (a replayed Sheet)."""
    for name in SHEET_FIELDS:
        got = getattr(game.sheets, name)[i]
        assert np.array_equal(got, getattr(want, name)), (
            f"game {i}: sheet {name} {got.tolist()} != replay {getattr(want, name).tolist()}")
    assert int(game.sheets.match_winner[i]) == want.match_winner == -1, f"game {i}: match_winner"


def _unpack(masks: np.ndarray) -> np.ndarray:
    masks = np.ascontiguousarray(masks, dtype=np.uint64)
    shifts = np.arange(52, dtype=np.uint64)
    return ((masks[..., None] >> shifts) & np.uint64(1)).astype(np.int64)


def _first_bad(ok: np.ndarray) -> int:
    ok = np.asarray(ok)
    if ok.ndim > 1:
        ok = ok.reshape(ok.shape[0], -1).all(axis=1)
    return int(np.flatnonzero(~ok)[0])


def _require(ok: np.ndarray, what: str) -> None:
    if not np.all(ok):
        raise AssertionError(f"game {_first_bad(ok)}: {what}")


def check_invariants_batch(game) -> None:
    """The structural invariants of :func:`check_invariants` for all games at once
    (no replay; see :class:`ResultTracker` for that)."""
    b = game.num_games
    rows = np.arange(b)
    deck = game.deck.astype(np.int64)
    _require((np.sort(deck, axis=1) == np.arange(52)).all(axis=1), "deck is not a permutation")
    pos = game.stock_pos.astype(np.int64)
    _require((pos >= 21) & (pos <= 50), "stock_pos out of 21..50")
    _require(game.stock_size == 52 - pos, "stock_size != 52 - stock_pos")
    size = game.pile_size.astype(np.int64)
    _require((size >= 0) & (size <= 52), "pile_size out of range")
    hands = _unpack(game.hands)  # (B, 2, 52)
    _require((game.hands >> np.uint64(52)) == 0, "hand bits above 51")
    in_stock = np.arange(52)[None, :] >= pos[:, None]
    in_pile = np.arange(52)[None, :] < size[:, None]
    slots = rows[:, None] * 52
    stock_bits = np.bincount((slots + deck)[in_stock], minlength=b * 52).reshape(b, 52)
    pile_cards = slots + game.pile.astype(np.int64)
    pile_bits = np.bincount(pile_cards[in_pile], minlength=b * 52).reshape(b, 52)
    count = hands.sum(axis=1) + stock_bits + pile_bits
    _require(count == 1, "the 52 cards are not each in exactly one place")
    _require(_unpack(game.pile_mask) == (pile_bits > 0), "pile_mask does not match the pile")

    phase = game.phase.astype(np.int64)
    mover = game.current_player.astype(np.int64)
    dealer = game.dealer.astype(np.int64)
    _require(np.isin(mover, (0, 1)) & np.isin(dealer, (0, 1)), "mover/dealer not 0 or 1")
    ended = phase == MATCH_OVER
    _require(~ended | (not getattr(game, "autoreset", True)),
             "match-over phase with autoreset on")
    sizes = hands.sum(axis=2)
    want = np.full((b, 2), 10)
    want[rows, mover] += phase == DISCARD
    # a match ended by big gin leaves the winner's 11 cards shown
    want[rows, mover] += ended & (sizes.sum(axis=1) == 21)
    _require(sizes == want, "hand sizes are not 10/10 (11 for the mover in the discard phase)")
    offer = phase <= DRAW_ONLY_STOCK
    first_pile = game.pile[:, 0].astype(np.int64) == deck[:, 20]
    _require(~offer | ((pos == 21) & (size == 1) & first_pile), "offer phase after play began")
    want_mover = np.where(phase == OFFER_DEALER, dealer, 1 - dealer)
    _require(~offer | (mover == want_mover), "wrong mover for the offer phase")
    _require((phase != DRAW) | ((size >= 1) & (pos <= 49)), "draw phase with empty pile/stock")
    _require(np.isin(phase, (OFFER_NONDEALER, OFFER_DEALER, DRAW_ONLY_STOCK, DRAW, DISCARD,
                             MATCH_OVER)), "unknown phase")
    _require(~ended | (game.legal_action_mask() == 0).all(axis=1), "a legal action after the match")
    taken = game.taken_card.astype(np.int64)
    _require((phase == DISCARD) | ended | (taken == -1), "taken_card set outside the discard phase")
    has = taken >= 0
    mine = game.hands[rows, mover]
    tbit = np.where(has, np.uint64(1) << np.maximum(taken, 0).astype(np.uint64), np.uint64(0))
    _require(~has | ((mine & tbit) != 0), "taken card not in the mover's hand")
    _require(~has | ((game.known[rows, mover] & tbit) != 0), "taken card not known")
    _require((game.known & ~game.hands) == 0, "known cards not in their seat's hand")
    upcard = deck[:, 20]
    want_limit = np.array([knock_limit_ref(game.rules, int(u)) for u in range(52)])[upcard]
    _require(game.knock_limit == want_limit, "knock_limit does not match the upcard")

    s = game.sheets
    target = game.rules.target
    scores = s.scores.astype(np.int64)
    _require(scores >= 0, "negative score")
    top = scores.max(axis=1)
    _require(s.decided == (top >= target), "decided flags disagree with the scores")
    winner = s.column_winner.astype(np.int64)
    argmax = scores.argmax(axis=1)
    _require(np.where(s.decided, winner == argmax, winner == -1), "column_winner wrong")
    _require(~s.decided | (scores.min(axis=1) < target), "both players reached the target")
    opened = s.wins[:, :, None] > np.arange(s.columns)[None, None, :]
    _require(opened | (scores == 0), "score in a column the player's wins have not opened")
    _require(opened | (s.boxes == 0), "hands posted in a column not yet opened")
    _require(s.boxes <= s.wins[:, :, None], "more hands posted in a column than hands won")
    _require(ended == s.decided.all(axis=1), "a finished match was not reset (or not over)")
    _require(ended == (s.match_winner >= 0), "match_winner does not match the phase")


# -------------------------------------------------------------------- rewards


def expected_rewards(rules: Rules, mode: str, before: Sheet, after: Sheet,
                     winner: int | None, match_over: bool, match_winner: int) -> np.ndarray:
    """(2,) rewards of one finished hand, from the sheets before and after it.

    * ``match``: +1 / -1 to the match winner / loser when the match ends.
    * ``columns``: +1/C / -1/C for each column this hand decided.
    * ``points``: the points this hand posted to the sheet (summed over the
      columns it was posted in) over ``target * C``, + to the winner, - to
      the loser (the engine's normalisation; see the report).
    """
    out = np.zeros(2)
    c = rules.columns
    if winner is None:
        return out
    if mode == "match":
        if match_over:
            out[match_winner] += 1.0
            out[1 - match_winner] -= 1.0
    elif mode == "columns":
        newly = np.asarray(after.decided) & ~np.asarray(before.decided)
        for col in np.flatnonzero(newly):
            w = int(after.column_winner[col])
            out[w] += 1.0 / c
            out[1 - w] -= 1.0 / c
    else:
        gained = float((np.asarray(after.scores) - np.asarray(before.scores))[winner].sum())
        out[winner] += gained / (rules.target * c)
        out[1 - winner] -= gained / (rules.target * c)
    return out


INFO_KEYS = ("hand_over", "dead_hand", "hand_winner", "award", "gin", "undercut",
             "knocker_deadwood", "defender_deadwood", "match_over", "match_winner",
             "final_scores")


class ResultTracker:
    """Hand results of every game's current match, from the step ``info``.

    ``update`` checks, for every game whose hand ended, that the sheet equals
    ``replay`` of the results, that the rewards match, and the match-end info;
    for the other games, that their sheets did not move.
    """

    def __init__(self, game) -> None:
        self.game = game
        rules = game.rules
        self.results: list[list[tuple[int | None, int]]] = [[] for _ in range(game.num_games)]
        self.sheets = [replay(rules, []) for _ in range(game.num_games)]
        self.prev = {name: getattr(game.sheets, name).copy() for name in SHEET_FIELDS}
        self.hands = 0
        self.dead = 0
        self.matches = 0
        self.kinds: dict[str, int] = {"gin": 0, "undercut": 0, "knock": 0, "big_gin": 0}

    def reset_rows(self, rows) -> None:
        """After ``game.reset_games(rows)``: those games start a fresh match."""
        for i in np.asarray(rows).reshape(-1).tolist():
            self.results[i] = []
            self.sheets[i] = replay(self.game.rules, [])
            assert_sheet_row(self.game, i, self.sheets[i])
        for name in SHEET_FIELDS:
            self.prev[name] = getattr(self.game.sheets, name).copy()

    def before_step(self) -> None:
        """Snapshot what the transition checks of :meth:`update` compare against."""
        # The whole state (every field of hgin_env.state.FIELDS), copied.
        self.snap = self.game.state.to_dict()
        self.snap["mover"] = self.snap["current_player"]

    def update(self, rewards: np.ndarray, info: dict[str, np.ndarray], active=None) -> None:
        """Check one step's output (``active``: the games that were stepped)."""
        game = self.game
        rules = game.rules
        check_info_batch(rules, rewards, info)
        if getattr(self, "snap", None) is not None:
            _transition_checks(rules, game, self.snap, info, active)
            self.snap = None
        still = ~info["hand_over"]
        for name in SHEET_FIELDS:
            now = getattr(game.sheets, name)
            _require((now == self.prev[name]).reshape(now.shape[0], -1).all(axis=1) | ~still,
                     f"sheet {name} changed without a finished hand")
            self.prev[name] = now.copy()
        for i in np.flatnonzero(info["hand_over"]).tolist():
            self.hands += 1
            ctx = f"game {i}"
            before = self.sheets[i]
            if info["dead_hand"][i]:
                self.dead += 1
                result: tuple[int | None, int] = (None, 0)
            else:
                result = (int(info["hand_winner"][i]), int(info["award"][i]))
                kind = ("big_gin" if info["big_gin"][i] else "gin" if info["gin"][i]
                        else "undercut" if info["undercut"][i] else "knock")
                self.kinds[kind] += 1
            self.results[i].append(result)
            after = replay(rules, self.results[i]) if result[0] is not None else before
            over = after.match_over
            assert bool(info["match_over"][i]) == over, (
                f"{ctx}: match_over {bool(info['match_over'][i])}, replay says {over} "
                f"after {self.results[i]}")
            want = expected_rewards(rules, game.reward_mode, before, after, result[0], over,
                                    after.match_winner)
            assert np.allclose(rewards[i], want, atol=1e-6), (
                f"{ctx}: rewards {rewards[i].tolist()}, expected {want.tolist()} "
                f"({game.reward_mode}) for result {result}")
            if over:
                self.matches += 1
                assert int(info["match_winner"][i]) == after.match_winner, (
                    f"{ctx}: match_winner {int(info['match_winner'][i])}, "
                    f"expected {after.match_winner}")
                assert np.array_equal(info["final_scores"][i], after.scores), (
                    f"{ctx}: final_scores {info['final_scores'][i].tolist()}, "
                    f"expected {after.scores.tolist()}")
                last = getattr(game, "last_match", None)
                if last is not None:  # the finished sheet is kept for display
                    for name in (*SHEET_FIELDS, "match_winner"):
                        got_last = getattr(last, name)[i]
                        want_last = getattr(after, name)
                        assert np.array_equal(got_last, want_last), (
                            f"{ctx}: last_match.{name} {np.asarray(got_last).tolist()} != "
                            f"{np.asarray(want_last).tolist()}")
                if getattr(game, "autoreset", True):
                    self.results[i] = []
                    after = replay(rules, [])
                else:
                    self.sheets[i] = after
                    got = game.sheet(i)
                    assert got.to_dict() == after.to_dict(), (
                        f"{ctx}: kept final sheet {got.to_dict()} != {after.to_dict()}")
                    continue
            self.sheets[i] = after
            assert_sheet_row(game, i, after)


def _transition_checks(rules: Rules, game, snap: dict, info: dict[str, np.ndarray],
                       active=None) -> None:
    over = info["hand_over"]
    same = ~over
    if active is not None:
        idle = ~np.asarray(active, bool)
        _require(~idle | ~over, "an inactive game finished a hand")
        for key in ("hands", "known", "stock_pos", "pile_size", "phase", "mover", "dealer"):
            now = game.current_player if key == "mover" else getattr(game, key)
            ok = (now == snap[key]).reshape(now.shape[0], -1).all(axis=1)
            _require(~idle | ok, f"an inactive game's {key} changed")
    # without autoreset a finished match stays put (no new deal)
    parked = info["match_over"] & (not getattr(game, "autoreset", True))
    _require(~parked | (game.phase == MATCH_OVER), "finished match not parked")
    over = over & ~parked
    _require(~same | (game.dealer == snap["dealer"]), "dealer changed mid-hand")
    _require(~same | (game.deck == snap["deck"]).all(axis=1), "deck changed mid-hand")
    _require(~same | (game.deal_number == snap["deal_number"]), "deal_number changed mid-hand")
    drew = game.stock_pos.astype(np.int64) - snap["stock_pos"]
    _require(~same | (drew == 0) | (drew == 1), "stock moved by more than one card")
    _require(~over | (game.deal_number == snap["deal_number"] + 1), "no new deal after a hand")
    _require(~over | (game.phase == OFFER_NONDEALER), "a new deal not in the offer phase")
    # who deals next (docs/rules.md §9); after a match end the dealer is drawn anew
    dead = info["dead_hand"]
    win = info["hand_winner"].astype(np.int64)
    prev = snap["dealer"].astype(np.int64)
    after_dead = prev if rules.dead_hand_dealer == "same" else 1 - prev
    after_win = win if rules.next_dealer == "winner" else 1 - prev
    want = np.where(dead, after_dead, after_win)
    check = over & ~info["match_over"]
    _require(~check | (game.dealer == want), "wrong next dealer")
    # a knock is within the hand's limit; gin means knocker deadwood 0
    knocked = over & ~dead & ~info["big_gin"]
    kd = info["knocker_deadwood"].astype(np.int64)
    _require(~knocked | (kd <= snap["knock_limit"]), "knocker deadwood above the knock limit")
    _require(~knocked | (info["gin"] == (kd == 0)), "gin flag != (knocker deadwood == 0)")
    _require(~knocked | (info["knocker"] == snap["mover"]), "knocker is not the player who moved")
    _require(~over | dead | (snap["phase"] == DISCARD), "hand ended outside a discard phase")
    _require(~dead | (snap["stock_pos"] == 50), "dead hand without 2 stock cards left")


def check_info_batch(rules: Rules, rewards: np.ndarray, info: dict[str, np.ndarray]) -> None:
    """Shapes, dtypes and the internal consistency of one step's output."""
    b = rewards.shape[0]
    assert rewards.shape == (b, 2) and rewards.dtype == np.float32, (rewards.shape, rewards.dtype)
    for key in INFO_KEYS:
        assert key in info, f"info lacks {key!r}"
        want_shape = (b, 2, rules.columns) if key == "final_scores" else (b,)
        assert info[key].shape == want_shape, f"info[{key!r}] shape {info[key].shape}"
    over = info["hand_over"]
    dead = info["dead_hand"]
    win = info["hand_winner"].astype(np.int64)
    _require(np.abs(rewards.sum(axis=1)) < 1e-5, "rewards are not zero-sum")
    _require(over | (rewards == 0).all(axis=1), "reward without a finished hand")
    _require(over == (dead | (win >= 0)), "hand_over != dead_hand or a winner")
    _require(~(dead & (win >= 0)), "a dead hand with a winner")
    _require((win >= 0) | (info["award"] == 0), "an award without a winner")
    _require(~info["match_over"] | (win >= 0), "match over without a hand winner")
    _require(info["match_over"] == (info["match_winner"] >= 0), "match_winner vs match_over")
    _require(info["match_over"][:, None, None] | (info["final_scores"] == 0),
             "final_scores outside a match end")
    gin = info["gin"]
    under = info["undercut"]
    _require(~(gin & under), "gin and undercut at once")
    _require(~gin | (win == info["knocker"]), "gin not won by the knocker")
    _require(~under | ((win >= 0) & (win != info["knocker"])), "undercut won by the knocker")
    knock = (win >= 0) & ~gin & ~under
    _require(~knock | (win == info["knocker"]), "plain knock not won by the knocker")
    kd = info["knocker_deadwood"].astype(np.int64)
    dd = info["defender_deadwood"].astype(np.int64)
    _require(~knock | ((kd < dd) & (info["award"] == dd - kd)), "knock award != d - k")
    _require(~under | ((kd >= dd) & (info["award"] == rules.undercut_bonus + kd - dd)),
             "undercut award != bonus + k - d")
    plain_gin = gin & ~info["big_gin"]
    _require(~plain_gin | ((kd == 0) & (info["award"] == rules.gin_bonus + dd)),
             "gin award != gin_bonus + d")
    big = info["big_gin"]
    _require(~big | ((kd == 0) & (info["award"] == rules.big_gin_bonus + dd)),
             "big gin award != big_gin_bonus + d")
    if not rules.big_gin:
        _require(~big, "big gin with the switch off")


# -------------------------------------------------------------------- shadow


def optimal_showdowns_ref(knocker: int, defender: int, limit: int) -> set[tuple[int, int]]:
    """Every (knocker deadwood, defender deadwood) the knocker may end with by
    docs/rules.md §7: arrangements within the limit maximising d - k (gin: no layoff)."""
    arrs = [a for a in all_arrangements(knocker) if value(knocker & ~union(a)) <= limit]
    if any(union(a) == knocker for a in arrs):
        arr = next(a for a in arrs if union(a) == knocker)
        return {(0, defender_best_ref(arr, defender, allow_layoff=False)[0])}
    pairs = {(value(knocker & ~union(a)), defender_best_ref(a, defender)[0]) for a in arrs}
    best = max(d - k for k, d in pairs)
    return {(k, d) for k, d in pairs if d - k == best}


class EngineShadow:
    """A :class:`RefGame` beside each of ``rows`` of an engine, checked every step.

    Call :meth:`step` with the actions just applied and the engine's output;
    it advances the references by the rules, compares the finished hand's
    info, the rewards, the next dealer, the new deal and the whole state.
    """

    def __init__(self, game, rows) -> None:
        self.game = game
        self.rows = [int(i) for i in rows]
        self.refs = {i: RefGame.from_engine(game, i) for i in self.rows}
        self.results: dict[int, list] = {i: [] for i in self.rows}
        self.sheets = {i: replay(game.rules, []) for i in self.rows}
        for i in self.rows:
            self.refs[i].assert_matches(game, i, " at the start")
            check_invariants(game, i, self.results[i])
        self.parked: set[int] = set()

    def step(self, actions, rewards, info, active=None) -> None:
        for i in self.rows:
            if active is not None and not active[i]:
                assert not info["hand_over"][i] and not rewards[i].any(), f"game {i} idle"
                if i not in self.parked:
                    self.refs[i].assert_matches(self.game, i, " while inactive")
                continue
            assert i not in self.parked, f"game {i}: stepped after its match ended"
            self._step_one(i, int(actions[i]), rewards, info)

    def reset_rows(self, rows) -> None:
        """After ``game.reset_games(rows)``: fresh matches, freshly dealt."""
        game = self.game
        for i in np.asarray(rows).reshape(-1).tolist():
            if i not in self.refs:
                continue
            self.parked.discard(i)
            self.results[i] = []
            self.sheets[i] = replay(game.rules, [])
            self.refs[i] = RefGame.dealt(game.rules, game.deck[i], int(game.dealer[i]))
            self.refs[i].assert_matches(game, i, " after reset_games")
            check_invariants(game, i, self.results[i])

    def _step_one(self, i: int, action: int, rewards, info) -> None:
        game = self.game
        rules = game.rules
        ref = self.refs[i]
        ctx = f"game {i}"
        if ref.phase == DISCARD and KNOCK <= action < DRAW_STOCK:
            knocker = ref.hands[ref.mover] & ~(1 << (action - KNOCK))
            defender = ref.hands[1 - ref.mover]
            limit = ref.limit
        end = ref.step(action)
        if end is None:
            assert not info["hand_over"][i], f"{ctx}: engine ended a hand the rules did not"
            assert not rewards[i].any(), f"{ctx}: reward {rewards[i]} mid-hand"
            ref.assert_matches(game, i, f" after action {action}")
            check_invariants(game, i, sheet=self.sheets[i])
            return
        assert info["hand_over"][i], f"{ctx}: the hand should have ended ({end})"
        got = {
            "dead_hand": bool(info["dead_hand"][i]),
            "hand_winner": int(info["hand_winner"][i]),
            "award": int(info["award"][i]),
            "gin": bool(info["gin"][i]),
            "big_gin": bool(info["big_gin"][i]),
            "undercut": bool(info["undercut"][i]),
        }
        want = {
            "dead_hand": end.dead,
            "hand_winner": -1 if end.winner is None else end.winner,
            "award": end.award,
            "gin": end.gin,
            "big_gin": end.big_gin,
            "undercut": end.undercut,
        }
        if not end.dead:
            got["knocker"] = int(info["knocker"][i])
            want["knocker"] = end.knocker
        assert got == want, f"{ctx}: hand end {got}, reference {want}"
        if not end.dead:
            pair = (int(info["knocker_deadwood"][i]), int(info["defender_deadwood"][i]))
            if pair != (end.knocker_deadwood, end.defender_deadwood):
                # docs/rules.md §7 fixes d - k, not which of several equally good
                # arrangements the knocker shows: accept any optimal one.
                assert not end.big_gin, f"{ctx}: big gin deadwoods {pair}, reference {end}"
                allowed = optimal_showdowns_ref(knocker, defender, limit)
                assert pair in allowed, (
                    f"{ctx}: showdown (k, d) = {pair}, optimal ones {sorted(allowed)}")
        before = self.sheets[i]
        self.results[i].append((end.winner, end.award))
        after = replay(rules, self.results[i]) if end.winner is not None else before
        want_r = expected_rewards(rules, game.reward_mode, before, after, end.winner,
                                  after.match_over, after.match_winner)
        assert np.allclose(rewards[i], want_r, atol=1e-6), (
            f"{ctx}: rewards {rewards[i].tolist()}, expected {want_r.tolist()}")
        assert bool(info["match_over"][i]) == after.match_over, f"{ctx}: match_over"
        if after.match_over:
            assert int(info["match_winner"][i]) == after.match_winner
            assert np.array_equal(info["final_scores"][i], after.scores)
            if not getattr(game, "autoreset", True):
                assert int(game.phase[i]) == MATCH_OVER, f"{ctx}: finished match not parked"
                assert game.sheet(i).to_dict() == after.to_dict(), f"{ctx}: final sheet"
                check_invariants(game, i, self.results[i])
                self.sheets[i] = after
                self.parked.add(i)
                return
            self.results[i] = []
            after = replay(rules, [])
        else:
            assert int(game.dealer[i]) == end.next_dealer, (
                f"{ctx}: next dealer {int(game.dealer[i])}, expected {end.next_dealer} "
                f"({rules.next_dealer}/{rules.dead_hand_dealer}, {end})")
        self.sheets[i] = after
        # The next deal: the engine's shuffle is its own; dealing it is not.
        fresh = RefGame.dealt(rules, game.deck[i], int(game.dealer[i]))
        fresh.assert_matches(game, i, " after a new deal")
        self.refs[i] = fresh
        check_invariants(game, i, self.results[i])
