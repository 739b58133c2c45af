"""Moved to :mod:`hgin_env.envs.opponents`.

This module keeps the old import path, and the pickles that name it, working.
"""

from hgin_env.compat import forward
from hgin_env.envs import opponents as _moved0

__getattr__, __dir__, __all__ = forward(_moved0)


Policy = _moved0.Agent  # the protocol's old name
_FunctionPolicy = _moved0._FunctionAgent  # in old pickles
