"""What the modules at the old flat paths share: forwarding every name to the new ones.

``hgin_env.gym_env``, ``agents.arena`` and the other paths from before the package was
split into layers are short modules that import their new homes and hand out their
names, private ones included (pickles name private classes too), as the same objects.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

__all__ = ["forward"]


def forward(*modules: ModuleType) -> tuple[Callable[[str], object], Callable[[], list[str]],
                                            list[str]]:
    """``(__getattr__, __dir__, __all__)`` for a module whose names live in ``modules``."""

    def getattr_(name: str) -> object:
        for module in modules:
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"no attribute {name!r} in {', '.join(m.__name__ for m in modules)}")

    def dir_() -> list[str]:
        return sorted({name for module in modules for name in dir(module)})

    return getattr_, dir_, [name for module in modules for name in getattr(module, "__all__", ())]
