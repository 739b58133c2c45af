"""The rules config: every switch of docs/rules.md in one frozen dataclass.

Profiles are the files ``configs/rules/<name>.toml``, found by :mod:`hgin_env.shipped`
(the checkout's ``configs/`` or, in an installed wheel, its package data).  A TOML file may name a
``profile`` to start from and override only the keys it sets, so a custom
rule set is a two-line file.  Validation names the offending key, because a
silent typo in a rules file would change every game played with it.
"""

from __future__ import annotations

import dataclasses
import functools
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hgin_env.shipped import shipped_label, shipped_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PROFILES = ("friendly", "classic", "bonus", "eaai", "rlcard")
DEFAULT_PROFILE = "friendly"
#: The kind of shipped config file the profiles are (``configs/rules/``, see :mod:`.shipped`).
PROFILE_KIND = "rules"
#: A rules or training config file is a few hundred bytes; anything past this is not one
#: (``/dev/zero``, a log file named by mistake) and is refused before it is read.
MAX_CONFIG_BYTES = 1 << 20

#: Allowed values of the switches whose range docs/rules.md lists explicitly.
CHOICES: dict[str, tuple[Any, ...]] = {
    "gin_bonus": (20, 25),
    "undercut_bonus": (10, 20, 25),
    "next_dealer": ("alternate", "winner"),
    "dead_hand_dealer": ("same", "alternate"),
    "columns": (1, 3),
    "target": (100, 250),
    "layoff": ("optimal", "declared-greedy"),
}
#: Inclusive ranges of the numeric switches that are free within bounds.
RANGES: dict[str, tuple[int, int]] = {
    "knock_limit": (0, 10),
    "big_gin_bonus": (0, 1000),
    "game_bonus": (0, 1000),
    "shutout_bonus": (0, 1000),
    "box_bonus": (0, 1000),
    "max_discard_takes": (1, 10_000),
}


@dataclass(frozen=True)
class Rules:
    """Every rule switch; the defaults are the ``friendly`` profile."""

    gin_bonus: int = 25
    undercut_bonus: int = 25
    big_gin_bonus: int = 31
    knock_limit: int = 10
    oklahoma: bool = False
    straight_gin: bool = False
    big_gin: bool = False
    forbid_discard_of_taken: bool = True
    next_dealer: str = "alternate"
    dead_hand_dealer: str = "alternate"
    columns: int = 3
    target: int = 100
    game_bonus: int = 0
    shutout_bonus: int = 0
    box_bonus: int = 0
    #: Takes from the discard pile (the upcard included) after which the pile is
    #: closed for the rest of the hand; bounds every hand's length.
    max_discard_takes: int = 50
    #: How the defender's layoffs are found (§7): ``optimal``, the least deadwood over
    #: every choice; ``declared-greedy``, the EAAI Java referee's procedure (the
    #: defender declares its melds, then each card in the referee's card order goes
    #: onto the first knocker meld it fits), see docs/eaai.md.
    layoff: str = "optimal"

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            _check_value(field.name, getattr(self, field.name), field.type)

    def replace(self, **changes: Any) -> Rules:
        """A copy with ``changes`` applied (validated like any config)."""
        unknown = sorted(set(changes) - set(field_names()))
        if unknown:
            raise ValueError(f"unknown rules key(s): {', '.join(unknown)}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def knock_limits(self, upcards: np.ndarray) -> np.ndarray:
        """(n,) int8 knock limit of hands whose first upcards are ``upcards`` (card ids).

        The one definition of §6's limit: the profile's ``knock_limit``; with
        Oklahoma the upcard's value (an ace: gin only); 0 under straight gin.
        """
        upcards = np.asarray(upcards)
        if self.straight_gin:
            return np.zeros(upcards.shape, np.int8)
        if self.oklahoma:
            rank = upcards % 13
            return np.where(rank == 0, 0, np.minimum(rank + 1, 10)).astype(np.int8)
        return np.full(upcards.shape, self.knock_limit, np.int8)

    def knock_limit_for_upcard(self, upcard_rank: int) -> int:
        """:meth:`knock_limits` for one upcard rank (0 = ace … 12 = king)."""
        return int(self.knock_limits(np.array([int(upcard_rank)]))[0])

    def forbidden_discard(self, taken_card: Any) -> Any:
        """The card the mover may not discard (-1: none), from the card taken this turn.

        §5 ``forbid_discard_of_taken``; works on an int or an array of card ids.
        """
        if self.forbid_discard_of_taken:
            return taken_card
        return np.full_like(taken_card, -1) if isinstance(taken_card, np.ndarray) else -1

    def pile_open(self, takes: Any) -> Any:
        """Whether the discard pile may still be taken after ``takes`` takes this hand.

        §5 take limit (``max_discard_takes``); an int or an array of counts.
        """
        return takes < self.max_discard_takes


def field_names() -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(Rules))


def _check_value(key: str, value: Any, type_name: Any) -> None:
    expected = type_name if isinstance(type_name, str) else type_name.__name__
    if expected == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"rules key {key!r} must be true or false, got {value!r}")
        return
    if expected == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"rules key {key!r} must be an integer, got {value!r}")
    if expected == "str" and not isinstance(value, str):
        raise ValueError(f"rules key {key!r} must be a string, got {value!r}")
    if key in CHOICES and value not in CHOICES[key]:
        allowed = ", ".join(repr(c) for c in CHOICES[key])
        raise ValueError(f"rules key {key!r} is {value!r}; allowed values: {allowed}")
    if key in RANGES:
        low, high = RANGES[key]
        if not low <= value <= high:
            raise ValueError(f"rules key {key!r} is {value!r}; must be in {low}..{high}")


def rules_from_dict(
    data: dict[str, Any], source: str = "config", base_dir: Path | None = None,
    _chain: tuple[str, ...] = (),
) -> Rules:
    """Rules from a mapping; ``profile`` names the profile (or TOML file) to start from.

    A relative profile path is resolved from ``base_dir`` (the directory of the
    file ``data`` came from), else from the current directory.
    """
    if not isinstance(data, dict):
        raise ValueError(f"rules in {source} must be a table of switches, got {data!r}")
    data = dict(data)
    base_name = data.pop("profile", None)
    unknown = sorted(set(data) - set(field_names()))
    if unknown:
        raise ValueError(f"unknown rules key(s) in {source}: {', '.join(unknown)}")
    if base_name is None:
        base = Rules()
    elif not isinstance(base_name, str):
        raise ValueError(f"{source}: 'profile' must be a profile name or a path, got {base_name!r}")
    else:
        base = _load(base_name, base_dir, _chain)
    try:
        return dataclasses.replace(base, **data)
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None


def load_rules(name_or_path: str | Path | Rules | None = None) -> Rules:
    """Rules from a profile name (``friendly``, ``classic``, ``bonus``, ``eaai``,
    ``rlcard``) or a TOML path."""
    if name_or_path is None:
        name_or_path = DEFAULT_PROFILE
    if isinstance(name_or_path, Rules):
        return name_or_path
    if not isinstance(name_or_path, (str, Path)):
        raise ValueError(
            f"rules must be a profile name ({', '.join(PROFILES)}), a TOML path or a Rules, "
            f"got {type(name_or_path).__name__} {name_or_path!r}"
        )
    if isinstance(name_or_path, str) and name_or_path in PROFILES:
        return _shipped_profile(name_or_path)
    return _load(str(name_or_path), None, ())


@functools.cache
def _shipped_profile(name: str) -> Rules:
    """A shipped profile, parsed once per process: package data does not change, and
    ``Rules`` is frozen, so every caller may share the one value."""
    return _load(name, None, ())


def require_rules(rules: Any) -> Rules:
    """``rules`` itself, checked to be a :class:`Rules`: what code inside the program
    takes, so that a name or path is read once, by :func:`load_rules`, where it enters."""
    if not isinstance(rules, Rules):
        raise TypeError(f"expected a Rules (from hgin_env.rules.load_rules), got "
                        f"{type(rules).__name__} {rules!r}")
    return rules


def profile_name(rules: Rules) -> str | None:
    """The name of the profile ``rules`` equal, or None for custom rules: what a match
    record names when its writer was handed a ``Rules`` object, not a name."""
    return next((name for name in PROFILES if load_rules(name) == rules), None)


def profile_text(name: str) -> str:
    """The TOML text of the shipped profile ``name`` (``configs/rules/<name>.toml``)."""
    return shipped_text(PROFILE_KIND, name)


def read_toml_file(path: Path, what: str) -> dict[str, Any]:
    """The table in the TOML file ``path``; every failure is a ``ValueError`` that names
    ``what`` and the file.

    Only a regular file of at most :data:`MAX_CONFIG_BYTES` is read: a directory, a FIFO
    (which would block) or a device such as ``/dev/zero`` (which never ends) is refused
    before it is opened.  Deeply nested TOML (a recursion error in the parser) is refused
    with a message too.
    """
    try:
        info = path.stat()
    except OSError as err:
        raise ValueError(f"{what} {path} cannot be read: {err.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ValueError(f"{what} {path} is a directory, not a TOML file")
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{what} {path} is not a regular file (a device, FIFO or socket)")
    if info.st_size > MAX_CONFIG_BYTES:
        raise ValueError(f"{what} {path} is {info.st_size:,} bytes; a config file is at most "
                         f"{MAX_CONFIG_BYTES:,}")
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as err:
        raise ValueError(f"{what} {path} cannot be read: {err.strerror}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ValueError(f"{what} {path} is larger than {MAX_CONFIG_BYTES:,} bytes")
    return parse_toml(raw, f"{what} {path}")


def parse_toml(raw: bytes | str, where: str) -> dict[str, Any]:
    """``raw`` parsed as TOML; a ``ValueError`` naming ``where`` for bad text."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as err:
        raise ValueError(f"{where} is not UTF-8 text: {err.reason} at byte {err.start}"
                         ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{where} is not valid TOML: {err}") from None
    except RecursionError:
        raise ValueError(f"{where} is nested too deeply to be a config file") from None


def _load(text: str, base_dir: Path | None, chain: tuple[str, ...]) -> Rules:
    """One link of a profile chain; ``chain`` holds the files already being read."""
    if text in PROFILES:
        key = shipped_label(PROFILE_KIND, text)
        if key in chain:
            cycle = " -> ".join((*chain[chain.index(key):], key))
            raise ValueError(f"rules profiles form a cycle: {cycle}")
        data = parse_toml(profile_text(text), f"rules profile {text!r}")
        return rules_from_dict(data, source=f"profile {text!r}", base_dir=None,
                               _chain=(*chain, key))
    path = Path(text)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    if not path.exists():
        raise ValueError(
            f"unknown rules {text!r}: not a profile ({', '.join(PROFILES)}) and not a TOML file"
            + (f" (looked for {path})" if base_dir is not None else "")
        )
    path = path.resolve()
    if str(path) in chain:
        cycle = " -> ".join((*chain[chain.index(str(path)):], str(path)))
        raise ValueError(f"rules profiles form a cycle: {cycle}")
    data = read_toml_file(path, "rules file")
    return rules_from_dict(data, source=str(path), base_dir=path.parent,
                           _chain=(*chain, str(path)))
