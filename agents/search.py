"""``search``: decision-time search on top of a blueprint policy (SPARTA-style).

Plain determinised Monte Carlo loses to a good heuristic in gin rummy: a
uniformly sampled opponent hand looks weak, so it knocks into undercuts, and
rollouts by a weak policy value positions wrongly.  This agent follows what
worked in Hanabi (SPARTA) and in bridge and poker bots:

1. **Belief.**  From what the seat has seen (its observation and the public
   history of the hand, :mod:`hgin_env.history`) it samples the opponent's
   hidden cards, walks the hand backwards to the opponent's hand at each of
   its past decisions (the cards a stock draw brought are drawn among the
   cards that could have come from the stock), and weights each sample by
   how likely the blueprint, as a model of the opponent, would have made the
   opponent's public choices (takes, passes, stock draws and discards) with
   that hand.  Samples are then resampled by weight.
2. **Rollouts.**  Each sampled position becomes a :class:`VectorGame` row
   (built with the state API); every candidate action is played in every
   sample (common random numbers: same hands, same stock order), then the
   blueprint plays both seats to the end of the hand.  An outcome is worth
   what the training reward pays: columns won on the Hollywood sheet plus
   the points posted (``points_coef``); in one game to 100, optionally the chance of
   winning the game from the score the hand leaves (``game_value``, a win table).
3. **Safety.**  Only among the blueprint's most likely actions, and only the card:
   whether to knock stays the blueprint's choice unless ``knocks`` is on.  The agent
   leaves the blueprint's own choice only when the searched gain beats it by more than
   ``margin`` and by ``confidence`` standard errors of the paired difference.  Letting
   search knock lost matches against ``strong`` (``bench/search_safety.py``): the
   rollouts stand the blueprint in for an opponent that plays differently, and sampled
   opponents look weaker than real ones, so searched knocks get undercut.
4. **Short rollouts.**  A rollout plays the searched move, then the hand value network
   (:mod:`agents.hand_value`, trained on the sibling positions search compares) values
   the rest of the hand (``depth`` 1), so every discard can be searched in about a
   second a match.  Where no shipped value network fits the rules and the blueprint,
   the rollouts run to the end of the hand instead (``depth`` 0), and the spec
   ``search`` then starts from the first defaults (:func:`parse_search_spec`): every
   discard with full rollouts costs ten times as much and measured no stronger.

The defaults (whole hands from the conditional belief network, 64 worlds, every discard,
``margin`` 0.02, ``depth`` 1) are the setting measured strongest on the same deals
(docs/search.md, "Siblings of every discard"); ``search-v1`` keeps the first defaults
(:data:`SEARCH_V1`: the likelihood belief, 16 worlds, only where the blueprint is below
0.6, full rollouts), so the commands measured with them still run as they did.

Only discard and knock decisions are searched by default (``draws=True``
searches draw/take too).  Everything random comes from the generator given
to :meth:`SearchAgent.act` (one per game in the arena), so a game's choices
do not depend on the batch, and nothing the seat has not seen is read: two
positions that differ only in the opponent's cards and the stock order get
the same action.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from agents.base import Agent
from agents.game_value import load_win_table, win_values
from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS, popcount64, unpack_masks
from hgin_env.engine.vector import VectorGame, legal_mask
from hgin_env.history import HISTORY_KEYS
from hgin_env.hollywood import SheetBatch
from hgin_env.melds import discard_table_unchecked, min_deadwood
from hgin_env.observation import (
    STOCK_SCALE,
    encode,
    observation_spec,
)
from hgin_env.rules import Rules, load_rules
from hgin_env.state import STOCK_START, GameState

__all__ = ["NETWORK_BELIEFS", "SEARCH_V1", "SearchAgent", "SearchConfig", "WorldSampler",
           "Worlds", "paired_choice", "parse_search_spec"]

_SPEC = observation_spec()
#: The beliefs read from a network file (:mod:`agents.belief`).
NETWORK_BELIEFS = ("net", "hand", "netlik")
_U64 = np.uint64
_ONE = np.uint64(1)
ME, OPP = 0, 1


@dataclass(frozen=True)
class SearchConfig:
    """The knobs of :class:`SearchAgent` (spec keys of ``search:key=value,...``)."""

    #: Belief samples each searched action is rolled out in.
    samples: int = 64
    #: Opponent hands drawn before weighting (resampled down to ``samples``).
    particles: int = 128
    #: The blueprint's most likely legal actions that are searched.
    top_k: int = 3
    #: Leave the blueprint's action only for a searched gain above this (reward units)...
    margin: float = 0.02
    #: ... and this many standard errors of the paired (same samples) difference.
    confidence: float = 2.0
    #: Let search change whether to knock.  Off by default: the rollouts' opponent is the
    #: blueprint, sampled opponents look weaker than real ones, and measured against
    #: ``strong`` the knocks search added were undercut more than they gained
    #: (``bench/search_safety.py``; docs/agents.md).  Off, search only picks the card.
    knocks: bool = False
    #: With ``knocks``: the extra margin to knock where the blueprint would not, or not to
    #: where it would.
    knock_margin: float = 0.15
    #: Weight of a uniform mixture in the opponent model (robust to opponents unlike it).
    epsilon: float = 0.1
    #: Power the opponent-model likelihood is raised to: real opponents are not the
    #: blueprint, and untempered weights collapse the belief onto one or two hands.
    temper: float = 0.3
    #: Points posted count this much against columns won (the training reward's coefficient).
    points_coef: float = 1.0
    #: Search only where the blueprint's likeliest action has less than this probability
    #: (1, the default, searches every discard and knock).  With full rollouts and the
    #: likelihood belief (``search-v1``), searching the blueprint's sure moves changed them
    #: for the worse more often than for the better; with the belief network's whole
    #: hands and the sibling-trained value network, searching every discard gained most.
    uncertain: float = 1.0
    #: Also search draw decisions (take the discard or draw from the stock; not the upcard offer).
    draws: bool = False
    #: The blueprint: the policy searched around and played in rollouts (an agent spec).
    blueprint: str = "pretrained"
    #: Torch threads while searching (1 is fastest for these small batches on a busy machine).
    threads: int = 1
    #: Where the opponent hands come from: ``likelihood`` (uniform hands weighted by the
    #: blueprint's likelihood of the opponent's public choices) or ``net`` (drawn from a
    #: learned belief network's card marginals, :mod:`agents.belief`; equal weights),
    #: ``hand`` (whole hands drawn card by card from the conditional network
    #: ``belief_hand.pt``, which knows which cards go together; ``samples`` hands,
    #: equal weights, ``particles`` unused), or
    #: ``netlik`` (the network's hands, weighted by the blueprint's tempered likelihood:
    #: the network knows the cards one by one, the likelihood how they fit together).
    belief: str = "hand"
    #: With a network belief: the network's file (empty: the shipped ``belief.pt``, or
    #: ``belief_hand.pt`` for ``hand``).
    belief_file: str = ""
    #: Moves a rollout plays, the searched move included, before the hand value network
    #: (:mod:`agents.hand_value`) values the position; 0 plays every rollout to the end
    #: of the hand.  A short rollout costs a few network calls instead of 20 to 40, so
    #: the same time buys several times the worlds, at the network's error.  ``None``
    #: (the default): 1 with ``value_file`` or a shipped value network made for these
    #: rules and this blueprint (:data:`agents.hand_value.SHIPPED_VALUE`), else 0.
    depth: int | None = None
    #: With ``depth``: the value network's file (empty: the shipped one for the rules and
    #: the blueprint, ``hand_value.pt`` for ``pretrained`` under the friendly rules).
    value_file: str = ""
    #: The agent that plays both seats of the rollouts (an agent spec; empty: the
    #: blueprint).  A cheaper one buys more worlds a second (``simple-det`` costs about a
    #: fifth of the network a decision), a different one another model of play; it must be
    #: deterministic, so that every candidate meets the same continuation in a world.
    rollout: str = ""
    #: A win table of the game to ``target`` (:mod:`agents.game_value`; empty: none).  With
    #: one, a rollout that ends the hand is worth the probability of winning the game from
    #: the new score (as ``2 P - 1``), not the points posted; one game to 100 only
    #: (``columns = 1``), full rollouts only (``depth`` 0: a hand value network's points
    #: do not map onto the score).
    game_value: str = ""

    def __post_init__(self) -> None:
        for name in ("samples", "particles", "top_k", "threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
                raise ValueError(f"search {name} must be an integer in 1..4096, got {value!r}")
        if self.particles < self.samples and self.belief != "hand":  # hand: particles unused
            raise ValueError(f"search particles ({self.particles}) must be >= samples "
                             f"({self.samples})")
        for name in ("margin", "knock_margin", "confidence"):
            value = getattr(self, name)
            if not 0.0 <= value <= 10.0:
                raise ValueError(f"search {name} must be in 0..10, got {value!r}")
        if not 0.0 < self.uncertain <= 1.0:
            raise ValueError(f"search uncertain must be in (0, 1], got {self.uncertain!r}")
        if not 0.0 <= self.temper <= 1.0:
            raise ValueError(f"search temper must be in 0..1, got {self.temper!r}")
        if not 0.0 < self.epsilon <= 1.0:
            raise ValueError(f"search epsilon must be in (0, 1], got {self.epsilon!r}")
        if self.belief not in ("likelihood", *NETWORK_BELIEFS):
            raise ValueError(f"search belief must be 'likelihood', 'net', 'hand' or 'netlik', "
                             f"got {self.belief!r}")
        if not 0.0 <= self.points_coef <= 100.0:
            raise ValueError(f"search points_coef must be in 0..100, got {self.points_coef!r}")
        if self.depth is not None and (isinstance(self.depth, bool)
                                       or not isinstance(self.depth, int)
                                       or not 0 <= self.depth <= 200):
            raise ValueError(f"search depth must be an integer in 0..200 (0: rollouts to the "
                             f"hand's end), got {self.depth!r}")
        # Random players break the common worlds; a search or an outside program would be
        # asked thousands of times a decision (and a program need not answer the same twice).
        if self.rollout.strip().lower().split(":")[0] in ("search", "random", "simple", "text"):
            raise ValueError(f"search rollout must be a deterministic agent that is not a "
                             f"search or a program (e.g. simple-det, strong, ginhunter, "
                             f"pretrained or ckpt:PATH), got {self.rollout!r}")
        if self.game_value and (self.depth or self.value_file):
            raise ValueError("search game_value values the end of full rollouts; it cannot "
                             "be combined with depth >= 1 or value_file")
        if self.value_file and self.depth == 0:
            raise ValueError("search value_file is read only with depth >= 1 (rollouts cut "
                             "short); depth=0 plays every rollout to the hand's end")


def _is_knock(action: int) -> bool:
    return bool(A.KNOCK <= action < A.DRAW_STOCK)


def paired_choice(q: np.ndarray, need: np.ndarray, independent: int | None,
                  confidence: float, allowed: np.ndarray | None = None) -> int:
    """Index of the candidate to play given values ``q`` (worlds, candidates): 0 (the
    blueprint's) unless another gains more than its ``need`` over it and ``confidence``
    standard errors of the paired difference over ``independent`` worlds (``None``:
    exact worlds, the margin alone decides).  ``allowed`` masks candidates out."""
    gain = q - q[:, :1]
    mean = gain.mean(axis=0)
    score = mean - need
    if allowed is not None:
        score = np.where(allowed, score, -np.inf)
    best = int(np.argmax(score))
    if best == 0 or score[best] <= 0:
        return 0
    if independent is None:
        return best
    if independent < 2:
        return 0
    se = gain[:, best].std(ddof=1) / np.sqrt(independent)
    return best if mean[best] > confidence * se else 0


#: The first defaults, kept as the agent spec ``search-v1`` (``search-v1:key=value,...``):
#: the likelihood belief over 128 particles, 16 worlds, only where the blueprint is below
#: 0.6, rollouts to the hand's end.  The figures measured with ``search`` before the
#: defaults changed (7 December 2026) are this agent's.
SEARCH_V1: dict[str, Any] = {"samples": 16, "margin": 0.05, "uncertain": 0.6,
                             "belief": "likelihood", "depth": 0}
#: Spec head -> the knobs it starts from (then ``key=value`` pairs override them).
_PRESETS: dict[str, dict[str, Any]] = {"search": {}, "search-v1": SEARCH_V1}


def parse_search_spec(spec: str, rules: Rules | str | None = None) -> SearchConfig:
    """``search``, ``search:samples=32,margin=0.05,blueprint=ckpt:runs/x/last.pt``, or the
    same starting from the first defaults, ``search-v1[:key=value,...]``.

    With ``rules``, a ``search`` spec that sets neither ``depth`` nor ``value_file`` and
    has no shipped value network for these rules, its blueprint and ``points_coef`` starts
    from the first defaults too: the wide scope's gain comes from the network's short
    rollouts; with full rollouts it measured level with its blueprint (classic and bonus
    rules) at ten times ``search-v1``'s CPU (docs/search.md, "The defaults")."""
    text = spec.strip()
    head, _, rest = text.partition(":")
    if head.lower() not in _PRESETS:
        raise ValueError(f"not a search spec: {spec!r}")
    given = _spec_values(spec, rest)
    preset = _PRESETS[head.lower()]
    chosen = "depth" in given or bool(given.get("value_file"))  # empty: the shipped one
    if rules is not None and head.lower() == "search" and not chosen:
        from agents.hand_value import shipped_value_file

        blueprint = given.get("blueprint", SearchConfig.blueprint)
        points_coef = given.get("points_coef", SearchConfig.points_coef)
        if shipped_value_file(load_rules(rules), blueprint, points_coef) is None:
            preset = SEARCH_V1
    return SearchConfig(**{**preset, **given})


def _spec_values(spec: str, rest: str) -> dict[str, Any]:
    """The ``key=value`` pairs after a search spec's head, typed as :class:`SearchConfig`
    declares them (the spec is only quoted in errors)."""
    kinds = {f.name: f.type for f in fields(SearchConfig)}
    values: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        key = key.strip().lower()
        if not eq or key not in kinds:
            raise ValueError(f"search spec {spec!r}: expected key=value with key one of "
                             f"{', '.join(kinds)}; got {part!r}")
        value = value.strip()
        try:
            if kinds[key] in ("int", int, "int | None"):
                values[key] = int(value)
            elif kinds[key] in ("float", float):
                values[key] = float(value)
            elif kinds[key] in ("bool", bool):
                if value.lower() not in ("true", "false", "1", "0"):
                    raise ValueError(value)
                values[key] = value.lower() in ("true", "1")
            else:
                values[key] = value
        except ValueError:
            raise ValueError(f"search spec {spec!r}: bad value for {key}: {value!r}") from None
    return values


# --------------------------------------------------------------------------- the seat's view


def _bits(cards: np.ndarray) -> np.ndarray:
    return np.left_shift(_ONE, np.asarray(cards).astype(_U64))


def _mask_of(flags: np.ndarray) -> np.ndarray:
    """(n, 52) 0/1 -> (n,) uint64 masks."""
    weights = np.left_shift(_ONE, np.arange(NUM_CARDS, dtype=_U64))
    return np.bitwise_or.reduce(np.where(flags > 0, weights, _U64(0)), axis=-1)


@dataclass
class _View:
    """What one seat sees of a position, decoded from its observation and history."""

    own: int
    opp_known: int
    unseen: int
    upcard: int
    pile: list[int]              # bottom first, replayed from the history
    my_known: int                # cards the seat took and still holds
    taken_card: int
    takes: int
    stock_size: int
    phase: int
    is_dealer: bool
    events: list[tuple[dict[str, Any], int]]  # the opponent's decisions: snapshot, action
    scores: np.ndarray            # (2, C) seat first
    wins: np.ndarray              # (2,)
    decided: np.ndarray           # (C,)
    winner: np.ndarray            # (C,) 0 = seat, 1 = opponent, -1 open
    belief_x: np.ndarray | None = None  # the belief network's features (belief=net)


def _decode_sheet(x: np.ndarray, rules: Rules) -> tuple[np.ndarray, ...]:
    c = rules.columns
    scores = np.stack([x[_SPEC["own_score"]][:c], x[_SPEC["opponent_score"]][:c]])
    scores = np.rint(scores * rules.target).astype(np.int32)
    wins = np.array([x[_SPEC["open_to_me"]][:c].sum(), x[_SPEC["open_to_opponent"]][:c].sum()],
                    np.int32)
    decided = x[_SPEC["column_decided"]][:c] > 0
    winner = np.where(x[_SPEC["column_won"]][:c] > 0, ME,
                      np.where(x[_SPEC["column_lost"]][:c] > 0, OPP, -1)).astype(np.int8)
    return scores, wins, decided, winner


def _replay(x: np.ndarray, history: np.ndarray, length: int, upcard: int,
            rules: Rules) -> _View:
    """The public course of the hand, checked against the observation ``x``."""
    own = int(_mask_of(x[None, _SPEC["hand"]])[0])
    opp_known_obs = int(_mask_of(x[None, _SPEC["opponent_known"]])[0])
    unseen = int(_mask_of(x[None, _SPEC["unseen"]])[0])
    pile = [int(upcard)]
    known = [0, 0]
    stock = NUM_CARDS - STOCK_START
    phase = A.PHASE_OFFER_NONDEALER
    taken, takes = -1, 0
    events: list[tuple[dict[str, Any], int]] = []
    for code in history[:length].tolist():
        seat, action = divmod(int(code), A.NUM_ACTIONS)
        if seat == OPP:
            events.append(({"pile": list(pile), "my_known": known[ME], "opp_known": known[OPP],
                            "stock": stock, "phase": phase, "taken": taken, "takes": takes},
                           action))
        if action == A.PASS:
            phase = A.PHASE_OFFER_DEALER if phase == A.PHASE_OFFER_NONDEALER else \
                A.PHASE_DRAW_STOCK
        elif action == A.TAKE_DISCARD:
            taken = pile.pop()
            known[seat] |= 1 << taken
            takes += 1
            phase = A.PHASE_DISCARD
        elif action == A.DRAW_STOCK:
            stock -= 1
            taken = -1
            phase = A.PHASE_DISCARD
        elif action < A.DRAW_STOCK:
            card = action % A.KNOCK
            pile.append(card)
            known[seat] &= ~(1 << card)
            taken = -1
            phase = A.PHASE_DRAW
        else:
            raise ValueError(f"history holds {A.action_name(action)} inside a live hand")
    scores, wins, decided, winner = _decode_sheet(x, rules)
    view = _View(own=own, opp_known=known[OPP], unseen=unseen, upcard=int(upcard), pile=pile,
                 my_known=known[ME],
                 taken_card=taken, takes=takes, stock_size=stock,
                 phase=int(np.argmax(x[_SPEC["phase"]])), is_dealer=bool(x[_SPEC["is_dealer"]][0]),
                 events=events, scores=scores, wins=wins, decided=decided, winner=winner)
    _check_view(view, x, opp_known_obs, phase)
    return view


def _check_view(view: _View, x: np.ndarray, opp_known_obs: int, phase: int) -> None:
    """The replayed history must reproduce what the observation shows."""
    top = int(_mask_of(x[None, _SPEC["top_discard"]])[0])
    below = int(_mask_of(x[None, _SPEC["pile_below_top"]])[0])
    pile_mask = 0
    for c in view.pile:
        pile_mask |= 1 << c
    stock = round(float(x[_SPEC["stock_size"]][0]) * STOCK_SCALE)
    problems = []
    if view.pile and top != 1 << view.pile[-1]:
        problems.append("top of the pile")
    if pile_mask != top | below:
        problems.append("pile contents")
    if view.opp_known != opp_known_obs:
        problems.append("cards known in the opponent's hand")
    if stock != view.stock_size:
        problems.append("stock size")
    if phase != view.phase:
        problems.append("phase")
    if (view.own | view.opp_known | view.unseen | pile_mask) != (1 << NUM_CARDS) - 1:
        problems.append("card accounting")
    if problems:
        raise ValueError("search: the public history does not match the observation ("
                         + ", ".join(problems) + "); was the history reset on every deal?")


# --------------------------------------------------------------------------- belief


def _random_bits(masks: np.ndarray, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One uniformly random set bit of each mask (as a bit) and the number of set bits."""
    flags = unpack_masks(masks).view(bool)
    keys = np.where(flags, gen.random(flags.shape), 2.0)
    card = keys.argmin(axis=1)
    return _bits(card), flags.sum(axis=1)


def _sample_hidden(unseen: int, count: int, particles: int,
                   gen: np.random.Generator) -> np.ndarray:
    """``particles`` uniform subsets of ``count`` cards of ``unseen``, as masks."""
    cards = np.array([c for c in range(NUM_CARDS) if unseen >> c & 1], np.int64)
    keys = gen.random((particles, cards.size))
    pick = np.argsort(keys, axis=1)[:, :count]
    return np.bitwise_or.reduce(_bits(cards[pick]), axis=1) if count else \
        np.zeros(particles, _U64)


def _walk_back(view: _View, hidden: np.ndarray,
               gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The opponent's hand before each of its decisions, and the log prior correction.

    Going back from the sampled hand: a discard comes back into the hand, a
    taken card leaves it, and a stock draw gives back one card that could
    have come from the stock (not one it took earlier), chosen uniformly.
    Uniform deals make every consistent history equally likely, so each
    sample is weighted by the number of such choices it had.
    """
    hand = hidden | _U64(view.opp_known)
    m = hidden.size
    before = np.zeros((len(view.events), m), _U64)
    log_prior = np.zeros(m)
    taken_before = np.zeros(len(view.events) + 1, np.int64)  # cards the opponent took earlier
    acc = 0
    for t, (snap, action) in enumerate(view.events):
        taken_before[t] = acc
        if action == A.TAKE_DISCARD:
            acc |= 1 << snap["pile"][-1]
    for t in range(len(view.events) - 1, -1, -1):
        snap, action = view.events[t]
        if action < A.DRAW_STOCK:
            hand = hand | _bits(action % A.KNOCK)
        elif action == A.TAKE_DISCARD:
            hand = hand & ~_bits(snap["pile"][-1])
        elif action == A.DRAW_STOCK:
            eligible = hand & ~_U64(taken_before[t])
            bit, count = _random_bits(eligible, gen)
            log_prior += np.log(np.maximum(count, 1))
            log_prior[count == 0] = -np.inf
            hand = hand & ~bit
        before[t] = hand
    return before, log_prior


# --------------------------------------------------------------------------- positions


@dataclass
class _Positions:
    """Per-row ingredients of positions with seat 0 to move (arrays of length R)."""

    mover_hand: np.ndarray      # uint64
    other_hand: np.ndarray      # uint64
    mover_known: np.ndarray     # uint64
    other_known: np.ndarray     # uint64
    piles: list[list[int]]
    phase: np.ndarray
    taken: np.ndarray
    takes: np.ndarray
    stock_size: np.ndarray
    mover_deals: np.ndarray     # bool: seat 0 is the dealer
    upcard: np.ndarray
    sheet_rows: np.ndarray      # index of the view whose sheet each row carries
    flip_sheet: bool            # the views' sheets are the other seat's point of view


def _build(rules: Rules, views: list[_View], pos: _Positions,
           stock_keys: np.ndarray | None = None) -> GameState:
    """Positions as one :class:`GameState` (seat 0 to move).

    With ``stock_keys`` (R, 52) the stock is every card in no hand and not
    on the pile, in the order of its keys, and the state is complete (a deck
    that conserves the 52 cards); without, only what an observation and the
    legal mask read is filled.
    """
    r = pos.mover_hand.size
    st = GameState.zeros(r, rules)
    st.hands[:, 0] = pos.mover_hand
    st.hands[:, 1] = pos.other_hand
    st.known[:, 0] = pos.mover_known
    st.known[:, 1] = pos.other_known
    for row, pile in enumerate(pos.piles):
        st.pile[row, : len(pile)] = pile
        st.pile_size[row] = len(pile)
    flags = np.zeros((r, NUM_CARDS), bool)
    lengths = st.pile_size.astype(np.int64)
    filled = np.arange(NUM_CARDS)[None, :] < lengths[:, None]
    flags[np.nonzero(filled)[0], st.pile[filled].astype(np.int64)] = True
    st.pile_mask[:] = _mask_of(flags)
    st.phase[:] = pos.phase
    st.current_player[:] = 0
    st.dealer[:] = np.where(pos.mover_deals, 0, 1)
    st.taken_card[:] = pos.taken
    st.takes[:] = pos.takes
    st.stock_pos[:] = NUM_CARDS - pos.stock_size
    st.knock_limit[:] = rules.knock_limits(pos.upcard.astype(np.int64))
    discarding = np.flatnonzero(pos.phase == A.PHASE_DISCARD)
    if discarding.size:
        st.discard_deadwood[discarding] = discard_table_unchecked(st.hands[discarding, 0])
        if rules.big_gin:
            st.big_gin_ready[discarding] = min_deadwood(st.hands[discarding, 0]) == 0
    sheets = SheetBatch.new(r, rules)
    idx = pos.sheet_rows
    order = [1, 0] if pos.flip_sheet else [0, 1]
    sheets.scores[:] = np.stack([v.scores for v in views])[idx][:, order]
    sheets.wins[:] = np.stack([v.wins for v in views])[idx][:, order]
    sheets.decided[:] = np.stack([v.decided for v in views])[idx]
    winner = np.stack([v.winner for v in views])[idx]
    sheets.column_winner[:] = np.where(winner >= 0, winner ^ int(pos.flip_sheet), -1)
    # Hands posted per column are not in the observation (only the bonus profile's
    # box bonus reads them): estimate every win posted in each column it opened.
    sheets.boxes[:] = np.maximum(sheets.wins[:, :, None] - np.arange(rules.columns), 0)
    st.sheets = sheets
    st.deal_number[:] = 1
    st.hands_in_match[:] = 1
    if stock_keys is not None:
        st.deck[:] = _deck(st, pos, stock_keys)
    return st


def _deck(st: GameState, pos: _Positions, stock_keys: np.ndarray) -> np.ndarray:
    """A deal order with the upcard at 20 and the stock (in key order) at the end."""
    r = st.num_games
    in_play = unpack_masks(st.hands[:, 0] | st.hands[:, 1] | st.pile_mask).view(bool)
    stock = ~in_play
    size = pos.stock_size.astype(np.int64)
    if not (stock.sum(axis=1) == size).all():
        raise ValueError("search built a position whose stock size differs from the seat's view")
    # Stock cards: rank of their key among the stock cards, after the 52 - size front cards.
    keys = np.where(stock, stock_keys, 2.0)
    rank = np.argsort(np.argsort(keys, axis=1), axis=1)
    up = np.zeros_like(stock)
    up[np.arange(r), pos.upcard.astype(np.int64)] = True
    front = ~stock & ~up
    order = np.cumsum(front, axis=1) - 1
    slot = np.where(front, order + (order >= STOCK_START - 1),
                    np.where(up, STOCK_START - 1, NUM_CARDS - size[:, None] + rank))
    deck = np.empty((r, NUM_CARDS), np.int8)
    deck[np.arange(r)[:, None], slot] = np.arange(NUM_CARDS, dtype=np.int8)[None, :]
    return deck


# --------------------------------------------------------------------------- worlds


@dataclass
class Worlds:
    """The worlds the searched decisions are rolled out in, one entry per searched view.

    ``hands[j]`` (W,) uint64: the opponent's hand in each world (its hidden cards, or the
    whole hand: the cards known to be in it are added either way); ``stock_keys[j]``
    (W, 52): the stock of world ``w`` is every card in no hand and not on the pile, drawn
    in increasing order of its key; ``independent[j]``: how many of the W worlds count
    as independent evidence in the confidence test, or ``None`` where the worlds are
    exact (no sampling error: the margin alone decides).
    """

    hands: list[np.ndarray]
    stock_keys: list[np.ndarray]
    independent: list[int | None]


class WorldSampler(Protocol):
    """Replaces the search's belief (:meth:`SearchAgent.sample_worlds`) where it is set.

    Only for measuring the search (``bench/search_diagnosis.py`` plays it with the true
    hidden state, a cheating agent); ``rows`` are the indices, in the batch given to
    :meth:`SearchAgent.act`, of the searched positions ``views``.
    """

    def sample_worlds(self, agent: SearchAgent, views: list[_View], rows: np.ndarray,
                      gens: list[np.random.Generator]) -> Worlds: ...


# --------------------------------------------------------------------------- the agent


class SearchAgent:
    """Belief-weighted rollouts around a blueprint policy; see the module docstring."""

    uses_history = True
    draws_per_row = True

    def __init__(self, config: SearchConfig | None = None, rules: Rules | str | None = None,
                 blueprint: Agent | None = None, seed: int | None = None,
                 worlds: WorldSampler | None = None, rollout: Agent | None = None) -> None:
        self.config = config or SearchConfig()
        #: Where the searched decisions' worlds come from: ``None`` (the search's own
        #: belief, :meth:`sample_worlds`), or a :class:`WorldSampler` (measurements only).
        self.worlds = worlds
        self._belief_net: Any = None  # the network, loaded here (a bad file is a
        if self.config.belief in NETWORK_BELIEFS:  # one-line error now, not mid-match)
            from agents.belief import BELIEF_PATH, HAND_BELIEF_PATH, load_belief

            hand = self.config.belief == "hand"
            path = self.config.belief_file or (HAND_BELIEF_PATH if hand else BELIEF_PATH)
            self._belief_net = load_belief(path)
            if self._belief_net.conditional != hand:  # each draws its own kind of hands
                raise ValueError(
                    f"search belief={self.config.belief} needs a "
                    f"{'conditional' if hand else 'plain (card marginals)'} belief network; "
                    f"{path} is {'conditional' if self._belief_net.conditional else 'plain'}"
                    f" (use belief={'hand' if self._belief_net.conditional else 'net'})")
        self.rules = load_rules(rules)
        #: Moves a rollout plays before the value network reads the rest (0: to the end of
        #: the hand): ``config.depth``, or where it is unset what the shipped files allow.
        self.depth, value_path = self._value_source()
        self._value_net: Any = self._load_value_net(value_path) if self.depth else None
        self._win_table: np.ndarray | None = None
        if self.config.game_value:
            self._win_table = load_win_table(self.config.game_value, self.rules)
        if blueprint is None:
            raise ValueError(f"SearchAgent needs its blueprint agent (config.blueprint is "
                             f"{self.config.blueprint!r}); make_agent('search') builds it")
        if not hasattr(blueprint, "policy") or not getattr(blueprint, "greedy", False):
            raise ValueError("the search blueprint must be a greedy torch policy (it needs "
                             "action probabilities, and deterministic rollouts keep the "
                             "samples common to all candidates): 'pretrained' or 'ckpt:PATH'")
        self.blueprint = blueprint
        if self.config.rollout and rollout is None:
            raise ValueError(f"SearchAgent needs its rollout agent (config.rollout is "
                             f"{self.config.rollout!r}); make_agent('search:...') builds it")
        if getattr(rollout, "greedy", True) is False:
            raise ValueError("the search rollout agent must be deterministic: a greedy "
                             "torch policy, strong, ginhunter or simple-det")
        #: Who plays both seats of the rollouts: the blueprint unless ``rollout`` is set.
        self.rollout_agent: Agent = rollout if rollout is not None else blueprint
        self.name = "search"
        self._rng = np.random.default_rng(seed)
        #: Counters since construction: decisions seen, searched, changed by search, and
        #: the changes that also changed whether to knock (only with ``knocks``).
        self.counts = {"decisions": 0, "searched": 0, "deviations": 0, "knock_changes": 0}

    def _value_source(self) -> tuple[int, Path | str]:
        """``depth`` and the value file it reads.  Unset, ``depth`` is 1 with ``value_file``
        or a shipped network made for these rules, blueprint and ``points_coef``, else 0 (full
        rollouts: a value network of other rules or another player's play would misjudge
        the rest of the hand).  Set, an empty ``value_file`` is the shipped network for
        them, or ``hand_value.pt``, which says so in one line if it does not fit."""
        from agents.hand_value import HAND_VALUE_PATH, shipped_value_file

        cfg = self.config
        if cfg.game_value:  # the win table values whole hands
            return 0, ""
        path = cfg.value_file or shipped_value_file(self.rules, cfg.blueprint, cfg.points_coef)
        if cfg.depth is None:
            return (1, path) if path else (0, "")
        return cfg.depth, path or HAND_VALUE_PATH

    def _load_value_net(self, path: Path | str) -> Any:
        """The hand value network ``depth`` reads; a one-line error if it was trained for
        other rules or another ``points_coef`` (its values would be in other units)."""
        from agents.hand_value import load_hand_value

        net = load_hand_value(path)
        trained = net.meta.get("rules")
        if isinstance(trained, str) and load_rules(trained) != self.rules:
            raise ValueError(f"search depth={self.depth}: {path} values hands under "
                             f"the {trained!r} rules, not these; train one for them with "
                             f"python bench/train_value.py --rules ...")
        coef = net.meta.get("points_coef")
        if isinstance(coef, (int, float)) and float(coef) != self.config.points_coef:
            raise ValueError(f"search depth={self.depth}: {path} was trained with "
                             f"points_coef={coef}, search has {self.config.points_coef}")
        return net

    # ------------------------------------------------------------------ act
    def act(self, obs: dict[str, np.ndarray], rng: Any = None) -> np.ndarray:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(self.config.threads)
        try:
            return self._act(obs, rng)
        finally:
            torch.set_num_threads(threads)

    def _act(self, obs: dict[str, np.ndarray], rng: Any) -> np.ndarray:
        missing = [k for k in HISTORY_KEYS if k not in obs]
        if missing:
            raise ValueError(
                f"search needs the public history in its observation ({', '.join(missing)} "
                "missing): seat it through the arena (hgin evaluate, tournaments), the Gymnasium "
                "env, the terminal game or the play server, which keep a "
                "hgin_env.history.PublicHistory for agents with uses_history, or use the "
                "PettingZoo env with history=True")
        x = np.asarray(obs["observation"])
        mask = np.asarray(obs["action_mask"])
        n = x.shape[0]
        if n == 0:
            return np.zeros(0, np.int64)
        rng = rng if rng is not None else self._rng
        # One draw per game seeds that game's own generator: a game's choices do
        # not depend on which other games share the batch.
        seeds = (np.asarray(rng.random(n)) * 2**63).astype(np.int64)
        probs, _ = self.blueprint.policy({"observation": x, "action_mask": mask})
        probs = np.where(mask > 0, probs, -1.0)
        choice = probs.argmax(axis=1).astype(np.int64)
        self.counts["decisions"] += n
        rows, candidates = self._to_search(x, mask, probs)
        if rows.size == 0:
            return choice
        self.counts["searched"] += rows.size
        gens = [np.random.default_rng(int(seeds[i])) for i in rows]
        views = [_replay(x[i], obs["history"][i], int(obs["history_len"][i]),
                         int(obs["upcard"][i]), self.rules) for i in rows]
        if self.config.belief in NETWORK_BELIEFS:
            from agents.belief import belief_features

            feats = belief_features(x[rows], np.asarray(obs["history"])[rows],
                                    np.asarray(obs["history_len"])[rows],
                                    np.asarray(obs["upcard"])[rows])
            for view, f in zip(views, feats, strict=True):
                view.belief_x = f
        if self.worlds is None:
            worlds = self.sample_worlds(views, gens)
        else:
            worlds = self.worlds.sample_worlds(self, views, rows, gens)
        values = self._rollouts(views, worlds.hands, candidates, worlds.stock_keys)
        for j, i in enumerate(rows):
            best = self._decide(values[j], candidates[j], worlds.independent[j])
            if best:
                choice[i] = candidates[j][best]
                self.counts["deviations"] += 1
                self.counts["knock_changes"] += _is_knock(choice[i]) != _is_knock(candidates[j][0])
        return choice

    def _decide(self, q: np.ndarray, candidates: list[int], independent: int | None) -> int:
        """Index of the candidate to play: 0 (the blueprint's) unless another wins clearly.

        ``q`` is (samples, candidates) and ``independent`` the number of independent
        worlds among the samples (:attr:`Worlds.independent`; ``None``: the worlds are
        exact, so there is no sampling error to test).  The samples are shared by the
        candidates, so the test is on paired differences, and its standard error counts
        the independent worlds only (by default the distinct hands: resampling repeats
        likely hands; repeats are not independent evidence).
        """
        knocks = np.array([_is_knock(c) for c in candidates])
        need = self.config.margin + self.config.knock_margin * (knocks != knocks[0])
        return paired_choice(q, need, independent, self.config.confidence)

    def _to_search(self, x: np.ndarray, mask: np.ndarray,
                   probs: np.ndarray) -> tuple[np.ndarray, list[list[int]]]:
        """Rows worth searching and their candidate actions (the blueprint's first)."""
        phase = x[:, _SPEC["phase"]].argmax(axis=1)
        wanted = phase == A.PHASE_DISCARD
        if self.config.draws:
            wanted |= phase == A.PHASE_DRAW
        rows, candidates = [], []
        for i in np.flatnonzero(wanted):
            if mask[i, A.BIG_GIN]:
                continue  # going out with eleven melded cards is never worse
            legal = np.flatnonzero(mask[i])
            if legal.size < 2:
                continue
            if self.config.uncertain < 1.0 and probs[i].max() >= self.config.uncertain:
                continue  # a confident blueprint is trusted
            ranked = legal[np.argsort(-probs[i, legal], kind="stable")]
            is_knock = (ranked >= A.KNOCK) & (ranked < A.DRAW_STOCK)
            if not self.config.knocks:  # only the card: knock or not stays the blueprint's
                ranked = ranked[is_knock == is_knock[0]]
                if ranked.size < 2:
                    continue
            pick = [int(a) for a in ranked[: self.config.top_k]]
            if self.config.knocks:
                # The knock decision is searched: the best knock and the best plain discard.
                for extra in (ranked[is_knock][:1], ranked[~is_knock][:1]):
                    if extra.size and int(extra[0]) not in pick:
                        pick.append(int(extra[0]))
            rows.append(int(i))
            candidates.append(pick)
        return np.array(rows, np.int64), candidates

    # ------------------------------------------------------------------ belief
    def particles(self, views: list[_View],
                  gens: list[np.random.Generator]) -> list[tuple[np.ndarray, np.ndarray]]:
        """The belief of each view: ``particles`` opponent hands (hidden part) and their weights.

        Returns ``(hidden, weights)`` per view: uniform hands of the unseen cards,
        weighted (normalised) by the prior of their walked-back histories and the
        tempered likelihood of the opponent's public choices.  The likelihoods of
        every view's particles come from one blueprint call.
        """
        cfg = self.config
        if cfg.belief in ("net", "hand"):
            return self._net_particles(views, gens)
        proposal = self._net_particles(views, gens) if cfg.belief == "netlik" else None
        hidden, befores, priors = [], [], []
        for j, (view, gen) in enumerate(zip(views, gens, strict=True)):
            count = 10 - int(popcount64(np.array([view.opp_known], _U64))[0])
            h = _sample_hidden(view.unseen, count, cfg.particles, gen) if proposal is None \
                else proposal[j][0]
            before, log_prior = _walk_back(view, h, gen)
            hidden.append(h)
            befores.append(before)
            priors.append(log_prior)
        likelihoods = self._log_likelihoods(views, befores)
        out = []
        for h, prior, lik in zip(hidden, priors, likelihoods, strict=True):
            log_w = prior + cfg.temper * lik
            if not np.isfinite(log_w).any():  # cannot happen with a legal history; be safe
                log_w = np.zeros_like(log_w)
            w = np.exp(log_w - log_w.max())
            out.append((h, w / w.sum()))
        return out

    def _net_particles(self, views: list[_View], gens: list[np.random.Generator]
                       ) -> list[tuple[np.ndarray, np.ndarray]]:
        """``belief=net`` or ``hand``: hands drawn from the belief network, equal weights.

        A conditional network's hands (``hand``) cost a network call per card, and with
        equal weights drawing more than ``samples`` of them only to keep ``samples`` gains
        nothing: it draws ``samples`` (``particles`` is not used).
        """
        feats = np.stack([v.belief_x for v in views])
        unseen = unpack_masks(np.array([v.unseen for v in views], _U64)).astype(bool)
        counts = 10 - popcount64(np.array([v.opp_known for v in views], _U64)).astype(np.int64)
        net = self._belief_net
        n = self.config.samples if net.conditional else self.config.particles
        hands = net.sample(feats, unseen, counts, n, gens)
        return [(h, np.full(n, 1.0 / n)) for h in hands]

    def resample(self, hidden: np.ndarray, weights: np.ndarray,
                 gen: np.random.Generator) -> np.ndarray:
        """``samples`` of the weighted particles (systematic resampling: one uniform draw)."""
        n = self.config.samples
        edges = (gen.random() + np.arange(n)) / n
        return hidden[np.minimum(np.searchsorted(np.cumsum(weights), edges), weights.size - 1)]

    def sample_worlds(self, views: list[_View], gens: list[np.random.Generator],
                      beliefs: list[tuple[np.ndarray, np.ndarray]] | None = None) -> Worlds:
        """The search's own worlds: belief samples, each with its own stock order.

        ``beliefs`` (optional) are the views' :meth:`particles`, already drawn from
        ``gens`` (a measurement that reads them gets the same worlds).
        """
        if beliefs is None:
            beliefs = self.particles(views, gens)
        hands, keys = [], []
        for (h, w), gen in zip(beliefs, gens, strict=True):
            hands.append(self.resample(h, w, gen))
            # One stock order per sample, shared by the candidates (common random numbers).
            keys.append(gen.random((self.config.samples, NUM_CARDS)))
        return Worlds(hands, keys, [len(np.unique(h)) for h in hands])

    def _log_likelihoods(self, views: list[_View], befores: list[np.ndarray]) -> list[np.ndarray]:
        """log P(the opponent's public choices | each particle) under the blueprint, per view.

        Each (particle, past decision) becomes a position seen by the opponent
        (seat 0 to move there), encoded and scored in one batch.
        """
        m = self.config.particles
        snaps = [(v, i, s, a) for i, v in enumerate(views) for s, a in v.events]
        if not snaps:
            return [np.zeros(m) for _ in views]
        k = len(snaps)
        rep = np.repeat(np.arange(k), m)
        pos = _Positions(
            mover_hand=np.concatenate([b for b in befores if b.size]).reshape(-1),
            other_hand=np.zeros(k * m, _U64),
            mover_known=np.array([s["opp_known"] for _, _, s, _ in snaps], _U64)[rep],
            other_known=np.array([s["my_known"] for _, _, s, _ in snaps], _U64)[rep],
            piles=[snaps[t][2]["pile"] for t in rep.tolist()],
            phase=np.array([s["phase"] for _, _, s, _ in snaps], np.int8)[rep],
            taken=np.array([s["taken"] for _, _, s, _ in snaps], np.int8)[rep],
            takes=np.array([s["takes"] for _, _, s, _ in snaps], np.int16)[rep],
            stock_size=np.array([s["stock"] for _, _, s, _ in snaps], np.int64)[rep],
            mover_deals=np.array([not v.is_dealer for v, _, _, _ in snaps])[rep],
            upcard=np.array([v.upcard for v, _, _, _ in snaps], np.int64)[rep],
            sheet_rows=np.array([i for _, i, _, _ in snaps], np.int64)[rep],
            flip_sheet=True,
        )
        st = _build(self.rules, views, pos)
        legal = legal_mask(st)
        obs = {"observation": encode(st, np.zeros(st.num_games, np.int64)), "action_mask": legal}
        probs, _ = self.blueprint.policy(obs)
        actions = np.array([a for _, _, _, a in snaps], np.int64)[rep]
        at = np.arange(actions.size)
        eps = self.config.epsilon
        p = (1 - eps) * probs[at, actions] + eps / np.maximum(legal.sum(axis=1), 1)
        log_p = np.where(legal[at, actions] > 0, np.log(p), -np.inf).reshape(k, m)
        out, start = [], 0
        for v in views:
            out.append(log_p[start : start + len(v.events)].sum(axis=0))
            start += len(v.events)
        return out

    # ------------------------------------------------------------------ rollouts
    def _rollouts(self, views: list[_View], hands: list[np.ndarray],
                  candidates: list[list[int]], keys_of: list[np.ndarray],
                  opponent: Agent | None = None) -> list[np.ndarray]:
        """Value of each (world, candidate) of each view: (worlds, candidates).

        ``opponent`` (default: the blueprint) plays the other seat in the rollouts.
        """
        per_view = [h.size * len(c) for h, c in zip(hands, candidates, strict=True)]
        rows_view = np.repeat(np.arange(len(views)), per_view)
        opp_hand, stock_keys, actions = [], [], []
        for v, h, c, keys in zip(views, hands, candidates, keys_of, strict=True):
            if keys.shape != (h.size, NUM_CARDS):
                raise ValueError(f"search worlds: {h.size} hands need ({h.size}, {NUM_CARDS}) "
                                 f"stock keys, got {keys.shape}")
            opp_hand.append(np.repeat(h | _U64(v.opp_known), len(c)))
            stock_keys.append(np.repeat(keys, len(c), axis=0))
            actions.append(np.tile(np.array(c, np.int64), h.size))
        r = rows_view.size
        pos = _Positions(
            mover_hand=np.array([v.own for v in views], _U64)[rows_view],
            other_hand=np.concatenate(opp_hand),
            mover_known=np.array([v.my_known for v in views], _U64)[rows_view],
            other_known=np.array([v.opp_known for v in views], _U64)[rows_view],
            piles=[views[i].pile for i in rows_view.tolist()],
            phase=np.array([v.phase for v in views], np.int8)[rows_view],
            taken=np.array([v.taken_card for v in views], np.int8)[rows_view],
            takes=np.array([v.takes for v in views], np.int16)[rows_view],
            stock_size=np.array([v.stock_size for v in views], np.int64)[rows_view],
            mover_deals=np.array([v.is_dealer for v in views])[rows_view],
            upcard=np.array([v.upcard for v in views], np.int64)[rows_view],
            sheet_rows=rows_view,
            flip_sheet=False,
        )
        state = _build(self.rules, views, pos, np.concatenate(stock_keys))
        value = self._play_out(state, np.concatenate(actions), opponent)
        out, start = [], 0
        for h, c in zip(hands, candidates, strict=True):
            out.append(value[start : start + h.size * len(c)].reshape(h.size, len(c)))
            start += h.size * len(c)
        assert start == r
        return out

    def _play_out(self, state: GameState, first: np.ndarray,
                  opponent: Agent | None = None) -> np.ndarray:
        """Seat 0's return: ``first`` played, then the rollout agent (the blueprint unless
        ``rollout`` names another) on both seats to the hand's end (``opponent``, where
        given, on seat 1)."""
        game = VectorGame.from_state(state, reward="columns", autoreset=False)
        scale = float(self.rules.target * self.rules.columns)
        value = np.zeros(game.num_games)
        live = np.ones(game.num_games, bool)
        actions = first
        moves = 0
        while True:
            before = game.scores.sum(axis=2)
            rewards, info = game.step(actions, active=live)
            after = game.scores.sum(axis=2)
            if self._win_table is not None:  # the chance of the game from the new score
                ended = np.flatnonzero(live & info["hand_over"])
                p = win_values(self._win_table, after[ended, 0], after[ended, 1],
                               game.state.dealer[ended] == 0)
                value[ended] = 2.0 * p - 1.0
            else:
                gained = (after - before).astype(np.float64)
                value += np.where(live, rewards[:, 0] + self.config.points_coef
                                  * (gained[:, 0] - gained[:, 1]) / scale, 0)
            live &= ~info["hand_over"]
            moves += 1
            if not live.any():
                return value
            obs = game.observe()
            if moves == self.depth:  # cut short: the network values the rest
                rows = np.flatnonzero(live)
                mover = game.state.current_player[rows]
                v = self._value_net.value_positions(obs["observation"], game.state, rows)
                value[rows] += np.where(mover == 0, v, -v)
                return value
            actions = np.zeros(game.num_games, np.int64)
            if opponent is None:
                rows = np.flatnonzero(live)
                actions[rows] = self.rollout_agent.act({k: v[rows] for k, v in obs.items()})
                continue
            for seat, agent in ((0, self.rollout_agent), (1, opponent)):
                rows = np.flatnonzero(live & (game.state.current_player == seat))
                if rows.size:
                    actions[rows] = agent.act({k: v[rows] for k, v in obs.items()})
