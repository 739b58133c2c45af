"""Moved to :mod:`hgin_env.ui.text`.

This module keeps the old import path, and the pickles that name it, working.
"""

from hgin_env.ui import text as _moved0

_MOVED = (_moved0,)
__all__ = [name for module in _MOVED for name in getattr(module, "__all__", ())]


def __getattr__(name: str) -> object:
    for module in _MOVED:
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({n for module in _MOVED for n in dir(module)})
