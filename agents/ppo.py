"""Moved to :mod:`agents.training.ppo`.

This module keeps the old import path, and the pickles that name it, working.
"""

from agents.training import ppo as _moved0
from hgin_env.compat import forward

__getattr__, __dir__, __all__ = forward(_moved0)
