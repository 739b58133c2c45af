"""Round-robin evaluation from a checkout: ``python evaluate.py`` is ``hgin evaluate``.

The code lives in :mod:`agents.cli.evaluate`; ``python evaluate.py --help`` lists the options.
"""

import sys

if __name__ == "__main__":
    try:  # the import takes a moment: a Ctrl-C during it ends with one line too
        from agents.cli.evaluate import main
    except KeyboardInterrupt:
        print("evaluate.py: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(main())
