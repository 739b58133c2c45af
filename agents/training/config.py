"""The self-play trainer's config: a validated TOML schema with CLI overrides.

A config file has the sections of :data:`SCHEMA`; every key is optional and
falls back to its default.  Unknown sections or keys, wrong types and values
out of range raise ``ValueError`` naming the key (``ppo.lr``), because a typo
in a training config would otherwise silently train something else.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from agents import PRETRAINED
from agents.model import HIDDEN_WIDTH_RANGE, MAX_HIDDEN_LAYERS
from hgin_env.rules import load_rules, parse_toml, read_toml_file
from hgin_env.shipped import shipped_names, shipped_text

#: The shipped training configs are the files ``configs/train/<name>.toml``, found by name by
#: :mod:`hgin_env.shipped` (a checkout's own ``configs/``, or an installed wheel's package data).
CONFIG_KIND = "train"
REWARD_MODES = ("match", "columns", "points")
CRITICS = ("shared", "privileged", "separate")
OPPONENT_KINDS = ("self_play", "pool", "random", "simple", "strong", "ginhunter")
#: The shipped networks ``model.init`` can name (``ckpt:PATH`` names any other).
INIT_SPECS = tuple(PRETRAINED)


#: Upper bounds that keep a typo from asking for absurd memory or time (``env.num_games=1e9``)
#: and the seeds within what numpy and torch accept.
MAX_SEED = 2**32 - 1
MAX_GAMES = 65_536
MAX_ROLLOUT_STEPS = 4_096
MAX_STEPS = 10**12
MAX_MATCHES = 1_000_000
MAX_RECORD_MATCHES = 100
MAX_WEIGHT = 1e6
MAX_LR = 1.0
MAX_WORKERS = 4096


def _between(lo: float, hi: float) -> Callable[[Any], bool]:
    return lambda x: lo <= x <= hi


def _positive_upto(hi: float) -> Callable[[Any], bool]:
    return lambda x: 0 < x <= hi


def _hidden(x: Any) -> bool:
    lo, hi = HIDDEN_WIDTH_RANGE
    return (isinstance(x, list) and 1 <= len(x) <= MAX_HIDDEN_LAYERS
            and all(isinstance(h, int) and not isinstance(h, bool) and lo <= h <= hi for h in x))


def _end_value(x: float) -> bool:
    return x == -1 or 0 <= x <= MAX_WEIGHT


_NUMBER = (int, float)
_WEIGHT = (_NUMBER, None, _between(0, MAX_WEIGHT), f"a non-negative weight up to {MAX_WEIGHT:g}")
_END = (_NUMBER, -1.0, _end_value, "the value at the end of the run, or -1 (constant)")

#: section -> key -> (type, default, check or None, what is accepted)
Spec = tuple[type | tuple[type, ...], Any, Callable[[Any], bool] | None, str]
SCHEMA: dict[str, dict[str, Spec]] = {
    "run": {
        "seed": (int, 0, _between(0, MAX_SEED), f"an integer in 0..{MAX_SEED}"),
        "total_steps": (int, 2_000_000, _between(1, MAX_STEPS),
                        f"an integer number of environment steps in 1..{MAX_STEPS:.0e}"),
        "device": (str, "cpu", lambda x: x == "cpu" or x.startswith("cuda"),
                   "'cpu' or 'cuda[:N]'"),
        "threads": (int, 1, _between(0, 1024),
                    "an integer number of torch threads per Python thread in 0..1024 "
                    "(0 = torch's default)"),
        "pipeline": (bool, True, None, "true or false (collect the next rollout while learning)"),
        "learner_precision": (str, "fp32", lambda x: x in ("fp32", "bf16"),
                              "'fp32' or 'bf16' (the learner's forward and backward passes "
                              "under torch.autocast to bfloat16; weights, losses and the "
                              "optimiser stay fp32)"),
        "checkpoint_every": (int, 20, _between(1, MAX_STEPS), "a positive integer of updates"),
        "eval_every": (int, 20, _between(0, MAX_STEPS),
                       "a non-negative integer of updates (0 = only at the end)"),
        "eval_matches": (int, 200, _between(0, MAX_MATCHES),
                         f"an even integer number of matches in 0..{MAX_MATCHES} "
                         "(duplicate pairs)"),
        "eval_opponents": (list, ["random", "simple", "strong"],
                           lambda x: all(isinstance(o, str) and o for o in x),
                           "a list of agent specs"),
        "final_eval_matches": (int, 400, _between(0, MAX_MATCHES),
                               f"an even integer number of matches in 0..{MAX_MATCHES}"),
        "eval_record_matches": (int, 4, _between(0, MAX_RECORD_MATCHES),
                                f"an integer number of matches in 0..{MAX_RECORD_MATCHES} "
                                "kept as match records per opponent at each evaluation "
                                "(0 = none)"),
    },
    "env": {
        "rules": (str, "friendly", None, "a rules profile name or a rules TOML file"),
        "reward": (str, "columns", lambda x: x in REWARD_MODES, f"one of {REWARD_MODES}"),
        "points_coef": (_NUMBER, 0.0, _between(0, MAX_WEIGHT),
                        "a non-negative weight of the shaped points reward"),
        "points_coef_end": _END,
        "num_games": (int, 1024, _between(1, MAX_GAMES),
                      f"an integer number of games in 1..{MAX_GAMES}"),
        "rollout_steps": (int, 32, _between(2, MAX_ROLLOUT_STEPS),
                          f"an integer number of steps in 2..{MAX_ROLLOUT_STEPS}"),
    },
    "model": {
        "hidden": (list, [256, 128], _hidden,
                   f"a list of 1..{MAX_HIDDEN_LAYERS} integer layer widths in "
                   f"{HIDDEN_WIDTH_RANGE[0]}..{HIDDEN_WIDTH_RANGE[1]}"),
        "card_head": (bool, True, None, "true or false"),
        "features": (str, "draw", lambda x: x in ("none", "draw", "knock"),
                     "'none', 'draw' or 'knock' (draw plus knock features)"),
        "knock_gate": (bool, False, None, "true or false (knock-or-not as one bounded choice)"),
        "critic": (str, "shared", lambda x: x in CRITICS,
                   "'shared' (the policy network's value head), 'privileged' (a network "
                   "of its own that also sees the opponent's hand and the stock; training "
                   "only) or 'separate' (a network of its own on the policy's input alone: "
                   "the control for 'privileged')"),
        "critic_hidden": (list, [256, 128], _hidden,
                          f"the privileged critic's layer widths: a list of "
                          f"1..{MAX_HIDDEN_LAYERS} integers in "
                          f"{HIDDEN_WIDTH_RANGE[0]}..{HIDDEN_WIDTH_RANGE[1]}"),
        "init": (str, "", None,
                 "'' (fresh weights) or the network the policy starts from: "
                 f"{', '.join(INIT_SPECS)} or ckpt:PATH, of this section's architecture "
                 "or narrower (a fine-tune; a narrower network is widened so that it plays "
                 "the same moves; a critic of its own starts fresh)"),
    },
    "ppo": {
        "lr": (_NUMBER, 3e-4, _positive_upto(MAX_LR), f"a learning rate in (0, {MAX_LR:g}]"),
        "lr_end": (_NUMBER, -1.0, lambda x: x == -1 or 0 < x <= MAX_LR,
                   f"the learning rate at the end of the run, in (0, {MAX_LR:g}], "
                   "or -1 (constant)"),
        "gamma": (_NUMBER, 0.995, _between(0, 1), "a discount in [0, 1]"),
        "gae_lambda": (_NUMBER, 0.95, _between(0, 1), "a value in [0, 1]"),
        "clip": (_NUMBER, 0.2, _positive_upto(10), "a clip range in (0, 10]"),
        "epochs": (int, 2, _between(1, 1000), "an integer number of epochs in 1..1000"),
        "minibatch_size": (int, 8192, _between(1, MAX_GAMES * MAX_ROLLOUT_STEPS),
                           "a positive integer number of samples"),
        "ent_coef": (_NUMBER, 0.01, _between(0, MAX_WEIGHT), "a non-negative weight"),
        "ent_coef_end": _END,
        "knock_ent_coef": (_NUMBER, 0.0, _between(0, MAX_WEIGHT),
                           "a non-negative weight of the knock-or-not entropy bonus"),
        "knock_ent_coef_end": _END,
        "vf_coef": (_NUMBER, 0.5, _between(0, MAX_WEIGHT), "a non-negative weight"),
        "max_grad_norm": (_NUMBER, 0.5, _positive_upto(MAX_WEIGHT), "a positive norm"),
        "target_kl": (_NUMBER, 0.0, _between(0, 10), "0 (off) or a KL bound up to 10"),
        "normalize_advantages": (bool, True, None, "true or false"),
    },
    "imitation": {
        "teacher": (str, "none", None, "'none' or an agent spec (e.g. 'strong')"),
        "steps": (int, 0, _between(0, MAX_STEPS),
                  "a non-negative integer number of environment steps (the first ones of "
                  "the run)"),
        "lr": (_NUMBER, 1e-3, _positive_upto(MAX_LR),
               f"a learning rate in (0, {MAX_LR:g}] (imitation phase)"),
        "kickstart_steps": (int, 0, _between(0, MAX_STEPS),
                            "a non-negative integer number of environment steps after the "
                            "imitation phase during which PPO keeps the teacher's moves as a "
                            "target (0 = off)"),
        "kickstart_coef": (_NUMBER, 0.0, _between(0, MAX_WEIGHT),
                           "the weight of that target when PPO starts; it falls linearly to 0"),
    },
    "opponents": {
        **{kind: (_WEIGHT[0], default, _WEIGHT[2], _WEIGHT[3])
           for kind, default in (("self_play", 0.5), ("pool", 0.3), ("random", 0.0),
                                 ("simple", 0.1), ("strong", 0.1), ("ginhunter", 0.0))},
        **{f"{kind}_end": _END for kind in OPPONENT_KINDS},
        "blocks": (int, 16, _between(1, MAX_GAMES), "a positive integer number of game blocks"),
        "snapshot_every": (int, 10, _between(1, MAX_STEPS), "a positive integer of updates"),
        "pool_size": (int, 8, _between(1, 1000), "an integer number of snapshots in 1..1000"),
        "pool_greedy": (bool, False, None, "true or false"),
        "agents": (dict, {}, None,
                   "a table of agent spec = weight (e.g. {pretrained = 1.0, "
                   "\"ckpt:runs/x/agent_best.pt\" = 0.5}): frozen opponents beside the "
                   "kinds above"),
    },
    "distributed": {
        "workers": (int, 0, _between(0, MAX_WORKERS),
                    f"an integer number of Ray collection workers in 0..{MAX_WORKERS} (0 = "
                    "collect in the learner's process)"),
        "address": (str, "", None,
                    "'' (start a local Ray with this machine's cores), 'auto' or HOST:PORT "
                    "of a running Ray cluster"),
        "cpus_per_worker": (int, 1, _between(1, 1024),
                            "an integer number of CPUs (and torch threads) per worker in "
                            "1..1024"),
        "max_restarts": (int, 8, _between(0, 10_000),
                         "an integer number of lost workers replaced by new ones before the "
                         "run carries on with the workers it has left"),
        "shard_timeout": (_NUMBER, 60.0, _between(0.1, 86_400),
                          "seconds in 0.1..86400: the least time a shard's rollout is "
                          "waited for before its worker is taken for lost (the deadline "
                          "is 5 x the slowest shard measured, at least this)"),
    },
}


#: Config keys whose values are agent specs (``agents.make_agent``), one or a list.
AGENT_SPEC_KEYS = (("run", "eval_opponents"), ("imitation", "teacher"))


def check_agent_spec(key: str, spec: Any) -> None:
    """Raise ``ValueError`` naming ``key`` and ``spec`` unless ``make_agent(spec)`` can
    build it: a known name, ``pretrained`` with its file shipped, ``ckpt:PATH`` with
    an existing file, or ``text:COMMAND``.  Checked when the config loads, not when the
    agent is first used."""
    from agents import AGENT_SPECS, PRETRAINED

    accepted = ", ".join(AGENT_SPECS)
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"bad value for config key {key}: {spec!r} is not an agent spec "
                         f"(accepted: {accepted})")
    text = spec.strip()
    names = {s for s in AGENT_SPECS if ":" not in s}
    optioned = {s.split("[", 1)[0] for s in AGENT_SPECS if "[:" in s}  # ginhunter, search
    prefixes = tuple(s.split(":", 1)[0] + ":" for s in AGENT_SPECS
                     if ":" in s and "[:" not in s)
    head = text.lower().split(":", 1)[0]
    if head in optioned:  # a name with options: its own parser says what is wrong
        _check_optioned_spec(key, head, text)
        return
    if text.lower() in names:
        shipped = PRETRAINED.get(text.lower())
        if shipped is not None and not shipped.is_file():
            raise ValueError(f"bad value for config key {key}: agent spec {spec!r} needs "
                             f"{shipped}, which does not exist")
        return
    prefix = next((p for p in prefixes if text.lower().startswith(p)), None)
    if prefix is None:
        raise ValueError(f"bad value for config key {key}: unknown agent spec {spec!r} "
                         f"(accepted: {accepted})")
    if prefix == "text:":  # an external program: the command is checked when it starts
        from agents.text_agent import parse_text_spec

        try:
            parse_text_spec(text)
        except ValueError as err:
            raise ValueError(f"bad value for config key {key}: {err}") from None
        return
    path = text[len(prefix) :]
    if not path:
        raise ValueError(f"bad value for config key {key}: agent spec {spec!r} lacks its "
                         f"path (e.g. {prefix}runs/quick/agent_best.pt)")
    if not Path(path).is_file():
        raise ValueError(f"bad value for config key {key}: agent spec {spec!r}: "
                         f"checkpoint file {path!r} not found")


def _check_optioned_spec(key: str, head: str, text: str) -> None:
    """``ginhunter[:k=v,...]`` or ``search[:k=v,...]``: parsed as ``make_agent`` would,
    so a bad option fails when the config loads."""
    if head == "ginhunter":
        from agents.ginhunter import parse_ginhunter_spec as parse
    else:
        from agents.search import parse_search_spec as parse
    try:
        config = parse(text)
    except ValueError as err:
        raise ValueError(f"bad value for config key {key}: {err}") from None
    blueprint = getattr(config, "blueprint", None)
    if isinstance(blueprint, str):  # search plays from a blueprint: an agent spec too
        check_agent_spec(key, blueprint)


#: Longest value text an error message quotes: a 2-million-element list named by mistake
#: must not become a 10 MB message.
MAX_QUOTED_CHARS = 200


def _cut(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """``text`` shortened to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def _check_agent_specs(cfg: dict[str, dict[str, Any]]) -> None:
    for spec in cfg["opponents"]["agents"]:
        check_agent_spec(f"opponents.agents.{json.dumps(spec)}", spec)
    for section, key in AGENT_SPEC_KEYS:
        value = cfg[section][key]
        if isinstance(value, list):
            for i, spec in enumerate(value):
                check_agent_spec(f"{section}.{key}[{i}]", spec)
        elif not (section == "imitation" and value == "none"):
            check_agent_spec(f"{section}.{key}", value)
    init = cfg["model"]["init"]
    if init:
        text = init.strip()
        if text.lower() not in INIT_SPECS and not text.lower().startswith("ckpt:"):
            raise ValueError(f"bad value for config key model.init: {init!r} is not a network "
                             f"(accepted: '', {', '.join(INIT_SPECS)} or ckpt:PATH)")
        check_agent_spec("model.init", text)


def defaults() -> dict[str, dict[str, Any]]:
    return {sec: {k: copy.deepcopy(spec[1]) for k, spec in keys.items()}
            for sec, keys in SCHEMA.items()}


def _bad(section: str, key: str, value: Any, meaning: str, why: str = "") -> ValueError:
    return ValueError(f"bad value for config key {section}.{key}: {_cut(repr(value))}"
                      f"{' (' + why + ')' if why else ''}; accepted: {meaning}")


def _check(section: str, key: str, value: Any) -> Any:
    """``value`` for ``section.key``, converted (an integral float to an int, an int to a
    float where floats are wanted); ``ValueError`` naming the key, the value and what is
    accepted otherwise."""
    if section not in SCHEMA:
        raise ValueError(f"unknown config section [{section}] "
                         f"(known: {', '.join(SCHEMA)})")
    if key not in SCHEMA[section]:
        raise ValueError(f"unknown config key {section}.{key} "
                         f"(known in [{section}]: {', '.join(SCHEMA[section])})")
    types, _, check, meaning = SCHEMA[section][key]
    wanted = types if isinstance(types, tuple) else (types,)
    given = value
    if isinstance(value, bool) and bool not in wanted:
        raise _bad(section, key, value, meaning)
    if isinstance(value, float) and not math.isfinite(value):
        raise _bad(section, key, value, meaning, "not a finite number")
    if wanted == (int,) and isinstance(value, float):
        if not value.is_integer():
            raise _bad(section, key, value, meaning, "not an integer")
        value = int(value)  # 1e5 is the integer 100000
    if not isinstance(value, wanted) or (check is not None and not check(value)):
        raise _bad(section, key, given, meaning)
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
            raise ValueError(f"config section [{section}] must be a table, got {_cut(repr(keys))}")
        for key, value in keys.items():
            out[section][key] = _check(section, key, value)
    _cross_checks(out)
    _check_agent_specs(out)
    return out


def _agent_weights(table: dict[str, Any]) -> dict[str, float]:
    """``opponents.agents`` with every weight checked and made a float; the message of a
    bad one names its spec.  (The specs themselves are checked by
    :func:`_check_agent_specs`.)"""
    meaning = SCHEMA["opponents"]["agents"][3]
    out = {}
    for spec, weight in table.items():
        key = f"agents.{json.dumps(spec)}"
        if isinstance(weight, bool) or not isinstance(weight, _NUMBER):
            raise _bad("opponents", key, weight, meaning, "not a number")
        if not math.isfinite(weight):
            raise _bad("opponents", key, weight, meaning, "not a finite number")
        if weight < 0:
            raise _bad("opponents", key, weight, meaning, "negative")
        if weight > MAX_WEIGHT:
            raise _bad("opponents", key, weight, meaning, f"above {MAX_WEIGHT:g}")
        out[spec] = float(weight)
    return out


def _cross_checks(cfg: dict[str, dict[str, Any]]) -> None:
    """Checks that involve more than one key (each message names the keys)."""
    opp = cfg["opponents"]
    opp["agents"] = _agent_weights(opp["agents"])
    for suffix in ("", "_end"):
        weights = [opp[k] if opp[f"{k}_end"] < 0 or not suffix else opp[f"{k}_end"]
                   for k in OPPONENT_KINDS]
        if sum(weights) + sum(opp["agents"].values()) <= 0:
            raise ValueError(f"bad values for config keys opponents.*{suffix}: the weights "
                             f"({', '.join(OPPONENT_KINDS)} and opponents.agents) are all "
                             "zero; accepted: non-negative weights, at least one of them "
                             "positive")
    run, env = cfg["run"], cfg["env"]
    per_update = env["num_games"] * env["rollout_steps"]
    if run["total_steps"] < per_update:
        raise ValueError(f"bad value for config key run.total_steps: {run['total_steps']} is "
                         f"less than one update (env.num_games x env.rollout_steps = "
                         f"{per_update}); accepted: at least {per_update} steps (or lower "
                         "env.num_games or env.rollout_steps)")
    workers = cfg["distributed"]["workers"]
    if workers > env["num_games"]:
        raise ValueError(f"bad value for config key distributed.workers: {workers} workers "
                         f"for env.num_games = {env['num_games']}; accepted: at most one "
                         "worker per game")
    address = cfg["distributed"]["address"].strip()
    if address and address != "auto" and (":" not in address
                                           or not address.rpartition(":")[2].isdigit()):
        raise _bad("distributed", "address", address, SCHEMA["distributed"]["address"][3])
    for key in ("eval_matches", "final_eval_matches"):
        if run[key] % 2:
            raise _bad("run", key, run[key], SCHEMA["run"][key][3], "odd")
    if run["eval_every"] > 0 and run["eval_matches"] == 0:
        raise ValueError("bad value for config key run.eval_matches: 0 while run.eval_every "
                         f"is {run['eval_every']}; accepted: a positive even number of "
                         "matches, or run.eval_every = 0 to skip the periodic evaluations")
    rules = cfg["env"]["rules"]
    try:
        load_rules(rules)
    except (ValueError, OSError) as exc:
        raise ValueError(f"bad value for config key env.rules: {rules!r} ({exc}); "
                         f"accepted: {SCHEMA['env']['rules'][3]}") from exc


def load_config(path: str | Path | None, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Read a TOML config (a path, or the name of a shipped config in
    ``configs/train``) and apply overrides.

    ``overrides`` are ``section.key=value`` strings whose value is parsed as
    TOML (``ppo.lr=1e-4``, ``model.hidden=[128,128]``, ``env.rules="classic"``;
    a bare word that is not TOML is taken as a string).
    """
    raw: dict[str, Any] = {}
    if path is not None:
        raw = read_config_file(path)
    for item in overrides:
        section, key, value = parse_override(item)
        raw.setdefault(section, {})
        if not isinstance(raw[section], dict):
            raise ValueError(f"config section [{section}] must be a table")
        raw[section][key] = value
    return validate(raw)


def shipped_configs() -> list[str]:
    """The names of the training configs shipped with the package (``quick``, ...)."""
    return shipped_names(CONFIG_KIND)


def shipped_config_text(name: str) -> str:
    """The TOML text of the shipped training config ``name``."""
    if name not in shipped_configs():
        raise FileNotFoundError(f"no shipped training config {name!r} (shipped: "
                                f"{', '.join(shipped_configs())})")
    return shipped_text(CONFIG_KIND, name)


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The raw table of a training config: a TOML file, or the name of a shipped config.

    A name without a suffix that is not a file (``quick``) is looked up among the shipped
    configs.  Raises ``FileNotFoundError`` when neither exists and ``ValueError`` for a
    file that is not a small, regular UTF-8 TOML file (see
    :func:`hgin_env.rules.read_toml_file`).
    """
    p = Path(path)
    if not p.exists() and not p.suffix and str(path) in shipped_configs():
        return parse_toml(shipped_config_text(str(path)), f"shipped training config {path!r}")
    if not p.exists():
        hint = "" if p.suffix else f" (shipped configs: {', '.join(shipped_configs())})"
        raise FileNotFoundError(f"training config not found: {_cut(str(path))}{hint}")
    return read_toml_file(p, "training config")


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


def single_opponent(spec: str) -> list[str]:
    """Overrides (``section.key=value``) that make ``spec`` the run's only training
    opponent, frozen, and its only evaluation opponent: what ``train.py --opponent SPEC``
    applies, e.g. for a best response to ``spec``."""
    quoted = json.dumps(spec)
    return ([f"opponents.{kind}=0" for kind in OPPONENT_KINDS]
            + [f"opponents.{kind}_end=-1" for kind in OPPONENT_KINDS]
            + [f"opponents.agents={{{quoted} = 1}}", f"run.eval_opponents=[{quoted}]"])


def toml_value(value: Any) -> str:
    """A value as TOML (JSON's strings, numbers and arrays are TOML; tables are not)."""
    if isinstance(value, dict):
        items = ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{" + items + "}"
    return json.dumps(value)


def to_toml(cfg: dict[str, dict[str, Any]]) -> str:
    """The config as TOML text (for the run's log directory); ``load_config`` reads it
    back to the same config."""
    lines = []
    for section, keys in cfg.items():
        lines.append(f"[{section}]")
        for key, value in keys.items():
            lines.append(f"{key} = {toml_value(value)}")
        lines.append("")
    return "\n".join(lines)
