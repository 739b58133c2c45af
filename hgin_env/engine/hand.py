"""What happens once per hand, as functions over (state, rows).

Dealing, showdowns, the record of a finished hand, posting to the sheet,
rewards, the next dealer and the start of the next match each live here
once.  :class:`~hgin_env.engine.VectorGame` calls them for every game whose
hand ended in a step; :class:`~hgin_env.engine.single.SingleGame` calls them for
its one game.  Only the per-step part of a turn is written per engine.

Randomness is counter based: the shuffle of a game's n-th deal is a pure
function of that game's seed and n, so a game plays the same whether it runs
alone or in a batch of thousands, and the same seed replays the same games.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

import numpy as np

from hgin_env import actions as A
from hgin_env.hollywood import PostResult, SheetBatch, post
from hgin_env.melds import arrange
from hgin_env.rules import Rules
from hgin_env.showdown import showdown_unchecked
from hgin_env.state import DEAD_HAND_POS, STOCK_START, GameState

__all__ = [
    "MAX_HANDS_PER_MATCH",
    "REWARD_MODES",
    "HandOutcome",
    "HandRecord",
    "deal",
    "empty_info",
    "end_hands",
    "game_seeds",
    "max_hand_steps",
    "max_match_steps",
    "next_matches",
    "random_dealers",
    "resolve_big_gins",
    "resolve_knocks",
    "restart",
    "rewards_for",
    "shuffled_decks",
    "start_new_matches",
    "stock_exhausted",
]

REWARD_MODES = ("match", "columns", "points")
#: The match bound (docs/rules.md Appendix C): a match still undecided when its
#: 2000th hand ends is cut off (truncated) with no winner.  Without it a match
#: need never end: the take limit bounds each hand, not the number of hands, and
#: under straight gin random play deals hundreds of dead hands per hand won.
#: Real matches are over 70x shorter (the simple agent's longest took 28 hands), and
#: even uniformly random play under the profiles took at most 870 (of 2,816 matches).
MAX_HANDS_PER_MATCH = 2000
_U64 = np.uint64
_ONE = _U64(1)
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_DEALER_SALT = _U64(0xD1B54A32D192ED03)
_GAME_SALT = _U64(0x8CB92BA72F3D8DD7)


# ---------------------------------------------------------------------- randomness


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
    keys = _splitmix(base[:, None] + np.arange(52, dtype=_U64) * _GOLDEN)
    return np.argsort(keys, axis=1).astype(np.int8)


def random_dealers(seeds: np.ndarray, match_numbers: np.ndarray) -> np.ndarray:
    """(n,) first dealer of each game's n-th match, a pure function of (seed, match number)."""
    mixed = _splitmix(seeds ^ _splitmix(match_numbers.astype(_U64) ^ _DEALER_SALT))
    return (mixed & _ONE).astype(np.int8)


def _bits(cards: np.ndarray) -> np.ndarray:
    return _ONE << cards.astype(_U64)


# ---------------------------------------------------------------------- deal


def _whole_batch(rows: np.ndarray, n: int) -> np.ndarray | slice:
    """``rows`` as a basic slice when it is the whole batch in order (much cheaper to
    index at small B, the one-game engine's case), else unchanged."""
    if rows.size == n and (n == 1 or np.array_equal(rows, np.arange(n))):
        return slice(None)
    return rows


def deal(state: GameState, rows: np.ndarray, decks: np.ndarray, dealers: np.ndarray) -> None:
    """Deal a new hand in ``rows`` from ``decks`` (n, 52) with the given dealers (§3)."""
    s = state
    seat_rows = rows
    rows = _whole_batch(rows, s.num_games)
    s.deck[rows] = decks
    first = np.bitwise_or.reduce(_bits(decks[:, 0:20:2]), axis=1)
    second = np.bitwise_or.reduce(_bits(decks[:, 1:20:2]), axis=1)
    nondealer = 1 - dealers
    s.hands[seat_rows, nondealer] = first
    s.hands[seat_rows, dealers] = second
    s.known[rows] = 0
    upcard = decks[:, 20]
    s.pile[rows, 0] = upcard
    s.pile_size[rows] = 1
    s.pile_mask[rows] = _bits(upcard)
    s.stock_pos[rows] = STOCK_START
    s.phase[rows] = A.PHASE_OFFER_NONDEALER
    s.dealer[rows] = dealers
    s.current_player[rows] = nondealer
    s.taken_card[rows] = -1
    s.takes[rows] = 0
    s.big_gin_ready[rows] = False
    s.knock_limit[rows] = s.rules.knock_limits(upcard)
    s.deal_number[rows] += 1
    s.hands_in_match[rows] += 1


def deal_next(state: GameState, rows: np.ndarray, dealers: np.ndarray) -> None:
    """Deal the next hand of each listed game from its own seed stream."""
    index = _whole_batch(rows, state.num_games)
    deal(state, rows, shuffled_decks(state.seeds[index], state.deal_number[index]), dealers)


def start_new_matches(state: GameState, rows: np.ndarray) -> None:
    """Fresh sheets and the next match number in ``rows`` (the deal comes separately)."""
    state.sheets.reset_rows(rows)
    state.match_number[rows] += 1
    state.hands_in_match[rows] = 0


def next_matches(state: GameState, rows: np.ndarray) -> None:
    """Start the next match of each listed game's seed stream and deal its first hand."""
    start_new_matches(state, rows)
    index = _whole_batch(rows, state.num_games)
    deal_next(state, rows, random_dealers(state.seeds[index], state.match_number[index]))


def restart(state: GameState, seeds: np.ndarray, decks: np.ndarray | None = None,
            dealers: np.ndarray | None = None) -> None:
    """Every game starts its seed stream afresh: first match, first deal.

    ``decks`` (B, 52) and ``dealers`` (B,) fix the first deal and dealer
    (checked by the caller); by default both come from the seeds.
    """
    rows = np.arange(state.num_games)
    state.seeds[:] = seeds
    state.deal_number[:] = 0
    state.match_number[:] = 0
    state.hands_in_match[:] = 0
    state.sheets.reset_rows(rows)
    if dealers is None:
        dealers = random_dealers(seeds, state.match_number)
    if decks is None:
        decks = shuffled_decks(seeds, state.deal_number)
    deal(state, rows, decks, dealers)


def max_hand_steps(rules: Rules) -> int:
    """The most steps (actions) one hand can last: two passes of the upcard, then at
    most 29 stock draws and ``max_discard_takes`` takes, each followed by one discard."""
    return 2 + 2 * (DEAD_HAND_POS - STOCK_START + rules.max_discard_takes)


def max_match_steps(rules: Rules) -> int:
    """The most steps one match can last under the match bound (every hand at its longest)."""
    return MAX_HANDS_PER_MATCH * max_hand_steps(rules)


def stock_exhausted(stock_pos: Any) -> Any:
    """§5 end of stock: a discard leaving exactly two stock cards ends the hand (int or array)."""
    return stock_pos == DEAD_HAND_POS


# ---------------------------------------------------------------------- records


@dataclass
class HandRecord:
    """The last finished hand of every game, kept for display: (B,) arrays.

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
        dtypes = {
            "knocker": np.int8, "winner": np.int8, "knocker_deadwood": np.int32,
            "defender_deadwood": np.int32, "award": np.int32,
            "gin": bool, "big_gin": bool, "undercut": bool, "dead": bool, "valid": bool,
        }
        fill = {"knocker": -1, "winner": -1}
        return cls(**{
            f.name: np.full(n, fill.get(f.name, 0), dtypes.get(f.name, _U64))
            for f in fields(cls)
        })

    def write(self, rows: np.ndarray, **values: Any) -> None:
        """Set the named fields of the listed games; fields not named are left as they are."""
        index = _whole_batch(rows, self.knocker.shape[0])
        for name, value in values.items():
            getattr(self, name)[index] = value

    def take(self, rows: Any) -> HandRecord:
        return HandRecord(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})


@dataclass
class HandOutcome:
    """Hands won this step: the rows, the winning seat and the award (n,) each."""

    rows: np.ndarray
    winner: np.ndarray
    award: np.ndarray

    @staticmethod
    def join(parts: list[HandOutcome]) -> HandOutcome | None:
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return HandOutcome(*(np.concatenate([getattr(p, k) for p in parts])
                             for k in ("rows", "winner", "award")))


def resolve_knocks(state: GameState, record: HandRecord, rows: np.ndarray,
                   seats: np.ndarray) -> HandOutcome:
    """§6–8 showdown of the listed knocks (the knock discard already made); fills ``record``."""
    s = state
    k_hand, d_hand = s.hands[rows, seats], s.hands[rows, 1 - seats]
    sd = showdown_unchecked(k_hand, d_hand, s.knock_limit[rows], s.rules)
    winner = np.where(sd.winner == 0, seats, 1 - seats).astype(np.int64)
    record.write(
        rows, knocker=seats, knocker_hand=k_hand, defender_hand=d_hand, winner=winner,
        award=sd.award, gin=sd.gin, big_gin=False, undercut=sd.undercut, dead=False, valid=True,
        knocker_meld_mask=sd.knocker_meld_mask, knocker_set_mask=sd.knocker_set_mask,
        defender_meld_mask=sd.defender_meld_mask, defender_set_mask=sd.defender_set_mask,
        layoffs=sd.layoffs, knocker_deadwood=sd.knocker_deadwood,
        defender_deadwood=sd.defender_deadwood,
    )
    return HandOutcome(rows, winner, sd.award.astype(np.int64))


def resolve_big_gins(state: GameState, record: HandRecord, rows: np.ndarray,
                     seats: np.ndarray) -> HandOutcome:
    """§7 big gin: the 11-card hand wins ``big_gin_bonus`` plus the defender's deadwood."""
    s = state
    k_hand, d_hand = s.hands[rows, seats], s.hands[rows, 1 - seats]
    d_dead, d_sets, d_runs = arrange(d_hand)
    award = (s.rules.big_gin_bonus + d_dead).astype(np.int64)
    record.write(
        rows, knocker=seats, knocker_hand=k_hand, defender_hand=d_hand, winner=seats,
        award=award, gin=True, big_gin=True, undercut=False, dead=False, valid=True,
        knocker_meld_mask=k_hand, knocker_set_mask=0, defender_meld_mask=d_sets | d_runs,
        defender_set_mask=d_sets, layoffs=0, knocker_deadwood=0, defender_deadwood=d_dead,
    )
    return HandOutcome(rows, seats.astype(np.int64), award)


def record_dead_hands(state: GameState, record: HandRecord, rows: np.ndarray) -> None:
    """A dead hand has no showdown: no melds, layoffs or deadwood (none left from the last)."""
    record.write(
        rows, knocker=-1, knocker_hand=state.hands[rows, 0], defender_hand=state.hands[rows, 1],
        knocker_meld_mask=0, knocker_set_mask=0, defender_meld_mask=0, defender_set_mask=0,
        layoffs=0, knocker_deadwood=0, defender_deadwood=0,
        winner=-1, award=0, gin=False, big_gin=False, undercut=False, dead=True, valid=True,
    )


# ---------------------------------------------------------------------- end of hand


def empty_info(b: int, columns: int) -> dict[str, np.ndarray]:
    """The step info of B games in which no hand ended (fresh arrays every call)."""
    return {key: value.copy() for key, value in _info_template(b, columns).items()}


@lru_cache(maxsize=16)
def _info_template(b: int, columns: int) -> dict[str, np.ndarray]:
    """One read-only set of empty info arrays per shape; copying them is cheaper than
    building each again (this runs on every engine step)."""
    template = _new_info(b, columns)
    for value in template.values():
        value.flags.writeable = False
    return template


def _new_info(b: int, columns: int) -> dict[str, np.ndarray]:
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
        "truncated": np.zeros(b, bool),
        "match_winner": np.full(b, -1, np.int8),
        "final_scores": np.zeros((b, 2, columns), np.int32),
    }


def rewards_for(mode: str, rules: Rules, rows: np.ndarray, seat: np.ndarray,
                result: PostResult, rewards: np.ndarray) -> None:
    """Add the reward of posting ``result`` to ``rewards`` (B, 2), by reward mode."""
    if mode == "columns":  # in float64, so a float64 ``rewards`` sums exactly
        rewards[rows] += result.column_delta.astype(np.float64) / rules.columns
    elif mode == "points":
        gained = result.points.sum(axis=1) / (rules.target * rules.columns)
        rewards[rows, seat] += gained
        rewards[rows, 1 - seat] -= gained
    else:
        over = result.match_over
        won = result.match_winner[over].astype(np.int64)
        rewards[rows[over], won] += 1.0
        rewards[rows[over], 1 - won] -= 1.0


def end_hands(
    state: GameState,
    dead: np.ndarray,
    outcome: HandOutcome | None,
    *,
    record: HandRecord,
    last_match: SheetBatch,
    reward_mode: str,
    autoreset: bool,
    rewards: np.ndarray,
    info: dict[str, np.ndarray],
) -> None:
    """Finish the hands of ``dead`` rows and of ``outcome``; post, reward, deal on (§9–10).

    Fills ``rewards`` (B, 2) and ``info`` in place.  A match that ended, or
    that reached :data:`MAX_HANDS_PER_MATCH` hands undecided (``info["truncated"]``,
    no winner, no reward), is copied to ``last_match`` and either replaced by a
    fresh one (``autoreset``) or parked in ``PHASE_MATCH_OVER``.
    """
    rules = state.rules
    ended = dead if outcome is None else np.concatenate([dead, outcome.rows])
    next_dealer = np.empty(ended.size, np.int8)
    # Matches that end in this step: decided below, or cut off by the match bound.
    finished = state.hands_in_match[ended] >= MAX_HANDS_PER_MATCH
    if dead.size:
        record_dead_hands(state, record, dead)
        info["dead_hand"][dead] = True
        same = rules.dead_hand_dealer == "same"
        next_dealer[: dead.size] = state.dealer[dead] if same else 1 - state.dealer[dead]
    if outcome is not None:
        rows, seat = outcome.rows, outcome.winner
        info["hand_winner"][rows] = seat
        info["award"][rows] = outcome.award
        for key in ("gin", "big_gin", "undercut", "knocker", "knocker_deadwood",
                    "defender_deadwood"):
            info[key][rows] = getattr(record, key)[rows]
        if rules.next_dealer == "winner":
            next_dealer[dead.size :] = seat
        else:
            next_dealer[dead.size :] = 1 - state.dealer[rows]
        result = post(rules, state.sheets, rows, seat, outcome.award)
        rewards_for(reward_mode, rules, rows, seat, result, rewards)
        over = result.match_over
        if over.any():
            info["match_over"][rows[over]] = True
            info["match_winner"][rows[over]] = result.match_winner[over]
            finished[dead.size :] |= over
    if finished.any():
        done = ended[finished]
        info["truncated"][done] = ~info["match_over"][done]
        info["final_scores"][done] = state.sheets.scores[done]
        last_match.put(done, state.sheets.take(done))
        if autoreset:
            start_new_matches(state, done)
            next_dealer[finished] = random_dealers(state.seeds[done], state.match_number[done])
        else:
            state.phase[done] = A.PHASE_MATCH_OVER
            info["hand_over"][done] = True
            ended, next_dealer = ended[~finished], next_dealer[~finished]
    info["hand_over"][ended] = True
    if ended.size:
        deal_next(state, ended, next_dealer)
