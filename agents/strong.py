"""The strong hand-written player, batched over games.

It decides from the observation only (:mod:`agents.features`), like every agent:

* **Live cards.**  A card is *live* (may still come to us) when it is
  unseen: not in our hand, not in the discard pile, not among the cards the
  opponent took from the pile.  Our next stock card is uniform over the
  unseen cards; each unseen card sits in the opponent's hand with
  probability ``hidden / unseen`` (``hidden`` = the opponent's cards we
  have not seen), a card the opponent took from the pile with probability 1.
* **Meld potential.**  A 10-card hand is valued by its deadwood minus a
  multiple of its *expected improvement*: the average over the live cards
  of how much drawing that card (and then discarding best) would cut the
  deadwood.  Computed exactly and batched: a card with fewer than two
  meld partners in the hand can only help by replacing the highest
  removable deadwood card, which is one formula; the few cards that can
  complete a meld are evaluated with the exact meld minimiser.
* **Safe discards.**  A discard is penalised by the probability that the
  opponent can meld it (two partners of a set or a run in their hand, with
  the probabilities above — the cards they picked up weigh most).
* **Drawing.**  The top discard is taken when the hand after taking it
  (and discarding best) beats the expected hand after a stock draw.
* **Knocking.**  Gin always.  Otherwise knock when the deadwood is at most
  a threshold: 8 early, falling to 3 as the stock runs down (the opponent
  has had time to improve, so the undercut risk grows), 2 lower for every
  card the opponent visibly picked up; and with anything legal when the
  stock is nearly out.  Holding a low hand instead of knocking at 9 or 10
  also sets up undercuts of opponents who knock as soon as they can.  That
  is for an undercut bonus of 25; with a bonus of 10 (``classic``) an
  undercut is cheap either way and the player knocks whenever it can.
* **The score sheet.**  From the column scores, the target and which
  columns each player has opened: at *our* match point (a small win of ours
  settles the match) knock at once with any legal deadwood — any win will
  do; at *their* match point (a typical win of theirs settles it) play
  safer, knocking only with lower deadwood, because an undercut would hand
  them the match (when undercuts are costly).

All decisions are whole-array numpy over the games of a batch.  The weights
(:class:`StrongParams`) were tuned against ``simple`` over duplicate matches
with :mod:`agents.evaluation.arena`; measured figures are in the evaluation report.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from agents.features import ObsView, card_bit, decode
from hgin_env import actions as A
from hgin_env.cards import CARD_VALUES, NUM_CARDS, unpack_masks
from hgin_env.melds import deadwood_after_discard, min_deadwood_after_discard
from hgin_env.rules import Rules, load_rules

_VALUES = CARD_VALUES.astype(np.int64)
_VALUES_F = CARD_VALUES.astype(np.float64)
_BIG = 1e9


@dataclass(frozen=True)
class StrongParams:
    """The tunable weights of :class:`StrongAgent`."""

    #: Weight of the expected one-draw deadwood improvement in a hand's value.
    potential: float = 1.0
    #: Penalty (deadwood points) per unit probability that the opponent melds a discard.
    danger: float = 4.0
    #: Extra danger weight at the end of the stock (scaled by how far the hand is gone).
    danger_late: float = 0.0
    #: Candidate discards evaluated per game (the lowest-deadwood ones).
    candidates: int = 5
    #: Candidates more than this much deadwood above the best are not evaluated.
    prune: int = 12
    #: Take the top discard when it beats a stock draw by at least this much.
    take_margin: float = 0.0
    #: Multiplier of the improvement a stock draw is expected to bring (see ``_draw``).
    stock_lookahead: float = 1.0
    #: Knock threshold (deadwood) at the start of a hand and at the end of the stock.
    knock_early: float = 8.0
    knock_late: float = 3.0
    #: Stock size from which the threshold starts to fall.
    knock_fall_from: int = 24
    #: Threshold reduction per card the opponent took from the pile and still holds.
    knock_per_pick: float = 2.0
    #: Knock with any legal deadwood when the stock is at most this.
    knock_anyway_stock: int = 4
    #: Play the score sheet (see ``_match_point``).
    sheet: bool = True
    #: Our match point: a win of ours of this many points would give us the match; then
    #: knock with any legal deadwood.
    sheet_own_award: float = 10.0
    #: Their match point: a win of theirs of this many points would give them the match; then
    #: shift the knock threshold by ``sheet_opp_shift`` (negative: safer, fewer undercuts).
    sheet_opp_award: float = 30.0
    sheet_opp_shift: float = -6.0
    #: The knock settings above are for a costly undercut (bonus 25).  When the
    #: undercut bonus is only 10 (``classic``), being undercut costs little and
    #: undercutting gains little, so knocking early pays: these replace them there,
    #: interpolated linearly for bonuses in between.
    cheap_undercut_knock_early: float = 10.0
    cheap_undercut_knock_late: float = 10.0
    cheap_undercut_knock_per_pick: float = 0.0
    cheap_undercut_sheet_opp_shift: float = 0.0


class StrongAgent:
    """Meld-potential, safety, knock-timing and score-sheet aware heuristic player."""

    name = "strong"

    def __init__(self, params: StrongParams | None = None, rules: Rules | str | None = None,
                 **overrides: object) -> None:
        params = params or StrongParams()
        if overrides:
            params = replace(params, **overrides)
        self.params = params
        self.rules = load_rules(rules)
        # How costly an undercut is under these rules: 0 at bonus 10, 1 at bonus 25.
        w = float(np.clip((self.rules.undercut_bonus - 10) / 15.0, 0.0, 1.0))

        def mix(costly: float, cheap: float) -> float:
            return w * costly + (1.0 - w) * cheap

        self.knock = {
            "early": mix(params.knock_early, params.cheap_undercut_knock_early),
            "late": mix(params.knock_late, params.cheap_undercut_knock_late),
            "per_pick": mix(params.knock_per_pick, params.cheap_undercut_knock_per_pick),
            "opp_shift": mix(params.sheet_opp_shift, params.cheap_undercut_sheet_opp_shift),
        }

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None) -> np.ndarray:
        view = decode(obs)
        actions = np.full(view.size, A.DRAW_STOCK, np.int64)
        discard_rows = np.flatnonzero(view.phase == A.PHASE_DISCARD)
        if discard_rows.size:
            actions[discard_rows] = self._discard(view, discard_rows)
        draw_rows = np.flatnonzero(view.phase != A.PHASE_DISCARD)
        if draw_rows.size:
            actions[draw_rows] = self._draw(view, draw_rows)
        return actions

    # ------------------------------------------------------------ evaluation
    def _danger(self, view: ObsView, rows: np.ndarray) -> np.ndarray:
        """(n, 52) probability that the opponent can meld each card if we discard it."""
        unseen = view.unseen_bits[rows]
        known = view.opp_known_bits[rows]
        hidden = np.maximum(10 - known.sum(axis=1), 0)
        q = hidden / np.maximum(unseen.sum(axis=1), 1)
        p = np.where(known, 1.0, np.where(unseen, q[:, None], 0.0)).reshape(-1, 4, 13)
        # A set: at least two of the other three cards of the rank.
        rest = p.sum(axis=1, keepdims=True) - p
        rest_sq = (p * p).sum(axis=1, keepdims=True) - p * p
        pairs = (rest * rest - rest_sq) / 2
        p_set = np.clip(pairs - 2 * _others_product(p), 0, 1)
        # A run: both cards of one of the three windows around the card.
        pad = np.zeros((*p.shape[:2], 2))
        x = np.concatenate([pad, p, pad], axis=2)
        lo2, lo1 = x[:, :, 0:13], x[:, :, 1:14]
        hi1, hi2 = x[:, :, 3:16], x[:, :, 4:17]
        no_run = (1 - lo2 * lo1) * (1 - lo1 * hi1) * (1 - hi1 * hi2)
        return (1 - (1 - p_set) * no_run).reshape(-1, NUM_CARDS)

    def _expected_gain(self, hands: np.ndarray, dw: np.ndarray, unseen_bits: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Expected deadwood cut of one more draw for 10-card ``hands`` (n,).

        Also returns the best single-card removal gain of each hand (how much
        the deadwood drops when its costliest removable card goes).
        """
        n = hands.shape[0]
        if n == 0:
            return np.zeros(0), np.zeros(0, np.int64)
        bits = unpack_masks(hands).astype(bool)
        rel = _meld_partner_cards(bits) & unseen_bits
        r_rows, r_cards = np.nonzero(rel)
        h11 = hands[r_rows] | (np.uint64(1) << r_cards.astype(np.uint64))
        # One meld-minimiser call for the hands and every (hand + partner card).
        after = min_deadwood_after_discard(np.concatenate([hands, h11])).astype(np.int64)
        removal = np.maximum(dw - after[:n], 0)  # best single-card removal gain
        irr = unseen_bits & ~rel
        gain_irr = (irr * np.maximum(removal[:, None] - _VALUES[None, :], 0)).sum(axis=1)
        gain_rel = np.zeros(n)
        if r_rows.size:
            gain = np.maximum(dw[r_rows] - after[n:], 0)
            gain_rel = np.bincount(r_rows, weights=gain, minlength=n)
        count = np.maximum(unseen_bits.sum(axis=1), 1)
        return (gain_irr + gain_rel) / count, removal

    def _evaluate(self, view: ObsView, rows: np.ndarray, hands11: np.ndarray,
                  after: np.ndarray, legal: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Best plain discard per row of 11-card ``hands11``.

        ``after`` (n, 52) is the deadwood after each discard, ``legal`` (n, 52)
        the allowed discards.  Returns ``(card, score, deadwood)`` with score =
        deadwood − potential·expected gain + danger.
        """
        p = self.params
        n = rows.size
        cost = np.where(legal, after * 16 - _VALUES, np.iinfo(np.int64).max // 2)
        k = min(p.candidates, NUM_CARDS)
        order = np.argsort(cost, axis=1, kind="stable")[:, :k]
        cand_after = np.take_along_axis(after, order, axis=1)
        cand_legal = np.take_along_axis(legal, order, axis=1)
        best = cand_after[:, :1]
        valid = cand_legal & (cand_after <= best + p.prune)
        valid[:, 0] = cand_legal[:, 0]
        r, j = np.nonzero(valid)
        cards = order[r, j]
        h10 = hands11[r] & ~(np.uint64(1) << cards.astype(np.uint64))
        dw = cand_after[r, j]
        unseen = view.unseen_bits[rows][r]
        gain, _ = self._expected_gain(h10, dw, unseen)
        danger = self._danger(view, rows)[r, cards]
        stage = 1.0 - np.clip(view.stock_size[rows][r] - 2, 0, 29) / 29.0
        score = np.full((n, k), _BIG)
        score[r, j] = dw - p.potential * gain + (p.danger + p.danger_late * stage) * danger
        pick = np.argmin(score, axis=1)
        idx = np.arange(n)
        card = order[idx, pick]
        best_dw = cand_after[idx, pick]
        return card, score[idx, pick], best_dw

    # ------------------------------------------------------------ discard phase
    def _discard(self, view: ObsView, rows: np.ndarray) -> np.ndarray:
        mask = view.mask[rows].astype(bool)
        after = view.after_discard[rows]
        hands = view.hand[rows]
        out = np.empty(rows.size, np.int64)
        card, _, _ = self._evaluate(view, rows, hands, after, mask[:, : A.KNOCK])
        out[:] = card

        knock_legal = mask[:, A.KNOCK : A.DRAW_STOCK]
        can = knock_legal.any(axis=1)
        if can.any():
            kcost = np.where(knock_legal, after * 16 - _VALUES, np.iinfo(np.int64).max)
            kcard = np.argmin(kcost, axis=1)
            kdw = after[np.arange(rows.size), kcard]
            knock = can & self._want_knock(view, rows, kdw)
            out[knock] = A.KNOCK + kcard[knock]
        big = mask[:, A.BIG_GIN]
        out[big] = A.BIG_GIN
        return out

    def _want_knock(self, view: ObsView, rows: np.ndarray, kdw: np.ndarray) -> np.ndarray:
        p = self.params
        k = self.knock
        stock = view.stock_size[rows].astype(np.float64)
        fall = np.clip((p.knock_fall_from - stock) / max(p.knock_fall_from - 2, 1), 0, 1)
        threshold = k["early"] + (k["late"] - k["early"]) * fall
        picks = view.opp_known_bits[rows].sum(axis=1)
        threshold = threshold - k["per_pick"] * picks
        anyway = stock <= p.knock_anyway_stock
        if p.sheet:
            ours, theirs = self._match_point(view, rows)
            anyway = anyway | ours
            threshold = threshold + np.where(theirs, k["opp_shift"], 0.0)
        return (kdw == 0) | (kdw <= threshold) | anyway

    def _match_point(self, view: ObsView, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether one hand may settle the match: ``(ours, theirs)`` (n,) bool.

        Ours: a win of ``sheet_own_award`` points would give us the match.
        Theirs: a win of ``sheet_opp_award`` points would give it to them.
        A win is posted in the open columns already opened by its winner (and
        the next column it opens, which starts from 0 and cannot reach the
        target); the match needs a majority of the columns.
        """
        p = self.params
        target = float(self.rules.target)
        exists = view.column_exists[rows]
        need = exists.sum(axis=1) // 2 + 1
        open_ = exists & ~view.column_decided[rows]
        mine = open_ & view.open_to_me[rows] & (
            view.own_score[rows] + p.sheet_own_award / target >= 1.0)
        theirs = open_ & view.open_to_opp[rows] & (
            view.opp_score[rows] + p.sheet_opp_award / target >= 1.0)
        ours = view.column_won[rows].sum(axis=1) + mine.sum(axis=1) >= need
        their = view.column_lost[rows].sum(axis=1) + theirs.sum(axis=1) >= need
        return ours, their & ~ours

    # ------------------------------------------------------------ draw phases
    def _draw(self, view: ObsView, rows: np.ndarray) -> np.ndarray:
        p = self.params
        mask = view.mask[rows].astype(bool)
        fallback = np.where(mask[:, A.PASS], A.PASS, A.DRAW_STOCK)
        can_take = mask[:, A.TAKE_DISCARD] & (view.top[rows] >= 0)
        out = fallback.copy()
        idx = np.flatnonzero(can_take)
        if idx.size == 0:
            return out
        sub = rows[idx]
        top = view.top[sub]
        hand = view.hand[sub]
        dw = view.deadwood[sub]
        unseen = view.unseen_bits[sub]
        # Stock: expected deadwood after the draw, with the hand's potential after it.
        gain_now, removal = self._expected_gain(hand, dw, unseen)
        stock_value = dw - (1.0 + p.potential * p.stock_lookahead) * gain_now
        # Take, when the card has no meld partner in the hand: it stays deadwood, so the
        # best discard after taking it leaves dw - removal + value(top), with about the
        # same potential as now.
        take_dw = dw - removal + _VALUES[top]
        take_score = take_dw - p.potential * gain_now
        partners = has_partner(unpack_masks(hand).astype(bool), top)
        full = np.flatnonzero(partners)
        if full.size:
            # Take with a partner: evaluate the 11 cards exactly, the taken card kept.
            f = sub[full]
            new = hand[full] | card_bit(top[full])
            after = deadwood_after_discard(new).astype(np.int64)
            legal = unpack_masks(new).astype(bool)
            legal[np.arange(full.size), top[full]] = False
            _, take_score[full], take_dw[full] = self._evaluate(view, f, new, after, legal)
        take = take_score + p.take_margin < stock_value
        # Taking to knock at once is always worth it when knocking is wanted.
        knock_now = (take_dw <= view.knock_limit[sub]) & self._want_knock(view, sub, take_dw)
        take |= knock_now
        out[idx] = np.where(take, A.TAKE_DISCARD, fallback[idx])
        return out


def has_partner(bits: np.ndarray, card: np.ndarray) -> np.ndarray:
    """Whether ``card`` has a same-rank card or a same-suit card within two ranks in ``bits``."""
    n = bits.shape[0]
    h = bits.reshape(n, 4, 13)
    rank, suit = card % 13, card // 13
    rows = np.arange(n)
    same_rank = h[rows, :, rank].sum(axis=1) > 0
    near = np.zeros(n, bool)
    for delta in (-2, -1, 1, 2):
        r = rank + delta
        ok = (r >= 0) & (r < 13)
        near |= ok & h[rows, suit, np.clip(r, 0, 12)]
    return same_rank | near


def _others_product(p: np.ndarray) -> np.ndarray:
    """For (n, 4, 13) probabilities, the product of the other three suits' entries."""
    out = np.ones_like(p)
    for s in range(4):
        for t in range(4):
            if t != s:
                out[:, s, :] *= p[:, t, :]
    return out


def _meld_partner_cards(bits: np.ndarray) -> np.ndarray:
    """(n, 52) cards not held that would have two meld partners in the held ``bits``."""
    h = bits.reshape(-1, 4, 13)
    pad = np.zeros((*h.shape[:2], 2), bool)
    x = np.concatenate([pad, h, pad], axis=2)
    lo2, lo1 = x[:, :, 0:13], x[:, :, 1:14]
    hi1, hi2 = x[:, :, 3:16], x[:, :, 4:17]
    run = (lo2 & lo1) | (lo1 & hi1) | (hi1 & hi2)
    sets = (h.sum(axis=1, keepdims=True) >= 2)
    return ((run | sets) & ~h).reshape(-1, NUM_CARDS)


__all__ = ["StrongAgent", "StrongParams", "has_partner"]
