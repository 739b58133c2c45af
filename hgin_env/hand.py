"""Moved to :mod:`hgin_env.engine.hand`.

This module keeps the old import path, and the pickles that name it, working.
"""

from hgin_env.compat import forward
from hgin_env.engine import hand as _moved0

__getattr__, __dir__, __all__ = forward(_moved0)
