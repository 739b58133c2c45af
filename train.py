"""Self-play PPO training from a checkout: ``python train.py`` is ``hgin train``.

The code lives in :mod:`agents.cli.train`; ``python train.py --help`` lists the options.
"""

import sys

from agents.cli.train import main

if __name__ == "__main__":
    sys.exit(main())
