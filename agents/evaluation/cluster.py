"""Joining or starting Ray, for work spread over processes and machines.

Ray is an optional extra (``pip install 'hgin[ray]'``): nothing here imports it until a
caller asks for workers, and asking without it is one ``ValueError`` that names the
extra.  :func:`connect` joins a running cluster (``address="auto"`` or
``"HOST:PORT"``) or starts a local one with this machine's cores;
:func:`check_workers` is the one check of a ``--workers`` value.  Ray's servers listen
on every network interface (Ray 2.60 has no setting that keeps them to 127.0.0.1), so
the local Ray it starts uses Ray's token authentication (Ray's own default for a new
local cluster; hgin says in one line what Ray's banner leaves out); a cluster of your own
should use it too (``RAY_AUTH_MODE=token``).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

__all__ = ["RAY_EXTRA", "check_capacity", "check_workers", "connect", "require_ray"]

#: How to install what distributed work needs.
RAY_EXTRA = "pip install 'hgin[ray]'"


def require_ray(what: str) -> Any:
    """The ``ray`` module, or a ``ValueError`` saying that ``what`` needs the extra."""
    try:
        import ray
    except ImportError:
        raise ValueError(f"{what} needs Ray, which is not installed: {RAY_EXTRA}") from None
    return ray


def check_workers(workers: Any) -> int:
    """``workers`` as a count of worker processes (0: everything in this process)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers must be a non-negative integer, got {workers!r}")
    return int(workers)


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Refuse at once a ``HOST:PORT`` where no one answers: Ray itself would retry for
    minutes before giving up."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"address must be 'auto' or HOST:PORT, got {address!r}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ValueError(f"cannot join the Ray cluster at {address!r}: nothing answers "
                         f"there ({exc})") from None


def connect(address: str | None, what: str) -> Any:
    """Ray, initialised: the cluster at ``address`` (``"auto"``, ``"HOST:PORT"``), or with
    ``None`` a local Ray on this machine's cores.  Already initialised: used as it is."""
    ray = require_ray(what)
    if ray.is_initialized():
        return ray
    if address is not None and (not isinstance(address, str) or not address.strip()):
        raise ValueError(f"address must be 'auto' or HOST:PORT, got {address!r}")
    if address is not None and address.strip() != "auto":
        _check_reachable(address.strip())
    options: dict[str, Any] = {"include_dashboard": False, "configure_logging": False,
                               "log_to_driver": False}
    try:
        if address is None:
            _init_local(ray, options)
        else:
            ray.init(address=address.strip(), **options)
    except ConnectionError as exc:
        raise ValueError(f"cannot join the Ray cluster at {address!r}: {exc}") from None
    return ray


#: What hgin says when the local Ray it starts turns on token authentication.
TOKEN_NOTE = ("hgin: the local Ray cluster uses Ray's token authentication (Ray's default: "
              "its servers listen on every interface, and only holders of the token in "
              "~/.ray/auth_token may use them); set RAY_AUTH_MODE=disabled to opt out")
#: The logger and the start of the warning Ray 2.5x prints in its place.
_RAY_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
_RAY_BANNER = "Token authentication is enabled for this Ray cluster"


class _TokenBanner(logging.Filter):
    """Holds back Ray's banner (it names neither why nor where the token is) and notes
    that Ray gave it, so hgin says it in its own words instead."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith(_RAY_BANNER):
            self.seen = True
            return False
        return True


def _init_local(ray: Any, options: dict[str, Any]) -> None:
    """``ray.init`` of a local cluster, with Ray's token banner said as :data:`TOKEN_NOTE`."""
    banner = _TokenBanner()
    logger = logging.getLogger(_RAY_AUTH_LOGGER)
    logger.addFilter(banner)
    try:
        ray.init(**options)
    finally:
        logger.removeFilter(banner)
    if banner.seen:
        print(TOKEN_NOTE, file=sys.stderr)


def check_capacity(ray: Any, workers: int, cpus_per_worker: int = 1) -> None:
    """Refuse more workers than the cluster has CPUs for: an actor that cannot be placed
    would leave the work waiting for ever."""
    cpus = int(ray.cluster_resources().get("CPU", 0))
    need = workers * cpus_per_worker
    if need > cpus:
        each = "" if cpus_per_worker == 1 else f" ({cpus_per_worker} each)"
        raise ValueError(f"{workers} workers{each} need {need} CPUs, and the Ray cluster has "
                         f"{cpus}: ask for at most {cpus // cpus_per_worker} workers")
