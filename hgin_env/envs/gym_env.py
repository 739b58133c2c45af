"""Gymnasium interfaces: one learner seat against a fixed opponent policy.

* :class:`HollywoodGinEnv` — a ``gymnasium.Env``: one Hollywood match per
  episode, the other seat played by an agent: any object with
  ``act(obs, rng) -> actions`` (every agent of the ``agents`` package), a
  function ``obs -> actions``, or a spec string (``"random"``, ``"simple"``,
  ``"strong"``, ``"pretrained"``, ``"ckpt:PATH"``) that
  :func:`hgin_env.envs.opponents.load_agent` resolves.  ``import hgin_env``
  registers it as ``hgin/HollywoodGin-v0``:
  ``gymnasium.make("hgin/HollywoodGin-v0", opponent="simple")``.
* :class:`HollywoodGinVectorEnv` — a ``gymnasium.vector.VectorEnv`` of B
  matches run by one batched :class:`~hgin_env.engine.VectorGame`, for
  batched single-agent training.  Its autoreset mode (``autoreset_mode=``,
  also the ``autoreset_mode`` attribute and ``metadata["autoreset_mode"]``)
  is one of Gymnasium's three:

  - ``AutoresetMode.SAME_STEP`` (the default): the step that ends a match
    returns the first observation of the next one, and the final observation
    is in ``info["final_obs"]`` (with ``info["_final_obs"]`` marking the
    rows), as Gymnasium's ``SyncVectorEnv(..., autoreset_mode=SAME_STEP)``
    does.  TorchRL's ``GymWrapper`` wants this one (it refuses NEXT_STEP).
  - ``AutoresetMode.NEXT_STEP``: the step that ends a match returns its final
    observation (the mask holds only the placeholder action); the next
    ``step`` ignores that game's action and starts its next match (reward 0,
    not terminated).  Gymnasium's vector *wrappers*
    (``gymnasium.wrappers.vector.FlattenObservation`` and the other
    observation wrappers) accept only this mode or DISABLED.
  - ``AutoresetMode.DISABLED``: a finished match waits in its final position
    until ``reset(options={"reset_mask": rows})`` restarts it; stepping it
    before that raises ``ValueError``.

  ``info["final_info"]`` (with ``info["_final_info"]``) holds each finished
  match's seat, result and final scores in every mode.

Observations are the PettingZoo ones (``hgin_env.envs.aec``): a dict of the
``observation`` vector (398 float32, from the learner's seat) and the
``action_mask`` (108 int8, the learner's legal actions; ``mask_dtype=bool``
makes it bool, which TorchRL's ``ActionMask`` transform needs).  Rewards are the
learner seat's engine rewards (``reward="match" | "columns" | "points"``),
summed over everything that happened since the learner's previous action,
the opponent's moves included.  An episode ends (``terminated``) when the
match does.  A match still undecided after ``MAX_HANDS_PER_MATCH`` (2000)
hands is cut off instead (``truncated``, ``info["truncated"]``, no winner, no
reward; docs/rules.md Appendix C): real matches never get there, but random
play under ``straight_gin`` would almost never end.  So every episode ends
within :data:`MAX_EPISODE_STEPS` steps, the registered id's
``max_episode_steps``, which therefore never cuts a match itself.

Rendering: ``render_mode="ansi"`` returns the table as text, ``"human"``
prints it, ``"rgb_array"`` returns it as an image drawn from the learner's
seat (the opponent's cards face down but for those it took from the pile),
for ``gymnasium.wrappers.RecordVideo``.

Actions: any integral scalar is accepted — a Python or numpy integer, a 0-d
or 1-element array, or an integral float such as ``105.0``
(:func:`hgin_env.envs.spaces.action_id`).  A value that is not an action id at
all (``105.5``, ``nan``, ``500``, ``"pass"``) raises ``ValueError``: it is
a bug in the caller, not a move.  An action id that is illegal now is the
policy's move: :class:`HollywoodGinEnv` ends the match with reward -1 and
``info["illegal_move"]`` and warns (an
:class:`~hgin_env.envs.spaces.IllegalMoveWarning`), or raises ``ValueError``
with ``strict=True``; the vector env always raises ``ValueError``, naming the
sub-environment.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from hgin_env import ENV_ID
from hgin_env import actions as A
from hgin_env.engine.hand import max_match_steps
from hgin_env.engine.vector import REWARD_MODES, VectorGame
from hgin_env.envs.driver import AgentError, MatchDriver
from hgin_env.envs.opponents import as_opponent
from hgin_env.envs.spaces import action_id, observation_space, warn_illegal_move
from hgin_env.envs.spaces import mask_dtype as mask_dtype_of
from hgin_env.envs.table import AGENTS, TERMINAL_MASK_ACTION, MatchTable
from hgin_env.observation import encode
from hgin_env.rules import RANGES, Rules, load_rules

__all__ = ["ENV_ID", "MAX_EPISODE_STEPS", "HollywoodGinEnv", "HollywoodGinVectorEnv"]

#: More steps than any episode can last, under any rules ``gymnasium.make`` may pass: a
#: match lasts at most ``MAX_HANDS_PER_MATCH`` hands of ``hand.max_hand_steps`` steps
#: each, taken at the largest take limit accepted, and the learner makes only some of
#: them (the opponent moves in every hand of more than a few steps).  2000 x 20,060.
MAX_EPISODE_STEPS = max_match_steps(Rules(max_discard_takes=RANGES["max_discard_takes"][1]))


def _spaces(rules: Rules, mask: np.dtype) -> tuple[spaces.Dict, spaces.Discrete]:
    return observation_space(rules, mask=mask), spaces.Discrete(A.NUM_ACTIONS)


_AUTORESET_MODES = (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED)


def _check_autoreset_mode(mode: Any) -> AutoresetMode:
    """``mode`` as an ``AutoresetMode`` (its value, e.g. ``"NextStep"``, is accepted too)."""
    try:
        return AutoresetMode(mode)
    except ValueError:
        raise ValueError(f"autoreset_mode must be one of {[m.name for m in _AUTORESET_MODES]} "
                         f"(gymnasium.vector.AutoresetMode), got {mode!r}") from None


def _check_num_envs(num_envs: Any) -> int:
    if isinstance(num_envs, (bool, np.bool_)) or not isinstance(num_envs, (int, np.integer)):
        raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
    if num_envs < 1:
        raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
    return int(num_envs)


def _integer_actions(actions: Any, num_envs: int) -> np.ndarray:
    """``actions`` as (num_envs,) int64 action ids.

    Integer arrays and integral float arrays are accepted, as
    :func:`~hgin_env.envs.spaces.action_id` accepts scalars; any value that is
    not an action id (``3.5``, ``nan``, ``-1``, ``500``) raises ``ValueError``.
    """
    acts = np.asarray(actions)
    if acts.shape != (num_envs,):
        raise ValueError(f"expected {num_envs} actions, got an array of shape {acts.shape}")
    kind = acts.dtype.kind
    if kind in "iu":
        not_ids = (acts < 0) | (acts >= A.NUM_ACTIONS)
    elif kind == "f":
        not_ids = (~np.isfinite(acts) | (acts != np.floor(acts))
                   | (acts < 0) | (acts >= A.NUM_ACTIONS))
    else:
        raise ValueError(f"expected {num_envs} integer actions, got a {acts.dtype} array")
    if not_ids.any():
        i = int(np.flatnonzero(not_ids)[0])
        raise ValueError(f"sub-environment {i}: action {acts[i].item()!r} is not an action id "
                         f"(integers 0..{A.NUM_ACTIONS - 1})")
    return acts.astype(np.int64)


def _check_seat(seat: int | None) -> int | None:
    if seat is not None and seat not in (0, 1):
        raise ValueError(f"seat must be 0, 1 or None (random each episode), got {seat!r}")
    return seat


class HollywoodGinEnv(gym.Env):
    """One Hollywood match per episode against ``opponent`` (see the module docs).

    ``seat`` is the learner's seat, or ``None`` for a random seat each
    episode (``info["seat"]`` says which).  Info keys after every step:
    ``seat``, ``hand_over`` (a hand ended during the step), ``hand_result``
    (+1 the learner won the last hand that ended, -1 lost it, 0 none or
    dead), ``match_over`` (the match was decided or forfeited),
    ``truncated`` (cut off by the match bound), ``match_won``; at the end of
    an episode ``final_scores`` (2, C) indexed by seat; after a forfeit
    ``illegal_move`` (a dict), or with ``numeric_infos=True`` ``illegal_action``
    (the action id: every info value is then a number or a fixed-shape array,
    which TorchRL's ``GymEnv(..., num_envs=N)`` needs; that form also leaves out
    the ``truncated`` info, the step's own return value, whose name is TorchRL's
    done key).  With ``mask_in_infos=True`` the observation is the flat vector
    alone (a ``Box``) and the mask is ``info["action_mask"]``.

    It runs on one :class:`~hgin_env.envs.table.MatchTable` (the one-game engine),
    and the opponent's turns are played by a :class:`~hgin_env.envs.driver.MatchDriver`.
    A pickle holds the whole match, so a copy goes on from the same position.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["human", "ansi", "rgb_array"],
        "render_fps": 4,
    }
    #: ``mask_dtype=bool`` (a class default, so that older pickles load with int8 masks).
    _bool_mask = False
    #: ``numeric_infos=True`` (a class default too, for older pickles).
    _numeric_infos = False
    #: ``mask_in_infos=True`` (a class default too, for older pickles).
    _mask_in_infos = False

    def __init__(
        self,
        opponent: Any = "random",
        rules: str | Rules = "friendly",
        reward: str = "columns",
        seat: int | None = None,
        render_mode: str | None = None,
        strict: bool = False,
        illegal_reward: float = -1.0,
        mask_dtype: Any = np.int8,
        numeric_infos: bool = False,
        mask_in_infos: bool = False,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of "
                             f"{self.metadata['render_modes']}, got {render_mode!r}")
        dtype = mask_dtype_of(mask_dtype)
        self._bool_mask = dtype == np.bool_
        if not isinstance(numeric_infos, bool):
            raise ValueError(f"numeric_infos must be True or False, got {numeric_infos!r}")
        self._numeric_infos = numeric_infos
        if not isinstance(mask_in_infos, bool):
            raise ValueError(f"mask_in_infos must be True or False, got {mask_in_infos!r}")
        self._mask_in_infos = mask_in_infos
        if reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        self.rules = load_rules(rules)
        self.reward_mode = reward
        self.table = MatchTable(self.rules, reward, keep_last_move=render_mode is not None)
        self.observation_space, self.action_space = _spaces(self.rules, dtype)
        if mask_in_infos:  # the flat vector alone; the mask goes to info["action_mask"]
            self.observation_space = self.observation_space["observation"]
        self.opponent = as_opponent(opponent, self.rules)
        self.fixed_seat = _check_seat(seat)
        self.render_mode = render_mode
        self.strict = bool(strict)
        self.illegal_reward = float(illegal_reward)
        self.seat = 0 if seat is None else seat
        self.driver: MatchDriver | None = None
        self._carry = 0.0
        self._since_action = 0.0
        self._done = True
        self._hand_over = False
        self._hand_result = 0

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "aec" in state:  # pickled before the env ran on its own table: start afresh
            aec = state["aec"]
            fresh = HollywoodGinEnv(state["opponent"], aec.rules, aec.reward_mode,
                                    state["fixed_seat"], state["render_mode"], state["strict"],
                                    state["illegal_reward"])
            state = fresh.__dict__
        self.__dict__.update(state)

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        match_seed = int(self.np_random.integers(0, 2**63 - 1))
        deck = dealer = None
        if options:  # other keys are ignored, as Gymnasium envs do
            deck = options.get("deck")
            dealer = options.get("dealer")
        self.table.reset(match_seed, deck=deck, dealer=dealer)
        if self.fixed_seat is None:
            self.seat = int(self.np_random.integers(0, 2))
        self.driver = MatchDriver(self.table, {1 - self.seat: self.opponent}, self.np_random)
        self.driver.new_match()
        self._done = False
        self._hand_over, self._hand_result = False, 0
        self._since_action = 0.0
        self._play_opponent()
        self._carry = self._since_action
        if self.render_mode == "human":
            self.render()
        return self._observe(), self._info()

    def step(
        self, action: Any
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self._done or self.driver is None:
            raise RuntimeError("the match is over (or reset() was never called): call reset()")
        table = self.table
        a = table.legal_id(action)  # ValueError for a value that is not an action id
        self._hand_over, self._hand_result = False, 0
        if a is None:
            message = table.illegal_action_message(self.seat, action_id(action))
            if self.strict:
                raise ValueError(message)
            warn_illegal_move(message)
            info = self._info_after_forfeit(table.forfeit_illegal(action))
            self._done = True
            if self.render_mode == "human":
                self.render()
            return self._observe(), self.illegal_reward, True, False, info
        self._since_action = 0.0
        self._count(self.seat, a, *self.driver.play(a))
        self._play_opponent()
        reward = self._carry + self._since_action
        self._carry = 0.0
        truncated = table.truncated
        self._done = table.over
        if self.render_mode == "human":
            self.render()
        return self._observe(), reward, self._done and not truncated, truncated, self._info()

    # ------------------------------------------------------------------ internals
    def _observe(self) -> dict[str, np.ndarray] | np.ndarray:
        obs = self.table.observe(self.seat)
        if self._bool_mask:
            obs["action_mask"] = obs["action_mask"].view(np.bool_)
        if self._mask_in_infos:
            return obs["observation"]
        return obs

    def _play_opponent(self) -> None:
        assert self.driver is not None
        self.driver.rng = self.np_random  # the env's generator, even if replaced since reset
        try:
            self.driver.play_agents(after=self._count)
        except AgentError as err:
            raise RuntimeError(f"opponent {getattr(self.opponent, 'name', self.opponent)!r} "
                               f"chose an illegal action: {err}") from None

    def _count(self, seat: int, action: int, r0: float, r1: float, info: dict[str, Any]
               ) -> None:
        """Add the learner's reward of one move and note a hand's end."""
        mine = r1 if self.seat else r0
        if r0 or r1:
            self._since_action += mine
        if info["hand_over"]:
            self._hand_over = True
            winner = info["hand_winner"]
            self._hand_result = 0 if winner < 0 else (1 if winner == self.seat else -1)

    def _info_after_forfeit(self, forfeit: dict[str, Any]) -> dict[str, Any]:
        info = self._info()
        if self._numeric_infos:  # one number: a TensorDict / array buffer can hold it
            a = forfeit["action"]
            info["illegal_action"] = int(a) if isinstance(a, int | np.integer) else -1
        else:
            info["illegal_move"] = dict(forfeit)
        return info

    def _info(self) -> dict[str, Any]:
        table = self.table
        over = table.over
        if table.forfeit is not None:
            won = table.forfeit["agent"] != AGENTS[self.seat]
        else:
            won = over and table.sheet().match_winner == self.seat
        info: dict[str, Any] = {
            "seat": self.seat,
            "hand_over": self._hand_over,
            "hand_result": self._hand_result,
            "match_over": over and not table.truncated,
            "truncated": table.truncated,
            "match_won": bool(won),
        }
        if over:
            info["final_scores"] = table.sheet().scores.copy()
        if self._numeric_infos:  # the step's own ``truncated``; TorchRL's done key by name
            del info["truncated"]
        if self._mask_in_infos:
            mask = table.action_mask(self.seat)
            info["action_mask"] = mask.view(np.bool_) if self._bool_mask else mask
        return info

    def render(self) -> str | np.ndarray | None:
        """``ansi``: the table as text (both hands); ``human``: printed;
        ``rgb_array``: the table as the learner sees it, an (H, W, 3) uint8
        image (:func:`hgin_env.ui.image.table_image`), for ``RecordVideo``."""
        if self.render_mode is None:
            gym.logger.warn("You are calling render method without specifying any render mode.")
            return None
        if self.render_mode == "rgb_array":
            return self.table.render_image(viewer=self.seat)
        if self.render_mode == "ansi":
            return self.table.render_text(color=False)
        import sys

        from hgin_env.ui.render import supports_color

        print(self.table.render_text(color=supports_color(sys.stdout)) + "\n", flush=True)
        return None

    def close(self) -> None:
        pass


class HollywoodGinVectorEnv(VectorEnv):
    """B matches against ``opponent`` on one batched engine (see the module docs).

    ``seat`` is the learner's seat in every game, or ``None`` for a random
    seat per game and match.  Step info (arrays over games): ``seat``,
    ``hand_over``, ``hand_result``, ``match_over``, ``truncated`` (the match
    bound cut the match off: the step's ``truncations`` entry), ``match_won``,
    and for finished or truncated matches ``final_obs`` / ``final_info`` with
    their ``_``-masks.

    ``autoreset_mode`` is SAME_STEP (the default), NEXT_STEP or DISABLED (see the
    module docs); the instance's ``autoreset_mode`` attribute and its
    ``metadata["autoreset_mode"]`` both say which.  ``mask_dtype`` is the action
    mask's dtype, int8 (default) or bool.

    While the opponent moves in some games, only those are stepped
    (``VectorGame.step(actions, active)``).  The engine runs with
    ``autoreset=False``, so a finished match stays in its final position for
    ``final_obs`` until this env starts the next one (``reset_games``): in the
    same step (SAME_STEP), on the next step (NEXT_STEP) or when ``reset`` is
    told to (DISABLED).
    """

    #: The class default; each instance holds its own mode in ``self.metadata``.
    metadata: ClassVar[dict[str, Any]] = {
        "autoreset_mode": AutoresetMode.SAME_STEP,
        "render_modes": ["ansi"],
    }

    def __init__(
        self,
        num_envs: int,
        opponent: Any = "random",
        rules: str | Rules = "friendly",
        reward: str = "columns",
        seat: int | None = None,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        autoreset_mode: Any = AutoresetMode.SAME_STEP,
        mask_dtype: Any = np.int8,
    ) -> None:
        self.autoreset_mode = _check_autoreset_mode(autoreset_mode)
        dtype = mask_dtype_of(mask_dtype)
        self._bool_mask = dtype == np.bool_
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        if reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        # gymnasium.make_vec passes the registered id's step limit; no legal match reaches
        # it (MAX_EPISODE_STEPS), and each match already ends by the match bound.
        if max_episode_steps is not None and (
                isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int)
                or max_episode_steps < 1):
            raise ValueError(f"max_episode_steps must be a positive integer or None, got "
                             f"{max_episode_steps!r}")
        self.max_episode_steps = max_episode_steps
        self.rules = load_rules(rules)
        self.reward_mode = reward
        self.num_envs = _check_num_envs(num_envs)
        self.game = VectorGame(self.num_envs, self.rules, seed=0, reward=reward, autoreset=False)
        self.single_observation_space, self.single_action_space = _spaces(self.rules, dtype)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = spaces.MultiDiscrete(np.full(self.num_envs, A.NUM_ACTIONS))
        self.opponent = as_opponent(opponent, self.rules)
        self.fixed_seat = _check_seat(seat)
        self.render_mode = render_mode
        b = self.num_envs
        self.seats = np.zeros(b, np.int64) if seat is None else np.full(b, seat, np.int64)
        self._rows = np.arange(b)
        self._carry = np.zeros(b, np.float64)
        #: Games whose match is over and waits for its restart (NEXT_STEP, DISABLED).
        self._waiting = np.zeros(b, bool)
        self._terminal_mask = np.zeros(A.NUM_ACTIONS, np.int8)
        self._terminal_mask[TERMINAL_MASK_ACTION] = 1

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Pickles from before the autoreset and mask options: SAME_STEP, int8 masks.
        self.__dict__.update(state)
        if "autoreset_mode" not in state:
            self.autoreset_mode = AutoresetMode.SAME_STEP
            self.metadata = {**type(self).metadata}
            self._bool_mask = False
            self._waiting = np.zeros(self.num_envs, bool)

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        if options and options.get("reset_mask") is not None:
            return self._reset_some(seed, options["reset_mask"])
        super().reset(seed=seed)
        game_seed = seed if seed is not None else int(self.np_random.integers(0, 2**63 - 1))
        self.game.reset(seed=game_seed)
        if self.fixed_seat is None:
            self.seats = self.np_random.integers(0, 2, self.num_envs).astype(np.int64)
        self._carry[:] = 0.0
        self._waiting[:] = False
        acc = self._new_accumulator()
        self._play_opponent(acc)
        self._carry += acc["reward"] + acc["carry"]
        return self._observe(), self._info(acc)

    def _reset_some(self, seed: int | None, reset_mask: Any
                    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """``reset(options={"reset_mask": m})``: restart only the games where ``m`` is set."""
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            raise ValueError("partial resets (options['reset_mask']) need autoreset_mode "
                             "NEXT_STEP or DISABLED: under SAME_STEP the matches reset "
                             "themselves when they end")
        if seed is not None:
            raise ValueError("reset(seed=...) with options['reset_mask'] is not supported: "
                             "each game continues its own seed stream; seed the full reset")
        m = np.asarray(reset_mask)
        if m.dtype != np.bool_ or m.shape != (self.num_envs,):
            raise ValueError(f"options['reset_mask'] must be a bool array of shape "
                             f"({self.num_envs},), got {m.dtype} {m.shape}")
        acc = self._new_accumulator()
        rows = np.flatnonzero(m)
        self._restart(rows)
        acc["fresh"][rows] = True
        self._play_opponent(acc)
        self._carry[rows] = 0.0
        self._carry += acc["reward"] + acc["carry"]
        return self._observe(), self._info(acc)

    def _restart(self, rows: np.ndarray) -> None:
        """Start the next match in the listed games (the learner's seat drawn again)."""
        self.game.reset_games(rows)
        if self.fixed_seat is None:
            self.seats[rows] = self.np_random.integers(0, 2, rows.size)
        self._waiting[rows] = False

    def step(
        self, actions: Any
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        acts = _integer_actions(actions, self.num_envs)
        waiting = self._waiting.copy()
        if waiting.any() and self.autoreset_mode == AutoresetMode.DISABLED:
            i = int(np.flatnonzero(waiting)[0])
            raise ValueError(f"sub-environment {i}: its match is over (autoreset_mode "
                             f"DISABLED); restart it with reset(options={{'reset_mask': m}})")
        mask = self.game.legal_action_mask()
        # NEXT_STEP: a finished game's action is ignored; this step starts its next match.
        ok = (mask[self._rows, acts] == 1) | waiting
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            a = int(acts[i])
            what = A.action_name(a)
            legal = np.flatnonzero(mask[i]).tolist()
            raise ValueError(f"sub-environment {i}: illegal action {a} ({what}); legal actions: "
                             f"{legal}")
        acc = self._new_accumulator()
        acc["reward"] += self._carry
        self._carry[:] = 0.0
        if waiting.any():
            rows = np.flatnonzero(waiting)
            self._restart(rows)
            acc["fresh"][rows] = True  # their rewards until the learner's first move carry
            if not waiting.all():
                self._engine_step(acts, ~waiting, acc)
        else:
            self._engine_step(acts, None, acc)
        self._play_opponent(acc)
        self._carry += acc["carry"]
        info = self._info(acc)
        cut = acc["cut"]
        return (self._observe(), acc["reward"].astype(np.float64), acc["ended"] & ~cut,
                cut.copy(), info)

    # ------------------------------------------------------------------ internals
    def _new_accumulator(self) -> dict[str, Any]:
        b = self.num_envs
        return {
            "reward": np.zeros(b, np.float64),
            "carry": np.zeros(b, np.float64),
            "ended": np.zeros(b, bool),
            "cut": np.zeros(b, bool),
            "won": np.zeros(b, bool),
            "hand_over": np.zeros(b, bool),
            "hand_result": np.zeros(b, np.int8),
            "fresh": np.zeros(b, bool),
            "final": {},
        }

    def _play_opponent(self, acc: dict[str, Any]) -> None:
        game = self.game
        while True:
            opp = (game.current_player != self.seats) & ~self._waiting
            if not opp.any():
                return
            obs = game.observe()
            rows = np.flatnonzero(opp)
            sub = {key: value[rows] for key, value in obs.items()}
            chosen = np.asarray(self.opponent.act(sub, rng=self.np_random), np.int64).reshape(-1)
            bad = sub["action_mask"][np.arange(rows.size), chosen] != 1
            if bad.any():
                i = int(rows[np.flatnonzero(bad)[0]])
                raise RuntimeError(f"opponent {getattr(self.opponent, 'name', self.opponent)!r} "
                                   f"chose an illegal action in sub-environment {i}")
            acts = np.zeros(self.num_envs, np.int64)
            acts[rows] = chosen
            self._engine_step(acts, None if rows.size == self.num_envs else opp, acc)

    def _engine_step(
        self, acts: np.ndarray, active: np.ndarray | None, acc: dict[str, Any]
    ) -> None:
        """One engine step of the ``active`` games (all if ``None``); finished and
        truncated matches are recorded in ``acc`` and restarted."""
        game = self.game
        rewards, info = game.step(acts, active)
        hand_over, truncated = info["hand_over"], info["truncated"]
        match_over = info["match_over"] | truncated
        mine = rewards[self._rows, self.seats].astype(np.float64)
        new_episode = acc["ended"] | acc["fresh"]
        acc["reward"] += np.where(new_episode, 0.0, mine)
        acc["carry"] += np.where(new_episode, mine, 0.0)
        counted = hand_over & ~new_episode
        if counted.any():
            acc["hand_over"] |= counted
            winner = info["hand_winner"].astype(np.int64)
            result = np.where(winner < 0, 0, np.where(winner == self.seats, 1, -1))
            acc["hand_result"] = np.where(counted, result, acc["hand_result"]).astype(np.int8)
        if not match_over.any():
            return
        over = np.flatnonzero(match_over)
        # The finished matches wait in their final position (autoreset=False).
        final_obs = encode(game.state, self.seats)
        for row in over:
            seat = int(self.seats[row])
            won = int(info["match_winner"][row]) == seat
            acc["won"][row] = won
            acc["final"][int(row)] = (
                {"observation": final_obs[row], "action_mask": self._terminal_mask.copy()},
                {"seat": seat, "match_won": won, "truncated": bool(truncated[row]),
                 "final_scores": info["final_scores"][row].copy()},
            )
        acc["ended"] |= match_over
        acc["cut"] |= truncated
        if self.autoreset_mode != AutoresetMode.SAME_STEP:
            self._waiting[over] = True  # its final position is this step's observation
            return
        game.reset_games(over)
        if self.fixed_seat is None:
            # A new match: the learner's seat is drawn again.
            self.seats[over] = self.np_random.integers(0, 2, over.size)

    def _observe(self) -> dict[str, np.ndarray]:
        game = self.game
        mask = game.legal_action_mask().copy()
        if self._waiting.any():
            mask[self._waiting] = self._terminal_mask
        return {
            "observation": encode(game.state, self.seats),
            "action_mask": mask.view(np.bool_) if self._bool_mask else mask,
        }

    def _info(self, acc: dict[str, Any]) -> dict[str, Any]:
        info: dict[str, Any] = {
            "seat": self.seats.copy(),
            "hand_over": acc["hand_over"],
            "hand_result": acc["hand_result"],
            "match_over": acc["ended"] & ~acc["cut"],
            "truncated": acc["cut"].copy(),
            "match_won": acc["won"],
        }
        if acc["final"]:
            final_obs = np.full(self.num_envs, None, dtype=object)
            has = np.zeros(self.num_envs, bool)
            final_info: dict[str, Any] = {}
            for row, (obs, row_info) in acc["final"].items():
                if self._bool_mask:
                    obs["action_mask"] = obs["action_mask"].view(np.bool_)
                final_obs[row] = obs
                has[row] = True
                final_info = self._add_info(final_info, row_info, row)
            if self.autoreset_mode == AutoresetMode.SAME_STEP:
                info["final_obs"], info["_final_obs"] = final_obs, has
            info["final_info"], info["_final_info"] = final_info, has.copy()
        return info

    def render(self) -> tuple[str, ...] | None:
        if self.render_mode is None:
            gym.logger.warn("You are calling render method without specifying any render mode.")
            return None
        from hgin_env.ui.render import table_text

        return tuple(table_text(self.game, i, None, title=f"game {i}")
                     for i in range(self.num_envs))

