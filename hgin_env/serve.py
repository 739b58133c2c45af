"""Moved to :mod:`hgin_env.apps.serve`.

This module keeps the old import path, and the pickles that name it, working.
"""

from hgin_env.apps import serve as _moved0
from hgin_env.compat import forward

__getattr__, __dir__, __all__ = forward(_moved0)


if __name__ == "__main__":  # python -m hgin_env.serve
    raise SystemExit(_moved0.main())
