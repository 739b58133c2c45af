"""Where the shipped config files are: the rule profiles (``configs/rules/<name>.toml``) and
the training configs (``configs/train/<name>.toml``).

Each file has one copy, in the ``configs/`` folder at the top of the checkout.  A wheel
carries that folder as package data, ``hgin_env/configs/`` (``pyproject.toml`` maps
``configs`` onto the package ``hgin_env.configs``), so an installed copy finds its files
by name with :mod:`importlib.resources`.  Code run from a checkout (an editable install,
the tests, ``python train.py``) reads the checkout's own ``configs/``, so an edit there is
seen at once, without reinstalling.
"""

from __future__ import annotations

import functools
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

#: The kinds of shipped file, each a subfolder of ``configs/``.
KINDS = ("rules", "train")
#: The distribution whose checkout holds ``configs/`` (its ``pyproject.toml`` names it).
DISTRIBUTION = "hgin"
#: The package that carries ``configs/`` in a wheel, and the folder inside it.
PACKAGE = "hgin_env"
FOLDER = "configs"


@functools.cache
def checkout_root() -> Path | None:
    """The checkout this code runs from (the folder of hgin's ``pyproject.toml`` above the
    package), or None for an installed copy, whose parent folder is ``site-packages``."""
    root = Path(__file__).resolve().parent.parent
    try:
        with (root / "pyproject.toml").open("rb") as handle:
            name = tomllib.load(handle).get("project", {}).get("name")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if name == DISTRIBUTION else None


def config_folder(kind: str) -> Traversable:
    """The folder of the shipped files of ``kind`` (``rules`` or ``train``): the checkout's
    ``configs/<kind>`` when run from a checkout, else the installed package data."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of config file {kind!r} (kinds: {', '.join(KINDS)})")
    root = checkout_root()
    if root is not None:
        return root / FOLDER / kind
    return resources.files(PACKAGE) / FOLDER / kind


def shipped_names(kind: str) -> list[str]:
    """The names of the shipped files of ``kind``, sorted (``quick``, ``default``, ...)."""
    folder = config_folder(kind)
    if not folder.is_dir():
        raise FileNotFoundError(f"the shipped {kind} configs are missing: no folder {folder}")
    return sorted(entry.name[: -len(".toml")] for entry in folder.iterdir()
                  if entry.name.endswith(".toml") and entry.is_file())


def shipped_text(kind: str, name: str) -> str:
    """The TOML text of the shipped file ``name`` of ``kind``."""
    if name not in shipped_names(kind):
        raise FileNotFoundError(f"no shipped {kind} config {name!r} (shipped: "
                                f"{', '.join(shipped_names(kind))})")
    return (config_folder(kind) / f"{name}.toml").read_text(encoding="utf-8")


def shipped_label(kind: str, name: str) -> str:
    """How messages name a shipped file: its path in the checkout, the same either way."""
    return f"{FOLDER}/{kind}/{name}.toml"


def extra_install_command(extra: str) -> str:
    """The pip command that adds the optional dependencies ``extra`` (``web``, ``ray``)
    to this copy of hgin: ``pip install 'hgin[web]'`` for an installed wheel, and
    ``pip install -e '.[web]'`` for a checkout (its path, when run from elsewhere), since
    the wheel's form would look for hgin itself on the package index."""
    root = checkout_root()
    if root is None:
        return f"pip install 'hgin[{extra}]'"
    try:
        here = Path.cwd().resolve() == root
    except OSError:  # the working folder was removed
        here = False
    return f"pip install -e '.[{extra}]'" if here else f"pip install -e '{root}[{extra}]'"
