"""Where the tests find the repository and their data files."""

from pathlib import Path

#: The repository's root folder (the checkout the tests run in).
ROOT = Path(__file__).resolve().parents[2]
#: Data files the tests read (pickles written by earlier releases, ...).
DATA = Path(__file__).resolve().parent / "data"
