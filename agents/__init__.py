"""Agents: batched policies over B games (observation in, legal actions out).

``make_agent(spec)`` builds one from a spec string:

* ``random`` — uniformly random legal actions;
* ``simple`` — Todd Neller's published ``SimpleGinRummyPlayer`` (EAAI gin
  rummy challenge), with a seeded random discard tie-break (:mod:`agents.simple`);
* ``simple-det`` — hgin's earlier deterministic simple player (figures
  published before ``simple`` followed the Java source used it);
* ``strong`` — our best hand-written player (:mod:`agents.strong`);
  ``heuristic`` is an alias of ``strong``;
* ``ginhunter`` — knocks only early in a hand, else holds out for gin
  (:mod:`agents.ginhunter`); options as ``ginhunter:turns=3,deadwood=10``;
* ``pretrained`` — the shipped checkpoint ``agents/pretrained/hgin_default.pt``;
* ``pretrained-v1`` — the network shipped as ``pretrained`` before it
  (``agents/pretrained/hgin_v1.pt``), kept so that figures measured with it repeat;
* ``pretrained-eaai`` — ``pretrained`` fine-tuned for the EAAI framework's one game to 100
  (``agents/pretrained/hgin_eaai.pt``, ``configs/train/eaai.toml``; play it with
  ``--rules eaai``);
* ``ckpt:PATH`` — a checkpoint written by ``train.py``;
* ``search`` — decision-time search around the ``pretrained`` blueprint
  (:mod:`agents.search`); knobs as ``search:samples=32,margin=0.05,...``;
  ``search-v1`` starts from its first, more cautious defaults;
* ``text:COMMAND`` — an external program that reads each position as text and
  answers with a move (:mod:`agents.text_agent`); ``text:timeout=5:COMMAND``
  sets the seconds per answer (default 30).

``pretrained``, ``ckpt:`` and ``search`` need :mod:`agents.torch_agent`
(and PyTorch), imported only when asked for.  Every agent has ``name`` and ``act(obs, rng=None) ->
int64 (B,)`` where ``obs`` is what ``VectorGame.observe()`` returns.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agents.base import Agent, sample_uniform_legal
    from agents.random_agent import RandomAgent
    from agents.simple import DeterministicSimpleAgent, SimpleAgent
    from agents.strong import StrongAgent
    from hgin_env.rules import Rules

#: The agent classes, imported on first use (PEP 562): ``import agents`` stays instant, so
#: ``hgin --help`` answers at once and a Ctrl-C during start-up is caught by the command.
_LAZY = {"Agent": "base", "sample_uniform_legal": "base", "RandomAgent": "random_agent",
         "SimpleAgent": "simple", "DeterministicSimpleAgent": "simple", "StrongAgent": "strong"}


class _OldPaths:
    """The flat paths from before the layers (``agents.arena``, ...): asked only for an
    ``agents.*`` module no file provides, it hands the name to :mod:`hgin_env.compat`'s
    table, so ``import agents`` itself imports nothing more."""

    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith("agents."):
            return None
        from hgin_env.compat import OldPaths

        return OldPaths.find_spec(fullname, path, target)


if not any(getattr(f, "__qualname__", "") == "_OldPaths" for f in sys.meta_path):
    sys.meta_path.append(_OldPaths)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'agents' has no attribute {name!r}")

#: Marks this package as hgin's: ``agents`` is a generic top-level name that other
#: distributions use too, and :func:`hgin_env.envs.opponents.hgin_agents` checks for this mark.
HGIN_AGENTS = True
#: The shipped checkpoints, package data beside this module: spec name -> file.
PRETRAINED_DIR = Path(__file__).resolve().parent / "pretrained"
PRETRAINED = {"pretrained": PRETRAINED_DIR / "hgin_default.pt",
              "pretrained-v1": PRETRAINED_DIR / "hgin_v1.pt",
              "pretrained-eaai": PRETRAINED_DIR / "hgin_eaai.pt"}
PRETRAINED_PATH = PRETRAINED["pretrained"]
AGENT_SPECS = ("random", "simple", "simple-det", "strong", "heuristic",
               "ginhunter[:key=value,...]", "pretrained", "pretrained-v1", "pretrained-eaai",
               "ckpt:PATH",
               "search[:key=value,...]", "search-v1[:key=value,...]",
               "text:[timeout=S:]COMMAND")
ALIASES = {"heuristic": "strong"}


def _load_torch(path: str | Path, spec: str) -> Agent:
    try:
        from agents.torch_agent import load_torch_agent
    except ImportError as exc:  # the module or PyTorch is missing
        raise ValueError(
            f"agent spec {spec!r} needs agents.torch_agent.load_torch_agent (and PyTorch), "
            f"which could not be imported: {exc}"
        ) from exc
    return load_torch_agent(path)


def make_agent(spec: str | Agent, seed: int | None = None,
               rules: Rules | str | None = None) -> Agent:
    """An agent from a spec string (see the module docstring); agents pass through.

    ``seed`` seeds the own generator of the agents that draw at random
    (``random``, ``simple``), used when ``act`` gets no ``rng``; ``rules``
    (a :class:`~hgin_env.rules.Rules` or profile name) tells the strong
    player the target and bonuses it plays the sheet for (default
    ``friendly``).  Unknown specs raise ``ValueError`` listing
    the valid ones.
    """
    if not isinstance(spec, str):
        if hasattr(spec, "act"):
            return spec
        raise ValueError(f"agent spec must be a string or an agent, got {spec!r}")
    from agents.random_agent import RandomAgent
    from agents.simple import DeterministicSimpleAgent, SimpleAgent
    from agents.strong import StrongAgent

    text = spec.strip()
    key = ALIASES.get(text.lower(), text.lower())
    if key == "random":
        return RandomAgent(seed)
    if key == "simple":
        return SimpleAgent(seed)
    if key == "simple-det":
        return DeterministicSimpleAgent()
    if key == "strong":
        agent = StrongAgent(rules=rules)
        if text.lower() != key:
            agent.name = text.lower()
        return agent
    if key == "ginhunter" or key.startswith("ginhunter:"):
        from agents.ginhunter import GinHunterAgent, parse_ginhunter_spec

        hunter = GinHunterAgent(parse_ginhunter_spec(text), rules=rules)
        hunter.name = key
        return hunter
    if key in PRETRAINED:
        agent = _load_torch(PRETRAINED[key], spec)
        agent.name = key  # not the file's path inside site-packages
        return agent
    if key.partition(":")[0] in ("search", "search-v1"):
        from agents.search import SearchAgent, parse_search_spec
        from hgin_env.rules import load_rules

        config = parse_search_spec(text, rules=load_rules(rules))  # None: the default profile
        agent = SearchAgent(config, rules=rules, seed=seed,
                            blueprint=make_agent(config.blueprint, rules=rules),
                            rollout=make_agent(config.rollout, rules=rules)
                            if config.rollout else None)
        agent.name = text
        return agent
    if text.lower().startswith("text:"):
        from agents.text_agent import TextAgent, parse_text_spec

        command, timeout = parse_text_spec(text)
        return TextAgent(command, timeout=timeout, rules=rules, name=text)
    if text.lower().startswith("ckpt:"):
        path = text[len("ckpt:") :]
        if not path:
            raise ValueError("agent spec 'ckpt:' needs a path, e.g. ckpt:runs/x/last.pt")
        return _load_torch(path, spec)
    raise ValueError(f"unknown agent spec {spec!r}; valid specs: {', '.join(AGENT_SPECS)}")


__all__ = [
    "AGENT_SPECS",
    "HGIN_AGENTS",
    "PRETRAINED",
    "PRETRAINED_PATH",
    "Agent",
    "DeterministicSimpleAgent",
    "RandomAgent",
    "SimpleAgent",
    "StrongAgent",
    "make_agent",
    "sample_uniform_legal",
]
