"""Play agents against each other on one :class:`VectorGame`, vectorised.

Two building blocks, reusable by the trainer's evaluation and by
``evaluate.py``:

* :func:`act_split` — given which agent moves in each game, call every
  agent once on its subset of rows (``{"observation", "action_mask"}``
  slices) and assemble one action per game, checking legality.
* :class:`Arena` — plays exactly one full Hollywood match per game for two
  agents, in parallel, and records per-match statistics
  (:class:`MatchStats`).  With ``duplicate=True`` (the default) games come
  in pairs that share a seed, agent A in seat 0 in one game of the pair and
  in seat 1 in the other: the deal of hand *n* is a pure function of the
  seed and *n*, and the first dealer of a match comes from the seed too, so
  each agent is dealt exactly the cards (and faces the same upcard and
  stock order) its opponent had in the twin game.  This holds for every
  hand both matches reach: deal *n* is the same shuffle in both games, and
  the seat that deals it agrees whenever the dealer sequence agrees —
  always with ``next_dealer = alternate`` and ``dead_hand_dealer =
  alternate`` (the ``friendly`` profile); when the winner deals
  (``classic``, ``bonus``), a different hand winner can swap which seat
  receives which half of the same shuffle.  Hands that one match plays
  after its twin has ended have no counterpart.

The engine starts a new match in a game as soon as its match ends; the
arena stops counting that game at once (``active`` goes false) and, when
enough games are finished, compacts the batch so finished games cost
nothing.

Random choices are per match: every match owns a generator derived from its
deal seed (:func:`match_rngs`), and an agent that draws random numbers is
called one game at a time with that game's generator (see
:func:`act_split`).  So no result depends on which other games share a
batch — compaction and ``batch_size`` change the speed, never the games.

Every win rate comes with one kind of interval: the 95% Wilson interval on
the pair-clustered effective sample size (:func:`clustered_rate`).

An agent that raises instead of choosing (an external program that stopped
answering, say) ends the play with :class:`AgentFailed`, which names the
agent, the match, its hand and move, and the reason; :func:`play_matches`
first hands on the records of every match that had finished.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import numpy as np

from agents.base import Agent, RowGenerators
from agents.evaluation.stats import clustered_wilson
from hgin_env import actions as A
from hgin_env.engine.vector import VectorGame, game_seeds
from hgin_env.history import history_for
from hgin_env.records.format import MatchRecorder
from hgin_env.rules import Rules, load_rules, require_rules

#: Compact the batch once fewer than this fraction of its games are still playing.
COMPACT_BELOW = 0.7


def _seeds(seed: int | np.ndarray, count: int) -> np.ndarray:
    arr = np.asarray(seed)
    if arr.ndim == 0:
        return game_seeds(int(arr), count)
    if arr.shape != (count,):
        raise ValueError(f"expected {count} seeds, got shape {arr.shape}")
    return arr.astype(np.uint64)


def match_seeds(seed: int, count: int) -> np.ndarray:
    """The ``count`` deal seeds an :class:`Arena` seeded with ``seed`` uses (one per pair)."""
    return game_seeds(int(seed), count)


def seed_chunks(seed: int, num_matches: int, duplicate: bool, per: int
                ) -> list[tuple[int, np.ndarray]]:
    """``(first unit, deal seeds)`` of consecutive chunks of ``per`` units (a duplicate
    pair, or one match without ``duplicate``) covering ``num_matches`` matches: the slices
    both the batched :func:`play_matches` and the Ray workers play.  No result depends on
    how the matches are cut, since every match is dealt from its own seed."""
    units = -(-num_matches // (2 if duplicate else 1))
    seeds = match_seeds(seed, units)
    per = max(1, per)
    return [(start, seeds[start : start + per]) for start in range(0, units, per)]


def filler_actions(mask: np.ndarray) -> np.ndarray:
    """A cheap legal action per row (the lowest legal id), for games nobody plays."""
    return np.argmax(np.asarray(mask) > 0, axis=1).astype(np.int64)


#: Mixed into every per-match generator's seed, so it differs from the deal stream.
_MATCH_RNG_TAG = 0x5EA7


def match_rngs(seeds: np.ndarray, position: np.ndarray) -> np.ndarray:
    """One generator per match (an object array), a pure function of its deal seed.

    ``position`` tells apart matches that share a seed (the two seatings of
    a duplicate pair).  Deriving the generator from the match, not from the
    batch it is played in, is what makes results independent of batching.
    """
    seeds, position = np.asarray(seeds).tolist(), np.asarray(position).tolist()
    out = np.empty(len(seeds), dtype=object)
    for i, (seed, pos) in enumerate(zip(seeds, position, strict=True)):
        out[i] = np.random.default_rng(np.random.SeedSequence([int(seed), int(pos),
                                                               _MATCH_RNG_TAG]))
    return out


class AgentFailed(RuntimeError):
    """An agent raised instead of choosing a move: which agent, where, and why.

    :func:`act_split` raises it with the game ``row`` (``None`` when a batched call
    failed on a row it cannot tell); :class:`Arena` fills in the ``match`` (its index),
    its ``hand`` and ``move`` (both from 1) and how many matches were ``in_play``;
    :func:`play_matches` counts ``match`` across its batches and sets ``recorded`` (the
    finished matches it handed to ``record``); a tournament adds the ``pairing``, names
    the ``agent`` as its tables do and counts ``match`` across the tournament, as its
    records are numbered.  ``str()`` is one line.  The agent's own exception is the
    ``__cause__``; ``reason`` its text.
    """

    def __init__(self, agent: str, reason: str, row: int | None = None,
                 index: int | None = None) -> None:
        super().__init__(agent, reason, row, index)
        self.agent = agent
        self.reason = reason
        self.row = row
        #: Which of the agents given to :func:`act_split` failed (0: agent A in an arena).
        self.index = index
        self.match: int | None = None
        self.hand: int | None = None
        self.move: int | None = None
        self.in_play = 0
        self.recorded = 0
        self.pairing: tuple[str, str] | None = None

    def __str__(self) -> str:
        if self.match is not None:
            where = f"in match {self.match}"
        elif self.in_play > 1:
            where = f"in one of the {self.in_play} matches in play"
        else:
            where = "in a match"
        if self.pairing is not None:
            where += f" ({self.pairing[0]} vs {self.pairing[1]})"
        if self.hand is not None and self.move is not None:
            where += f", hand {self.hand}, move {self.move} of the match"
        return f"agent {self.agent!r} failed {where}: {self.reason}"


def _failure(agent: Agent, index: int, err: Exception, rows: np.ndarray,
             one: int | None = None) -> AgentFailed:
    """``err``, raised by ``agent`` asked about game ``rows``, as :class:`AgentFailed`:
    the failing row is ``one``, or the row the error names (``err.row``, an index into
    the rows asked, as :class:`~agents.text_agent.TextAgentError` gives), or the only one."""
    if isinstance(err, AgentFailed):
        return err
    if one is None:
        sub = getattr(err, "row", None)
        if isinstance(sub, int) and 0 <= sub < rows.size:
            one = int(rows[sub])
        elif rows.size == 1:
            one = int(rows[0])
    name = str(getattr(agent, "name", index))
    reason = str(err) or type(err).__name__
    return AgentFailed(name, reason if isinstance(err, RuntimeError)
                       else f"{type(err).__name__}: {reason}", one, index)


def _checked(agent: Agent, index: int, mask: np.ndarray, rows: np.ndarray, chosen: object,
             check: bool) -> np.ndarray:
    """``chosen`` as int64, checked for shape and (with ``check``) legality on ``rows``."""
    chosen = np.asarray(chosen, dtype=np.int64)
    name = getattr(agent, "name", index)
    if chosen.shape != (rows.size,):
        raise ValueError(f"agent {name!r} returned shape {chosen.shape}, expected ({rows.size},)")
    if check:
        ok = (chosen >= 0) & (chosen < A.NUM_ACTIONS)
        ok[ok] = mask[rows[ok], chosen[ok]] > 0
        if not ok.all():
            j = int(np.flatnonzero(~ok)[0])
            raise ValueError(
                f"agent {name!r} chose illegal action {int(chosen[j])} in game row "
                f"{int(rows[j])}; legal: {np.flatnonzero(mask[rows[j]]).tolist()}"
            )
    return chosen


def _act_per_row(agent: Agent, index: int, obs: dict[str, np.ndarray], rows: np.ndarray,
                 row_rngs: np.ndarray) -> np.ndarray:
    """``agent`` called on each row alone, with that row's generator (unchecked)."""
    chosen = np.empty(rows.size, np.int64)
    for j, row in enumerate(rows.tolist()):
        try:
            one = np.asarray(agent.act({key: value[row : row + 1] for key, value in obs.items()},
                                       rng=row_rngs[row]))
        except Exception as err:  # the agent's fault: say which agent and game
            raise _failure(agent, index, err, rows, row) from err
        if one.shape != (1,):
            raise ValueError(f"agent {getattr(agent, 'name', index)!r} returned shape "
                             f"{one.shape} for one game, expected (1,)")
        chosen[j] = one[0]
    return chosen


def act_split(
    agents: Sequence[Agent],
    who: np.ndarray,
    obs: dict[str, np.ndarray],
    rng: np.random.Generator | None = None,
    check: bool = True,
    row_rngs: np.ndarray | None = None,
) -> np.ndarray:
    """One action per game: row ``i`` is played by ``agents[who[i]]``.

    Each agent is called once, on the rows it plays (``who == k``); rows
    with ``who == -1`` get :func:`filler_actions`.  With ``check`` an
    illegal action raises ``ValueError`` naming the agent, the row and the
    action.

    ``rng`` is shared by the whole batch, so a random agent's choice in one
    game depends on the other rows.  ``row_rngs`` (one generator per row, as
    :func:`match_rngs` makes) avoids that: each agent is first called on all
    its rows with a probe generator, and if it drew from the probe its
    answer is discarded and it is called once per row with that row's
    generator.  Agents that draw nothing (the heuristics, greedy networks)
    keep the one batched call, and so do agents with ``draws_per_row``, which
    get the rows' generators as one :class:`~agents.base.RowGenerators`.

    An agent that raises is reported as :class:`AgentFailed` (its error the cause),
    naming the agent and, when it can be told, the game row.
    """
    who = np.asarray(who)
    mask = obs["action_mask"]
    actions = filler_actions(mask)
    probe = np.random.default_rng(_MATCH_RNG_TAG) if row_rngs is not None else None
    for k, agent in enumerate(agents):
        rows = np.flatnonzero(who == k)
        if rows.size == 0:
            continue
        sub = {key: value[rows] for key, value in obs.items()}
        try:
            if probe is not None and getattr(agent, "draws_per_row", False):
                chosen = agent.act(sub, rng=RowGenerators(row_rngs[rows]))
            else:
                before = None if probe is None else probe.bit_generator.state
                chosen = agent.act(sub, rng=rng if probe is None else probe)
                if probe is not None and probe.bit_generator.state != before:
                    chosen = _act_per_row(agent, k, obs, rows, row_rngs)
        except Exception as err:  # the agent's fault: say which agent and game
            raise _failure(agent, k, err, rows) from err
        actions[rows] = _checked(agent, k, mask, rows, chosen, check)
    return actions


@dataclass
class MatchStats:
    """Per-match results of agent A against agent B (arrays of length N).

    ``pair`` is the duplicate pair id (both games of a pair share it) and
    ``a_seat`` the seat agent A held.  Hand counts cover the whole match:
    ``hands`` dealt, ``dead`` hands, hands won, gins, undercuts (won as the
    defender), knocks made, and awards won (``*_points``); ``*_knock_deadwood`` sums
    the knocker's deadwood over its knocks (gins count 0).
    """

    pair: np.ndarray
    a_seat: np.ndarray
    a_won: np.ndarray
    b_won: np.ndarray
    a_columns: np.ndarray
    b_columns: np.ndarray
    hands: np.ndarray
    dead: np.ndarray
    a_hands: np.ndarray
    b_hands: np.ndarray
    a_gins: np.ndarray
    b_gins: np.ndarray
    a_undercuts: np.ndarray
    b_undercuts: np.ndarray
    a_knocks: np.ndarray
    b_knocks: np.ndarray
    a_knock_deadwood: np.ndarray
    b_knock_deadwood: np.ndarray
    a_points: np.ndarray
    b_points: np.ndarray
    steps: int = 0

    @property
    def num_matches(self) -> int:
        return int(self.a_won.shape[0])

    def swapped(self) -> MatchStats:
        """The same results seen from agent B's side."""
        out = {}
        for f in fields(self):
            name = f.name
            if name.startswith("a_") and name != "a_seat":
                out[name] = getattr(self, "b_" + name[2:])
            elif name.startswith("b_"):
                out[name] = getattr(self, "a_" + name[2:])
            else:
                out[name] = getattr(self, name)
        out["a_seat"] = 1 - self.a_seat
        return MatchStats(**out)

    def rates(self) -> dict[str, dict[str, float]]:
        """Agent A's ``match``, ``column`` and ``hand`` win rates, each a :func:`clustered_rate`."""
        return {
            "match": clustered_rate(self.a_won, np.ones(self.num_matches), self.pair),
            "column": clustered_rate(self.a_columns, self.a_columns + self.b_columns, self.pair),
            "hand": clustered_rate(self.a_hands, self.a_hands + self.b_hands, self.pair),
        }

    def concat(self, other: MatchStats) -> MatchStats:
        out = {}
        offset = int(self.pair.max()) + 1 if self.pair.size else 0
        for f in fields(self):
            if f.name == "steps":
                out["steps"] = self.steps + other.steps
            elif f.name == "pair":
                out["pair"] = np.concatenate([self.pair, other.pair + offset])
            else:
                out[f.name] = np.concatenate([getattr(self, f.name), getattr(other, f.name)])
        return MatchStats(**out)


def clustered_rate(successes: np.ndarray, trials: np.ndarray, pair: np.ndarray
                   ) -> dict[str, float]:
    """A rate with its 95% Wilson interval on the pair-clustered effective sample size.

    ``successes[i]`` and ``trials[i]`` belong to match ``i`` of duplicate
    pair ``pair[i]``.  The pair, not the match or the hand, is the
    independent unit (the two seatings of one deal sequence are correlated,
    and so are the hands of a match), so the counts are summed per pair
    before :func:`~agents.evaluation.stats.clustered_wilson` measures their spread.
    Returns ``rate``, ``low``, ``high``, ``successes``, ``trials`` and
    ``design_effect``; the rate is NaN without trials.
    """
    wins = np.asarray(successes, dtype=np.float64)
    total = np.asarray(trials, dtype=np.float64)
    pair = np.asarray(pair, dtype=np.int64)
    k, n = float(wins.sum()), float(total.sum())
    low, high, deff = clustered_wilson(np.bincount(pair, weights=wins),
                                       np.bincount(pair, weights=total))
    return {"rate": k / n if n else math.nan, "low": low, "high": high,
            "successes": round(k), "trials": round(n), "design_effect": deff}


_PER_SEAT = ("hands_won", "gins", "undercuts", "knocks", "points", "columns",
             "knock_deadwood")


class Arena:
    """``num_matches`` full matches of agent A against agent B, all at once.

    ``seed`` fixes the deals and the agents' random choices: an int, or an
    array of per-pair seeds (per-match seeds without ``duplicate``) as
    :func:`match_seeds` makes.  With ``duplicate`` the number of matches is
    rounded up to an even number and games ``2i`` and ``2i + 1`` replay the
    same deals with the seats swapped (see the module docstring).  Each
    match draws its random choices from its own generator (``rngs``, from
    :func:`match_rngs`), unless ``rng`` is given: then that one generator
    serves the whole batch, and random agents' choices depend on the batch.
    ``game_ids`` maps the current rows of ``game`` to match indices (it
    shrinks when finished games are compacted away).  With ``record`` a
    :class:`~hgin_env.records.MatchRecorder` keeps every match for
    :meth:`recorded` (``True``), or the first ``record`` matches (an int).
    """

    def __init__(
        self,
        agent_a: Agent,
        agent_b: Agent,
        num_matches: int,
        rules: Rules,
        seed: int | np.ndarray = 0,
        duplicate: bool = True,
        rng: np.random.Generator | None = None,
        compact: bool = True,
        check: bool = True,
        record: bool | int = False,
    ) -> None:
        if num_matches < 1:
            raise ValueError(f"num_matches must be >= 1, got {num_matches}")
        self.agents = (agent_a, agent_b)
        self.rules = require_rules(rules)
        self.duplicate = duplicate
        if duplicate:
            pairs = (num_matches + 1) // 2
            n = 2 * pairs
            seeds = np.repeat(_seeds(seed, pairs), 2)
            pair = np.repeat(np.arange(pairs), 2)
            a_seat = np.tile(np.array([0, 1], np.int64), pairs)
        else:
            n = num_matches
            seeds = _seeds(seed, n)
            pair = np.arange(n)
            a_seat = np.arange(n, dtype=np.int64) % 2
        self.num_matches = n
        self.pair = pair
        self.a_seat = a_seat
        # seating[i, seat] = index of the agent (0 = A, 1 = B) in that seat of match i.
        self.seating = np.stack([a_seat, 1 - a_seat], axis=1)
        self.rng = rng
        # The two games of a duplicate pair share a seed; their seat order tells them apart.
        position = np.arange(n) % 2 if duplicate else np.zeros(n, np.int64)
        self.rngs = match_rngs(seeds, position) if rng is None else None
        self.compact = compact
        self.check = check
        self.game = VectorGame(n, self.rules, seed=seeds)
        self.game_ids = np.arange(n)
        self.active = np.ones(n, bool)  # per match
        self.steps = 0
        self._seat = {name: np.zeros((n, 2), np.int64) for name in _PER_SEAT}
        self.hands = np.zeros(n, np.int64)
        self.dead = np.zeros(n, np.int64)
        #: Actions played so far in each match (both seats'), for failure messages.
        self.moves = np.zeros(n, np.int64)
        self.winner_seat = np.full(n, -1, np.int64)
        # Agents that reason about the order of play get the hand's public history.
        self.history = history_for(self.game, *self.agents)
        kept = n if record is True else min(int(record), n)
        self.recorder = MatchRecorder(kept) if kept > 0 else None
        if self.recorder is not None:
            self.recorder.start(self.game, self.game_ids)

    @property
    def finished(self) -> int:
        return int((~self.active).sum())

    def step(self) -> None:
        """One action in every game; record whatever hands and matches it ended."""
        game = self.game
        ids = self.game_ids
        live = self.active[ids]
        obs = game.observe()
        cur = game.current_player.astype(np.int64)
        if self.history is not None:
            obs.update(self.history.observe(cur))
        who = np.where(live, self.seating[ids, cur], -1)
        row_rngs = None if self.rngs is None else self.rngs[ids]
        try:
            actions = act_split(self.agents, who, obs, self.rng, check=self.check,
                                row_rngs=row_rngs)
        except AgentFailed as err:
            err.in_play = int(live.sum())
            if err.row is not None:
                match = int(ids[err.row])
                err.match, err.hand = match, int(self.hands[match]) + 1
                err.move = int(self.moves[match]) + 1
            raise
        _, info = game.step(actions)
        self.moves[ids[live]] += 1
        self.steps += 1
        if self.history is not None:
            self.history.step(game, cur, actions, info)
        if self.recorder is not None:
            self.recorder.step(game, ids, live, cur, actions, info)
        self._record(info, ids, live)
        if self.compact and self.active[ids].mean() < COMPACT_BELOW and self.active.any():
            self._compact()

    def _record(self, info: dict[str, np.ndarray], ids: np.ndarray, live: np.ndarray) -> None:
        ended = np.flatnonzero(info["hand_over"] & live)
        if ended.size == 0:
            return
        m = ids[ended]
        self.hands[m] += 1
        dead = info["dead_hand"][ended]
        self.dead[m] += dead
        won = ~dead
        w_rows, w_ids = ended[won], m[won]
        seat = info["hand_winner"][w_rows].astype(np.int64)
        s = self._seat
        np.add.at(s["hands_won"], (w_ids, seat), 1)
        np.add.at(s["points"], (w_ids, seat), info["award"][w_rows])
        np.add.at(s["gins"], (w_ids, seat), info["gin"][w_rows])
        np.add.at(s["undercuts"], (w_ids, seat), info["undercut"][w_rows])
        knocker = info["knocker"][w_rows].astype(np.int64)
        np.add.at(s["knocks"], (w_ids, knocker), 1)
        np.add.at(s["knock_deadwood"], (w_ids, knocker), info["knocker_deadwood"][w_rows])
        # A match cut off at the match bound (hand.MAX_HANDS_PER_MATCH) ends too, with no
        # winner (match_winner -1): it counts as won by neither agent.
        cut = info["truncated"] if "truncated" in info else False
        over = np.flatnonzero((info["match_over"] | cut) & live)
        if over.size:
            mo = ids[over]
            self.winner_seat[mo] = info["match_winner"][over]
            final = info["final_scores"][over]  # (k, 2, C)
            s["columns"][mo] = (final >= self.rules.target).sum(axis=2)
            self.active[mo] = False

    def _compact(self) -> None:
        keep = np.flatnonzero(self.active[self.game_ids])
        state = self.game.state_dict()
        game = VectorGame(keep.size, self.rules, seed=state["seeds"][keep])
        game.load_state_dict({key: value[keep] for key, value in state.items()})
        if self.history is not None:
            self.history.take(keep)
        self.game = game
        self.game_ids = self.game_ids[keep]

    def run(
        self,
        progress: Callable[[int], None] | None = None,
        max_steps: int = 200_000,
    ) -> MatchStats:
        """Play until every match is over; ``progress(finished)`` after each step."""
        last = -1
        while self.active.any():
            if self.steps >= max_steps:
                raise RuntimeError(f"matches still running after {max_steps} steps")
            self.step()
            if progress is not None and self.finished != last:
                last = self.finished
                progress(last)
        return self.stats()

    def recorded(self) -> list[dict[str, object]]:
        """The finished matches' records (engine part, see
        :meth:`~hgin_env.records.MatchRecorder.matches`) with ``a_seat`` and ``pair``,
        in match order; empty unless the arena was built with ``record``."""
        if self.recorder is None:
            return []
        out = []
        for i, game in enumerate(self.recorder.matches()):
            if game is not None:
                out.append({**game, "a_seat": int(self.a_seat[i]), "pair": int(self.pair[i])})
        return out

    def stats(self) -> MatchStats:
        """Results so far (of finished matches only), from agent A's side."""
        done = ~self.active
        a = self.a_seat[done]
        b = 1 - a
        rows = np.flatnonzero(done)
        s = self._seat

        def by(seat: np.ndarray, name: str) -> np.ndarray:
            return s[name][rows, seat]

        return MatchStats(
            pair=self.pair[done],
            a_seat=a,
            a_won=self.winner_seat[done] == a,
            b_won=self.winner_seat[done] == b,
            a_columns=by(a, "columns"),
            b_columns=by(b, "columns"),
            hands=self.hands[done],
            dead=self.dead[done],
            a_hands=by(a, "hands_won"),
            b_hands=by(b, "hands_won"),
            a_gins=by(a, "gins"),
            b_gins=by(b, "gins"),
            a_undercuts=by(a, "undercuts"),
            b_undercuts=by(b, "undercuts"),
            a_knocks=by(a, "knocks"),
            b_knocks=by(b, "knocks"),
            a_knock_deadwood=by(a, "knock_deadwood"),
            b_knock_deadwood=by(b, "knock_deadwood"),
            a_points=by(a, "points"),
            b_points=by(b, "points"),
            steps=self.steps,
        )


def play_matches(
    agent_a: Agent,
    agent_b: Agent,
    num_matches: int,
    rules: Rules | str | None = None,
    seed: int = 0,
    duplicate: bool = True,
    progress: Callable[[int], None] | None = None,
    batch_size: int | None = None,
    record: Callable[[dict[str, object]], None] | None = None,
    record_matches: int | None = None,
) -> MatchStats:
    """Play ``num_matches`` matches of A against B and return :class:`MatchStats`.

    ``batch_size`` (>= 1) caps how many matches run at once (memory; with
    ``duplicate`` it is rounded down to whole pairs, at least one).  No
    result depends on it: batches take consecutive slices of the same
    seeds, and each match draws its random choices from its own generator.
    ``record`` (optional) is called with each match's record (see
    :meth:`Arena.recorded`; ``pair`` counts across batches), in match order:
    of every match, or of the first ``record_matches`` only (recording the
    rest would cost time for records nobody keeps).  When an agent raises,
    the matches that finished are still passed to ``record``, then
    :class:`AgentFailed` says where it failed (the unfinished matches are not
    recorded: a record holds only whole matches).
    """
    rules = load_rules(rules)  # once, for every batch's arena
    if record_matches is not None and (isinstance(record_matches, bool)
                                       or not isinstance(record_matches, int | np.integer)
                                       or record_matches < 0):
        raise ValueError(f"record_matches must be a non-negative integer or None, "
                         f"got {record_matches!r}")
    # What each arena records: True (every match; a duplicate rounds an odd count up),
    # or how many of its first matches.
    keep: bool | int = record is not None if record_matches is None else (
        int(record_matches) if record is not None else 0)
    if batch_size is not None and (isinstance(batch_size, bool)
                                   or not isinstance(batch_size, int | np.integer)
                                   or batch_size < 1):
        raise ValueError(f"batch_size must be a positive integer or None, got {batch_size!r}")
    if batch_size is None or batch_size >= num_matches:
        arena = Arena(agent_a, agent_b, num_matches, rules, seed, duplicate, record=keep)
        stats = _run_arena(arena, progress, record, 0, 0, 0)
        return stats
    unit = 2 if duplicate else 1
    per = max(1, int(batch_size) // unit)
    total: MatchStats | None = None
    done_before = 0
    handed = 0  # records passed on so far
    for start, chunk in seed_chunks(seed, num_matches, duplicate, per):
        cb = None
        if progress is not None:

            def cb(k: int, offset: int = done_before) -> None:
                progress(offset + k)

        arena = Arena(agent_a, agent_b, chunk.size * unit, rules, chunk, duplicate,
                      record=keep if isinstance(keep, bool) else max(0, keep - start * unit))
        stats = _run_arena(arena, cb, record, start, start * unit, handed)
        handed += len(arena.recorded()) if record is not None else 0
        done_before += stats.num_matches
        total = stats if total is None else total.concat(stats)
    assert total is not None
    return total


def _run_arena(arena: Arena, progress: Callable[[int], None] | None,
               record: Callable[[dict[str, object]], None] | None, first_pair: int,
               first_match: int, handed: int) -> MatchStats:
    """``arena.run(progress)``, its records then handed on.  When an agent fails, the
    matches that had finished are handed on first, and :class:`AgentFailed` counts its
    match from ``first_match`` and the records kept (``handed`` before this arena)."""
    try:
        stats = arena.run(progress)
    except AgentFailed as err:
        _hand_over(arena, record, first_pair)
        if err.match is not None:
            err.match += first_match
        err.recorded = handed + (len(arena.recorded()) if record is not None else 0)
        raise
    _hand_over(arena, record, first_pair)
    return stats


def _hand_over(arena: Arena, record: Callable[[dict[str, object]], None] | None,
               first_pair: int) -> None:
    """Pass an arena's match records on, numbering pairs across batches."""
    if record is not None:
        for game in arena.recorded():
            record({**game, "pair": first_pair + int(game["pair"])})


def duplicate_rates(agent: Agent, opponent: Agent, matches: int, rules: Rules | str | None = None,
                    seed: int = 0, record: Callable[[dict[str, object]], None] | None = None,
                    record_matches: int | None = None) -> dict[str, object]:
    """``agent``'s match, column and hand win rates against ``opponent`` over
    ``matches`` duplicate matches, each ``{"rate", "low", "high"}`` (95%
    pair-clustered Wilson interval), plus ``matches`` and ``seconds``: the
    short report the RL-library examples print while they train.  ``record``
    and ``record_matches`` are :func:`play_matches`'."""
    t0 = time.perf_counter()
    s = play_matches(agent, opponent, matches, rules, seed=seed, record=record,
                     record_matches=record_matches)
    rates = s.rates()
    return {
        "matches": s.num_matches,
        **{kind: {key: r[key] for key in ("rate", "low", "high")} for kind, r in rates.items()},
        "seconds": time.perf_counter() - t0,
    }


def format_rates(name: str, opponent: str, r: dict) -> str:
    """One line of :func:`duplicate_rates`' report."""
    def pct(x: dict[str, float]) -> str:
        return f"{100 * x['rate']:5.1f}% [{100 * x['low']:4.1f}, {100 * x['high']:4.1f}]"

    return (f"{name:>8} vs {opponent}: match {pct(r['match'])}  column {pct(r['column'])}  "
            f"hand {pct(r['hand'])}  ({r['matches']} matches, {r['seconds']:.1f} s)")


__all__ = ["AgentFailed", "Arena", "MatchStats", "act_split", "clustered_rate", "duplicate_rates",
           "filler_actions", "format_rates", "match_rngs", "match_seeds", "play_matches"]
