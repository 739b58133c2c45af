"""Moved to :mod:`hgin_env.envs.wrappers`, :mod:`hgin_env.envs.spaces` and
:mod:`hgin_env.envs.aec_wrapper`.

This module keeps the old import path, and the pickles that name it, working.
"""

from hgin_env.compat import forward
from hgin_env.envs import aec_wrapper as _moved2
from hgin_env.envs import spaces as _moved1
from hgin_env.envs import wrappers as _moved0

__getattr__, __dir__, __all__ = forward(_moved2, _moved1, _moved0)
