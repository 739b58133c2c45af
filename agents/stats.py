"""Moved to :mod:`agents.evaluation.stats`.

This module keeps the old import path, and the pickles that name it, working.
"""

from agents.evaluation import stats as _moved0
from hgin_env.compat import forward

__getattr__, __dir__, __all__ = forward(_moved0)
