"""hgin: Hollywood Gin Rummy for reinforcement learning."""

from __future__ import annotations

from typing import Any

__all__ = ["env", "raw_env"]


def __getattr__(name: str) -> Any:
    # The PettingZoo environment is imported on first use, so ``import hgin_env``
    # (and the engine alone) stays fast and never pulls in pettingzoo.
    if name in ("env", "raw_env"):
        from . import aec

        return getattr(aec, name)
    raise AttributeError(f"module 'hgin_env' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
