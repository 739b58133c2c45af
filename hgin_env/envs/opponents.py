"""Opponents for the single-agent envs and the terminal game.

The environments take the opponent as an *agent*: any object with
``act(obs, rng=None) -> actions`` (a batch of observations in, one action per
row out), as every agent in the ``agents`` package has.  A plain function
``fn(obs) -> actions`` is adapted to that interface.

A spec string (``"random"``, ``"simple"``, ``"strong"``, ``"pretrained"``,
``"ckpt:PATH"``) is resolved by :func:`load_agent`, the only place where
``hgin_env`` reaches into ``agents`` — so the game package never depends on
the agents (or on PyTorch) unless a caller asks for an agent by name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from hgin_env.agent import Agent
from hgin_env.rules import Rules

__all__ = ["as_opponent", "hgin_agents", "load_agent"]


class _FunctionAgent:
    """Adapts ``fn(obs) -> actions`` to :class:`Agent`."""

    def __init__(self, fn: Callable[[dict[str, np.ndarray]], Any]) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", "policy")

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None
            ) -> np.ndarray:
        return np.asarray(self.fn(obs), dtype=np.int64).reshape(-1)


def load_agent(spec: str, rules: Rules | None = None) -> Agent:
    """The agent named by ``spec``, built by ``agents.make_agent``.

    ``rules`` tells rule-aware agents (``strong``) what sheet they play for.
    Raises ``ValueError`` for an unknown spec or when the ``agents`` package
    cannot be imported.
    """
    if not isinstance(spec, str):
        raise ValueError(f"an agent spec must be a string, got {spec!r}")
    return hgin_agents().make_agent(spec, rules=rules)


def hgin_agents() -> Any:
    """hgin's own ``agents`` package, checked to be ours.

    ``agents`` is a generic top-level name: another distribution may install a
    package of that name, and whichever comes first on ``sys.path`` wins the import.
    hgin's marks itself with ``HGIN_AGENTS = True``; any other is refused with a
    message naming where it was found, instead of failing later on a missing name.
    """
    try:  # by name, at run time: the one reference from hgin_env up to the agents
        agents = importlib.import_module("agents")
    except ImportError as exc:
        raise ValueError(f"agent specs need hgin's 'agents' package, which could not be "
                         f"imported ({exc}); pass an agent object instead") from exc
    if getattr(agents, "HGIN_AGENTS", False) is not True:
        where = getattr(agents, "__file__", None) or list(getattr(agents, "__path__", []))
        raise ValueError(
            f"the package 'agents' imported from {where} is not hgin's: another distribution "
            "installs a top-level package of the same name. Uninstall it (pip show -f names "
            "the owner), or put hgin's folder first on sys.path, or pass agent objects instead "
            "of spec strings")
    return agents


def as_opponent(opponent: Any, rules: Rules | None = None) -> Agent:
    """``opponent`` as a :class:`Agent`: agents pass through, functions are
    wrapped, and only a spec string goes to :func:`load_agent`."""
    if isinstance(opponent, str):
        return load_agent(opponent, rules)
    if callable(getattr(opponent, "act", None)):
        return opponent
    if callable(opponent):
        return _FunctionAgent(opponent)
    raise ValueError(
        f"opponent must be an agent (with act(obs, rng)), a function obs -> actions or an "
        f"agent spec string, got {opponent!r}"
    )
