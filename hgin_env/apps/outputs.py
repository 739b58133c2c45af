"""Output paths checked before the work that fills them, so no result is lost at the end.

Every command that writes a file a user names (``hgin evaluate --json/--csv/--plot/--record``,
``hgin replay --html``) checks it here first, with one wording for every refusal.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["check_output_file"]


def check_output_file(option: str, value: str, path: Path) -> None:
    """Raise ``ValueError`` naming ``option`` unless ``path`` (given as ``value``) can be
    written: its folder exists and is writable, and it is not a folder itself."""
    parent = path.parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise ValueError(f"{option} {value}: directory {parent} {what}")
    if path.is_dir():
        raise ValueError(f"{option} {value}: {path} is a directory")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ValueError(f"{option} {value}: {path} is not writable")
