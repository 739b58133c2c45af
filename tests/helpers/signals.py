"""Child processes that a test interrupts with Ctrl-C."""

from __future__ import annotations

import signal


def sigint_default() -> None:
    """``preexec_fn`` of a child the test sends SIGINT: SIGINT back to the default, so
    Python installs its handler even where the test runner was started with SIGINT
    ignored (a background job of a non-interactive shell, ``nohup ... &``), which the
    child would otherwise inherit and never see its Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
