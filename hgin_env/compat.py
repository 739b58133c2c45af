"""The import paths from before the package was split into layers, kept working from one place.

``hgin_env.gym_env``, ``agents.arena`` and the other flat paths have no files any more,
so the package roots show only the layers.  :class:`OldPaths`, a finder at the end of
``sys.meta_path`` (installed by ``hgin_env`` and, for the ``agents.*`` names, by
``agents``), builds each old module on import from :data:`MOVED`: it imports the new
homes and hands out their names, private ones included (pickles name private classes
too), as the same objects.  The three old ``python -m`` entry points still start.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

__all__ = ["ENTRY_POINTS", "MOVED", "RENAMED", "OldPaths", "forward", "install"]

#: Old path -> its new homes, searched in this order for a name.
MOVED: dict[str, tuple[str, ...]] = {
    "hgin_env.aec": ("hgin_env.envs.aec",),
    "hgin_env.gym_env": ("hgin_env.envs.gym_env",),
    "hgin_env.hand": ("hgin_env.engine.hand",),
    "hgin_env.openspiel_game": ("hgin_env.envs.openspiel",),
    "hgin_env.opponent": ("hgin_env.envs.opponents",),
    "hgin_env.play": ("hgin_env.apps.play", "hgin_env.ui.moves"),
    "hgin_env.render": ("hgin_env.ui.render",),
    "hgin_env.replay": ("hgin_env.apps.replay", "hgin_env.records.replay"),
    "hgin_env.serve": ("hgin_env.apps.serve",),
    "hgin_env.single": ("hgin_env.engine.single",),
    "hgin_env.text": ("hgin_env.ui.text",),
    "hgin_env.viewer": ("hgin_env.records.viewer",),
    "hgin_env.wrappers": ("hgin_env.envs.aec_wrapper", "hgin_env.envs.spaces",
                          "hgin_env.envs.wrappers"),
    "agents.arena": ("agents.evaluation.arena",),
    "agents.ppo": ("agents.training.ppo",),
    "agents.stats": ("agents.evaluation.stats",),
    "agents.tournament": ("agents.evaluation.tournament",),
    "agents.train_config": ("agents.training.config",),
}
#: Names an old path had that are called otherwise now: old path -> {old name: new name}.
RENAMED: dict[str, dict[str, str]] = {
    # the protocol's old name, and the class that old pickles name
    "hgin_env.opponent": {"Policy": "Agent", "_FunctionPolicy": "_FunctionAgent"},
}
#: ``python -m OLD`` -> the function it runs (in the first new home); its return is the
#: exit status.
ENTRY_POINTS: dict[str, str] = {
    "hgin_env.play": "cli",
    "hgin_env.replay": "main",
    "hgin_env.serve": "main",
}


def forward(*modules: ModuleType, renamed: dict[str, str] | None = None
            ) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for a module whose names live in ``modules``;
    ``renamed`` maps an old name to the new name it is looked up by."""
    renamed = dict(renamed or {})

    def getattr_(name: str) -> object:
        wanted = renamed.get(name, name)
        for module in modules:
            if hasattr(module, wanted):
                return getattr(module, wanted)
        raise AttributeError(f"no attribute {name!r} in {', '.join(m.__name__ for m in modules)}")

    def dir_() -> list[str]:
        return sorted({name for module in modules for name in dir(module)} | set(renamed))

    return getattr_, dir_, [name for module in modules for name in getattr(module, "__all__", ())]


def _source(old: str) -> str:
    """The old module's text: a docstring naming the new homes, the forwarding, and the
    ``python -m`` entry point where it had one (runpy runs modules from their code)."""
    homes = MOVED[old]
    named = " and ".join(f":mod:`{home}`" for home in homes)
    lines = [f'"""Moved to {named}; kept importable by :mod:`hgin_env.compat`."""',
             "import importlib as _importlib",
             "from hgin_env.compat import MOVED as _MOVED, RENAMED as _RENAMED, forward as _fw",
             f"_homes = [_importlib.import_module(m) for m in _MOVED[{old!r}]]",
             f"__getattr__, __dir__, __all__ = _fw(*_homes, renamed=_RENAMED.get({old!r}))"]
    if old in ENTRY_POINTS:
        lines += ['if __name__ == "__main__":',
                  f"    raise SystemExit(_homes[0].{ENTRY_POINTS[old]}())"]
    return "\n".join(lines) + "\n"


class OldPaths(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """Finds and loads the old paths of :data:`MOVED` (and only those)."""

    @classmethod
    def find_spec(cls, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, cls(), origin="hgin_env.compat")

    def get_source(self, fullname: str) -> str:
        return _source(fullname)

    def is_package(self, fullname: str) -> bool:
        return False


def install() -> None:
    """Put :class:`OldPaths` at the end of ``sys.meta_path`` once: asked only after the
    normal finders found no file, so it never shadows a real module."""
    if not any(finder is OldPaths for finder in sys.meta_path):
        sys.meta_path.append(OldPaths)
