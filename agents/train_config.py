"""The self-play trainer's config: a validated TOML schema with CLI overrides.

A config file has the sections of :data:`SCHEMA`; every key is optional and
falls back to its default.  Unknown sections or keys, wrong types and values
out of range raise ``ValueError`` naming the key (``ppo.lr``), because a typo
in a training config would otherwise silently train something else.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs" / "train"
REWARD_MODES = ("match", "columns", "points")
OPPONENT_KINDS = ("self_play", "pool", "random", "simple", "strong")


def _positive(x: float) -> bool:
    return x > 0


def _non_negative(x: float) -> bool:
    return x >= 0


def _fraction(x: float) -> bool:
    return 0 <= x <= 1


def _open_fraction(x: float) -> bool:
    return 0 < x <= 1


def _hidden(x: Any) -> bool:
    return (isinstance(x, list) and 1 <= len(x) <= 4
            and all(isinstance(h, int) and not isinstance(h, bool) and 8 <= h <= 4096 for h in x))


#: section -> key -> (type, default, check or None, what the check means)
Spec = tuple[type | tuple[type, ...], Any, Callable[[Any], bool] | None, str]
SCHEMA: dict[str, dict[str, Spec]] = {
    "run": {
        "seed": (int, 0, _non_negative, "a non-negative integer"),
        "total_steps": (int, 2_000_000, _positive, "a positive number of environment steps"),
        "device": (str, "cpu", lambda x: x == "cpu" or x.startswith("cuda"), "'cpu' or 'cuda[:N]'"),
        "threads": (int, 1, _non_negative, "torch threads per Python thread (0 = torch default)"),
        "pipeline": (bool, True, None, "true or false (collect the next rollout while learning)"),
        "checkpoint_every": (int, 20, _positive, "a positive number of updates"),
        "eval_every": (int, 20, _non_negative, "a number of updates (0 = only at the end)"),
        "eval_matches": (int, 200, _non_negative, "an even number of matches (duplicate pairs)"),
        "eval_opponents": (list, ["random", "simple", "strong"],
                           lambda x: all(isinstance(o, str) and o for o in x),
                           "a list of agent specs"),
        "final_eval_matches": (int, 400, _non_negative, "an even number of matches"),
    },
    "env": {
        "rules": (str, "friendly", None, "a rules profile name or path"),
        "reward": (str, "columns", lambda x: x in REWARD_MODES, f"one of {REWARD_MODES}"),
        "points_coef": ((int, float), 0.0, _non_negative,
                        "a non-negative weight of the shaped points reward"),
        "points_coef_end": ((int, float), -1.0, lambda x: x == -1 or x >= 0,
                            "the weight at the end of the run (-1 = constant)"),
        "num_games": (int, 1024, _positive, "a positive number of games"),
        "rollout_steps": (int, 32, lambda x: x >= 2, "at least 2 steps"),
    },
    "model": {
        "hidden": (list, [256, 128], _hidden, "a list of 1-4 layer widths in 8..4096"),
        "card_head": (bool, True, None, "true or false"),
        "features": (str, "draw", lambda x: x in ("none", "draw", "knock"),
                     "'none', 'draw' or 'knock' (draw plus knock features)"),
        "knock_gate": (bool, False, None, "true or false (knock-or-not as one bounded choice)"),
    },
    "ppo": {
        "lr": ((int, float), 3e-4, _positive, "a positive learning rate"),
        "lr_end": ((int, float), -1.0, lambda x: x == -1 or x > 0,
                   "the learning rate at the end of the run (-1 = constant)"),
        "gamma": ((int, float), 0.995, _fraction, "a discount in [0, 1]"),
        "gae_lambda": ((int, float), 0.95, _fraction, "a value in [0, 1]"),
        "clip": ((int, float), 0.2, _positive, "a positive clip range"),
        "epochs": (int, 2, _positive, "a positive number of epochs"),
        "minibatch_size": (int, 8192, _positive, "a positive number of samples"),
        "ent_coef": ((int, float), 0.01, _non_negative, "a non-negative weight"),
        "ent_coef_end": ((int, float), -1.0, lambda x: x == -1 or x >= 0,
                         "the entropy weight at the end of the run (-1 = constant)"),
        "knock_ent_coef": ((int, float), 0.0, _non_negative,
                           "a non-negative weight of the knock-or-not entropy bonus"),
        "knock_ent_coef_end": ((int, float), -1.0, lambda x: x == -1 or x >= 0,
                               "the knock entropy weight at the end of the run (-1 = constant)"),
        "vf_coef": ((int, float), 0.5, _non_negative, "a non-negative weight"),
        "max_grad_norm": ((int, float), 0.5, _positive, "a positive norm"),
        "target_kl": ((int, float), 0.0, _non_negative, "0 (off) or a positive KL bound"),
        "normalize_advantages": (bool, True, None, "true or false"),
    },
    "imitation": {
        "teacher": (str, "none", None, "'none' or an agent spec (e.g. 'strong')"),
        "steps": (int, 0, _non_negative,
                  "a non-negative number of environment steps (the first ones of the run)"),
        "lr": ((int, float), 1e-3, _positive, "a positive learning rate (imitation phase)"),
    },
    "opponents": {
        "self_play": ((int, float), 0.5, _non_negative, "a non-negative weight"),
        "pool": ((int, float), 0.3, _non_negative, "a non-negative weight"),
        "random": ((int, float), 0.0, _non_negative, "a non-negative weight"),
        "simple": ((int, float), 0.1, _non_negative, "a non-negative weight"),
        "strong": ((int, float), 0.1, _non_negative, "a non-negative weight"),
        **{f"{kind}_end": ((int, float), -1.0, lambda x: x == -1 or x >= 0,
                           "the weight at the end of the run (-1 = constant)")
           for kind in OPPONENT_KINDS},
        "blocks": (int, 16, _positive, "a positive number of game blocks"),
        "snapshot_every": (int, 10, _positive, "a positive number of updates"),
        "pool_size": (int, 8, _positive, "a positive number of snapshots"),
        "pool_greedy": (bool, False, None, "true or false"),
    },
}


#: Config keys whose values are agent specs (``agents.make_agent``), one or a list.
AGENT_SPEC_KEYS = (("run", "eval_opponents"), ("imitation", "teacher"))


def check_agent_spec(key: str, spec: Any) -> None:
    """Raise ``ValueError`` naming ``key`` and ``spec`` unless ``make_agent(spec)`` can
    build it: a known name, ``pretrained`` with its file shipped, or ``ckpt:PATH`` with
    an existing file.  Checked when the config loads, not when the agent is first used."""
    from . import AGENT_SPECS, PRETRAINED_PATH

    accepted = ", ".join(AGENT_SPECS)
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"bad value for config key {key}: {spec!r} is not an agent spec "
                         f"(accepted: {accepted})")
    text = spec.strip()
    names = {s for s in AGENT_SPECS if ":" not in s}
    prefixes = tuple(s.split(":", 1)[0] + ":" for s in AGENT_SPECS if ":" in s)
    if text.lower() in names:
        if text.lower() == "pretrained" and not PRETRAINED_PATH.is_file():
            raise ValueError(f"bad value for config key {key}: agent spec {spec!r} needs "
                             f"{PRETRAINED_PATH}, which does not exist")
        return
    prefix = next((p for p in prefixes if text.lower().startswith(p)), None)
    if prefix is None:
        raise ValueError(f"bad value for config key {key}: unknown agent spec {spec!r} "
                         f"(accepted: {accepted})")
    path = text[len(prefix) :]
    if not path:
        raise ValueError(f"bad value for config key {key}: agent spec {spec!r} lacks its "
                         f"path (e.g. {prefix}runs/quick/agent_best.pt)")
    if not Path(path).is_file():
        raise ValueError(f"bad value for config key {key}: agent spec {spec!r}: "
                         f"checkpoint file {path!r} not found")


def _check_agent_specs(cfg: dict[str, dict[str, Any]]) -> None:
    for section, key in AGENT_SPEC_KEYS:
        value = cfg[section][key]
        if isinstance(value, list):
            for i, spec in enumerate(value):
                check_agent_spec(f"{section}.{key}[{i}]", spec)
        elif not (section == "imitation" and value == "none"):
            check_agent_spec(f"{section}.{key}", value)


def defaults() -> dict[str, dict[str, Any]]:
    return {sec: {k: copy.deepcopy(spec[1]) for k, spec in keys.items()}
            for sec, keys in SCHEMA.items()}


def _check(section: str, key: str, value: Any) -> Any:
    if section not in SCHEMA:
        raise ValueError(f"unknown config section [{section}] "
                         f"(known: {', '.join(SCHEMA)})")
    if key not in SCHEMA[section]:
        raise ValueError(f"unknown config key {section}.{key} "
                         f"(known in [{section}]: {', '.join(SCHEMA[section])})")
    types, _, check, meaning = SCHEMA[section][key]
    wanted = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool) and bool not in wanted:
        ok_type = False
    else:
        ok_type = isinstance(value, wanted)
    if not ok_type or (check is not None and not check(value)):
        raise ValueError(f"bad value for config key {section}.{key}: {value!r} "
                         f"(expected {meaning})")
    if float in wanted and isinstance(value, int):
        value = float(value)
    return value


def validate(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A complete config: ``config`` checked key by key over the defaults."""
    if not isinstance(config, dict):
        raise ValueError("a training config must be a table of sections")
    out = defaults()
    for section, keys in config.items():
        if section not in SCHEMA:
            raise ValueError(f"unknown config section [{section}] "
                             f"(known: {', '.join(SCHEMA)})")
        if not isinstance(keys, dict):
            raise ValueError(f"config section [{section}] must be a table, got {keys!r}")
        for key, value in keys.items():
            out[section][key] = _check(section, key, value)
    _cross_checks(out)
    _check_agent_specs(out)
    return out


def _cross_checks(cfg: dict[str, dict[str, Any]]) -> None:
    opp = cfg["opponents"]
    for suffix in ("", "_end"):
        weights = [opp[k] if opp[f"{k}_end"] < 0 or not suffix else opp[f"{k}_end"]
                   for k in OPPONENT_KINDS]
        if sum(weights) <= 0:
            raise ValueError(f"config: the opponents.*{suffix} weights "
                             f"({', '.join(OPPONENT_KINDS)}) must not all be zero")
    if cfg["run"]["eval_matches"] % 2 or cfg["run"]["final_eval_matches"] % 2:
        raise ValueError("bad value for config key run.eval_matches/final_eval_matches: "
                         "must be even (duplicate pairs)")


def load_config(path: str | Path | None, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Read a TOML config (a path, or a name in ``configs/train``) and apply overrides.

    ``overrides`` are ``section.key=value`` strings whose value is parsed as
    TOML (``ppo.lr=1e-4``, ``model.hidden=[128,128]``, ``env.rules="classic"``;
    a bare word that is not TOML is taken as a string).
    """
    raw: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.exists() and not p.suffix:
            p = CONFIG_DIR / f"{path}.toml"
        if not p.exists():
            raise FileNotFoundError(f"training config not found: {path}")
        try:
            raw = tomllib.loads(p.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{p}: not valid TOML: {exc}") from exc
    for item in overrides:
        section, key, value = parse_override(item)
        raw.setdefault(section, {})
        if not isinstance(raw[section], dict):
            raise ValueError(f"config section [{section}] must be a table")
        raw[section][key] = value
    return validate(raw)


def parse_override(item: str) -> tuple[str, str, Any]:
    if "=" not in item:
        raise ValueError(f"override {item!r} must look like section.key=value")
    name, text = item.split("=", 1)
    name = name.strip()
    if name.count(".") != 1:
        raise ValueError(f"override {item!r}: the key must be section.key (e.g. ppo.lr)")
    section, key = name.split(".")
    try:
        value = tomllib.loads(f"v = {text.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = text.strip()
    return section, key, value


def to_toml(cfg: dict[str, dict[str, Any]]) -> str:
    """The config as TOML text (for the run's log directory)."""
    lines = []
    for section, keys in cfg.items():
        lines.append(f"[{section}]")
        for key, value in keys.items():
            lines.append(f"{key} = {json.dumps(value)}")
        lines.append("")
    return "\n".join(lines)
