"""Moved to :mod:`hgin_env.ui.text`.

This module keeps the old import path, and the pickles that name it, working.
"""

from hgin_env.compat import forward
from hgin_env.ui import text as _moved0

__getattr__, __dir__, __all__ = forward(_moved0)
