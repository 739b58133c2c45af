"""Self-play PPO training from a checkout: ``python train.py`` is ``hgin train``.

The code lives in :mod:`agents.cli.train`; ``python train.py --help`` lists the options.
"""

import sys

if __name__ == "__main__":
    try:  # the import takes a moment: a Ctrl-C during it ends with one line too
        from agents.cli.train import main
    except KeyboardInterrupt:
        print("train.py: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(main())
