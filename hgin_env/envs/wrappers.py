"""Wrappers around the environments.

* :class:`FlatObservation` — for RL libraries that want a flat observation:
  it turns :class:`~hgin_env.envs.gym_env.HollywoodGinEnv`'s
  ``{"observation", "action_mask"}`` dict into the bare observation vector (a
  ``Box`` of ``OBS_DIM`` float32) and keeps the legal-action mask of the
  latest observation behind ``action_masks()``, the method
  ``sb3_contrib.MaskablePPO`` looks for (through ``get_wrapper_attr`` or a
  ``VecEnv``'s ``env_method``), so no ``ActionMasker`` is needed::

    from hgin_env.envs.gym_env import HollywoodGinEnv
    from hgin_env.envs.wrappers import FlatObservation

    env = FlatObservation(HollywoodGinEnv(opponent=my_agent))
    obs, info = env.reset(seed=0)  # obs: float32 (OBS_DIM,)
    env.action_masks()  # bool (108,): the legal actions now

* :class:`RecordMatches` (PettingZoo AEC env) and :class:`RecordGymMatches`
  (:class:`~hgin_env.envs.gym_env.HollywoodGinEnv`) — write every match the env
  plays to the end as one match record (docs/records.md), replayable with
  :func:`hgin_env.records.replay.replay`; the env's returns are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils.wrappers import BaseWrapper

from hgin_env.records.format import MatchStream, RecordWriter, make_record
from hgin_env.rules import profile_name

if TYPE_CHECKING:
    from hgin_env.envs.table import MatchTable

__all__ = ["FlatObservation", "RecordGymMatches", "RecordMatches"]


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
    """What both recording wrappers share: a :class:`~hgin_env.records.format.MatchStream`
    on the env's :class:`~hgin_env.envs.table.MatchTable`, writing each finished match to
    a :class:`~hgin_env.records.format.RecordWriter`."""

    def __init__(self, table: MatchTable, path: str | Path, names: Any) -> None:
        if table.recorder is not None:
            raise ValueError("this environment is already being recorded "
                             "(one RecordMatches / RecordGymMatches per environment)")
        self.table = table
        self.names = names  # () -> the two agents' names by seat, for the match just ended
        self.profile = profile_name(table.rules)
        self.writer = RecordWriter(path)
        self.stream = MatchStream(self._write)
        table.recorder = self.stream

    def _write(self, match: dict[str, Any]) -> None:
        record = make_record(self.writer.count, match, self.table.rules, self.names(),
                             self.profile)
        self.writer.write(record)

    def close(self) -> None:
        """Drop the match in progress, detach from the env and close the file (flushed)."""
        if self.table.recorder is self.stream:
            self.stream.close()
            self.table.recorder = None
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
        from hgin_env.envs.aec import AGENTS, raw_env

        raw = env.unwrapped
        if not isinstance(raw, raw_env):
            raise ValueError(f"RecordMatches records hgin_env's AEC env (hgin_env.env()), "
                             f"got {type(raw).__name__}")
        names = _agent_names(AGENTS if agents is None else agents)
        self._file = _MatchFile(raw.table, path, lambda: names)

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
    """Records every match a :class:`~hgin_env.envs.gym_env.HollywoodGinEnv` plays to the end.

    As :class:`RecordMatches`, for the single-agent env: every action of both
    seats is recorded, the opponent's included.  The players are ``name`` (the
    learner) and the opponent's ``name`` (its agent spec, e.g. ``simple``), in
    the seats they had in that match.
    """

    def __init__(self, env: gym.Env, path: str | Path, name: str = "learner") -> None:
        super().__init__(env)
        from hgin_env.envs.gym_env import HollywoodGinEnv

        base = env.unwrapped
        if not isinstance(base, HollywoodGinEnv):
            raise ValueError(f"RecordGymMatches records hgin_env.envs.gym_env.HollywoodGinEnv, "
                             f"got {type(base).__name__}")
        if not isinstance(name, str):
            raise ValueError(f"name must be a string, got {name!r}")
        opponent = str(getattr(base.opponent, "name", "opponent"))

        def names() -> tuple[str, str]:
            return (name, opponent) if base.seat == 0 else (opponent, name)

        self._file = _MatchFile(base.table, path, names)

    def close(self) -> None:
        self._file.close()
        super().close()
