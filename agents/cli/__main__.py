"""``python -m agents.cli`` is the ``hgin`` command (for a checkout that was never installed)."""

import sys

from agents.cli import main

sys.exit(main())
