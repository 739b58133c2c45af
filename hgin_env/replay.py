"""Moved to :mod:`hgin_env.records.replay` and :mod:`hgin_env.apps.replay`.

This module keeps the old import path, and the pickles that name it, working.
"""

from hgin_env.apps import replay as _moved1
from hgin_env.compat import forward
from hgin_env.records import replay as _moved0

__getattr__, __dir__, __all__ = forward(_moved1, _moved0)


if __name__ == "__main__":  # python -m hgin_env.replay
    raise SystemExit(_moved1.main())
