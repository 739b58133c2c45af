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

All decisions are whole-array numpy over the games of a batch; every 10-card hand
whose expected gain a call needs (the discard candidates, the hands before a draw, the
candidates after taking the top card) goes through one meld pass
(:func:`hgin_env.draw_melds.after_draws`: one entry per hand and live card with two
partners, the other cards by a formula over popcounts), so a call pays numpy's per-call
cost once.  The weights
(:class:`StrongParams`) were tuned against ``simple`` over duplicate matches
with :mod:`agents.evaluation.arena`; measured figures are in the evaluation report.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from agents.features import SPEC, ObsView, card_bit, decode
from hgin_env import actions as A
from hgin_env import bitlanes as bl
from hgin_env.cards import CARD_VALUES, NUM_CARDS, pack_masks, popcount64, unpack_masks
from hgin_env.draw_melds import after_draws
from hgin_env.melds import SENTINEL, deadwood_after_discard
from hgin_env.observation import SCALE
from hgin_env.rules import Rules, load_rules

_VALUES = CARD_VALUES.astype(np.int64)
_VALUES_F = CARD_VALUES.astype(np.float64)
_BIG = 1e9
#: The cost of an illegal discard in :meth:`StrongAgent._candidates`' sort: above every
#: legal one (deadwood at most SENTINEL, times 16), still exact after a shift by 6.
_ILLEGAL_COST = np.int64(1 << 40)
_CARD_IDS = np.arange(NUM_CARDS, dtype=np.int64)
#: The sort keys of :meth:`StrongAgent._candidates` less ``after * 1024``, and of illegal
#: discards.
_KEY_OFFSET = _CARD_IDS - _VALUES * 64
_ILLEGAL_KEY = (_ILLEGAL_COST << 6) | _CARD_IDS
#: Ranks -2, -1, +1, +2 around bit 2 (see :func:`has_partner`).
_NEAR = np.uint64(0b11011)
_AFTER_DISCARD = SPEC["deadwood_after_discard"]
_TOP_DISCARD = SPEC["top_discard"]
#: Hands per slice of the meld pass of :meth:`StrongAgent._expected_gain`
#: (``draw_melds.after_draws``' ``slice_hands``): each slice pays numpy's per-call cost
#: once, a larger one more fresh memory pages; 4096 measured best at B = 4096.
GAIN_CHUNK = 4096

#: What a phase asks :meth:`StrongAgent._run` for: ``(hands, deadwood, unseen cards)`` of
#: the 10-card hands whose expected gain it needs; the answer is ``(gain, removal)``.
Request = tuple[np.ndarray, np.ndarray, np.ndarray]
Phase = Generator[Request, tuple[np.ndarray, np.ndarray], np.ndarray]
#: The request of a phase that needs no expected gain.
NO_REQUEST: Request = (np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.uint64))


def join_requests(*requests: Request) -> Request:
    """Several requests as one (answered in the same order, see :func:`split_gains`)."""
    return tuple(np.concatenate(part) for part in zip(*requests, strict=True))  # type: ignore[return-value]


def split_gains(answer: tuple[np.ndarray, np.ndarray], first: int
                ) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """The answer to a joined request: the first ``first`` hands' ``(gain, removal)``,
    then the rest's gains."""
    gain, removal = answer
    return (gain[:first], removal[:first]), gain[first:]


@dataclass(frozen=True)
class Candidates:
    """Candidate discards of n 11-card hands, one entry per (row, candidate): its row
    ``r`` (of the n), its ``slot`` (column of ``order``), its card, the 10-card hand
    ``h10`` it leaves, that hand's deadwood ``dw`` and the row's ``unseen`` cards (a mask).
    ``order`` (n, k) is each slot's card and ``slot_after`` (n, k) its deadwood."""

    r: np.ndarray
    slot: np.ndarray
    cards: np.ndarray
    h10: np.ndarray
    dw: np.ndarray
    unseen: np.ndarray
    order: np.ndarray
    slot_after: np.ndarray

    @property
    def request(self) -> Request:
        """What the candidates' expected gains need."""
        return self.h10, self.dw, self.unseen


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


class StrongView(ObsView):
    """:class:`ObsView` with the fields strong reads for every row decoded more cheaply,
    to the same values.

    Why: ``ObsView`` packs six card masks of every row at once and finds the top card with
    a float argmax; strong needs two masks (hand, unseen) and the top card, here packed
    from their own slices alone.
    """

    @classmethod
    def of(cls, obs: dict[str, np.ndarray]) -> StrongView:
        base = decode(obs)
        return cls(base.obs, base.mask)

    @cached_property
    def hand(self) -> np.ndarray:
        return pack_masks(self.hand_bits)

    @cached_property
    def unseen(self) -> np.ndarray:
        return pack_masks(self.unseen_bits)

    @cached_property
    def opp_known(self) -> np.ndarray:
        return pack_masks(self.opp_known_bits)

    @cached_property
    def top(self) -> np.ndarray:
        """The top discard's card id (its lowest card: the slice is one-hot), -1 for none."""
        top = pack_masks(self.obs[:, _TOP_DISCARD] > 0.5)
        lowest = top & (~top + np.uint64(1))
        card = popcount64(lowest - np.uint64(1))
        return np.where(top != 0, card, -1)


def after_discard_rows(view: ObsView, rows: np.ndarray) -> np.ndarray:
    """``view.after_discard[rows]`` for rows in the discard phase, decoding those rows only
    (the same operations as :class:`ObsView`)."""
    raw = np.rint(view.obs[rows, _AFTER_DISCARD] * SCALE["deadwood_after_discard"]
                  ).astype(np.int64)
    return np.where(view.hand_bits[rows], raw, SENTINEL)


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
        view = StrongView.of(obs)
        actions = np.full(view.size, A.DRAW_STOCK, np.int64)
        phases = []
        discard_rows = np.flatnonzero(view.phase == A.PHASE_DISCARD)
        if discard_rows.size:
            phases.append((discard_rows, self._discard(view, discard_rows)))
        draw_rows = np.flatnonzero(view.phase != A.PHASE_DISCARD)
        if draw_rows.size:
            phases.append((draw_rows, self._draw(view, draw_rows)))
        for (rows, _), chosen in zip(phases, self._run(gen for _, gen in phases), strict=True):
            actions[rows] = chosen
        return actions

    def _run(self, phases: Iterable[Phase]) -> list[np.ndarray]:
        """Drive phase generators: each yields the 10-card hands whose expected gain it
        needs, gets them back and returns its actions.

        Why: every hand of a call goes through one :meth:`_expected_gain` (one meld pass),
        so numpy's per-call cost is paid once a call, not once a phase and step.  Each
        row's values depend on that row only, so the batching changes no number.
        """
        gens = list(phases)
        if not gens:  # an empty batch
            return []
        requests = [next(gen) for gen in gens]
        gain, removal = self._expected_gain(*join_requests(*requests))
        bounds = np.cumsum([req[0].shape[0] for req in requests])[:-1]
        out = []
        for gen, g, rem in zip(gens, np.split(gain, bounds), np.split(removal, bounds),
                               strict=True):
            try:
                gen.send((g, rem))
            except StopIteration as stop:
                out.append(stop.value)
            else:  # pragma: no cover - a phase yields once
                raise RuntimeError("a phase asked for expected gains twice")
        return out

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

    def _danger_at(self, view: ObsView, rows: np.ndarray, r: np.ndarray, cards: np.ndarray
                   ) -> np.ndarray:
        """:meth:`_danger` ``[r, cards]``, computed for those pairs only.

        Why: a call needs the danger of a few candidate discards per row, not all 52
        cards.  Each pair gathers its rank's four probabilities and its suit's two
        neighbours either side and runs the same float operations in the same order
        as :meth:`_danger`, so the values are bit-identical (a test checks it).
        """
        if r.size == 0:
            return np.zeros(0)
        unseen = view.unseen_bits[rows]
        known = view.opp_known_bits[rows]
        # The counts as popcounts of the masks (the same integers as the rows' sums).
        hidden = np.maximum(10 - _count(view.opp_known[rows]), 0)
        q = hidden / np.maximum(_count(view.unseen[rows]), 1)
        # Probabilities with two zero ranks either side of each suit: (n, 4, 17), flat.
        # (q * unseen is where(unseen, q, 0.0) to the bit: q is finite and >= 0.)
        padded = np.zeros((rows.size, 4, 17))
        inner = padded[:, :, 2:15]
        np.multiply(unseen.reshape(-1, 4, 13), q[:, None, None], out=inner)
        inner[known.reshape(-1, 4, 13)] = 1.0
        flat = padded.reshape(-1)
        suit, rank = cards // 13, cards % 13
        column = r * 68 + rank + 2
        c0, c1, c2, c3 = (flat[column + 17 * t] for t in range(4))
        at = column + 17 * suit
        p = flat[at]
        # A set (the sums and products in _danger's order: suits ascending).
        rest = (((c0 + c1) + c2) + c3) - p
        rest_sq = ((((c0 * c0) + (c1 * c1)) + (c2 * c2)) + (c3 * c3)) - p * p
        pairs = (rest * rest - rest_sq) / 2
        # The other three suits' product, (x * y) * z in suit order: (c1 c2) c3, (c0 c2) c3,
        # (c0 c1) c3, (c0 c1) c2.
        x = np.where(suit == 0, c1, c0)
        y = np.where(suit <= 1, c2, c1)
        others = x * y
        others *= np.where(suit == 3, c2, c3)
        p_set = np.clip(pairs - 2 * others, 0, 1)
        lo2, lo1, hi1, hi2 = flat[at - 2], flat[at - 1], flat[at + 1], flat[at + 2]
        no_run = (1 - lo2 * lo1) * (1 - lo1 * hi1) * (1 - hi1 * hi2)
        return 1 - (1 - p_set) * no_run

    def _expected_gain(self, hands: np.ndarray, dw: np.ndarray, unseen: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Expected deadwood cut of one more draw for 10-card ``hands`` (n,), the live cards
        being ``unseen`` (n,) (masks).

        Also returns the best single-card removal gain of each hand (how much
        the deadwood drops when its costliest removable card goes).
        """
        n = hands.shape[0]
        if n == 0:
            return np.zeros(0), np.zeros(0, np.int64)
        # The live cards with two partners read the exact deadwood after drawing them (and
        # discarding best), one (hand, card) pair each; held cards are never live.
        rel = meld_partner_masks(hands) & unseen
        rows, after, no_draw = after_draws(hands, rel, GAIN_CHUNK)
        removal = np.maximum(dw - no_draw, 0)  # best single removal
        gain = dw.astype(np.int16)[rows] - after
        np.maximum(gain, 0, out=gain)
        # Exact in float64: integer sums of at most 52 terms of at most 100.
        gain_sum = np.bincount(rows, weights=gain, minlength=n)
        # A card with fewer than two partners cannot meld: it can only replace the
        # costliest removable card.
        gain_sum += _replacement_gain(unseen & ~rel, removal)
        count = np.maximum(np.bitwise_count(unseen), 1).astype(np.int64)
        return gain_sum / count, removal

    def _candidates(self, view: ObsView, rows: np.ndarray, hands11: np.ndarray,
                    after: np.ndarray, legal: np.ndarray) -> Candidates:
        """Best plain discard per row of 11-card ``hands11``, first half: the discards to
        score, the ``candidates`` lowest-deadwood legal ones of each row, less those more
        than ``prune`` above its best.

        ``after`` (n, 52) is the deadwood after each discard, ``legal`` (n, 52) the allowed
        discards.  The phases ask for the candidates' expected gains together (see
        :meth:`_run`) and :meth:`_pick` scores them.
        """
        p = self.params
        k = min(p.candidates, NUM_CARDS)
        # The k lowest costs, ties to the lower card: a sort of (cost, card) in one int64
        # (a plain sort of numbers, several times cheaper than a stable argsort).
        # ((after * 16 - value) << 6) | card, as one multiply-add (the low six bits of the
        # shifted cost are zero, so the OR is an addition).
        key = after * 1024
        key += _KEY_OFFSET
        np.copyto(key, _ILLEGAL_KEY, where=~legal)
        key.sort(axis=1)
        first = key[:, :k]
        order = first & 63
        cand_legal = first < _ILLEGAL_COST << 6
        cand_after = np.take_along_axis(after, order, axis=1)
        best = cand_after[:, :1]
        valid = cand_legal & (cand_after <= best + p.prune)
        valid[:, 0] = cand_legal[:, 0]
        r, j = np.nonzero(valid)
        cards = order[r, j]
        h10 = hands11[r] & ~(np.uint64(1) << cards.astype(np.uint64))
        return Candidates(r, j, cards, h10, cand_after[r, j], view.unseen[rows][r],
                          order, cand_after)

    def _pick(self, view: ObsView, rows: np.ndarray, cand: Candidates, gain: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Best plain discard per row, second half: ``(card, score, deadwood)`` with score =
        deadwood − potential·expected gain + danger, from :meth:`_candidates`' output and
        their expected gains."""
        p = self.params
        n = rows.size
        r = cand.r
        danger = self._danger_at(view, rows, r, cand.cards)
        stage = 1.0 - np.clip(view.stock_size[rows][r] - 2, 0, 29) / 29.0
        score = np.full((n, cand.order.shape[1]), _BIG)
        score[r, cand.slot] = (cand.dw - p.potential * gain
                               + (p.danger + p.danger_late * stage) * danger)
        pick = np.argmin(score, axis=1)
        idx = np.arange(n)
        card = cand.order[idx, pick]
        best_dw = cand.slot_after[idx, pick]
        return card, score[idx, pick], best_dw

    # ------------------------------------------------------------ discard phase
    def _discard(self, view: ObsView, rows: np.ndarray) -> Phase:
        """The discard phase's actions (a :meth:`_run` phase)."""
        mask = view.mask[rows].astype(bool)
        after = after_discard_rows(view, rows)
        hands = view.hand[rows]
        out = np.empty(rows.size, np.int64)
        cand = self._candidates(view, rows, hands, after, mask[:, : A.KNOCK])
        gain, _ = yield cand.request
        card, _, _ = self._pick(view, rows, cand, gain)
        out[:] = card

        knock_legal = mask[:, A.KNOCK : A.DRAW_STOCK]
        can = np.flatnonzero(knock_legal.any(axis=1))
        if can.size:
            # Only the rows that may knock (each row's choice depends on that row only).
            kcost = np.where(knock_legal[can], after[can] * 16 - _VALUES,
                             np.iinfo(np.int64).max)
            kcard = np.argmin(kcost, axis=1)
            kdw = after[can, kcard]
            knock = self._want_knock(view, rows[can], kdw)
            out[can[knock]] = A.KNOCK + kcard[knock]
        big = mask[:, A.BIG_GIN]
        out[big] = A.BIG_GIN
        return out

    def _take_candidates(self, view: ObsView, sub: np.ndarray, hand: np.ndarray,
                         top: np.ndarray) -> tuple[np.ndarray, Candidates]:
        """The draw rows whose top card has a partner (indices into ``sub``) and their
        discard candidates after taking it (the taken card kept)."""
        full = np.flatnonzero(has_partner(hand, top))
        new = hand[full] | card_bit(top[full])
        after = (deadwood_after_discard(new).astype(np.int64) if full.size
                 else np.zeros((0, NUM_CARDS), np.int64))
        legal = unpack_masks(new).astype(bool).reshape(-1, NUM_CARDS)
        legal[np.arange(full.size), top[full]] = False
        return full, self._candidates(view, sub[full], new, after, legal)

    def _want_knock(self, view: ObsView, rows: np.ndarray, kdw: np.ndarray) -> np.ndarray:
        p = self.params
        k = self.knock
        stock = view.stock_size[rows].astype(np.float64)
        fall = np.clip((p.knock_fall_from - stock) / max(p.knock_fall_from - 2, 1), 0, 1)
        threshold = k["early"] + (k["late"] - k["early"]) * fall
        picks = _count(view.opp_known[rows])
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
        need = _row_count(exists) // 2 + 1
        open_ = exists & ~view.column_decided[rows]
        mine = open_ & view.open_to_me[rows] & (
            view.own_score[rows] + p.sheet_own_award / target >= 1.0)
        theirs = open_ & view.open_to_opp[rows] & (
            view.opp_score[rows] + p.sheet_opp_award / target >= 1.0)
        ours = _row_count(view.column_won[rows]) + _row_count(mine) >= need
        their = _row_count(view.column_lost[rows]) + _row_count(theirs) >= need
        return ours, their & ~ours

    # ------------------------------------------------------------ draw phases
    def _draw(self, view: ObsView, rows: np.ndarray) -> Phase:
        """The draw phases' actions (a :meth:`_run` phase)."""
        p = self.params
        mask = view.mask[rows].astype(bool)
        fallback = np.where(mask[:, A.PASS], A.PASS, A.DRAW_STOCK)
        can_take = mask[:, A.TAKE_DISCARD] & (view.top[rows] >= 0)
        out = fallback.copy()
        idx = np.flatnonzero(can_take)
        if idx.size == 0:
            yield NO_REQUEST
            return out
        sub = rows[idx]
        top = view.top[sub]
        hand = view.hand[sub]
        dw = view.deadwood[sub]
        unseen = view.unseen[sub]
        full, cand = self._take_candidates(view, sub, hand, top)
        # The hand now and, for a top card with a partner, the 11 cards after taking it.
        (gain_now, removal), gain_cand = split_gains(
            (yield join_requests((hand, dw, unseen), cand.request)), idx.size)
        # Stock: expected deadwood after the draw, with the hand's potential after it.
        stock_value = dw - (1.0 + p.potential * p.stock_lookahead) * gain_now
        # Take, when the card has no meld partner in the hand: it stays deadwood, so the
        # best discard after taking it leaves dw - removal + value(top), with about the
        # same potential as now.
        take_dw = dw - removal + _VALUES[top]
        take_score = take_dw - p.potential * gain_now
        if full.size:
            # Take with a partner: evaluate the 11 cards exactly, the taken card kept.
            _, take_score[full], take_dw[full] = self._pick(view, sub[full], cand, gain_cand)
        take = take_score + p.take_margin < stock_value
        # Taking to knock at once is always worth it when knocking is wanted.
        knock_now = (take_dw <= view.knock_limit[sub]) & self._want_knock(view, sub, take_dw)
        take |= knock_now
        out[idx] = np.where(take, A.TAKE_DISCARD, fallback[idx])
        return out


def has_partner(hands: np.ndarray, card: np.ndarray) -> np.ndarray:
    """Whether ``card`` (n,) has a same-rank card or a same-suit card within two ranks in
    ``hands`` (n,) (uint64 masks).

    Bit operations on suit lanes: the window of ranks r-2, r-1, r+1, r+2 of the card's suit
    is one shifted constant (the bits it reaches outside the suit are gap bits, never held).
    """
    x = bl.to_lanes(hands)
    card = np.asarray(card, np.int64)
    suit, rank = card // 13, card % 13
    same_rank = x & (bl.RANK_COLUMNS << rank.astype(np.uint64))
    window = (_NEAR << (16 * suit + rank).astype(np.uint64)) >> np.uint64(2)
    return (same_rank != 0) | ((x & window) != 0)


def _count(masks: np.ndarray) -> np.ndarray:
    """Cards per (n,) uint64 mask as int64 (a popcount, not a sum over 52 columns)."""
    return np.bitwise_count(masks).astype(np.int64)


def _row_count(flags: np.ndarray) -> np.ndarray:
    """True entries per row of an (n, k) bool array with few columns, as int64.

    Why: numpy's sum along a short last axis costs about six times these k - 1 adds.
    """
    out = flags[:, 0].astype(np.int64)
    for j in range(1, flags.shape[1]):
        out += flags[:, j]
    return out


def _others_product(p: np.ndarray) -> np.ndarray:
    """For (n, 4, 13) probabilities, the product of the other three suits' entries."""
    out = np.ones_like(p)
    for s in range(4):
        for t in range(4):
            if t != s:
                out[:, s, :] *= p[:, t, :]
    return out


def meld_partner_cards(hands: np.ndarray) -> np.ndarray:
    """(n, 52) bool: the cards not in ``hands`` (uint64) that would have two meld partners
    there (two cards of their rank, or two of a run window through them)."""
    return unpack_masks(meld_partner_masks(hands)).view(bool)


def meld_partner_masks(hands: np.ndarray) -> np.ndarray:
    """:func:`meld_partner_cards` as (n,) uint64 card masks.

    Bit operations on suit lanes (:mod:`hgin_env.bitlanes`): a shift stays in its suit.
    """
    x = bl.to_lanes(hands)
    one, two = np.uint64(1), np.uint64(2)
    lo1, hi1 = x << one, x >> one
    run = (lo1 & (x << two)) | (lo1 & hi1) | (hi1 & (x >> two))
    a, b, c, d = ((x >> np.uint64(16 * s)) & bl.SUIT_BITS for s in range(4))
    two_up = (a & (b | c | d)) | (b & (c | d)) | (c & d)
    cards = (run | bl.rank_columns(two_up)) & ~x & bl.LANE_CARDS
    return bl.from_lanes(cards)


#: Card masks of the cards worth at most ``t`` points (the ranks below ``t``), t = 0..9.
_WORTH_AT_MOST = [np.uint64(sum(1 << (s * 13 + r) for s in range(4) for r in range(t)))
                  for t in range(10)]


def _replacement_gain(cards: np.ndarray, removal: np.ndarray) -> np.ndarray:
    """(n,) sum over each of the (n,) masks' ``cards`` c of ``max(removal - value(c), 0)``.

    Why: the cut a card without meld partners brings, summed over them without a (n, 52)
    table.  ``max(R - v, 0)`` counts the t = v .. R - 1, so the sum is, over t >= 1 below
    R, the number of cards worth at most t: one popcount per t (every card is worth at
    most 10; a removal saves at most 10, the same formula holds beyond).
    """
    total = np.zeros(cards.shape[0], np.int64)
    for t in range(1, 10):
        total += np.bitwise_count(cards & _WORTH_AT_MOST[t]) * (removal > t)
    total += np.bitwise_count(cards).astype(np.int64) * np.maximum(removal - 10, 0)
    return total


__all__ = ["NO_REQUEST", "Candidates", "Phase", "Request", "StrongAgent", "StrongParams",
           "StrongView", "after_discard_rows", "has_partner", "join_requests",
           "meld_partner_cards", "meld_partner_masks", "split_gains"]
