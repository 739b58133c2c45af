"""Why ``search`` does not beat its blueprint: an oracle ladder, paired on the same deals.

Run: ``python bench/search_diagnosis.py [--settings oracle=search oracle-hand=search
search=search ...] [--opponents strong pretrained] [--matches 400] [--seed 0]
[--out table.md] [--log progress.log]``.

Every setting plays the same ``--matches`` seeded duplicate matches (friendly rules)
against each opponent as the blueprint (``--blueprint``, default ``pretrained``) does,
and its difference of match win rates from the blueprint's is measured per duplicate
pair (:func:`agents.evaluation.stats.paired_difference`).  A setting is ``MODE=SPEC``:
``SPEC`` a search spec (its knobs, e.g. ``search:samples=64``) and ``MODE`` where the
searched decisions' worlds come from:

* ``oracle``: **cheating**.  One world, the true hidden state: the opponent's real hand
  and the real stock order, read from the arena's game (never from the observation).
  The blueprint's rollouts are deterministic, so the world is exact and the margin
  alone decides (no confidence test).  If this does not beat the blueprint, the
  rollout value or the candidate choice is wrong, and no belief can fix it.
* ``oracle-hand``: **cheating**.  The opponent's real hand in every world, the stock
  resampled (``samples`` worlds, each an independent stock order).
* ``search``: the search as shipped, its own belief; the run also measures that belief
  against the true opponent hand at every searched decision (same worlds, same moves
  as plain ``search``).

The belief figure: at each searched decision the weighted particles give each unseen
card ``c`` a marginal probability ``q_c`` of being in the opponent's hand (smoothed with
one uniform pseudo-particle, ``k / U`` for ``k`` hidden cards among ``U`` unseen, so no
card gets 0 or 1).  The true hand's log-likelihood under these independent marginals,
minus its log-likelihood under the uniform ``k / U``, is the belief's gain in nats per
decision (0: it knows nothing beyond the public cards; positive: better than uniform).
The table gives it for the weighted particles and for the same particles unweighted
(the prior the weights start from: its shortfall below 0 is the noise of a finite
sample), the weights' effective sample size, and the mean ``q_c`` of the true hidden
cards relative to ``k / U``.

The cheating agents are bench-only and never shipped: they exist to find out where the
search loses its strength.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from agents import make_agent
from agents.base import Agent
from agents.evaluation.arena import Arena, MatchStats
from agents.evaluation.stats import paired_difference
from agents.search import SearchAgent, Worlds, parse_search_spec
from hgin_env.cards import NUM_CARDS, unpack_masks
from hgin_env.rules import load_rules
from hgin_env.state import GameState

MODES = ("oracle", "oracle-hand", "search")
_U64 = np.uint64


# --------------------------------------------------------------------------- the true state


class TrueStateArena(Arena):
    """An :class:`Arena` that shows its agents' world samplers the true game state.

    Before every step, each agent whose ``worlds`` has a ``bind`` method is told the
    state and which game rows (and seats) its next ``act`` call will be given: the
    rows :func:`agents.evaluation.arena.act_split` hands it, in the same order.  Only
    the bench's cheating samplers and the belief probe use it.
    """

    def step(self) -> None:
        ids = self.game_ids
        live = self.active[ids]
        cur = self.game.current_player.astype(np.int64)
        who = np.where(live, self.seating[ids, cur], -1)
        for k, agent in enumerate(self.agents):
            sampler = getattr(agent, "worlds", None)
            if sampler is not None and hasattr(sampler, "bind"):
                rows = np.flatnonzero(who == k)
                sampler.bind(self.game.state, rows, cur[rows])
        super().step()


class _Bound:
    """The true state of the rows of the next ``act`` call (set by :class:`TrueStateArena`)."""

    def __init__(self) -> None:
        self._state: GameState | None = None
        self._rows = np.zeros(0, np.int64)
        self._seats = np.zeros(0, np.int64)

    def bind(self, state: GameState, rows: np.ndarray, seats: np.ndarray) -> None:
        self._state, self._rows, self._seats = state, np.asarray(rows), np.asarray(seats)

    def truth(self, views: list[Any], rows: np.ndarray) -> tuple[list[int], list[np.ndarray]]:
        """The opponent's true hand and the true stock keys of each searched view.

        Checks that each view is the position of the bound row (the seat's own hand,
        the opponent's known cards, the unseen cards), so a mismatch of rows raises
        instead of cheating with the wrong game.
        """
        st = self._state
        if st is None:
            raise ValueError("the true-state worlds need a TrueStateArena (nothing is bound)")
        hands, keys = [], []
        for view, j in zip(views, np.asarray(rows).tolist(), strict=True):
            if j >= self._rows.size:
                raise ValueError("the true-state worlds were bound to fewer rows than acted")
            g, seat = int(self._rows[j]), int(self._seats[j])
            own, opp = int(st.hands[g, seat]), int(st.hands[g, 1 - seat])
            hidden = opp & ~view.opp_known
            if own != view.own or opp & view.opp_known != view.opp_known \
                    or hidden & ~view.unseen:
                raise ValueError(f"the true-state worlds: game row {g} is not the searched "
                                 f"position {j} (rows bound out of order?)")
            hands.append(opp)
            keys.append(true_stock_keys(st.deck[g], int(st.stock_pos[g])))
        return hands, keys


def true_stock_keys(deck: np.ndarray, stock_pos: int) -> np.ndarray:
    """(52,) keys whose order over the stock cards is the true draw order ``deck[stock_pos:]``.

    The search builds a world's stock as the cards in no hand and not on the pile, in
    increasing key order; a card's key here is its position in the deal.
    """
    keys = np.full(NUM_CARDS, 2.0)
    deck = np.asarray(deck).astype(np.int64)
    keys[deck[stock_pos:]] = np.arange(stock_pos, NUM_CARDS) / NUM_CARDS
    return keys


class CheatingTrueWorlds(_Bound):
    """Cheating worlds: the opponent's true hand, and the true stock order or sampled ones.

    ``stock="true"``: one exact world per decision (the margin alone decides).
    ``stock="sampled"``: ``samples`` worlds, the true hand in each, every one with its
    own uniformly random stock order (each counts as independent evidence).
    """

    def __init__(self, stock: str) -> None:
        super().__init__()
        if stock not in ("true", "sampled"):
            raise ValueError(f"stock must be 'true' or 'sampled', got {stock!r}")
        self.stock = stock

    def sample_worlds(self, agent: SearchAgent, views: list[Any], rows: np.ndarray,
                      gens: list[np.random.Generator]) -> Worlds:
        hands, keys = self.truth(views, rows)
        if self.stock == "true":
            return Worlds([np.array([h], _U64) for h in hands], [k[None] for k in keys],
                          [None] * len(views))
        n = agent.config.samples
        return Worlds([np.full(n, h, _U64) for h in hands],
                      [g.random((n, NUM_CARDS)) for g in gens], [n] * len(views))


@dataclass
class BeliefRecord:
    """Per searched decision: the belief's log-likelihood gains and effective sample size."""

    weighted: list[float] = field(default_factory=list)
    unweighted: list[float] = field(default_factory=list)
    ess: list[float] = field(default_factory=list)
    lift: list[float] = field(default_factory=list)


def belief_gain(particles: np.ndarray, weights: np.ndarray, true_hidden: int,
                unseen: int) -> tuple[float, float]:
    """Log-likelihood of the true hidden cards under the particles' marginals, minus uniform.

    ``particles`` (M,) uint64 hidden-card masks with ``weights`` (M,) summing to 1;
    ``true_hidden`` the opponent's real hidden cards and ``unseen`` the cards the seat
    has not seen (a superset).  Each unseen card's marginal is smoothed with one
    uniform pseudo-particle.  Returns ``(nats gained over uniform, mean marginal of the
    true hidden cards relative to uniform)``.
    """
    u_flags = unpack_masks(np.array([unseen], _U64))[0].astype(bool)
    t_flags = unpack_masks(np.array([true_hidden], _U64))[0].astype(bool)
    if (t_flags & ~u_flags).any():
        raise ValueError("the true hidden cards must all be unseen")
    u, k = int(u_flags.sum()), int(t_flags.sum())
    if k == 0 or k == u:
        return 0.0, 1.0  # nothing to guess
    p0 = k / u
    flags = unpack_masks(np.asarray(particles, _U64)).astype(np.float64)  # (M, 52)
    m = flags.shape[0]
    q = (m * (np.asarray(weights, np.float64) @ flags) + p0) / (m + 1)
    q, t = q[u_flags], t_flags[u_flags]
    ll = np.log(q[t]).sum() + np.log1p(-q[~t]).sum()
    uniform = k * math.log(p0) + (u - k) * math.log1p(-p0)
    return float(ll - uniform), float(q[t].mean() / p0)


class BeliefProbe(_Bound):
    """The search's own worlds (same draws, so the same moves), measured against the truth."""

    def __init__(self) -> None:
        super().__init__()
        self.record = BeliefRecord()

    def sample_worlds(self, agent: SearchAgent, views: list[Any], rows: np.ndarray,
                      gens: list[np.random.Generator]) -> Worlds:
        beliefs = agent.particles(views, gens)
        hands, _ = self.truth(views, rows)
        for view, (h, w), opp in zip(views, beliefs, hands, strict=True):
            hidden = opp & ~view.opp_known
            gain, lift = belief_gain(h, w, hidden, view.unseen)
            flat, _ = belief_gain(h, np.full(w.size, 1.0 / w.size), hidden, view.unseen)
            self.record.weighted.append(gain)
            self.record.unweighted.append(flat)
            self.record.ess.append(float(1.0 / np.square(w).sum()))
            self.record.lift.append(lift)
        return agent.sample_worlds(views, gens, beliefs)


# --------------------------------------------------------------------------- the runs


def check_setting(setting: str) -> tuple[str, str]:
    """``MODE=SPEC`` split and checked (the spec parsed), before any match is played."""
    mode, eq, spec = setting.partition("=")
    spec = spec.strip()
    if not eq or mode not in MODES or not spec.lower().startswith("search"):
        raise ValueError(f"setting {setting!r}: expected MODE=SPEC with MODE one of "
                         f"{', '.join(MODES)} and SPEC a search spec (search:samples=64)")
    parse_search_spec(spec)
    return mode, spec


def build(setting: str, blueprint: str, rules: str, seed: int) -> tuple[str, str, Agent]:
    """``MODE=SPEC`` as an agent, searching around ``blueprint`` unless SPEC names one."""
    mode, spec = check_setting(setting)
    built = spec if "blueprint=" in spec else \
        f"{spec}{',' if ':' in spec else ':'}blueprint={blueprint}"
    agent = make_agent(built, rules=rules, seed=seed)
    assert isinstance(agent, SearchAgent)
    agent.worlds = (CheatingTrueWorlds("true") if mode == "oracle" else
                    CheatingTrueWorlds("sampled") if mode == "oracle-hand" else BeliefProbe())
    agent.name = setting
    return mode, spec, agent


def play(agent: Agent, opponent: Agent, matches: int, rules: str, seed: int,
         log: TextIO | None = None, label: str = "") -> tuple[MatchStats, float]:
    """The seeded duplicate matches (as ``play_matches`` plays them), and their CPU seconds."""
    arena = TrueStateArena(agent, opponent, matches, load_rules(rules), seed)
    cpu = time.process_time()
    step = max(1, arena.num_matches // 10)

    def progress(k: int) -> None:
        if log is not None and (k % step == 0 or k == arena.num_matches):
            log.write(f"{time.strftime('%H:%M:%S')} {label}: {k}/{arena.num_matches} matches, "
                      f"{time.process_time() - cpu:.0f} CPU s\n")
            log.flush()

    stats = arena.run(progress)
    return stats, time.process_time() - cpu


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}"


def run(settings: list[str], opponents: list[str], matches: int, blueprint: str = "pretrained",
        rules: str = "friendly", seed: int = 0, log: TextIO | None = None) -> list[list[str]]:
    """The table's rows: per opponent, the blueprint, then every setting against it."""
    rows = []
    for opp_name in opponents:
        opponent = make_agent(opp_name, rules=rules, seed=seed)
        agent = make_agent(blueprint, rules=rules, seed=seed)
        base, cpu = play(agent, opponent, matches, rules, seed, log, f"{blueprint} vs {opp_name}")
        rows.append([opp_name, f"`{blueprint}` (the blueprint)", str(base.num_matches),
                     f"{100 * base.a_won.mean():.1f}%", "—", "—", "—", "—",
                     f"{cpu / base.num_matches:.2f}"])
        if log is not None:
            log.write(" | ".join(rows[-1]) + "\n")
            log.flush()
        for setting in settings:
            mode, spec, agent = build(setting, blueprint, rules, seed)
            stats, cpu = play(agent, opponent, matches, rules, seed, log,
                              f"{setting} vs {opp_name}")
            d = paired_difference(stats.a_won, base.a_won, stats.pair)
            assert isinstance(agent, SearchAgent)
            c = agent.counts
            belief = "—"
            if isinstance(agent.worlds, BeliefProbe) and agent.worlds.record.weighted:
                r = agent.worlds.record
                belief = (f"{np.mean(r.weighted):+.2f} (unweighted {np.mean(r.unweighted):+.2f}; "
                          f"ESS {np.mean(r.ess):.0f}; true cards ×{np.mean(r.lift):.2f})")
            rows.append([opp_name, f"{mode}: `{spec}`", str(stats.num_matches),
                         f"{100 * d['a_rate']:.1f}%",
                         f"{_pct(d['diff'])} [{_pct(d['low'])}, {_pct(d['high'])}]",
                         f"{c['searched'] / max(c['decisions'], 1):.1%}",
                         f"{c['deviations'] / max(c['decisions'], 1):.2%}", belief,
                         f"{cpu / stats.num_matches:.2f}"])
            if log is not None:
                log.write(" | ".join(rows[-1]) + "\n")
                log.flush()
    return rows


COLUMNS = ["opponent", "setting", "matches", "match win", "minus blueprint (95%)",
           "decisions searched", "decisions changed", "belief: nats over uniform / decision",
           "CPU s/match"]


def markdown(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", nargs="+",
                        default=["oracle=search", "oracle-hand=search", "search=search"],
                        help="MODE=SPEC, MODE one of " + ", ".join(MODES))
    parser.add_argument("--opponents", nargs="+", default=["strong", "pretrained"])
    parser.add_argument("--blueprint", default="pretrained")
    parser.add_argument("--matches", type=int, default=400)
    parser.add_argument("--rules", default="friendly")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="also write the table (markdown) here")
    parser.add_argument("--log", type=Path, help="write progress lines here")
    args = parser.parse_args(argv)
    if args.matches < 2:
        parser.error(f"--matches must be >= 2 (one duplicate pair), got {args.matches}")
    try:
        for setting in args.settings:  # fail on a bad setting before any match is played
            check_setting(setting)
        log = args.log.open("a") if args.log else None
        try:
            rows = run(args.settings, args.opponents, args.matches, args.blueprint, args.rules,
                       args.seed, log)
        finally:
            if log is not None:
                log.close()
    except ValueError as exc:
        parser.exit(2, f"search_diagnosis: {exc}\n")
    table = markdown(rows)
    print(table, end="")
    if args.out:
        args.out.write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
