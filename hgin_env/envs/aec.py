"""
# Hollywood Gin Rummy

| Import             | `import hgin_env; env = hgin_env.env()`                     |
|--------------------|-------------------------------------------------------------|
| Actions            | Discrete                                                    |
| Parallel API       | Yes (turn-based): `hgin_env.parallel_env()`                  |
| Manual Control     | Yes: `python -m hgin_env.play`                              |
| Agents             | `agents = ['player_0', 'player_1']`                         |
| Agents             | 2                                                           |
| Action Shape       | Discrete(108)                                               |
| Action Values      | [0, 107]                                                    |
| Observation Shape  | (398,)                                                      |
| Observation Values | [0, 1] for cards and flags; scores ÷ target (see below)     |
| State Shape        | (796,): `env.state()`, both seats' observations (see below)  |

Two-player gin rummy scored the Hollywood way: three games ("columns") are
played side by side on one score sheet, a player's first hand win is posted
in column I, the second in I and II, the third and later in all three, and a
column is won by the first player to reach the target (100) in it.  One
episode is one whole Hollywood **match**: it ends when every column is
decided, and the player who won more columns wins the match.  The complete
rules, the switches and the three rule profiles (`friendly`, `classic`,
`bonus`) are in `docs/rules.md`.

This environment replaces the RLCard-based `gin_rummy_v4` that PettingZoo
dropped in 1.27, which played a single hand with made-up rewards.  It runs on
`hgin_env.engine.single.SingleGame`, the one-game fast path of the project's
vectorised engine (`hgin_env.engine.VectorGame`): it plays exactly like
`VectorGame(1)` (tested step by step) and calls the engine's own showdown and
scoring code, so it shares every rule, the observation encoding and the
action ids with the batched trainer and the Gymnasium wrappers
(`hgin_env.envs.gym_env`).

```python
import hgin_env

env = hgin_env.env(rules="friendly", reward="columns", render_mode="ansi")
env.reset(seed=42)
for i, agent in enumerate(env.possible_agents):
    env.action_space(agent).seed(42 + i)  # the random policy below is seeded too
for agent in env.agent_iter():
    observation, reward, termination, truncation, info = env.last()
    if termination or truncation:
        action = None
    else:
        mask = observation["action_mask"]
        action = env.action_space(agent).sample(mask)  # insert your policy here
    env.step(action)
env.close()
```

### Arguments

``` python
hgin_env.env(rules="friendly", reward="columns", render_mode=None, strict=False,
             history=False)
```

`rules`: a profile name (`friendly`, `classic`, `bonus`), a path to a rules
TOML file, or a `hgin_env.rules.Rules` object.

`reward`: `match`, `columns` or `points` (see Rewards).

`render_mode`: `None`, `"ansi"` (``render()`` returns the table as text),
`"human"` (prints it after every step, in colour on a colour terminal) or
`"rgb_array"` (``render()`` returns the table as a 432 x 768 x 3 uint8 image,
both hands face up; ``env.unwrapped.render_image(viewer="player_0")`` draws
one player's view, the other hand face down but for the cards it took from
the discard pile).

`strict`: if `True`, an illegal action raises `ValueError` (naming the agent,
the action and the legal actions) instead of ending the match.

`history`: if `True`, every observation also holds the hand's public history
from the observer's seat (`history`, `history_len`, `upcard`; see
`hgin_env.history`), so agents that reason about the order of play (`search`)
can be seated by a plain PettingZoo loop.

### Observation Space

The observation is a dictionary with an `observation` element, the usual RL
observation described below, and an `action_mask` holding the legal moves.

`observation` is a float32 vector of 398 values from the point of view of
the agent observing: it holds only what that player may know (its own hand,
the discard pile, the cards the opponent took from the pile and still holds,
the public score sheet), never the opponent's other cards or the stock order.
Card planes are indexed by card id `suit * 13 + rank` (rank 0 = ace …
12 = king; suits ♣ ♦ ♥ ♠ = 0 … 3).

| Slice   | Name                     | Meaning |
|---------|--------------------------|--------------------|
| 0-51    | `hand`                   | 1 for each card in the agent's hand |
| 52-103  | `top_discard`            | the card on top of the discard pile |
| 104-155 | `pile_below_top`         | the rest of the discard pile |
| 156-207 | `opponent_known`         | cards the opponent took from the pile and still holds |
| 208-259 | `unseen`                 | cards in none of the above nor the agent's hand |
| 260-311 | `forbidden_discard`      | the card taken from the pile this turn |
| 312-363 | `deadwood_after_discard` | when discarding: deadwood left per discard ÷ 100 |
| 364-368 | `phase`                  | one-hot phase of the turn (`hgin_env.actions.PHASE_NAMES`) |
| 369     | `to_move`                | 1 when it is this agent's turn |
| 370     | `is_dealer`              | 1 when this agent dealt the hand |
| 371     | `stock_size`             | cards in the stock ÷ 31 |
| 372     | `knock_limit`            | this hand's knock limit ÷ 10 (0: gin only) |
| 373     | `deadwood`               | the agent's current minimum deadwood ÷ 100 |
| 374-376 | `column_exists`          | 1 for each column of the sheet (1 or 3) |
| 377-379 | `own_score`              | own score per column ÷ target |
| 380-382 | `opponent_score`         | opponent's score per column ÷ target |
| 383-385 | `column_decided`         | 1 for each decided column |
| 386-388 | `column_won`             | 1 for each column this agent won |
| 389-391 | `column_lost`            | 1 for each column the opponent won |
| 392-394 | `open_to_me`             | 1 for each column this agent's hand wins opened |
| 395-397 | `open_to_opponent`       | the same for the opponent |

`hgin_env.observation.observation_spec()` returns these slices by name.

#### Legal Actions Mask

The legal moves of the agent to move are the 1 entries of `action_mask`
(int8, 108).  The mask is all zeros for the agent whose turn it is not.  Once
the match is over (termination), the observation shows the final position
(the hands as shown down after the last knock, its discard on the pile, no
phase flag set) with the final score sheet, and the mask has the single
entry 106 set, a placeholder so that a mask is never empty (masked maxima and
softmaxes stay finite); a terminated agent must step with `None`.

Taking an illegal action ends the match as a forfeit: the offending agent
gets reward -1 and the other +1 (zero-sum, unlike PettingZoo's classic
`TerminateIllegalWrapper`, which gives the other agent 0: the forfeit is a
lost match, and the infos name the other agent `match_winner`), both are
terminated, and both infos carry an `illegal_move` entry (agent, action, its
meaning, the legal actions) and `match_winner` (the other agent's seat).  A
forfeit warns (`hgin_env.envs.spaces.IllegalMoveWarning`, naming the move).
With `strict=True` an illegal action raises `ValueError` instead, leaving the
game unchanged.

#### Truncation

A match still undecided when its 2000th hand ends
(`hgin_env.engine.hand.MAX_HANDS_PER_MATCH`, `docs/rules.md` Appendix C) is cut off:
both agents' `truncations` are `True` (`terminations` stay `False`), no reward
is given, and both infos hold `hand_over`, `truncated: True`,
`match_winner: None` and `final_scores`.  `max_cycles=N` cuts a match off the
same way once an agent has made N moves (PettingZoo's `max_cycles`).  Real
matches never get there (the longest measured is over 70 times shorter);
without the bound, random play under `straight_gin` would almost never finish
a match.

### Action Space

| Action ID | Action                                                        |
|-----------|---------------------------------------------------------------|
| 0-51      | discard card `id`                                             |
| 52-103    | knock (gin when deadwood is 0), discarding card `id − 52` face down |
| 104       | draw from the stock                                           |
| 105       | take the top of the discard pile (also: accept the upcard)    |
| 106       | pass (decline the upcard offer)                               |
| 107       | big gin (only with the `big_gin` switch)                      |

`action_space(agent)` is a `gymnasium.spaces.Discrete(108)` whose
`sample(mask)` is a fast uniform draw among the legal ids (same checks on
the mask as Gymnasium's, its own random stream from the space's seed).

A turn is two actions by the same agent (draw, then discard or knock), so
agents do not simply alternate: always read `env.agent_selection`.

### Rewards

Rewards are zero-sum in every mode and are given for both agents on the step
that earns them (AEC style: `last()` returns what an agent earned since its
previous action).

| `reward`            | When                   | Winner              | Loser    |
|---------------------|------------------------|---------------------|----------|
| `match`             | match end              | +1                  | −1       |
| `columns` (default) | each column decided    | +1/C                | −1/C     |
| `points`            | each hand posted       | + posted points ÷ (target · C) | − the same |

`C` is the number of columns (3, or 1 in single-game sheets).  In `columns`
mode the sum over a match is (columns won − columns lost) / C.  Dead hands,
hand wins posted nowhere and a truncated match give no reward.  An illegal
move gives −1 to the offender and +1 to the other agent.

`infos` is `{}` except after a step that finished a hand, when both agents'
infos hold `hand_over`, `dead_hand`, `hand_winner`, `knocker` (agent names
or `None`), `award`, `gin`, `big_gin`, `undercut`, `knocker_deadwood`,
`defender_deadwood`, and, when it finished the match, `match_over`,
`match_winner` and `final_scores` (per player, per column); when it
truncated the match, `truncated`, `match_winner` (`None`) and `final_scores`.
With `numeric_infos=True` (the buffer-friendly form) every value is a number
or a fixed-shape array, which array replay buffers (Tianshou's) and
TensorDicts can store (a `None` or a name makes an object array that they
reject): `hand_winner`, `knocker` and `match_winner` are seats (0 for
`player_0`, 1 for `player_1`, -1 for none; `AGENTS[seat]` is the name),
`final_scores` is one `(2, columns)` int64 array (row = seat), and a forfeit's
`illegal_move` dict becomes `illegal_agent` (the offender's seat) and
`illegal_action` (its action id), the rest of its description staying in
`env.unwrapped.forfeit`.

#### Options for other libraries

* `mask_in_infos=True`: the observation is the flat 398-float vector alone (a
  `Box`) and each agent's action mask is `infos[agent]["action_mask"]`
  (AgileRL's and Shimmy's convention; SuperSuit's observation wrappers need a
  `Box`).  Not with `history=True`.  `mask_in_infos="list"` puts the mask there
  as a plain list of 0/1 ints, the one form AgileRL 2.58's IPPO reads (it asks
  `None in masks`, which an array cannot answer, and drops lists of numpy ints).
* `mask_dtype=bool`: bool masks (TorchRL); int8 is the default (PettingZoo's
  and Gymnasium's `Discrete.sample(mask=...)` convention).
* `numeric_infos=True`: the buffer-friendly infos above (Tianshou).
* `state()` / `state_space`: one global full-information view for centralised
  critics: `player_0`'s observation vector then `player_1`'s, so both hands;
  the stock's order is not included.

### Version History

* v0: Initial release: full Hollywood matches on the vectorised engine,
  three rule profiles, three reward modes, text rendering (hgin 0.1.0).
  Since: `parallel_env()`, `state()`, `max_cycles`, `mask_dtype`,
  `numeric_infos` and `mask_in_infos` options; a forfeit warns
  (`IllegalMoveWarning`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from gymnasium import logger, spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv, ParallelEnv

from hgin_env import actions as A
from hgin_env.engine.single import SingleGameArrays
from hgin_env.engine.vector import REWARD_MODES
from hgin_env.envs.aec_wrapper import HollywoodWrapper
from hgin_env.envs.spaces import (
    MaskedDiscrete,
    observation_bounds,
    observation_space,
)
from hgin_env.envs.spaces import mask_dtype as mask_dtype_of
from hgin_env.envs.table import AGENTS, TERMINAL_MASK_ACTION, MatchTable
from hgin_env.history import PublicHistory
from hgin_env.hollywood import Sheet
from hgin_env.rules import Rules, load_rules

if TYPE_CHECKING:
    from hgin_env.records.format import MatchStream

__all__ = [
    "AGENTS",
    "TERMINAL_MASK_ACTION",
    "env",
    "observation_bounds",
    "parallel_env",
    "raw_env",
]

_HAND_KEYS = ("dead_hand", "award", "gin", "big_gin", "undercut",
              "knocker_deadwood", "defender_deadwood")


def env(
    rules: str | Rules = "friendly",
    reward: str = "columns",
    render_mode: str | None = None,
    strict: bool = False,
    history: bool = False,
    max_cycles: int | None = None,
    mask_dtype: Any = np.int8,
    numeric_infos: bool = False,
    mask_in_infos: bool | str = False,
) -> AECEnv:
    """The wrapped AEC environment (see the module docs).

    Without ``strict`` an illegal action ends the match with -1 for the
    offender and +1 for the other agent (zero-sum); with ``strict`` it raises
    ``ValueError`` naming the action.  Either way a value that is not an
    action id (``500``, ``3.5``, ``"pass"``) raises ``ValueError``
    (:func:`~hgin_env.envs.spaces.action_id`).  The three behaviours (order
    enforcement, the action check, illegal moves) live in one
    :class:`~hgin_env.envs.aec_wrapper.HollywoodWrapper` layer.
    """
    aec = raw_env(rules=rules, reward=reward, render_mode=render_mode, history=history,
                  max_cycles=max_cycles, mask_dtype=mask_dtype, numeric_infos=numeric_infos,
                  mask_in_infos=mask_in_infos)
    return HollywoodWrapper(aec, strict=strict, illegal_reward=-1.0)


def parallel_env(**kwargs: Any) -> ParallelEnv:
    """The turn-based parallel form of :func:`env` (same arguments): each ``step`` takes
    an action for the agent to move only (``env.agents`` lists it), as PettingZoo's
    ``turn_based_aec_to_parallel`` makes it; ``pettingzoo.test.parallel_api_test`` passes."""
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    return turn_based_aec_to_parallel(env(**kwargs))


class raw_env(AECEnv, EzPickle):  # PettingZoo's name for the unwrapped env
    """The unwrapped AEC environment over one :class:`~hgin_env.engine.SingleGame`.

    An illegal action raises ``ValueError``; :func:`env` adds PettingZoo's
    standard handling.  Extra ``reset`` options: ``{"deck": 52 card ids,
    "dealer": 0 or 1}`` fix the first deal (see ``VectorGame.reset``).
    ``table`` is the match (:class:`~hgin_env.envs.table.MatchTable`), ``single``
    its engine and ``game`` the same game in the ``VectorGame`` array layout (a
    live view, for display and tests).  With ``history=True`` every observation
    also holds the hand's public history from the observer's seat
    (:data:`~hgin_env.history.HISTORY_KEYS`), so agents that reason about the
    order of play (``search``) can be seated by any PettingZoo loop.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["human", "ansi", "rgb_array"],
        "name": "hollywood_gin_v0",
        "is_parallelizable": False,
        "render_fps": 4,
    }

    def __init__(
        self,
        rules: str | Rules = "friendly",
        reward: str = "columns",
        render_mode: str | None = None,
        history: bool = False,
        max_cycles: int | None = None,
        mask_dtype: Any = np.int8,
        numeric_infos: bool = False,
        mask_in_infos: bool | str = False,
    ) -> None:
        EzPickle.__init__(self, rules=rules, reward=reward, render_mode=render_mode,
                          history=history, max_cycles=max_cycles, mask_dtype=mask_dtype,
                          numeric_infos=numeric_infos, mask_in_infos=mask_in_infos)
        super().__init__()
        if reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {render_mode!r}"
            )
        if not isinstance(history, bool):
            raise ValueError(f"history must be True or False, got {history!r}")
        if max_cycles is not None and (isinstance(max_cycles, bool)
                                       or not isinstance(max_cycles, int) or max_cycles < 1):
            raise ValueError(f"max_cycles must be a positive integer or None, got "
                             f"{max_cycles!r}")
        if not isinstance(numeric_infos, bool):
            raise ValueError(f"numeric_infos must be True or False, got {numeric_infos!r}")
        if not (isinstance(mask_in_infos, bool) or mask_in_infos == "list"):
            raise ValueError(f"mask_in_infos must be True, False or 'list', got "
                             f"{mask_in_infos!r}")
        if mask_in_infos and history:
            raise ValueError("mask_in_infos=True makes the observation one flat vector; it "
                             "cannot be combined with history=True (a dict of arrays)")
        self.mask_in_infos = mask_in_infos
        self.max_cycles = max_cycles
        self.numeric_infos = numeric_infos
        dtype = mask_dtype_of(mask_dtype)
        self._bool_mask = dtype == np.bool_
        self._moves = [0, 0]
        self.rules = load_rules(rules)
        self.reward_mode = reward
        self.render_mode = render_mode
        self.table = MatchTable(self.rules, reward, keep_last_move=render_mode is not None)
        self.single = self.table.single
        self.history = PublicHistory(self.table.game) if history else None
        self.possible_agents = list(AGENTS)
        self.agents = self.possible_agents[:]
        self._seat_of = {name: i for i, name in enumerate(AGENTS)}
        self.observation_spaces = {name: observation_space(self.rules, history=history,
                                                           mask=dtype)
                                   for name in AGENTS}
        if mask_in_infos:  # the flat vector alone; the mask goes to infos[agent]
            self.observation_spaces = {name: space["observation"]
                                       for name, space in self.observation_spaces.items()}
        self.action_spaces = {name: MaskedDiscrete(A.NUM_ACTIONS) for name in AGENTS}
        low, high = observation_bounds(self.rules)
        #: :meth:`state`'s space: both seats' observation vectors, end to end.
        self.state_space = spaces.Box(low=np.concatenate([low, low]),
                                      high=np.concatenate([high, high]), dtype=np.float32)
        self._seed_rng: np.random.Generator | None = None
        self._quiet_infos = True
        self.rewards = dict.fromkeys(AGENTS, 0.0)
        self._cumulative_rewards = dict.fromkeys(AGENTS, 0.0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)
        self.infos: dict[str, dict[str, Any]] = {name: {} for name in AGENTS}
        self.agent_selection = AGENTS[self.single.current_player]

    # ----------------------------------------------------------------- spaces
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def state(self) -> np.ndarray:
        """The global full-information view, for centralised critics (MAPPO and the
        like): ``player_0``'s observation vector followed by ``player_1``'s (796
        float32), so both hands and every public fact.  The stock's order is not in
        it: a critic that saw the next draws would learn values no policy can reach."""
        table = self.table
        return np.concatenate([table.observe(0)["observation"], table.observe(1)["observation"]])

    # ----------------------------------------------------------------- reset
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a new match.

        ``reset(seed=s)`` deals the same match as ``VectorGame(1, rules, seed=s)``;
        later ``reset()`` calls draw their match seeds from a generator seeded
        with ``s``, so a whole sequence of matches is reproducible.
        """
        if seed is not None:
            self._seed_rng = np.random.default_rng(seed)
            match_seed = seed
        else:
            if self._seed_rng is None:
                self._seed_rng = np.random.default_rng()
            match_seed = int(self._seed_rng.integers(0, 2**63 - 1))
        deck = dealer = None
        if options:  # other keys are ignored, as Gymnasium and PettingZoo envs do
            deck = options.get("deck")
            dealer = options.get("dealer")
        self.table.reset(match_seed, deck=deck, dealer=dealer)
        if self.history is not None:
            self.history.new_hands(self.table.game, np.arange(1))
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {name: {} for name in self.agents}
        self._quiet_infos = True
        self._moves = [0, 0]
        self._skip_agent_selection = None
        self.agent_selection = AGENTS[self.single.current_player]
        if self.mask_in_infos:
            self._masks_to_infos()
        if self.render_mode == "human":
            self.render()

    # ----------------------------------------------------------------- observe
    def observe(self, agent: str) -> dict[str, np.ndarray] | np.ndarray:
        seat = self._seat_of[agent]
        obs = self.table.observe(seat)
        if self.mask_in_infos:
            return obs["observation"]
        if self._bool_mask:
            obs["action_mask"] = obs["action_mask"].view(np.bool_)
        if self.history is not None:
            for key, value in self.history.observe(np.array([seat])).items():
                obs[key] = value[0, ...]  # 0-d arrays for the scalars, as the space says
        return obs

    def action_mask(self, agent: str) -> np.ndarray:
        """The agent's action mask, without building the observation vector."""
        mask = self.table.action_mask(self._seat_of[agent])
        return mask.view(np.bool_) if self._bool_mask else mask

    def is_legal(self, action: Any) -> bool:
        """Whether ``action`` is a legal action id for the agent to move
        (``False`` for a value that is not an action id, and once the match is over)."""
        return self.table.is_legal(action)

    def illegal_action_message(self, agent: str, action: Any) -> str:
        """Why ``action`` cannot be played by ``agent`` now, with the legal actions."""
        return self.table.illegal_action_message(self._seat_of[agent], action)

    # ----------------------------------------------------------------- step
    def step(self, action: Any) -> None:
        """Play ``action`` for the agent to move; ``ValueError`` if it is not legal now."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if not self.try_step(action):
            raise ValueError(self.illegal_action_message(agent, action))

    def try_step(self, action: Any) -> bool:
        """Play ``action`` for the agent to move if it is legal now and return
        ``True``; otherwise change nothing and return ``False``.

        A value that is not an action id at all raises ``ValueError``
        (:func:`~hgin_env.envs.spaces.action_id`).  Wrappers use this to decide
        what an illegal move means (an error or a forfeit) with one legality
        check per step.
        """
        a = self.table.legal_id(action)
        if a is None:
            return False
        self._play(self.agent_selection, a)
        return True

    def _play(self, agent: str, a: int) -> None:
        """Apply the legal action ``a`` of ``agent`` (the agent to move)."""
        table = self.table
        r0, r1, info = table.play(a)
        if self.history is not None:
            self.history.step_one(table.game, self._seat_of[agent], a, info["hand_over"])
        cumulative = self._cumulative_rewards
        cumulative[agent] = 0.0
        self.rewards = {"player_0": r0, "player_1": r1}
        if r0 or r1:
            cumulative["player_0"] += r0
            cumulative["player_1"] += r1
        seat = self._seat_of[agent]
        self._moves[seat] += 1
        if info["hand_over"]:
            self.infos = self._hand_infos(info)
            self._quiet_infos = False
            if info["match_over"]:
                self.terminations = {name: True for name in self.agents}
            elif info["truncated"]:
                self.truncations = {name: True for name in self.agents}
        elif not self._quiet_infos or self.infos["player_0"] or self.infos["player_1"]:
            self.infos = {"player_0": {}, "player_1": {}}
            self._quiet_infos = True
        if self.max_cycles is not None and self._moves[seat] >= self.max_cycles \
                and not table.over:
            self._cut_off()
        self.agent_selection = AGENTS[table.single.current_player]
        if self.mask_in_infos:
            self._masks_to_infos()
        if self.render_mode == "human":
            self.render()

    def _cut_off(self) -> None:
        """``max_cycles`` reached: the match ends undecided, as the match bound ends one."""
        table = self.table
        table.over = table.truncated = True
        self.truncations = {name: True for name in self.agents}
        scores = table.sheet().scores
        self.infos = {name: {**self.infos[name], "truncated": True,
                             "match_winner": self._seat_value(-1),
                             "final_scores": self._scores_value(scores)}
                      for name in AGENTS}
        self._quiet_infos = False

    def _masks_to_infos(self) -> None:
        """``mask_in_infos``: each agent's action mask in its infos (AgileRL's and Shimmy's
        convention), fresh dicts so that no agent's infos alias another's."""
        as_list = self.mask_in_infos == "list"
        self.infos = {name: {**self.infos[name],
                             "action_mask": (self.action_mask(name).tolist() if as_list
                                             else self.action_mask(name))}
                      for name in self.agents}
        self._quiet_infos = False

    def _seat_value(self, seat: int) -> int | str | None:
        """A seat in infos: the agent's name (``None`` for -1), or with ``numeric_infos``
        the seat itself (-1 for none), which array replay buffers can store."""
        seat = int(seat)
        if self.numeric_infos:
            return seat
        return AGENTS[seat] if seat >= 0 else None

    def _scores_value(self, scores: np.ndarray) -> dict[str, list[int]] | np.ndarray:
        """The final scores in infos: per agent name, lists per column, or with
        ``numeric_infos`` one ``(2, columns)`` int64 array (row = seat)."""
        if self.numeric_infos:
            return np.array(scores, dtype=np.int64)
        return {AGENTS[p]: [int(v) for v in scores[p]] for p in range(2)}

    def _hand_infos(self, info: dict[str, Any]) -> dict[str, dict[str, Any]]:
        data: dict[str, Any] = {
            "hand_over": True,
            "hand_winner": self._seat_value(info["hand_winner"]),
            "knocker": self._seat_value(info["knocker"]),
        }
        for key in _HAND_KEYS:
            data[key] = info[key]
        if info["match_over"]:
            data["match_over"] = True
            data["match_winner"] = self._seat_value(info["match_winner"])
        elif info["truncated"]:
            data["truncated"] = True
            data["match_winner"] = self._seat_value(-1)
        if info["match_over"] or info["truncated"]:
            data["final_scores"] = self._scores_value(info["final_scores"])
        copy = dict(data)
        if "final_scores" in data:  # each agent its own copy, as PettingZoo infos are
            scores = data["final_scores"]
            copy["final_scores"] = scores.copy() if isinstance(scores, np.ndarray) else \
                {name: list(v) for name, v in scores.items()}
        return {"player_0": data, "player_1": copy}

    def forfeit_illegal(self, action: Any, illegal_reward: float = -1.0) -> None:
        """End the match because the agent to move chose ``action``, an illegal action.

        The offender gets ``illegal_reward`` and the other agent its opposite, so that
        every reward stays zero-sum (the forfeit is a lost match); both are
        terminated and both infos describe the illegal move.
        """
        agent = self.agent_selection
        other = AGENTS[1 - self._seat_of[agent]]
        details = self.table.forfeit_illegal(action)
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self.rewards[agent] = float(illegal_reward)
        self.rewards[other] = -float(illegal_reward)
        self._accumulate_rewards()
        self.terminations = dict.fromkeys(self.agents, True)
        winner = self._seat_value(self._seat_of[other])
        if self.numeric_infos:  # flat numbers; the full description stays in ``forfeit``
            offence: dict[str, Any] = {
                "illegal_agent": self._seat_of[agent],
                "illegal_action": int(details["action"])
                if isinstance(details["action"], int | np.integer) else -1,
            }
            self.infos = {name: {**offence, "match_over": True, "match_winner": winner}
                          for name in self.agents}
        else:
            self.infos = {name: {"illegal_move": dict(details), "match_over": True,
                                 "match_winner": winner} for name in self.agents}
        self._quiet_infos = False
        if self.mask_in_infos:
            self._masks_to_infos()
        self._deads_step_first()
        if self.render_mode == "human":
            self.render()

    # ----------------------------------------------------------------- views
    @property
    def match_over(self) -> bool:
        """Whether the match has ended (by its last hand, a forfeit or the match bound)."""
        return self.table.over

    @property
    def truncated(self) -> bool:
        """Whether the match was cut off undecided by the match bound (no winner)."""
        return self.table.truncated

    @property
    def forfeit(self) -> dict[str, Any] | None:
        """What the forfeiting move was, if the match ended by one."""
        return self.table.forfeit

    @property
    def hands_played(self) -> int:
        return self.table.hands_played

    @property
    def steps(self) -> int:
        return self.table.steps

    @property
    def recorder(self) -> MatchStream | None:
        """Sees every deal and action when set (:class:`~hgin_env.envs.wrappers.RecordMatches`
        sets it)."""
        return self.table.recorder

    @recorder.setter
    def recorder(self, stream: MatchStream | None) -> None:
        self.table.recorder = stream

    @property
    def cumulative_rewards(self) -> Mapping[str, float]:
        """Each live agent's reward since its previous action (what ``last()``
        returns), as a read-only view."""
        return MappingProxyType(self._cumulative_rewards)

    def cumulative_reward(self, agent: str) -> float:
        """``agent``'s reward since its previous action (what ``last()`` returns)."""
        return self._cumulative_rewards[agent]

    @property
    def game(self) -> SingleGameArrays:
        """The game in the ``VectorGame`` array layout (a live, read-only view; it stays in
        its final position once the match is over)."""
        return self.table.game

    def sheet(self) -> Sheet:
        """The score sheet; the final one once the match is over."""
        return self.table.sheet()

    def render(self) -> str | np.ndarray | None:
        """The table: printed (``human``), as text (``ansi``) or as an image
        (``rgb_array``, the spectator's view, see :meth:`render_image`)."""
        if self.render_mode is None:
            logger.warn(
                "You are calling render method without specifying any render mode. "
                "Use render_mode='ansi', 'human' or 'rgb_array' when creating the environment."
            )
            return None
        if self.render_mode == "rgb_array":
            return self.render_image()
        if self.render_mode == "human":
            import sys

            from hgin_env.ui.render import supports_color

            print(self.render_text(color=supports_color(sys.stdout)) + "\n", flush=True)
            return None
        return self.render_text(color=False)

    def render_text(self, color: bool = False, viewer: int | None = None) -> str:
        """The table as text: both hands (or only ``viewer``'s), the sheet, the last showdown."""
        return self.table.render_text(color=color, viewer=viewer)

    def render_image(self, viewer: str | None = None) -> np.ndarray:
        """The table as an RGB image (``image.HEIGHT x image.WIDTH x 3`` uint8).

        ``viewer`` (an agent name) sees its own hand and, of the other hand,
        only the cards taken from the discard pile; ``None`` shows both
        hands.  Both are shown once the match is over.
        """
        seat = None if viewer is None else self._seat_of.get(viewer, -1)
        if seat == -1:
            raise ValueError(f"viewer must be one of {AGENTS} or None, got {viewer!r}")
        return self.table.render_image(viewer=seat)

    def close(self) -> None:
        pass
