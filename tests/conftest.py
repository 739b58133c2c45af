"""Shared by every test module: the checkout under test.

The tests are a package (``tests``, with ``tests/helpers`` for the slow references,
oracles, strategies and paths they share), and pytest puts the repository root first
on ``sys.path``, so ``hgin_env`` and ``agents`` are the checkout's.  This file stops
the run at once if another installed copy were imported instead: every result would
then describe that copy, not the code under review.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import agents
import hgin_env
from tests.helpers.paths import ROOT

for _package in (hgin_env, agents):
    if Path(_package.__file__).resolve().parent.parent != ROOT:
        raise pytest.UsageError(f"the tests import {_package.__name__} from "
                                f"{_package.__file__}, not from the checkout {ROOT}")
