"""Moved to :mod:`agents.training.config`.

This module keeps the old import path, and the pickles that name it, working.
"""

from agents.training import config as _moved0
from hgin_env.compat import forward

__getattr__, __dir__, __all__ = forward(_moved0)
