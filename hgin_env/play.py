"""Moved to :mod:`hgin_env.apps.play` and :mod:`hgin_env.ui.moves`.

This module keeps the old import path, and the pickles that name it, working.
"""

from hgin_env.apps import play as _moved0
from hgin_env.compat import forward
from hgin_env.ui import moves as _moved1

__getattr__, __dir__, __all__ = forward(_moved0, _moved1)


if __name__ == "__main__":  # python -m hgin_env.play
    raise SystemExit(_moved0.cli())
