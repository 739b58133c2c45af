"""VectorGame: B complete Hollywood matches at once, as a struct of arrays.

Every rule of RULES.md runs as whole-array numpy on the games that take the
same kind of action in a step; there is no Python loop over games.  Hands are
``uint64`` masks, the current deal's card order and the discard pile are
small ``int8`` arrays, and the score sheets live in a :class:`SheetBatch`.

Randomness is counter based: the shuffle of a game's n-th deal is a pure
function of that game's seed and n, so a game plays the same whether it runs
alone or in a batch of thousands, and the same seed replays the same games.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import actions as A
from .cards import NUM_CARDS, unpack_masks
from .hollywood import Sheet, SheetBatch, post
from .melds import arrange, discard_table_unchecked, min_deadwood
from .rules import Rules, load_rules
from .showdown import showdown_unchecked

REWARD_MODES = ("match", "columns", "points")
_U64 = np.uint64
_ONE = _U64(1)
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_DEALER_SALT = _U64(0xD1B54A32D192ED03)
_GAME_SALT = _U64(0x8CB92BA72F3D8DD7)


def _splitmix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser: a fast, well-mixed hash of ``uint64`` arrays."""
    z = np.asarray(x, dtype=_U64) + _GOLDEN
    z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
    return z ^ (z >> _U64(31))


def game_seeds(seed: int | np.ndarray | None, num_games: int) -> np.ndarray:
    """Per-game seeds: an int expands to ``num_games`` streams, an array is used as given."""
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
    arr = np.asarray(seed)
    if arr.ndim == 0:
        if not np.issubdtype(arr.dtype, np.integer) or int(arr) < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        base = _splitmix(np.array([int(arr) % (1 << 64)], dtype=_U64) ^ _GAME_SALT)
        return _splitmix(base + np.arange(num_games, dtype=_U64))
    if arr.shape != (num_games,) or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"per-game seeds must be {num_games} integers, got shape {arr.shape}")
    if (arr < 0).any():
        raise ValueError("per-game seeds must be non-negative")
    return arr.astype(_U64)


def shuffled_decks(seeds: np.ndarray, deal_numbers: np.ndarray) -> np.ndarray:
    """(n, 52) card orders, each a pure function of (game seed, deal number)."""
    base = _splitmix(seeds ^ _splitmix(deal_numbers.astype(_U64)))
    keys = _splitmix(base[:, None] + np.arange(NUM_CARDS, dtype=_U64) * _GOLDEN)
    return np.argsort(keys, axis=1).astype(np.int8)


def random_dealers(seeds: np.ndarray, match_numbers: np.ndarray) -> np.ndarray:
    return (_splitmix(seeds ^ _splitmix(match_numbers.astype(_U64) ^ _DEALER_SALT)) & _ONE).astype(
        np.int8
    )


def _bits(cards: np.ndarray) -> np.ndarray:
    return _ONE << cards.astype(_U64)


@dataclass
class HandRecord:
    """The last finished hand of every game, kept for display (B,) arrays.

    ``knocker`` is the seat that knocked or went big gin (-1 for a dead hand);
    hands are the 10 (or 11 for big gin) cards shown at the showdown.
    """

    knocker: np.ndarray
    knocker_hand: np.ndarray
    defender_hand: np.ndarray
    knocker_meld_mask: np.ndarray
    knocker_set_mask: np.ndarray
    defender_meld_mask: np.ndarray
    defender_set_mask: np.ndarray
    layoffs: np.ndarray
    knocker_deadwood: np.ndarray
    defender_deadwood: np.ndarray
    winner: np.ndarray
    award: np.ndarray
    gin: np.ndarray
    big_gin: np.ndarray
    undercut: np.ndarray
    dead: np.ndarray
    valid: np.ndarray

    @classmethod
    def empty(cls, n: int) -> HandRecord:
        i8 = lambda fill: np.full(n, fill, np.int8)  # noqa: E731
        u = lambda: np.zeros(n, _U64)  # noqa: E731
        b = lambda: np.zeros(n, bool)  # noqa: E731
        return cls(
            i8(-1),
            u(),
            u(),
            u(),
            u(),
            u(),
            u(),
            u(),
            np.zeros(n, np.int32),
            np.zeros(n, np.int32),
            i8(-1),
            np.zeros(n, np.int32),
            b(),
            b(),
            b(),
            b(),
            b(),
        )


class VectorGame:
    """B independent Hollywood matches stepped together.

    The state is public, read-only by convention: ``hands`` (B, 2) masks,
    ``deck`` (B, 52) card order of the current deal, ``stock_pos`` (index of
    the next stock card), ``pile``/``pile_size``/``pile_mask`` (discard pile,
    top last), ``phase``, ``current_player``, ``dealer``, ``taken_card`` (the
    card taken from the pile this turn, -1 if none), ``knock_limit`` of the
    current deal, ``known`` (B, 2) cards each seat took from the pile and
    still holds, ``discard_deadwood`` (B, 52) the mover's deadwood after each
    discard (valid in the discard phase), and ``sheets``.

    With ``autoreset=True`` (the default) a finished match is replaced by a
    fresh one in the same step; ``last_match`` keeps its final sheet.  With
    ``autoreset=False`` the game stays in ``PHASE_MATCH_OVER`` (no legal
    action, final position and sheet kept) until :meth:`reset_games`.
    """

    def __init__(
        self,
        num_games: int,
        rules: Rules | str | None = None,
        seed: int | np.ndarray | None = None,
        reward: str = "columns",
        autoreset: bool = True,
    ) -> None:
        if not isinstance(num_games, (int, np.integer)) or num_games < 1:
            raise ValueError(f"num_games must be a positive integer, got {num_games!r}")
        if reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        self.num_games = int(num_games)
        self.rules = load_rules(rules)
        self.reward_mode = reward
        self.autoreset = bool(autoreset)
        b = self.num_games
        self.hands = np.zeros((b, 2), _U64)
        self.known = np.zeros((b, 2), _U64)
        self.deck = np.zeros((b, NUM_CARDS), np.int8)
        self.stock_pos = np.zeros(b, np.int16)
        self.pile = np.zeros((b, NUM_CARDS), np.int8)
        self.pile_size = np.zeros(b, np.int16)
        self.pile_mask = np.zeros(b, _U64)
        self.phase = np.zeros(b, np.int8)
        self.current_player = np.zeros(b, np.int8)
        self.dealer = np.zeros(b, np.int8)
        self.taken_card = np.full(b, -1, np.int8)
        self.takes = np.zeros(b, np.int16)
        self.knock_limit = np.zeros(b, np.int8)
        self.discard_deadwood = np.zeros((b, NUM_CARDS), np.int16)
        self.big_gin_ready = np.zeros(b, bool)
        self.deal_number = np.zeros(b, np.int64)
        self.match_number = np.zeros(b, np.int64)
        self.hands_in_match = np.zeros(b, np.int32)
        self.seeds = game_seeds(seed, b)
        self.sheets = SheetBatch.new(b, self.rules)
        #: The sheet of each game's last finished match (kept through the autoreset).
        self.last_match = SheetBatch.new(b, self.rules)
        self.last_hand = HandRecord.empty(b)
        self._mask: np.ndarray | None = None
        self._all = np.arange(b)
        self.reset(seed=None if seed is None else self.seeds)

    # ------------------------------------------------------------------ views
    @property
    def stock_size(self) -> np.ndarray:
        return (NUM_CARDS - self.stock_pos).astype(np.int16)

    @property
    def scores(self) -> np.ndarray:
        return self.sheets.scores

    @property
    def wins(self) -> np.ndarray:
        return self.sheets.wins

    @property
    def column_winner(self) -> np.ndarray:
        return self.sheets.column_winner

    def sheet(self, i: int) -> Sheet:
        return self.sheets.sheet(int(i))

    def top_discard(self) -> np.ndarray:
        """(B,) card id on top of the discard pile, -1 where the pile is empty."""
        top = self.pile[self._all, np.maximum(self.pile_size - 1, 0)].astype(np.int16)
        return np.where(self.pile_size > 0, top, -1)

    # ------------------------------------------------------------------ reset
    def reset(
        self,
        seed: int | np.ndarray | None = None,
        decks: np.ndarray | None = None,
        dealer: np.ndarray | None = None,
    ) -> None:
        """Start B fresh matches.

        ``decks`` (B, 52) fixes the card order of each first deal (cards dealt
        alternately from index 0, non-dealer first; index 20 the upcard; the
        stock drawn from index 21 on); ``dealer`` (B,) fixes the first dealers.
        Later deals are shuffled from the seed.
        """
        b = self.num_games
        # Validate everything before touching any state.
        seeds = self.seeds if seed is None else game_seeds(seed, b)
        deck_arr = None if decks is None else _check_decks(decks, b)
        if dealer is None:
            dealers = random_dealers(seeds, np.zeros(b, np.int64))
        else:
            dealers = np.asarray(dealer)
            if dealers.shape != (b,) or not np.isin(dealers, (0, 1)).all():
                raise ValueError(f"dealer must be {b} values in {{0, 1}}, got {dealer!r}")
            dealers = dealers.astype(np.int8)
        self.seeds = seeds
        self.deal_number[:] = 0
        self.match_number[:] = 0
        self.sheets.reset_rows(self._all)
        self.last_match.reset_rows(self._all)
        self.last_hand = HandRecord.empty(b)
        if deck_arr is None:
            deck_arr = shuffled_decks(self.seeds, self.deal_number)
        self.hands_in_match[:] = 0
        self._deal(self._all, deck_arr, dealers)

    def reset_games(self, rows: np.ndarray | list[int]) -> None:
        """Start a fresh match (new seeded deal and dealer) in the listed games only."""
        rows = np.unique(np.asarray(rows, dtype=np.int64).reshape(-1))
        if rows.size and (rows.min() < 0 or rows.max() >= self.num_games):
            raise ValueError(
                f"game indices must be in 0..{self.num_games - 1}, got {rows.tolist()}"
            )
        if rows.size == 0:
            return
        self._new_matches(rows, keep_sheet=False)
        decks = shuffled_decks(self.seeds[rows], self.deal_number[rows])
        self._deal(rows, decks, random_dealers(self.seeds[rows], self.match_number[rows]))

    def _new_matches(self, rows: np.ndarray, keep_sheet: bool = True) -> None:
        """Fresh sheets in ``rows``; ``keep_sheet`` copies the finished ones to ``last_match``."""
        if keep_sheet:
            self._keep_finished(rows)
        self.sheets.reset_rows(rows)
        self.match_number[rows] += 1
        self.hands_in_match[rows] = 0

    def _keep_finished(self, rows: np.ndarray) -> None:
        for name in ("scores", "decided", "column_winner", "wins", "boxes", "match_winner"):
            getattr(self.last_match, name)[rows] = getattr(self.sheets, name)[rows]

    def _deal(self, rows: np.ndarray, decks: np.ndarray, dealers: np.ndarray) -> None:
        """Deal a new hand in ``rows`` from ``decks`` with the given dealers."""
        self.deck[rows] = decks
        first = np.bitwise_or.reduce(_bits(decks[:, 0:20:2]), axis=1)
        second = np.bitwise_or.reduce(_bits(decks[:, 1:20:2]), axis=1)
        nondealer = 1 - dealers
        self.hands[rows, nondealer] = first
        self.hands[rows, dealers] = second
        self.known[rows] = 0
        upcard = decks[:, 20]
        self.pile[rows, 0] = upcard
        self.pile_size[rows] = 1
        self.pile_mask[rows] = _bits(upcard)
        self.stock_pos[rows] = 21
        self.phase[rows] = A.PHASE_OFFER_NONDEALER
        self.dealer[rows] = dealers
        self.current_player[rows] = nondealer
        self.taken_card[rows] = -1
        self.takes[rows] = 0
        self.big_gin_ready[rows] = False
        self.knock_limit[rows] = self._knock_limits(upcard)
        self.deal_number[rows] += 1
        self.hands_in_match[rows] += 1
        self._mask = None

    def _knock_limits(self, upcard: np.ndarray) -> np.ndarray:
        r = self.rules
        if r.straight_gin:
            return np.zeros(upcard.shape, np.int8)
        if r.oklahoma:
            rank = upcard % 13
            return np.where(rank == 0, 0, np.minimum(rank + 1, 10)).astype(np.int8)
        return np.full(upcard.shape, r.knock_limit, np.int8)

    # ------------------------------------------------------------------ masks
    def legal_action_mask(self) -> np.ndarray:
        """(B, 108) int8: 1 exactly for the legal actions of the player to move.

        Read-only: the engine checks actions against this same array, so it
        must not be changed by callers (copy it to edit).
        """
        if self._mask is None:
            self._mask = self._compute_mask()
            self._mask.flags.writeable = False
        return self._mask

    def _compute_mask(self) -> np.ndarray:
        # Whole-column writes over all games: cheaper than fancy-indexing the
        # discarding rows, and stale per-game arrays are masked by the phase.
        b = self.num_games
        phase = self.phase
        discarding = phase == A.PHASE_DISCARD
        offer = phase <= A.PHASE_OFFER_DEALER
        draw = phase == A.PHASE_DRAW
        held = unpack_masks(self.hands[self._all, self.current_player]).view(bool)
        held &= discarding[:, None]
        if self.rules.forbid_discard_of_taken:
            taken = self.taken_card
            rows = np.flatnonzero(discarding & (taken >= 0))
            held[rows, taken[rows]] = False
        mask = np.zeros((b, A.NUM_ACTIONS), np.int8)
        mask[:, : A.KNOCK] = held
        mask[:, A.KNOCK : A.DRAW_STOCK] = held & (
            self.discard_deadwood <= self.knock_limit[:, None]
        )
        mask[:, A.DRAW_STOCK] = draw | (phase == A.PHASE_DRAW_STOCK)
        mask[:, A.TAKE_DISCARD] = (offer | draw) & (self.takes < self.rules.max_discard_takes)
        mask[:, A.PASS] = offer
        if self.rules.big_gin:
            mask[:, A.BIG_GIN] = self.big_gin_ready & discarding
        return mask

    # ------------------------------------------------------------------ step
    def step(
        self, actions: np.ndarray, active: np.ndarray | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Apply one action per game for the player to move.

        Returns ``(rewards, info)``: rewards (B, 2) for both seats and (B,)
        arrays describing the hands and matches this step ended.  ``active``
        (B,) bool, optional, steps only those games (the others' actions are
        ignored).  An illegal action raises ``ValueError`` and changes nothing.
        """
        acts = self._check_actions(actions, active)
        b = self.num_games
        player = self.current_player.astype(np.int64)
        rewards = np.zeros((b, 2), np.float32)
        info = _empty_info(b, self.rules.columns)

        drawn_stock = np.flatnonzero(acts == A.DRAW_STOCK)
        taken = np.flatnonzero(acts == A.TAKE_DISCARD)
        passed = np.flatnonzero(acts == A.PASS)
        discarded = np.flatnonzero((acts >= 0) & (acts < A.KNOCK))
        knocked = np.flatnonzero((acts >= A.KNOCK) & (acts < A.DRAW_STOCK))
        big = np.flatnonzero(acts == A.BIG_GIN)

        if drawn_stock.size:
            g, p = drawn_stock, player[drawn_stock]
            card = self.deck[g, self.stock_pos[g]]
            self.hands[g, p] |= _bits(card)
            self.stock_pos[g] += 1
            self.taken_card[g] = -1
            self.phase[g] = A.PHASE_DISCARD
        if taken.size:
            g, p = taken, player[taken]
            top = self.pile_size[g] - 1
            card = self.pile[g, top]
            bit = _bits(card)
            self.pile_size[g] = top
            self.pile_mask[g] &= ~bit
            self.hands[g, p] |= bit
            self.known[g, p] |= bit
            self.taken_card[g] = card
            self.takes[g] += 1
            self.phase[g] = A.PHASE_DISCARD
        drew = np.concatenate([drawn_stock, taken]) if taken.size else drawn_stock
        if drew.size:
            eleven = self.hands[drew, player[drew]]
            self.discard_deadwood[drew] = discard_table_unchecked(eleven)
            if self.rules.big_gin:
                self.big_gin_ready[drew] = min_deadwood(eleven) == 0
        if passed.size:
            g = passed
            first = self.phase[g] == A.PHASE_OFFER_NONDEALER
            self.phase[g] = np.where(first, A.PHASE_OFFER_DEALER, A.PHASE_DRAW_STOCK)
            self.current_player[g] = np.where(first, self.dealer[g], 1 - self.dealer[g])

        dead = np.empty(0, np.int64)
        if discarded.size:
            g, p = discarded, player[discarded]
            self._put_on_pile(g, p, acts[g])
            self.phase[g] = A.PHASE_DRAW
            self.current_player[g] = 1 - p
            dead = g[self.stock_pos[g] == NUM_CARDS - 2]
        outcome = None
        if knocked.size or big.size:
            outcome = self._showdowns(knocked, big, player, acts)
        ended = np.concatenate([dead, outcome[0]]) if outcome is not None else dead
        if ended.size:
            self._end_hands(ended, dead, outcome, rewards, info)
        self._mask = None
        return rewards, info

    def _check_actions(self, actions: Any, active: Any = None) -> np.ndarray:
        acts = np.asarray(actions)
        if acts.shape != (self.num_games,):
            raise ValueError(
                f"expected {self.num_games} actions (one per game), got shape {acts.shape}"
            )
        if not np.issubdtype(acts.dtype, np.integer):
            raise ValueError(f"actions must be integers, got dtype {acts.dtype}")
        acts = acts.astype(np.int64)
        if active is not None:
            active = np.asarray(active)
            if active.shape != (self.num_games,) or active.dtype != bool:
                raise ValueError(f"active must be a ({self.num_games},) bool array")
            acts = np.where(active, acts, -1)
        in_range = (acts >= 0) & (acts < A.NUM_ACTIONS)
        if active is not None:
            in_range |= ~active
        legal = in_range.copy()
        mask = self.legal_action_mask()
        check = np.flatnonzero(in_range & (acts >= 0))
        legal[check] = mask[check, acts[check]] == 1
        if not legal.all():
            i = int(np.flatnonzero(~legal)[0])
            a = int(acts[i])
            what = A.action_name(a) if 0 <= a < A.NUM_ACTIONS else "out of range 0..107"
            allowed = np.flatnonzero(mask[i]).tolist()
            raise ValueError(
                f"game {i}: action {a} ({what}) is illegal in phase "
                f"'{A.PHASE_NAMES[int(self.phase[i])]}' for player {int(self.current_player[i])}; "
                f"legal actions: {allowed}"
            )
        return acts

    def _put_on_pile(self, g: np.ndarray, p: np.ndarray, cards: np.ndarray) -> None:
        bit = _bits(cards)
        self.hands[g, p] &= ~bit
        self.known[g, p] &= ~bit
        self.pile[g, self.pile_size[g]] = cards
        self.pile_size[g] += 1
        self.pile_mask[g] |= bit
        self.taken_card[g] = -1

    def _showdowns(
        self, knocked: np.ndarray, big: np.ndarray, player: np.ndarray, acts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Resolve knocks and big gins; fill ``last_hand``; return (rows, winner seat, award)."""
        rec = self.last_hand
        rows_parts, winner_parts, award_parts = [], [], []
        if knocked.size:
            g, p = knocked, player[knocked]
            # The knock discard goes face down; it joins the pile only to keep
            # all 52 cards accounted for until the next deal.
            self._put_on_pile(g, p, acts[g] - A.KNOCK)
            k_hand, d_hand = self.hands[g, p], self.hands[g, 1 - p]
            sd = showdown_unchecked(k_hand, d_hand, self.knock_limit[g], self.rules)
            seat = np.where(sd.winner == 0, p, 1 - p)
            self._record(
                g,
                p,
                k_hand,
                d_hand,
                seat,
                sd.award,
                sd.gin,
                np.zeros(g.size, bool),
                (~sd.gin) & (sd.winner == 1),
            )
            rec.knocker_meld_mask[g] = sd.knocker_meld_mask
            rec.knocker_set_mask[g] = sd.knocker_set_mask
            rec.defender_meld_mask[g] = sd.defender_meld_mask
            rec.defender_set_mask[g] = sd.defender_set_mask
            rec.layoffs[g] = sd.layoffs
            rec.knocker_deadwood[g] = sd.knocker_deadwood
            rec.defender_deadwood[g] = sd.defender_deadwood
            rows_parts.append(g)
            winner_parts.append(seat)
            award_parts.append(sd.award)
        if big.size:
            g, p = big, player[big]
            k_hand, d_hand = self.hands[g, p], self.hands[g, 1 - p]
            d_dead, d_sets, d_runs = arrange(d_hand)
            award = (self.rules.big_gin_bonus + d_dead).astype(np.int32)
            self._record(
                g,
                p,
                k_hand,
                d_hand,
                p,
                award,
                np.ones(g.size, bool),
                np.ones(g.size, bool),
                np.zeros(g.size, bool),
            )
            rec.knocker_meld_mask[g] = k_hand
            rec.knocker_set_mask[g] = 0
            rec.defender_meld_mask[g] = d_sets | d_runs
            rec.defender_set_mask[g] = d_sets
            rec.layoffs[g] = 0
            rec.knocker_deadwood[g] = 0
            rec.defender_deadwood[g] = d_dead
            rows_parts.append(g)
            winner_parts.append(p)
            award_parts.append(award)
        return (
            np.concatenate(rows_parts),
            np.concatenate(winner_parts).astype(np.int64),
            np.concatenate(award_parts).astype(np.int64),
        )

    def _record(self, g, p, k_hand, d_hand, seat, award, gin, big, undercut) -> None:
        rec = self.last_hand
        rec.knocker[g] = p
        rec.knocker_hand[g] = k_hand
        rec.defender_hand[g] = d_hand
        rec.winner[g] = seat
        rec.award[g] = award
        rec.gin[g] = gin
        rec.big_gin[g] = big
        rec.undercut[g] = undercut
        rec.dead[g] = False
        rec.valid[g] = True

    def _end_hands(
        self,
        ended: np.ndarray,
        dead: np.ndarray,
        outcome: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
        rewards: np.ndarray,
        info: dict[str, np.ndarray],
    ) -> None:
        rules = self.rules
        rec = self.last_hand
        next_dealer = np.empty(ended.size, np.int8)
        if dead.size:
            rec.knocker[dead] = -1
            rec.knocker_hand[dead] = self.hands[dead, 0]
            rec.defender_hand[dead] = self.hands[dead, 1]
            rec.winner[dead] = -1
            rec.award[dead] = 0
            for arr in (rec.gin, rec.big_gin, rec.undercut):
                arr[dead] = False
            rec.dead[dead] = True
            rec.valid[dead] = True
            info["dead_hand"][dead] = True
            same = rules.dead_hand_dealer == "same"
            next_dealer[: dead.size] = self.dealer[dead] if same else 1 - self.dealer[dead]
        if outcome is not None:
            rows, seat, award = outcome
            info["hand_winner"][rows] = seat
            info["award"][rows] = award
            info["gin"][rows] = rec.gin[rows]
            info["big_gin"][rows] = rec.big_gin[rows]
            info["undercut"][rows] = rec.undercut[rows]
            info["knocker"][rows] = rec.knocker[rows]
            info["knocker_deadwood"][rows] = rec.knocker_deadwood[rows]
            info["defender_deadwood"][rows] = rec.defender_deadwood[rows]
            if rules.next_dealer == "winner":
                next_dealer[dead.size :] = seat
            else:
                next_dealer[dead.size :] = 1 - self.dealer[rows]
            result = post(rules, self.sheets, rows, seat, award)
            self._reward(rows, seat, result, rewards)
            over = rows[result.match_over]
            if over.size:
                info["match_over"][over] = True
                info["match_winner"][over] = result.match_winner[result.match_over]
                info["final_scores"][over] = self.sheets.scores[over]
                over_pos = np.flatnonzero(result.match_over) + dead.size
                if self.autoreset:
                    self._new_matches(over)
                    next_dealer[over_pos] = random_dealers(
                        self.seeds[over], self.match_number[over]
                    )
                else:
                    self._keep_finished(over)
                    self.phase[over] = A.PHASE_MATCH_OVER
                    keep = np.ones(ended.size, bool)
                    keep[over_pos] = False
                    ended, next_dealer = ended[keep], next_dealer[keep]
                    info["hand_over"][over] = True
        info["hand_over"][ended] = True
        if ended.size:
            decks = shuffled_decks(self.seeds[ended], self.deal_number[ended])
            self._deal(ended, decks, next_dealer)

    def _reward(self, rows: np.ndarray, seat: np.ndarray, result: Any, rewards: np.ndarray) -> None:
        mode = self.reward_mode
        if mode == "columns":
            rewards[rows] += result.column_delta / self.rules.columns
        elif mode == "points":
            gained = result.points.sum(axis=1) / (self.rules.target * self.rules.columns)
            rewards[rows, seat] += gained
            rewards[rows, 1 - seat] -= gained
        else:
            over = result.match_over
            won = result.match_winner[over].astype(np.int64)
            rewards[rows[over], won] += 1.0
            rewards[rows[over], 1 - won] -= 1.0

    # ------------------------------------------------------------------ observe
    def observe(self, player: int | None = None) -> dict[str, np.ndarray]:
        """Observation and action mask for the mover of each game, or for one seat."""
        from .observation import encode

        mask = self.legal_action_mask()
        if player is None:
            seats = self.current_player.astype(np.int64)
            action_mask = mask
        else:
            if player not in (0, 1):
                raise ValueError(f"player must be 0, 1 or None, got {player!r}")
            seats = np.full(self.num_games, player, np.int64)
            action_mask = np.where((self.current_player == player)[:, None], mask, 0).astype(
                np.int8
            )
        return {"observation": encode(self, seats), "action_mask": action_mask}

    # ------------------------------------------------------------------ state
    _STATE = (
        "hands",
        "known",
        "deck",
        "stock_pos",
        "pile",
        "pile_size",
        "pile_mask",
        "phase",
        "current_player",
        "dealer",
        "taken_card",
        "takes",
        "knock_limit",
        "discard_deadwood",
        "big_gin_ready",
        "deal_number",
        "match_number",
        "hands_in_match",
        "seeds",
    )

    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of every state array (sheets included), for saving and comparison."""
        state = {name: getattr(self, name).copy() for name in self._STATE}
        for name in ("scores", "decided", "column_winner", "wins", "boxes", "match_winner"):
            state[f"sheet_{name}"] = getattr(self.sheets, name).copy()
        return state

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        for name in self._STATE:
            getattr(self, name)[...] = state[name]
        for name in ("scores", "decided", "column_winner", "wins", "boxes", "match_winner"):
            getattr(self.sheets, name)[...] = state[f"sheet_{name}"]
        self._mask = None

    def state_bytes_per_game(self) -> int:
        total = sum(arr.nbytes for arr in self.state_dict().values())
        return total // self.num_games


def _check_decks(decks: Any, b: int) -> np.ndarray:
    arr = np.asarray(decks)
    if arr.shape != (b, NUM_CARDS):
        raise ValueError(f"decks must have shape ({b}, 52), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"decks must hold card ids, got dtype {arr.dtype}")
    ok = (np.sort(arr, axis=1) == np.arange(NUM_CARDS)).all(axis=1)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"decks[{i}] is not a permutation of the 52 card ids")
    return arr.astype(np.int8)


def _empty_info(b: int, columns: int) -> dict[str, np.ndarray]:
    return {
        "hand_over": np.zeros(b, bool),
        "dead_hand": np.zeros(b, bool),
        "hand_winner": np.full(b, -1, np.int8),
        "award": np.zeros(b, np.int32),
        "gin": np.zeros(b, bool),
        "big_gin": np.zeros(b, bool),
        "undercut": np.zeros(b, bool),
        "knocker": np.full(b, -1, np.int8),
        "knocker_deadwood": np.full(b, -1, np.int16),
        "defender_deadwood": np.full(b, -1, np.int16),
        "match_over": np.zeros(b, bool),
        "match_winner": np.full(b, -1, np.int8),
        "final_scores": np.zeros((b, 2, columns), np.int32),
    }
