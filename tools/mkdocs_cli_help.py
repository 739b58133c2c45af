"""MkDocs hook: put each ``hgin`` subcommand's ``--help`` into docs/cli.md at build time.

A marker line ``<!-- hgin-help: NAME -->`` becomes the text that ``hgin NAME --help``
prints, so the command-line page is generated from the parsers and cannot drift.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

MARKER = re.compile(r"^<!-- hgin-help: ([a-z]+) -->$", re.MULTILINE)


def help_text(command: str) -> str:
    """What ``hgin COMMAND --help`` prints, at a fixed width."""
    env = dict(os.environ, COLUMNS="88")
    done = subprocess.run([sys.executable, "-m", "agents.cli", command, "--help"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"hgin {command} --help failed: {done.stderr.strip()}")
    return done.stdout.rstrip()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace every help marker of a page with that command's help in a text block."""
    return MARKER.sub(lambda m: f"```text\n{help_text(m.group(1))}\n```", markdown)
