"""Fixtures the agents' tests share."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.ray_cluster import descendants, kill_all


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """Small batches: one thread is fastest, and exact reproducibility needs a fixed count."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    """A local Ray with two CPUs for one test module (starting one costs seconds on two
    cores); every process it started is gone afterwards, stopped by its id if need be."""
    ray = pytest.importorskip("ray", reason="needs Ray: pip install 'hgin[ray]'")
    before = descendants(os.getpid())
    ray.init(num_cpus=2, include_dashboard=False, configure_logging=False,
             log_to_driver=False)
    started = descendants(os.getpid()) - before
    try:
        yield ray
    finally:
        ray.shutdown()
        left = kill_all(started)  # anything ray.shutdown left behind is stopped by its id
        assert left == [], f"Ray processes still running: {left}"
