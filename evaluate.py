"""Round-robin evaluation from a checkout: ``python evaluate.py`` is ``hgin evaluate``.

The code lives in :mod:`agents.cli.evaluate`; ``python evaluate.py --help`` lists the options.
"""

import sys

from agents.cli.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
