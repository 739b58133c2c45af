"""Moved to :mod:`hgin_env.envs.wrappers`, :mod:`hgin_env.envs.spaces` and
:mod:`hgin_env.envs.aec_wrapper`.

This module keeps the old import path, and the pickles that name it, working.
"""

from hgin_env.envs import aec_wrapper as _moved2
from hgin_env.envs import spaces as _moved1
from hgin_env.envs import wrappers as _moved0

_MOVED = (_moved0, _moved1, _moved2,)
__all__ = [name for module in _MOVED for name in getattr(module, "__all__", ())]


def __getattr__(name: str) -> object:
    for module in _MOVED:
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({n for module in _MOVED for n in dir(module)})
