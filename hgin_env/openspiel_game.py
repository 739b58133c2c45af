"""Moved to :mod:`hgin_env.envs.openspiel`.

This module keeps the old import path, and the pickles that name it, working.
"""

from hgin_env.compat import forward
from hgin_env.envs import openspiel as _moved0

__getattr__, __dir__, __all__ = forward(_moved0)
