"""Spaces and wrappers around the environments.

* :func:`action_id` — what counts as an action: any integral scalar in
  ``0..107`` (see its docs), shared by the AEC and Gymnasium envs.
* :class:`MaskedDiscrete` — ``Discrete(108)`` with a fast ``sample(mask)``;
  the AEC env's action spaces.
* :class:`HollywoodWrapper` — what ``hgin_env.env()`` wraps the raw AEC env
  in: PettingZoo's order enforcement, the out-of-space check and the
  illegal-move handling in one layer.
* :class:`FlatObservation` — for RL libraries that want a flat observation:
  it turns :class:`~hgin_env.gym_env.HollywoodGinEnv`'s
  ``{"observation", "action_mask"}`` dict into the bare observation vector (a
  ``Box`` of ``OBS_DIM`` float32) and keeps the legal-action mask of the
  latest observation behind ``action_masks()``, the method
  ``sb3_contrib.MaskablePPO`` looks for (through ``get_wrapper_attr`` or a
  ``VecEnv``'s ``env_method``), so no ``ActionMasker`` is needed::

    from hgin_env.gym_env import HollywoodGinEnv
    from hgin_env.wrappers import FlatObservation

    env = FlatObservation(HollywoodGinEnv(opponent=my_agent))
    obs, info = env.reset(seed=0)  # obs: float32 (OBS_DIM,)
    env.action_masks()  # bool (108,): the legal actions now

* :class:`RecordMatches` (PettingZoo AEC env) and :class:`RecordGymMatches`
  (:class:`~hgin_env.gym_env.HollywoodGinEnv`) — write every match the env
  plays to the end as one match record (docs/records.md), replayable with
  :func:`hgin_env.replay.replay`; the env's returns are unchanged.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers import BaseWrapper, OrderEnforcingWrapper

from hgin_env.actions import NUM_ACTIONS
from hgin_env.records import MatchStream, RecordWriter, make_record
from hgin_env.rules import profile_name

if TYPE_CHECKING:
    from hgin_env.aec import raw_env

__all__ = ["FlatObservation", "HollywoodWrapper", "MaskedDiscrete", "RecordGymMatches",
           "RecordMatches", "action_id"]


# ----------------------------------------------------------------------------- actions


def _integral_value(action: Any) -> int:
    """The integer that ``action`` holds exactly, or ``ValueError``."""
    if isinstance(action, np.ndarray):
        if action.size != 1:
            raise ValueError(f"an action is one integer, got an array of shape {action.shape}")
        action = action.reshape(()).item()
    elif isinstance(action, np.generic):
        action = action.item()
    if isinstance(action, bool):
        raise ValueError(f"an action is an integer id, got the bool {action!r}")
    if isinstance(action, float):
        if not (math.isfinite(action) and action.is_integer()):
            raise ValueError(f"an action is an integer id, got the non-integral value {action!r}")
        return int(action)
    try:
        return operator.index(action)
    except TypeError:
        raise ValueError(f"an action is an integer id, got {action!r} "
                         f"({type(action).__name__})") from None


def action_id(action: Any) -> int:
    """``action`` as an action id, an ``int`` in ``0..107``.

    RL libraries hand actions over in many shapes, so any *integral scalar* is
    accepted: a Python or numpy integer, a 0-d or 1-element array, and an
    integral float (``105.0``, as a float-typed policy output may be).
    Anything else raises ``ValueError`` naming the value: a non-integral or
    non-finite number (``105.5``, ``nan``), a bool, a string, an array of
    several values, or an integer outside the action space.  (Whether the id
    is *legal now* is the environment's question, not this one.)
    """
    value = action if type(action) is int else _integral_value(action)
    if not 0 <= value < NUM_ACTIONS:
        raise ValueError(f"action {value} is outside the action space "
                         f"(integers 0..{NUM_ACTIONS - 1})")
    return value


class MaskedDiscrete(spaces.Discrete):
    """``Discrete(n)`` with a fast ``sample(mask)``.

    Gymnasium's masked sample costs tens of microseconds (several numpy calls
    and ``Generator.choice``), more than a whole environment step here.  This
    one checks the mask the same way (an int8 array of shape (n,) holding only
    0 and 1; anything else goes to Gymnasium's own checks) and draws uniformly
    among the 1 entries, from uniforms drawn in blocks from ``self.np_random``;
    so it is reproducible under ``seed()``, but it is not the same stream as
    ``Discrete.sample``.  Returns ``start`` when no entry is set, as Gymnasium does.
    """

    _BLOCK = 256
    _INT8 = np.dtype(np.int8)

    def __init__(self, n: int, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(n, seed=seed)
        self._uniforms: list[float] = []
        self._source: np.random.Generator | None = None
        self._shape = (int(n),)
        self._values = [self.start + self.dtype.type(i) for i in range(int(n))]

    def seed(self, seed: int | None = None) -> Any:
        self._uniforms = []
        return super().seed(seed)

    def sample(self, mask: Any = None, probability: Any = None) -> np.int64:
        if (probability is not None or type(mask) is not np.ndarray
                or mask.dtype is not self._INT8 or mask.shape != self._shape):
            return super().sample(mask, probability)
        flags = mask.tobytes()
        count = flags.count(1)
        if count + flags.count(0) != len(flags):
            return super().sample(mask)  # values other than 0/1: Gymnasium's assertion
        if not count:
            return self.start
        uniforms = self._uniforms
        rng = self._np_random
        if rng is None:
            rng = self.np_random
        if not uniforms or self._source is not rng:
            uniforms = self._uniforms = rng.random(self._BLOCK).tolist()
            self._source = rng
        k = int(uniforms.pop() * count)
        pos = flags.index(1)
        for _ in range(k):
            pos = flags.index(1, pos + 1)
        return self._values[pos]



# ----------------------------------------------------------------------------- AEC


def _not_before_reset(name: str) -> AttributeError:
    return AttributeError(f"{name} cannot be accessed before reset")


class HollywoodWrapper(OrderEnforcingWrapper):
    """What :func:`hgin_env.env` wraps ``raw_env`` in: PettingZoo's order
    enforcement, the out-of-space check and the illegal-move handling in one layer.

    It behaves as ``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(
    TerminateIllegalWrapper(raw)))`` (or ``OrderEnforcingWrapper(raw)`` with
    ``strict``), except that an action that is not an action id at all raises
    ``ValueError`` (see :func:`action_id`) rather than an assertion, which
    ``python -O`` would strip.  It reads the hot attributes
    (``agent_selection``, ``agents``, ``rewards``, …) straight from the raw
    env instead of through a chain of ``__getattr__`` fallbacks, which cost
    more than a game step.
    """

    def __init__(self, env: raw_env, strict: bool = False, illegal_reward: float = -1.0) -> None:
        super().__init__(env)
        self._raw = env
        self.strict = bool(strict)
        self.illegal_reward = float(illegal_reward)

    # Attributes OrderEnforcingWrapper guards until reset(), read directly.
    @property
    def agent_selection(self) -> str:
        if self._has_reset:
            return self._raw.agent_selection
        raise _not_before_reset("agent_selection")

    @property
    def agents(self) -> list[str]:
        if self._has_reset:
            return self._raw.agents
        raise _not_before_reset("agents")

    @property
    def rewards(self) -> dict[str, float]:
        if self._has_reset:
            return self._raw.rewards
        raise _not_before_reset("rewards")

    @property
    def terminations(self) -> dict[str, bool]:
        if self._has_reset:
            return self._raw.terminations
        raise _not_before_reset("terminations")

    @property
    def truncations(self) -> dict[str, bool]:
        if self._has_reset:
            return self._raw.truncations
        raise _not_before_reset("truncations")

    @property
    def infos(self) -> dict[str, dict[str, Any]]:
        if self._has_reset:
            return self._raw.infos
        raise _not_before_reset("infos")

    @property
    def _cumulative_rewards(self) -> dict[str, float]:
        # PettingZoo's protocol name (its wrappers and tests read it).
        return dict(self._raw.cumulative_rewards)

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    def observation_space(self, agent: str) -> spaces.Space:
        return self._raw.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._raw.action_spaces[agent]

    def observe(self, agent: str) -> dict[str, np.ndarray] | None:
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self._raw.observe(agent)

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        raw = self._raw
        agent = self.agent_selection
        return (raw.observe(agent) if observe else None, raw.cumulative_reward(agent),
                raw.terminations[agent], raw.truncations[agent], raw.infos[agent])

    def step(self, action: Any) -> None:
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        raw = self._raw
        self._has_updated = True
        if not raw.agents:
            EnvLogger.warn_step_after_terminated_truncated()
            return
        agent = raw.agent_selection
        if raw.terminations[agent] or raw.truncations[agent]:
            raw.step(action)  # only None is accepted (PettingZoo raises ValueError)
            return
        if raw.try_step(action):
            return
        if self.strict:
            raise ValueError(raw.illegal_action_message(agent, action))
        EnvLogger.warn_on_illegal_move()
        raw.forfeit_illegal(action, self.illegal_reward)

    def __str__(self) -> str:
        return str(self._raw)


# ----------------------------------------------------------------------------- Gymnasium


class FlatObservation(gym.ObservationWrapper):
    """Observation = the ``observation`` vector; ``action_masks()`` = the mask as bools.

    It works on any Gymnasium env whose observation space is a ``Dict`` with
    ``observation`` and ``action_mask`` keys.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if not (isinstance(space, spaces.Dict)
                and {"observation", "action_mask"} <= set(space.spaces)):
            raise ValueError("FlatObservation needs a Dict observation space with "
                             f"'observation' and 'action_mask' keys, got {space!r}")
        self.observation_space = space["observation"]
        self._mask = np.zeros(space["action_mask"].shape, bool)

    def observation(self, observation: dict[str, Any]) -> np.ndarray:
        self._mask = np.asarray(observation["action_mask"]).astype(bool)
        return observation["observation"]

    def action_masks(self) -> np.ndarray:
        """The legal actions of the latest observation (bool, ``NUM_ACTIONS``)."""
        return self._mask.copy()


# ----------------------------------------------------------------------------- records


class _MatchFile:
    """What both recording wrappers share: a :class:`~hgin_env.records.MatchStream` on the
    raw AEC env, writing each finished match to a :class:`~hgin_env.records.RecordWriter`."""

    def __init__(self, raw: raw_env, path: str | Path, names: Any) -> None:
        if getattr(raw, "recorder", False) is not None:
            raise ValueError("this environment is already being recorded "
                             "(one RecordMatches / RecordGymMatches per environment)")
        self.raw = raw
        self.names = names  # () -> the two agents' names by seat, for the match just ended
        self.profile = profile_name(raw.rules)
        self.writer = RecordWriter(path)
        self.stream = MatchStream(self._write)
        raw.recorder = self.stream

    def _write(self, match: dict[str, Any]) -> None:
        record = make_record(self.writer.count, match, self.raw.rules, self.names(),
                             self.profile)
        self.writer.write(record)

    def close(self) -> None:
        """Drop the match in progress, detach from the env and close the file (flushed)."""
        if self.raw.recorder is self.stream:
            self.stream.close()
            self.raw.recorder = None
            self.writer.close()


def _agent_names(agents: Sequence[str]) -> tuple[str, str]:
    if isinstance(agents, str) or len(agents) != 2 or not all(isinstance(a, str)
                                                              for a in agents):
        raise ValueError(f"agents must be the two players' names by seat, got {agents!r}")
    return agents[0], agents[1]


class _RecordingCounts:
    """What both recording wrappers report about their file."""

    _file: _MatchFile

    @property
    def path(self) -> Path:
        return self._file.writer.path

    @property
    def written(self) -> int:
        """Matches written so far."""
        return self._file.writer.count

    @property
    def dropped(self) -> int:
        """Matches cut short, not written."""
        return self._file.stream.dropped


class RecordMatches(_RecordingCounts, BaseWrapper):
    """Records every match a PettingZoo AEC env (``hgin_env.env()``) plays to the end.

    Each finished match becomes one line of ``path`` (JSON Lines, gzip when it
    ends in ``.gz``; a new file), numbered from 0, with ``agents`` as the
    players' names by seat (default the agent ids).  A match cut short (a
    ``reset`` before its end, a forfeit by an illegal move, ``close``) is not
    written, since a record must replay to the match's end; ``dropped`` counts
    them.  ``close()`` flushes the file.  Recording reads the game, never
    changes it: the env returns exactly what it returns unwrapped.
    """

    def __init__(self, env: AECEnv, path: str | Path,
                 agents: Sequence[str] | None = None) -> None:
        super().__init__(env)
        from hgin_env.aec import AGENTS, raw_env

        raw = env.unwrapped
        if not isinstance(raw, raw_env):
            raise ValueError(f"RecordMatches records hgin_env's AEC env (hgin_env.env()), "
                             f"got {type(raw).__name__}")
        names = _agent_names(AGENTS if agents is None else agents)
        self._file = _MatchFile(raw, path, lambda: names)

    # The hot path, forwarded directly: BaseWrapper's __getattr__ fallback and AECEnv's
    # generic last() would cost a fifth of a step.
    @property
    def agent_selection(self) -> str:
        return self.env.agent_selection

    @property
    def agents(self) -> list[str]:
        return self.env.agents

    @property
    def terminations(self) -> dict[str, bool]:
        return self.env.terminations

    @property
    def truncations(self) -> dict[str, bool]:
        return self.env.truncations

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.env.last(observe)

    def step(self, action: Any) -> None:
        self.env.step(action)

    def close(self) -> None:
        self._file.close()
        super().close()


class RecordGymMatches(_RecordingCounts, gym.Wrapper):
    """Records every match a :class:`~hgin_env.gym_env.HollywoodGinEnv` plays to the end.

    As :class:`RecordMatches`, for the single-agent env: every action of both
    seats is recorded, the opponent's included.  The players are ``name`` (the
    learner) and the opponent's ``name`` (its agent spec, e.g. ``simple``), in
    the seats they had in that match.
    """

    def __init__(self, env: gym.Env, path: str | Path, name: str = "learner") -> None:
        super().__init__(env)
        from hgin_env.gym_env import HollywoodGinEnv

        base = env.unwrapped
        if not isinstance(base, HollywoodGinEnv):
            raise ValueError(f"RecordGymMatches records hgin_env.gym_env.HollywoodGinEnv, "
                             f"got {type(base).__name__}")
        if not isinstance(name, str):
            raise ValueError(f"name must be a string, got {name!r}")
        opponent = str(getattr(base.opponent, "name", "opponent"))

        def names() -> tuple[str, str]:
            return (name, opponent) if base.seat == 0 else (opponent, name)

        self._file = _MatchFile(base.aec, path, names)

    def close(self) -> None:
        self._file.close()
        super().close()
