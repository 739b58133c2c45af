"""The showdown after a knock (docs/rules.md §7-8), exact and batched.

The knocker's choice is a real search: which sets to declare, and for every
run block whether to trim a card off either end (a trimmed end card is the
knocker's own, so nothing can be laid off past it) or, for a block of three
or four, to leave it unmelded.  Trimming more than one card per end or
splitting a block only adds deadwood without blocking anything more, so
those arrangements are never better and are not enumerated.

For a fixed knocker arrangement and a fixed choice of the defender's sets,
the defender's best answer has a closed form: every block of the defender's
remaining cards that touches a run end is laid off whole (a chain), a
card that completes one of the knocker's sets of three is laid off when it
would otherwise be deadwood, and the rest melds into runs by blocks.
All of it is bit arithmetic on four 16-bit suit lanes (see ``bitlanes``).

Under ``layoff = "declared-greedy"`` (the ``eaai`` profile, docs/eaai.md) the defender's
answer is the EAAI Java referee's instead: the defender declares its melds, and its
other cards go one at a time, in the Java framework's card order, onto the first
knocker meld they fit, in the order the knocker declared them.  The knocker's choice
then includes that order, and the referee's loop runs batched over every candidate.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from hgin_env import bitlanes as bl
from hgin_env.melds import as_masks, expand_set_choices, lane_value, segment_starts, split_melds
from hgin_env.rules import Rules

_U64 = np.uint64
_ONE = _U64(1)
#: Score of an arrangement the knock limit does not allow.
_INVALID = -(1 << 30)


@dataclass(frozen=True)
class ShowdownBatch:
    """Outcome of N showdowns; every field is an (N,) array.

    Masks are card-id ``uint64`` masks: the knocker's melded cards and the
    part of them in sets, the defender's own melded cards and sets, and the
    defender's cards laid off onto the knocker's melds.  ``undercut``: the
    defender won a knock that was not gin (the one definition of an undercut).
    """

    knocker_deadwood: np.ndarray
    defender_deadwood: np.ndarray
    gin: np.ndarray
    winner: np.ndarray
    award: np.ndarray
    knocker_meld_mask: np.ndarray
    knocker_set_mask: np.ndarray
    defender_meld_mask: np.ndarray
    defender_set_mask: np.ndarray
    layoffs: np.ndarray
    undercut: np.ndarray


@dataclass(frozen=True)
class Showdown:
    """One showdown, recorded whole so it can be displayed and tested."""

    knocker_hand: int
    defender_hand: int
    knocker_melds: list[int]
    knocker_deadwood_cards: int
    defender_melds: list[int]
    layoffs: int
    defender_deadwood_cards: int
    knocker_deadwood: int
    defender_deadwood: int
    gin: bool
    winner: int
    award: int
    undercut: bool = field(default=False)


def _expand_run_trims(origin: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One row per non-dominated way to declare each run block.

    Returns ``(rows, dropped)``: indices into the input rows and the lane mask
    of run cards left as deadwood.  A block of 3 is declared or not; of 4,
    whole, trimmed at one end, or not; of 5+, whole or trimmed at either or
    both ends.
    """
    rows = np.arange(origin.shape[0])
    dropped = np.zeros(origin.shape[0], dtype=_U64)
    lows = bl.block_low_ends(runs)
    highs = bl.block_high_ends(runs)
    while lows.any():
        low = bl.lowest_bit(lows)
        above = highs & ~(low - _ONE)
        high = bl.lowest_bit(above)
        block = np.where(low != 0, ((high << _ONE) - low), _U64(0))
        length = np.bitwise_count(block)
        options = np.zeros((rows.shape[0], 4), dtype=_U64)
        # slot 0: declare whole; then by length
        short = length <= 3
        four = length == 4
        options[:, 1] = np.where(short | four, block, low)
        options[:, 2] = np.where(four, low, high)
        options[:, 3] = np.where(four, high, low | high)
        counts = np.where(low == 0, 1, np.where(short, 2, 4))
        pick = np.repeat(np.arange(rows.shape[0]), counts)
        starts = np.cumsum(counts) - counts
        choice = np.arange(pick.shape[0]) - starts[pick]
        dropped = dropped[pick] | options[pick, choice]
        rows = rows[pick]
        lows = lows[pick] & ~low[pick]
        highs = highs[pick] & ~high[pick]
    return rows, dropped


def _cross(left_origin: np.ndarray, right_origin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (left, right) index pairs with equal origin, grouped by left row."""
    n = int(max(left_origin.max(initial=-1), right_origin.max(initial=-1))) + 1
    right_counts = np.bincount(right_origin, minlength=n)
    right_starts = np.cumsum(right_counts) - right_counts
    reps = right_counts[left_origin]
    left = np.repeat(np.arange(left_origin.shape[0]), reps)
    offsets = np.arange(left.shape[0]) - np.repeat(np.cumsum(reps) - reps, reps)
    right = right_starts[left_origin[left]] + offsets
    return left, right


def _first_best(key: np.ndarray, origin: np.ndarray, num: int, maximise: bool) -> np.ndarray:
    """Index of the first row with the best ``key`` in each origin group."""
    starts = segment_starts(origin)
    reduce = np.maximum if maximise else np.minimum
    best = reduce.reduceat(key, starts)
    hits = np.flatnonzero(key == best[origin])
    first = np.unique(origin[hits], return_index=True)[1]
    chosen = hits[first]
    if chosen.shape[0] != num:
        raise AssertionError("showdown lost a hand while choosing")
    return chosen


#: The defender's answers to N knocker rows: ``(rows, best_pair, d_dead, d_sets, right,
#: own_runs, laid)``.  ``rows`` maps each candidate knocker row to its arrangement;
#: ``best_pair[i]`` is the pair row of candidate ``i``'s best answer; the pair-level
#: arrays are its deadwood, set choice (``d_sets[right]``), own runs and layoffs.
Answers = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                np.ndarray]


def _optimal_answers(
    k_origin: np.ndarray, k_sets: np.ndarray, k_runs: np.ndarray, no_layoff: np.ndarray,
    d_lanes: np.ndarray,
) -> Answers:
    """The defender's least deadwood against each knocker arrangement, in closed form."""
    # What the defender may lay off: run ends one rank beyond each declared run,
    # and the missing fourth card of each declared set of three.
    up_seeds = (bl.block_high_ends(k_runs) << _ONE) & bl.LANE_CARDS
    down_seeds = bl.block_low_ends(k_runs) >> _ONE & bl.LANE_CARDS
    threes = bl.ranks_with_at_least(k_sets, 3) & ~bl.ranks_with_at_least(k_sets, 4)
    fourth = bl.rank_columns(threes) & ~k_sets
    up_seeds[no_layoff] = 0
    down_seeds[no_layoff] = 0
    fourth[no_layoff] = 0

    # Defender answers: every set choice against every knocker arrangement.
    d_origin, d_sets = expand_set_choices(d_lanes)
    left, right = _cross(k_origin, d_origin)
    avail = d_lanes[d_origin[right]] & ~d_sets[right]
    chains = bl.fill_up(up_seeds[left] & avail, avail) | bl.fill_down(down_seeds[left], avail)
    rest = avail & ~chains
    own_runs = bl.run_cards(rest)
    loose = rest & ~own_runs
    fourths = loose & fourth[left]
    d_dead = lane_value(loose & ~fourths)
    best_pair = _first_best(d_dead, left, k_origin.shape[0], maximise=False)
    rows = np.arange(k_origin.shape[0])
    return rows, best_pair, d_dead, d_sets, right, own_runs, chains | fourths


#: Every order of three declared melds, the identity first (``PERMS[p]`` lists the
#: slots in declaration order), and whether order ``p`` keeps empty slots ``c..2`` in
#: place, so a knocker with ``c`` melds tries each of its ``c!`` orders once.
PERMS = np.array(list(itertools.permutations(range(3))), dtype=np.intp)
_PERM_FOR_COUNT = np.array(
    [[all(perm[j] == j for j in range(c, 3)) for c in range(4)] for perm in PERMS])
#: Lane offsets (bits) in the Java framework's card order: clubs, hearts, spades,
#: diamonds (``Card.suitNames``), against hgin's clubs, diamonds, hearts, spades.
_JAVA_LANES = (0, 32, 48, 16)


def _meld_slots(k_sets: np.ndarray, k_runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The declared melds of each arrangement as ``(m, 3)`` lane masks, and their count.

    Sets by rank, then runs by suit and rank (the order of ``melds.split_melds``);
    a knocker's ten cards hold at most three melds, empty slots are last.
    """
    slots = np.zeros((k_sets.shape[0], 6), dtype=_U64)
    ranks = (k_sets | k_sets >> _U64(16) | k_sets >> _U64(32) | k_sets >> _U64(48)) & bl.SUIT_BITS
    lows = bl.block_low_ends(k_runs)
    highs = bl.block_high_ends(k_runs)
    for j in range(3):
        low = bl.lowest_bit(ranks)
        slots[:, j] = bl.rank_columns(low) & k_sets
        ranks &= ~low
        low = bl.lowest_bit(lows)
        high = bl.lowest_bit(highs & ~(low - _ONE))
        slots[:, 3 + j] = np.where(low != 0, (high << _ONE) - low, _U64(0))
        lows &= ~low
        highs &= ~high
    order = np.argsort(slots == 0, axis=1, kind="stable")
    slots = np.take_along_axis(slots, order, axis=1)
    count = np.count_nonzero(slots, axis=1)
    if (count > 3).any():
        raise AssertionError("a ten-card arrangement declared more than three melds")
    return slots[:, :3], count


def _fits(melds: np.ndarray) -> np.ndarray:
    """The cards that would extend each lane-mask meld: a set of three's missing card,
    a run's card one rank beyond either end (a set of four takes none)."""
    ranks = (melds | melds >> _U64(16) | melds >> _U64(32) | melds >> _U64(48)) & bl.SUIT_BITS
    rank_count = np.bitwise_count(ranks)
    three_set = (rank_count == 1) & (np.bitwise_count(melds) == 3)
    set_fit = np.where(three_set, bl.rank_columns(ranks) & ~melds, _U64(0))
    ends = ((melds << _ONE) | (melds >> _ONE)) & bl.LANE_CARDS & ~melds
    return set_fit | np.where(rank_count >= 3, ends, _U64(0))


def _orders_matter(melds: np.ndarray, defender: np.ndarray) -> np.ndarray:
    """Whether two of a row's melds could ever take the same defender card.

    A meld only ever takes cards of its reach: a set of three its missing card, a run the
    defender's cards chained on from either end.  When the reaches are disjoint every
    card has one destination, so the declaration order cannot change the layoffs.
    """
    held = defender[:, None]
    up = bl.fill_up((bl.block_high_ends(melds) << _ONE) & bl.LANE_CARDS & held, held)
    down = bl.fill_down((bl.block_low_ends(melds) >> _ONE) & bl.LANE_CARDS, held)
    ranks = (melds | melds >> _U64(16) | melds >> _U64(32) | melds >> _U64(48)) & bl.SUIT_BITS
    reach = np.where(np.bitwise_count(ranks) >= 3, up | down, _fits(melds) & held)
    a, b, c = reach[:, 0], reach[:, 1], reach[:, 2]
    return ((a & b) | (a & c) | (b & c)) != 0


def _first_in_java_order(cards: np.ndarray) -> np.ndarray:
    """The first card of each lane mask in the Java framework's card order."""
    out = np.zeros_like(cards)
    for offset in reversed(_JAVA_LANES):
        lane = cards & (bl.SUIT_BITS << _U64(offset))
        out = np.where(lane != 0, bl.lowest_bit(lane), out)
    return out


def _lay_off_greedy(melds: np.ndarray, owner: np.ndarray, loose: np.ndarray) -> np.ndarray:
    """The Java referee's layoff (``GinRummyGame.play``): repeatedly the first loose card,
    in Java card order, that fits any meld goes onto the first meld (in declaration
    order) it fits.  ``melds`` (R, 3) lane masks in declaration order, ``owner`` (P,) the
    melds' row of each of the P ``loose`` masks; returns the laid cards (P,).

    Vectorised over rows; each pass lays one card per row, so it ends within ten passes.
    A set's fit never changes (its missing card, gone once laid), so only runs are
    recomputed per pass.
    """
    ranks = (melds | melds >> _U64(16) | melds >> _U64(32) | melds >> _U64(48)) & bl.SUIT_BITS
    run_slot = np.bitwise_count(ranks) >= 3
    fits = _fits(melds)[owner] & loose[:, None]
    live = np.flatnonzero(fits.any(axis=1))
    grown = melds[owner[live]]
    is_run = run_slot[owner[live]]
    fits = fits[live]
    set_fit = np.where(is_run, _U64(0), fits)
    left = loose[live]
    laid = np.zeros_like(loose)
    while live.size:
        cands = fits[:, 0] | fits[:, 1] | fits[:, 2]
        keep = cands != 0
        if not keep.all():
            live, fits, cands = live[keep], fits[keep], cands[keep]
            grown, is_run, set_fit, left = grown[keep], is_run[keep], set_fit[keep], left[keep]
        if not live.size:
            break
        card = _first_in_java_order(cands)
        slot = np.argmax((fits & card[:, None]) != 0, axis=1)
        grown[np.arange(live.size), slot] |= card
        left &= ~card
        laid[live] |= card
        ends = ((grown << _ONE) | (grown >> _ONE)) & bl.LANE_CARDS
        fits = np.where(is_run, ends, set_fit) & left[:, None]
    return laid


def _greedy_answers(
    k_origin: np.ndarray, k_sets: np.ndarray, k_runs: np.ndarray, no_layoff: np.ndarray,
    d_lanes: np.ndarray,
) -> Answers:
    """The defender's least deadwood under the Java referee's layoff, for every order
    the knocker may declare its melds in where the order matters (one candidate row each).

    The defender declares a set choice and every run block of the cards left (a run
    card held back could only go where its own block would follow it, so declaring
    never loses), and the referee lays the rest off greedily.
    """
    melds, count = _meld_slots(k_sets, k_runs)
    melds[no_layoff] = 0
    # One order (the identity) where the order cannot matter, every order elsewhere.
    count = np.where(_orders_matter(melds, d_lanes[k_origin]), count, 0)
    rows, perm = np.nonzero(_PERM_FOR_COUNT[:, count].T)
    ordered = melds[rows[:, None], PERMS[perm]]
    d_origin, d_sets = expand_set_choices(d_lanes)
    left, right = _cross(k_origin[rows], d_origin)
    avail = d_lanes[d_origin[right]] & ~d_sets[right]
    own_runs = bl.run_cards(avail)
    loose = avail & ~own_runs
    laid = _lay_off_greedy(ordered, left, loose)
    d_dead = lane_value(loose & ~laid)
    best_pair = _first_best(d_dead, left, rows.shape[0], maximise=False)
    return rows, best_pair, d_dead, d_sets, right, own_runs, laid


def showdown_batch(
    knocker: np.ndarray,
    defender: np.ndarray,
    knock_limit: np.ndarray | int,
    rules: Rules,
) -> ShowdownBatch:
    """Resolve N showdowns at once (10-card knocker after the discard, 10-card defender)."""
    knocker = as_masks(knocker).reshape(-1)
    defender = as_masks(defender).reshape(-1)
    n = knocker.shape[0]
    if defender.shape[0] != n:
        raise ValueError("knocker and defender arrays differ in length")
    if (knocker & defender).any():
        raise ValueError("knocker and defender hands share a card")
    limit = np.broadcast_to(np.asarray(knock_limit, dtype=np.int64), (n,))
    return showdown_unchecked(knocker, defender, limit, rules)


def showdown_unchecked(
    knocker: np.ndarray, defender: np.ndarray, limit: np.ndarray, rules: Rules
) -> ShowdownBatch:
    """:func:`showdown_batch` on 1-D ``uint64`` arrays known to be valid (engine path)."""
    n = knocker.shape[0]
    if n == 0:
        ints, masks = np.zeros(0, np.int32), np.zeros(0, _U64)
        return ShowdownBatch(
            ints,
            ints,
            np.zeros(0, bool),
            np.zeros(0, np.int8),
            ints,
            masks,
            masks,
            masks,
            masks,
            masks,
            np.zeros(0, bool),
        )
    k_lanes = bl.to_lanes(knocker)
    d_lanes = bl.to_lanes(defender)

    # Knocker arrangements: set choices x run-block declarations.
    k_origin, k_sets = expand_set_choices(k_lanes)
    k_runs_all = bl.run_cards(k_lanes[k_origin] & ~k_sets)
    trim_rows, dropped = _expand_run_trims(k_origin, k_runs_all)
    k_origin = k_origin[trim_rows]
    k_sets = k_sets[trim_rows]
    k_runs = k_runs_all[trim_rows] & ~dropped
    k_dead = lane_value(k_lanes[k_origin] & ~k_sets & ~k_runs)
    gin_hand = np.zeros(n, dtype=bool)
    np.logical_or.at(gin_hand, k_origin, k_dead == 0)

    no_layoff = gin_hand[k_origin]
    answers = _greedy_answers if rules.layoff == "declared-greedy" else _optimal_answers
    rows, best_pair, d_dead, d_sets, right, own_runs, laid = answers(
        k_origin, k_sets, k_runs, no_layoff, d_lanes)

    # The knocker's choice: the candidate row with the best margin against its answer.
    origin = k_origin[rows]
    k_dead = k_dead[rows]
    defender_dead_k = d_dead[best_pair]
    valid = k_dead <= limit[origin]
    key = np.where(valid, (defender_dead_k - k_dead) * 256 - k_dead, _INVALID)
    chosen = _first_best(key, origin, n, maximise=True)
    if not valid[chosen].all():
        bad = int(np.flatnonzero(~valid[chosen])[0])
        raise ValueError(
            f"hand {bad}: the knocker's deadwood exceeds the knock limit {int(limit[bad])}"
        )
    pair = best_pair[chosen]
    arrangement = rows[chosen]

    k_deadwood = k_dead[chosen].astype(np.int32)
    d_deadwood = d_dead[pair].astype(np.int32)
    gin = gin_hand
    knock_wins = gin | (k_deadwood < d_deadwood)
    winner = np.where(knock_wins, 0, 1).astype(np.int8)
    award = np.where(
        gin,
        rules.gin_bonus + d_deadwood,
        np.where(
            knock_wins, d_deadwood - k_deadwood, rules.undercut_bonus + k_deadwood - d_deadwood
        ),
    ).astype(np.int32)
    return ShowdownBatch(
        knocker_deadwood=k_deadwood,
        defender_deadwood=d_deadwood,
        gin=gin,
        winner=winner,
        award=award,
        knocker_meld_mask=bl.from_lanes(k_sets[arrangement] | k_runs[arrangement]),
        knocker_set_mask=bl.from_lanes(k_sets[arrangement]),
        defender_meld_mask=bl.from_lanes(d_sets[right[pair]] | own_runs[pair]),
        defender_set_mask=bl.from_lanes(d_sets[right[pair]]),
        layoffs=bl.from_lanes(laid[pair]),
        undercut=~gin & ~knock_wins,
    )


def showdown(
    knocker_mask: int,
    defender_mask: int,
    rules: Rules,
    knock_limit: int | None = None,
) -> Showdown:
    """One showdown as a full record (see :class:`Showdown`).

    ``knock_limit`` defaults to ``rules.knock_limit``; pass the hand's own limit
    under Oklahoma.  Raises ``ValueError`` if the knocker may not knock.
    """
    limit = rules.knock_limit if knock_limit is None else knock_limit
    result = showdown_batch(np.array([knocker_mask]), np.array([defender_mask]), limit, rules)
    k_melded = int(result.knocker_meld_mask[0])
    k_sets = int(result.knocker_set_mask[0])
    d_melded = int(result.defender_meld_mask[0])
    d_sets = int(result.defender_set_mask[0])
    layoffs = int(result.layoffs[0])
    winner = int(result.winner[0])
    gin = bool(result.gin[0])
    return Showdown(
        knocker_hand=int(knocker_mask),
        defender_hand=int(defender_mask),
        knocker_melds=split_melds(k_sets, k_melded & ~k_sets),
        knocker_deadwood_cards=int(knocker_mask) & ~k_melded,
        defender_melds=split_melds(d_sets, d_melded & ~d_sets),
        layoffs=layoffs,
        defender_deadwood_cards=int(defender_mask) & ~d_melded & ~layoffs,
        knocker_deadwood=int(result.knocker_deadwood[0]),
        defender_deadwood=int(result.defender_deadwood[0]),
        gin=gin,
        winner=winner,
        award=int(result.award[0]),
        undercut=bool(result.undercut[0]),
    )
