"""OpenSpiel binding: importing this module registers ``python_hollywood_gin`` with pyspiel.

One episode is one Hollywood match (or its first ``max_hands`` hands), played by
hgin's own one-game engine (:class:`~hgin_env.engine.single.SingleGame`); nothing here
re-states a rule.  What OpenSpiel needs on top of the engine:

* **Explicit chance.**  The first dealer of the match is one chance node (seat 0
  or 1); each deal is 21 chance nodes (``deck[0..19]`` dealt alternately,
  non-dealer first, then the upcard ``deck[20]``); each stock draw is one chance
  node picking the drawn card among the cards still in the stock.  So the same
  card order fed to ``VectorGame.reset(decks=...)`` and through these chance
  nodes plays the same game, and no stock card is fixed before it is drawn.
* **Returns.**  The sum over the episode of hgin's rewards in the ``reward``
  mode (``match``: +1/-1 at the end of the match, 0/0 when ``max_hands`` stops it
  first; ``columns``; ``points``), paid at the terminal state (OpenSpiel's
  terminal reward model, which its MCTS bots require).
* **Observations.**  Both tensors are hgin's observation encoding
  (:func:`hgin_env.observation.encode`, one named piece per slice of
  ``LAYOUT``), so a policy trained on hgin runs on OpenSpiel states.  The
  observation string describes the same view; the information-state string is
  the player's perfect-recall history (its own cards, every public action, each
  hand's result; earlier hands as a digest).
* **Parameters.**  ``rules`` (a profile name or TOML path) and every
  :class:`~hgin_env.rules.Rules` field as an override.  OpenSpiel parameters have
  fixed types and are always filled with their defaults, so an override left at
  its default (``-1``, or ``""`` for text) means "as the profile says", and the
  on/off switches are written 0/1 (``oklahoma=1``).

:class:`HginBot` offers any hgin agent spec as a ``pyspiel.Bot``;
``HollywoodGinState.resample_from_infostate`` lets OpenSpiel's Python IS-MCTS
(``open_spiel.python.algorithms.ismcts``) sample worlds consistent with what the
player to move knows.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from typing import Any

import numpy as np
import pyspiel

from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS, card_str, popcount
from hgin_env.engine.hand import REWARD_MODES, HandRecord, deal
from hgin_env.engine.single import SingleGame, SingleGameArrays, min_deadwood
from hgin_env.envs import openspiel_text
from hgin_env.hollywood import SheetBatch
from hgin_env.observation import (
    DEADWOOD_SCALE,
    LAYOUT,
    OBS_DIM,
    STOCK_SCALE,
    encode,
    observation_spec,
)
from hgin_env.rules import DEFAULT_PROFILE, Rules, field_names, load_rules
from hgin_env.state import STOCK_START, GameState

__all__ = [
    "GAME_NAME",
    "HginBot",
    "HollywoodGinGame",
    "HollywoodGinObserver",
    "HollywoodGinState",
    "deserialize_game_and_state",
    "rules_from_params",
    "serialize_game_and_state",
]

GAME_NAME = "python_hollywood_gin"
#: An int or on/off override at this value leaves the profile's value.
UNSET = -1
#: Real matches take far fewer hands (of 3,000 seeded matches of `simple`, `strong` and
#: `pretrained`, the longest took 24), while uniformly random play rarely ends one; and
#: OpenSpiel's `random_sim_test` keeps a clone of every state of an episode, each copying
#: pyspiel's history, so its memory grows with the square of the episode's length
#: (docs/openspiel.md, "Memory").
DEFAULT_MAX_HANDS = 30
#: Chance nodes of one deal: 20 dealt cards and the upcard.
DEAL_CARDS = 2 * 10 + 1
_FULL = (1 << NUM_CARDS) - 1
#: Each card's text, and a hand's (sorted by suit then rank, as ``cards.format``): the
#: state's strings are built at every node of OpenSpiel's checks.
_CARD_TEXT = [card_str(c) for c in range(NUM_CARDS)]


def format_cards(mask: int) -> str:
    out = []
    while mask:
        low = mask & -mask
        out.append(_CARD_TEXT[low.bit_length() - 1])
        mask ^= low
    return " ".join(out)


def _cards_text(cards: list[int]) -> str:
    return " ".join([_CARD_TEXT[c] for c in cards])
_RULE_FIELDS = {f.name: f for f in dataclasses.fields(Rules)}
_SPEC = observation_spec()


def _parameter_specification() -> dict[str, Any]:
    spec: dict[str, Any] = {"rules": DEFAULT_PROFILE, "reward": "match",
                            "max_hands": DEFAULT_MAX_HANDS}
    for name in field_names():
        spec[name] = "" if isinstance(getattr(Rules(), name), str) else UNSET
    return spec


_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Python Hollywood Gin Rummy (hgin)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=_parameter_specification(),
)


def rules_from_params(params: dict[str, Any]) -> Rules:
    """The :class:`Rules` a game's parameters name: the profile, then every set override."""
    base = load_rules(params.get("rules") or DEFAULT_PROFILE)
    changes: dict[str, Any] = {}
    for name, field in _RULE_FIELDS.items():
        value = params.get(name, UNSET)
        if value in ("", UNSET) and not isinstance(value, bool):
            continue
        if field.type in ("bool", bool):
            if value not in (0, 1):
                raise ValueError(f"parameter {name} is an on/off switch: 0 or 1, got {value!r}")
            value = bool(value)
        changes[name] = value
    return base.replace(**changes)


def _max_award(rules: Rules) -> int:
    """A bound on one hand's award: a 10-card deadwood of at most 100 plus the largest bonus."""
    bonus = max(rules.gin_bonus, rules.undercut_bonus, rules.big_gin_bonus if rules.big_gin else 0)
    return 100 + bonus


def _game_info(rules: Rules, reward: str, max_hands: int) -> pyspiel.GameInfo:
    if reward == "points":
        # Each column takes at most target - 1 points before one more award decides it.
        bound = (rules.target - 1 + _max_award(rules)) / rules.target
    else:
        bound = 1.0
    # Per hand: two upcard passes, then draw + discard per turn; a turn draws from the
    # stock at most 29 times (31 -> 2 cards) and takes at most max_discard_takes times.
    turns = (NUM_CARDS - STOCK_START - 2) + rules.max_discard_takes
    return pyspiel.GameInfo(
        num_distinct_actions=A.NUM_ACTIONS,
        max_chance_outcomes=NUM_CARDS,
        num_players=2,
        min_utility=-bound,
        max_utility=bound,
        utility_sum=0.0,
        max_game_length=max_hands * (2 + 2 * turns),
    )


class _Shared:
    """Per-game settings a state points to; every clone shares them (never deep-copied)."""

    def __init__(self, rules: Rules, reward: str, max_hands: int) -> None:
        self.rules = rules
        self.reward = reward
        self.max_hands = max_hands
        self._blank: np.ndarray | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> _Shared:
        return self

    def blank_observation(self) -> np.ndarray:
        """hgin's encoding of a blank one-game state (a fresh sheet), computed once."""
        if self._blank is None:
            self._blank = encode(GameState.zeros(1, self.rules), np.array([0]))[0]
            self._blank.flags.writeable = False
        return self._blank


class HollywoodGinGame(pyspiel.Game):
    """``python_hollywood_gin``: one Hollywood match between seats 0 and 1."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        given = dict(params or {})
        full = {**_GAME_TYPE.parameter_specification, **given}
        rules = rules_from_params(full)
        reward = full["reward"]
        if reward not in REWARD_MODES:
            raise ValueError(f"parameter reward must be one of {REWARD_MODES}, got {reward!r}")
        max_hands = int(full["max_hands"])
        if max_hands < 1:
            raise ValueError(f"parameter max_hands must be at least 1, got {max_hands}")
        super().__init__(_GAME_TYPE, _game_info(rules, reward, max_hands), given)
        self.shared = _Shared(rules, reward, max_hands)

    @property
    def rules(self) -> Rules:
        return self.shared.rules

    def new_initial_state(self) -> HollywoodGinState:
        return HollywoodGinState(self)

    def deserialize_state(self, text: str) -> HollywoodGinState:
        """The state :meth:`HollywoodGinState.serialize` wrote, checked field by field and
        by the engine; never unpickles (pyspiel's form for Python games does, and is
        refused).  ``ValueError`` names what is wrong with a hostile or broken string."""
        state = HollywoodGinState(self)
        state.restore(openspiel_text.loads(text, self.history_limit()))
        return state

    def history_limit(self) -> int:
        """The most moves one episode's history can hold: decisions and chance nodes."""
        return self.max_game_length() + self.max_chance_nodes_in_history()

    def max_chance_nodes_in_history(self) -> int:
        # The first dealer, then per hand the deal and at most 29 stock draws.
        return 1 + self.shared.max_hands * (DEAL_CARDS + NUM_CARDS - STOCK_START - 2)

    def make_py_observer(self, iig_obs_type: Any = None,
                         params: dict[str, Any] | None = None) -> HollywoodGinObserver:
        return HollywoodGinObserver(
            iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False), params)


# ----------------------------------------------------------------------------- engine


def _copied(value: Any) -> Any:
    """A copy of one engine attribute, by type: containers and live state copied, the
    read-only tables and immutable values shared (a generic deepcopy is 10x slower)."""
    if isinstance(value, (list, dict)):
        return copy.copy(value)
    if isinstance(value, np.ndarray):
        return value.copy() if value.flags.writeable else value
    if isinstance(value, GameState):
        return value.clone()
    if isinstance(value, SheetBatch):
        return value.copy()
    if isinstance(value, HandRecord):
        return HandRecord(**{f.name: getattr(value, f.name).copy()
                             for f in dataclasses.fields(value)})
    if isinstance(value, SingleGameArrays):
        return None  # a view of the original game: rebuilt on demand
    if value is None or isinstance(value, (int, float, str, bytes, tuple, Rules)):
        return value
    return copy.deepcopy(value)


class _Engine(SingleGame):
    """hgin's one-game engine, plus what explicit chance needs: deal a hand from given
    cards, place the chosen card on top of the stock, rewrite hidden cards (IS-MCTS)."""

    def deal_from(self, deck: list[int], dealer: int | None = None) -> None:
        """Deal the current hand again from ``deck`` (the same hand number and dealer);
        with ``dealer``, start the match afresh with that first dealer."""
        if dealer is not None:
            self.reset(deck=deck, dealer=dealer)
            return
        st = self.sync()
        deal(st, np.zeros(1, np.int64), np.asarray([deck], np.int8),
             np.asarray([self.dealer], np.int8))
        st.deal_number[0] -= 1  # the engine already counted this hand when it dealt it
        st.hands_in_match[0] -= 1
        self._load()

    def stock_cards(self) -> list[int]:
        return sorted(self.deck[self.stock_pos:])

    def put_on_stock(self, card: int) -> None:
        """Make ``card`` (still in the stock) the next one drawn."""
        i = self.deck.index(card, self.stock_pos)
        self.deck[i], self.deck[self.stock_pos] = self.deck[self.stock_pos], card

    def rewrite_hidden(self, seat: int, hand: int, stock: list[int]) -> None:
        """Give ``seat`` the hand ``hand`` and the stock the cards ``stock`` (same counts);
        cards that leave the stock take the deck slots of the cards that join it."""
        st = self.sync()
        st.hands[0, seat] = hand
        joining = set(stock)
        leaving = iter(sorted(set(self.deck[self.stock_pos:]) - joining))
        front = [next(leaving) if c in joining else c for c in self.deck[: self.stock_pos]]
        st.deck[0] = front + stock
        self._load()

    #: Attributes no step writes (tables of the rules, templates): a clone shares them.
    _SHARED = frozenset(("rules", "reward_mode", "autoreset", "num_games", "_target",
                         "_banned_bits", "_open_after", "_quiet_info", "_quiet_scores",
                         "_row", "_sheet_bytes", "_after_bytes", "_mask"))

    def __deepcopy__(self, memo: dict[int, Any]) -> _Engine:
        twin = object.__new__(type(self))
        shared = self._SHARED
        twin.__dict__.update({key: value if key in shared else _copied(value)
                              for key, value in self.__dict__.items()})
        return twin

    def __getstate__(self) -> dict[str, Any]:
        return {"rules": self.rules, "reward": self.reward_mode, "state": self.state_dict()}

    def __setstate__(self, data: dict[str, Any]) -> None:
        self.__init__(data["rules"], seed=0, reward=data["reward"], autoreset=False)
        self._state = GameState.from_dict(data["state"], self.rules)  # validated
        self._refresh_sheet()
        self._load()


# ----------------------------------------------------------------------------- state

_DEALER, _DEAL, _DRAW, _PLAY, _OVER, _RESTORING = range(6)

# Events of a player's information state, two bytes each: (kind, value).
_EV_DEALER, _EV_CARD, _EV_HIDDEN, _EV_UPCARD, _EV_MINE, _EV_THEIRS, _EV_RESULT, _EV_AWARD = range(8)


def _event_tokens() -> list[list[str]]:
    """Text of every (kind, value) event, tabulated once (info-state strings are hot)."""
    cards = [card_str(c) if c < NUM_CARDS else "?" for c in range(256)]
    names = [A.action_name(a).replace(" ", "_") if a < A.NUM_ACTIONS else "?" for a in range(256)]
    return [
        [f"dealer:{v}" for v in range(256)],
        [f"got:{c}" for c in cards],
        ["opponent_got:?"] * 256,
        [f"upcard:{c}" for c in cards],
        [f"me:{n}" for n in names],
        [f"opponent:{n}" for n in names],
        [f"hand_won_by:{v}" if v < 2 else "dead_hand" for v in range(256)],
        [f"award:{v}" for v in range(256)],
    ]


_TOKENS = _event_tokens()


class HollywoodGinState(pyspiel.State):
    """One match: hgin's engine plus the chance bookkeeping and each player's history."""

    def __init__(self, game: HollywoodGinGame) -> None:
        super().__init__(game)
        self._shared = game.shared
        self._engine: _Engine | None = None  # built when the first deal is complete
        self._stage = _DEALER
        self._dealer = -1
        self._dealt: list[int] = []
        self._hands_done = 0
        self._totals = (0.0, 0.0)
        # Each player's events of the current hand, and a digest of the earlier hands.
        self._views = (b"", b"")
        self._past = ("", "")
        self._replay_player = 0  # the recorded mover while a state string is restored

    # ------------------------------------------------------------------ OpenSpiel API
    def current_player(self) -> int:
        if self._stage == _OVER:
            return int(pyspiel.PlayerId.TERMINAL)
        if self._stage == _PLAY:
            return int(self._live().current_player)
        if self._stage == _RESTORING:
            return self._replay_player
        return int(pyspiel.PlayerId.CHANCE)

    def _legal_actions(self, player: int) -> list[int]:
        return self._live().legal_actions()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._stage == _DEALER:
            outcomes = [0, 1]
        elif self._stage == _DEAL:
            dealt = set(self._dealt)
            outcomes = [c for c in range(NUM_CARDS) if c not in dealt]
        else:
            outcomes = self._live().stock_cards()
        p = 1.0 / len(outcomes)
        return [(o, p) for o in outcomes]

    def _apply_action(self, action: int) -> None:
        action = int(action)
        self._check_legal(action)  # before anything changes: a refused move changes nothing
        if self._stage == _RESTORING:
            return  # pyspiel records the move in its history; the fields come after
        if self._stage == _DEALER:
            self._dealer = action
            self._stage = _DEAL
            self._log_public(_EV_DEALER, action)
        elif self._stage == _DEAL:
            self._deal_card(action)
        elif self._stage == _DRAW:
            engine = self._live()
            self._log_private(engine.current_player, action)
            engine.put_on_stock(action)
            self._stage = _PLAY
            self._step(A.DRAW_STOCK)
        else:
            seat = self._live().current_player
            self._log(seat, (_EV_MINE, action), (_EV_THEIRS, action))
            if action == A.DRAW_STOCK:
                self._stage = _DRAW  # the drawn card is the next chance outcome
            else:
                self._step(action)

    def _check_legal(self, action: int) -> None:
        """``ValueError`` naming the action and the legal ones unless ``action`` is legal."""
        stage = self._stage
        if stage == _PLAY:
            engine = self._live()
            if 0 <= action < A.NUM_ACTIONS and engine.legal >> action & 1:
                return
            legal = ", ".join(f"{a} ({A.action_name(a)})" for a in engine.legal_actions())
            raise ValueError(f"python_hollywood_gin: action {action} is not legal for seat "
                             f"{engine.current_player} in phase "
                             f"{A.PHASE_NAMES[engine.phase]}; legal: {legal}")
        if stage == _RESTORING:
            return
        if stage == _OVER:
            raise ValueError(f"python_hollywood_gin: action {action} after the episode ended")
        if stage == _DEALER:
            ok, what = action in (0, 1), "the first dealer must be seat 0 or 1"
        elif stage == _DEAL:
            ok = 0 <= action < NUM_CARDS and action not in self._dealt
            what = (f"deal card {len(self._dealt)} must be a card id 0..{NUM_CARDS - 1} not "
                    f"dealt yet (dealt: {_cards_text(self._dealt) or '-'})")
        else:
            stock = self._live().stock_cards()
            ok = action in stock
            what = (f"the card drawn must be one of the {len(stock)} cards in the stock: "
                    f"{' '.join(map(str, stock))}")
        if not ok:
            raise ValueError(f"python_hollywood_gin: chance outcome {action} refused: {what}")

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            if self._stage == _DEALER:
                return f"first dealer: seat {action}"
            return f"card {card_str(action)}"
        return A.action_name(action)

    def is_terminal(self) -> bool:
        return self._stage == _OVER

    def returns(self) -> list[float]:
        return list(self._totals) if self._stage == _OVER else [0.0, 0.0]

    def serialize(self) -> str:
        """The whole state as plain, versioned JSON (:mod:`hgin_env.envs.openspiel_text`),
        which :meth:`HollywoodGinGame.deserialize_state` reads back exactly; unlike
        pyspiel's form for Python games, loading it never unpickles anything."""
        engine = None
        if self._engine is not None:
            engine = {k: v.tolist() for k, v in self._engine.state_dict().items()}
        return openspiel_text.StateText(
            history=[(int(m.player), int(m.action)) for m in self.full_history()],
            stage=self._stage, dealer=self._dealer, dealt=list(self._dealt),
            hands_done=self._hands_done, totals=self._totals, views=self._views,
            past=self._past, engine=engine).dumps()

    def restore(self, snap: openspiel_text.StateText) -> None:
        """Become the state ``snap`` (parsed, checked text) describes, from a fresh state:
        pyspiel's history by replaying the recorded moves as bookkeeping (pyspiel offers
        no other way to set it), then the fields, then the checks across them."""
        if self.move_number() or self._stage != _DEALER:
            raise ValueError("restore needs a fresh state (game.new_initial_state())")
        self._stage = _RESTORING
        for player, action in snap.history:
            self._replay_player = player
            self.apply_action(action)
        shared = self._shared
        if snap.engine is not None:
            engine = object.__new__(_Engine)
            try:
                engine.__setstate__({"rules": shared.rules, "reward": shared.reward,
                                     "state": snap.engine})
            except (ValueError, TypeError, OverflowError, KeyError, IndexError) as exc:
                raise ValueError(f"state string's engine state is refused: {exc}") from None
            self._engine = engine
        self._stage, self._dealer, self._dealt = snap.stage, snap.dealer, snap.dealt
        self._hands_done, self._totals = snap.hands_done, snap.totals
        self._views, self._past = snap.views, snap.past
        problem = self._restore_problem()
        if problem:
            raise ValueError(f"state string is inconsistent: {problem}")

    def _restore_problem(self) -> str:
        """What contradicts the stage in a restored state (empty if nothing does)."""
        stage, engine = self._stage, self._engine
        if self._hands_done > self._shared.max_hands or (
                stage != _OVER and self._hands_done == self._shared.max_hands):
            return f"{self._hands_done} hands played with max_hands {self._shared.max_hands}"
        if (engine is None) != (stage == _DEALER or (stage == _DEAL and not self._hands_done)):
            return f"stage {openspiel_text.STAGES[stage]} after {self._hands_done} hands " \
                   f"{'needs' if engine is None else 'has no'} an engine state"
        if (stage == _DEALER) != (self._dealer == -1):
            return "the first dealer is chosen exactly when the stage is past 'dealer'"
        if stage != _DEAL and self._dealt:
            return "cards are being dealt outside the 'deal' stage"
        if len(self._dealt) >= DEAL_CARDS:
            return f"{len(self._dealt)} cards of a deal of {DEAL_CARDS} pending"
        if engine is None:
            return ""
        if stage != _OVER and engine.match_over:
            return "the engine's match is over but the episode is not"
        if stage in (_DRAW, _PLAY) and self._dealer != engine.dealer:
            return f"dealer {self._dealer} but the engine's hand is dealt by {engine.dealer}"
        if stage == _DRAW and not engine.legal >> A.DRAW_STOCK & 1:
            return "a stock card is due but the engine's player cannot draw"
        if stage == _PLAY and not engine.legal:
            return "nobody can move in the engine's position"
        return ""

    def __str__(self) -> str:
        if self._stage in (_DEALER, _DEAL):
            return f"dealing (dealer {self._dealer}): {_cards_text(self._dealt)}"
        engine = self._live()
        hands = " / ".join(format_cards(h) for h in engine.hands)
        pile = _cards_text(engine.pile[: engine.pile_size])
        return (f"hands {hands} | pile {pile} | stock {engine.stock_size} | "
                f"phase {A.PHASE_NAMES[engine.phase]} | scores {engine.sheets.scores[0].tolist()}")

    def resample_from_infostate(self, player_id: int,
                                probability_sampler: Any) -> HollywoodGinState:
        """A state ``player_id`` cannot tell from this one: the opponent's unseen cards
        drawn afresh from the cards ``player_id`` has not seen (the rest form the stock).

        ``probability_sampler()`` gives uniform floats (OpenSpiel's
        ``UniformProbabilitySampler``); it seeds the draw.
        """
        twin = self.clone()
        if self._stage not in (_PLAY, _DRAW) or player_id not in (0, 1):
            return twin
        rng = np.random.default_rng(int(probability_sampler() * (1 << 62)))
        twin.redraw_hidden(int(player_id), rng)
        return twin

    def redraw_hidden(self, player: int, rng: np.random.Generator) -> None:
        """Redraw, in place, what ``player`` cannot see: the opponent's hidden cards and
        the stock; the opponent's own history follows its new cards."""
        engine = self._live()
        opp = 1 - player
        hidden = engine.hands[opp] & ~engine.known[opp]
        unseen_mask = _FULL & ~(engine.hands[player] | engine.pile_mask | engine.known[opp])
        unseen = [c for c in range(NUM_CARDS) if unseen_mask >> c & 1]
        order = rng.permutation(len(unseen))
        count = popcount(hidden)
        new_hidden = [unseen[i] for i in order[:count]]
        stock = [unseen[i] for i in order[count:]]
        engine.rewrite_hidden(opp, engine.known[opp] | sum(1 << c for c in new_hidden), stock)
        old = [c for c in range(NUM_CARDS) if hidden >> c & 1]
        table = bytes(range(256)).translate(
            bytes.maketrans(bytes(old), bytes(new_hidden)))
        view = bytearray(self._views[opp])
        view[1::2] = bytes(v if k != _EV_CARD else table[v]
                           for k, v in zip(view[0::2], view[1::2], strict=True))
        self._views = _with(self._views, opp, bytes(view))

    # ------------------------------------------------------------------ views
    def hgin_state(self) -> GameState:
        """hgin's one-game state of the hand in play (live: read, do not change)."""
        return self._live().state

    def information_state(self, player: int) -> str:
        """The player's perfect-recall history: digest of earlier hands, then this hand."""
        view = self._views[player]
        tokens = [_TOKENS[k][v] for k, v in zip(view[0::2], view[1::2], strict=True)]
        return f"seat:{player} past:{self._past[player] or '-'} " + " ".join(tokens)

    def hgin_observation(self, player: int) -> np.ndarray:
        """hgin's observation encoding of this state for ``player`` (OBS_DIM float32).

        During a deal (and after ``max_hands``) it encodes :meth:`between_hands_state`,
        built here from its few non-zero slices: :func:`encode` costs more than a deal
        card's whole step, and OpenSpiel's checks observe every chance node.
        """
        if self._stage in (_PLAY, _DRAW) or (self._stage == _OVER and self._live().match_over):
            return np.frombuffer(self._live().observation_bytes(player), np.float32)
        if self._engine is None:
            obs = self._shared.blank_observation().copy()
        else:
            obs = np.frombuffer(self._engine.observation_bytes(player), np.float32).copy()
        obs[: _SPEC["column_exists"].start] = 0.0  # keep the sheet's slices only
        own = self._dealt_cards(player)
        hand, unseen = obs[_SPEC["hand"]], obs[_SPEC["unseen"]]
        unseen[:] = 1.0
        hand[own], unseen[own] = 1.0, 0.0
        obs[_SPEC["is_dealer"].start] = self._dealer == player
        obs[_SPEC["stock_size"].start] = (NUM_CARDS - STOCK_START) / STOCK_SCALE
        obs[_SPEC["deadwood"].start] = min_deadwood(sum(1 << c for c in own)) / DEADWOOD_SCALE
        return obs

    def observation_text(self, player: int) -> str:
        """The observation as words: what ``player`` sees now."""
        if self._stage in (_DEALER, _DEAL):
            mine = f"dealt to me {_cards_text(self._dealt_cards(player)) or '-'}"
        else:
            mine = f"hand {format_cards(self._live().hands[player])}"
        st = self._live().state if self._engine is not None else self.between_hands_state()
        scores = st.sheets.scores[0]
        sheet = " ".join(f"{a}-{b}" for a, b in
                         zip(scores[player], scores[1 - player], strict=True))
        if self._stage not in (_PLAY, _DRAW):
            return f"seat {player} | {mine} | dealer {self._dealer} | scores {sheet}"
        engine = self._live()
        top = engine.top_discard
        below = _cards_text(engine.pile[: max(engine.pile_size - 1, 0)])
        return (f"seat {player} | {mine} | top {_CARD_TEXT[top] if top >= 0 else '-'} | "
                f"below {below or '-'} | "
                f"opponent took {format_cards(engine.known[1 - player]) or '-'} | "
                f"{A.PHASE_NAMES[engine.phase]} | to move {engine.current_player} | "
                f"stock {engine.stock_size} | scores {sheet}")

    # ------------------------------------------------------------------ internals
    def _live(self) -> _Engine:
        if self._engine is None:
            raise RuntimeError("the first deal is not complete yet")
        return self._engine

    def _deal_card(self, card: int) -> None:
        i = len(self._dealt)
        self._dealt.append(card)
        if i == DEAL_CARDS - 1:
            self._log_public(_EV_UPCARD, card)
            rest = sorted(set(range(NUM_CARDS)) - set(self._dealt))
            deck = self._dealt + rest
            if self._engine is None:
                self._engine = _Engine(self._shared.rules, seed=0, reward=self._shared.reward,
                                       autoreset=False)
                self._engine.deal_from(deck, dealer=self._dealer)
            else:
                self._engine.deal_from(deck)
            self._dealt = []
            self._stage = _PLAY
        else:
            nondealer_card = i % 2 == 0
            self._log_private(1 - self._dealer if nondealer_card else self._dealer, card)

    def _step(self, action: int) -> None:
        engine = self._live()
        rewards, info = engine.step(action)
        self._totals = (self._totals[0] + rewards[0], self._totals[1] + rewards[1])
        if not info["hand_over"]:
            return
        self._hands_done += 1
        winner = info["hand_winner"]
        self._log_public(_EV_RESULT, 2 if info["dead_hand"] else winner)
        award = int(info["award"])
        for chunk in (award >> 8, award & 0xFF):
            self._log_public(_EV_AWARD, chunk)
        self._past = tuple(  # type: ignore[assignment]
            hashlib.blake2b(past.encode() + view, digest_size=8).hexdigest()
            for past, view in zip(self._past, self._views, strict=True))
        self._views = (b"", b"")
        if info["match_over"] or self._hands_done >= self._shared.max_hands:
            self._stage = _OVER
        else:
            self._stage = _DEAL
            self._dealer = engine.dealer
            self._log_public(_EV_DEALER, self._dealer)

    def between_hands_state(self) -> GameState:
        """The position as a deal shows it, as a one-game state: the sheet, the dealer and
        the cards dealt so far; no pile, no phase of a turn, nobody to move."""
        base = self._live().state if self._engine is not None else GameState.zeros(
            1, self._shared.rules)
        st = base.clone()
        st.hands[0] = [sum(1 << c for c in self._dealt_cards(seat)) for seat in (0, 1)]
        st.known[0] = 0
        st.pile_size[0] = 0
        st.pile_mask[0] = 0
        st.stock_pos[0] = STOCK_START
        st.phase[0] = A.PHASE_MATCH_OVER  # no phase of a turn: nobody is to move
        st.current_player[0] = -1
        st.dealer[0] = max(self._dealer, 0)
        st.taken_card[0] = -1
        st.knock_limit[0] = 0
        return st

    def _dealt_cards(self, seat: int) -> list[int]:
        """The cards of the pending deal given to ``seat`` so far (non-dealer first)."""
        first = 0 if seat != self._dealer else 1
        return self._dealt[first:20:2]

    def _log(self, seat: int, own: tuple[int, int], other: tuple[int, int]) -> None:
        views = list(self._views)
        views[seat] += bytes(own)
        views[1 - seat] += bytes(other)
        self._views = (views[0], views[1])

    def _log_public(self, kind: int, value: int) -> None:
        self._views = (self._views[0] + bytes((kind, value)), self._views[1] + bytes((kind, value)))

    def _log_private(self, seat: int, card: int) -> None:
        self._log(seat, (_EV_CARD, card), (_EV_HIDDEN, 0))


def _with(pair: tuple[bytes, bytes], i: int, value: bytes) -> tuple[bytes, bytes]:
    return (value, pair[1]) if i == 0 else (pair[0], value)


# ----------------------------------------------------------------------------- observer


class HollywoodGinObserver:
    """OpenSpiel's Python observer: hgin's encoding as the tensor, one named piece per slice.

    The information-state observer (``perfect_recall=True``) differs only in its
    string, the player's full history; the tensor is hgin's (Markov) encoding for both.
    """

    def __init__(self, iig_obs_type: Any, params: dict[str, Any] | None) -> None:
        if params:
            raise ValueError(f"python_hollywood_gin observers take no parameters, got {params}")
        if not iig_obs_type.public_info or \
                iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER:
            raise ValueError("python_hollywood_gin observes one player's view (public and "
                             "own private information) only")
        self._perfect_recall = bool(iig_obs_type.perfect_recall)
        self.tensor = np.zeros(OBS_DIM, np.float32)
        self.dict: dict[str, np.ndarray] = {}
        start = 0
        for piece in LAYOUT:
            self.dict[piece.name] = self.tensor[start : start + piece.width]
            start += piece.width

    def set_from(self, state: HollywoodGinState, player: int) -> None:
        self.tensor[:] = state.hgin_observation(player)

    def string_from(self, state: HollywoodGinState, player: int) -> str:
        if self._perfect_recall:
            return state.information_state(player)
        return state.observation_text(player)


# ----------------------------------------------------------------------------- bots


class HginBot(pyspiel.Bot):
    """An hgin agent (any ``agents.make_agent`` spec, or an agent object) as an OpenSpiel bot.

    It sees what the agent would see in hgin: the observation encoding of the
    state for its seat and the legal-action mask.
    """

    def __init__(self, game: HollywoodGinGame, player_id: int, agent: Any = "strong",
                 seed: int | None = None) -> None:
        pyspiel.Bot.__init__(self)
        from hgin_env.envs.opponents import (
            hgin_agents,  # the one way hgin_env reaches the agents package
        )

        self._player = int(player_id)
        self._agent = agent if hasattr(agent, "act") else hgin_agents().make_agent(
            agent, seed=seed, rules=game.rules)
        self._rng = np.random.default_rng(seed)
        self.name = str(getattr(self._agent, "name", agent))

    def restart_at(self, state: Any) -> None:
        """Nothing to reset: hgin agents decide from the current observation alone."""

    def inform_action(self, state: Any, player_id: int, action: int) -> None:
        """Nothing to track, as above."""

    def step(self, state: Any) -> int:
        mask = np.zeros((1, A.NUM_ACTIONS), np.int8)
        mask[0, state.legal_actions(self._player)] = 1
        obs = {"observation": np.asarray(state.observation_tensor(self._player),
                                         np.float32)[None],
               "action_mask": mask}
        return int(self._agent.act(obs, rng=self._rng)[0])


# ----------------------------------------------------------------------------- text form

#: The first line of a game-and-state text; the state's own text is the second.
GAME_FORMAT = "hgin-openspiel-game"
_GAME_LINE_CHARS = 4096


def serialize_game_and_state(game: HollywoodGinGame, state: HollywoodGinState) -> str:
    """The game's parameters (one JSON line) and the state's text (the next line).

    Use this and :func:`deserialize_game_and_state` instead of pyspiel's functions of the
    same names: for every Python game those embed a pickle, and loading one runs whatever
    code its author put there.
    """
    if not isinstance(game, HollywoodGinGame) or not isinstance(state, HollywoodGinState):
        raise TypeError("serialize_game_and_state takes a python_hollywood_gin game and state")
    head = json.dumps({"format": GAME_FORMAT, "version": openspiel_text.VERSION,
                       "game": dict(game.get_parameters())}, separators=(",", ":"))
    return f"{head}\n{state.serialize()}"


def deserialize_game_and_state(text: str) -> tuple[HollywoodGinGame, HollywoodGinState]:
    """The game and state :func:`serialize_game_and_state` wrote; ``ValueError`` naming
    the problem for anything else.  Only ``python_hollywood_gin`` parameters are read
    (names and types from its specification), so no other game is ever loaded, and the
    state line is capped by that game's length before it is parsed."""
    if not isinstance(text, str):
        raise ValueError(f"a game-and-state string must be text, got {type(text).__name__}")
    head, sep, state_text = text.partition("\n")
    if not sep or len(head) > _GAME_LINE_CHARS or not head.startswith("{"):
        raise ValueError(f"not an hgin game-and-state string (a JSON line of format "
                         f"{GAME_FORMAT!r}, then the state); pyspiel's form, which embeds a "
                         f"pickle, is refused")
    try:
        body = json.loads(head)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"game-and-state string: the game line is not valid JSON: "
                         f"{str(exc)[:200]}") from None
    if not isinstance(body, dict) or body.get("format") != GAME_FORMAT:
        raise ValueError(f"game-and-state string: the game line must have format "
                         f"{GAME_FORMAT!r}")
    if body.get("version") != openspiel_text.VERSION:
        raise ValueError(f"game-and-state string version {body.get('version')!r} is not "
                         f"supported (this hgin reads version {openspiel_text.VERSION})")
    params = body.get("game")
    if not isinstance(params, dict):
        raise ValueError("game-and-state string: 'game' must be an object of parameters")
    spec = _GAME_TYPE.parameter_specification
    for name, value in params.items():
        if name not in spec:
            raise ValueError(f"game-and-state string: {name!r} is not a parameter of "
                             f"{GAME_NAME}")
        if type(value) is not type(spec[name]):
            raise ValueError(f"game-and-state string: parameter {name} must be "
                             f"{type(spec[name]).__name__}, got {value!r}")
    try:
        game = pyspiel.load_game(GAME_NAME, params)
    except (ValueError, RuntimeError, pyspiel.SpielError) as exc:
        raise ValueError(f"game-and-state string: its game does not load: {exc}") from None
    return game, game.deserialize_state(state_text)


pyspiel.register_game(_GAME_TYPE, HollywoodGinGame)
