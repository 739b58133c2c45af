"""hgin: Hollywood Gin Rummy for reinforcement learning.

``hgin_env.env()`` / ``hgin_env.raw_env()`` are the PettingZoo AEC
environment (:mod:`hgin_env.envs.aec`) and ``hgin_env.parallel_env()`` its
turn-based parallel form; ``hgin_env.gin_rummy_v4`` is the drop-in for
PettingZoo 1.26's removed gin rummy (:mod:`hgin_env.envs.gin_rummy_v4`, so
``from hgin_env import gin_rummy_v4`` replaces ``from pettingzoo.classic import
gin_rummy_v4``).  All are imported on first use so that ``import hgin_env``
stays light.  Importing the package registers the
Gymnasium id :data:`ENV_ID` (``"hgin/HollywoodGin-v0"``) by its entry-point
string only, so ``gymnasium.make(ENV_ID, opponent="simple")`` works without
loading the environment module until it is made; ``gymnasium.make_vec(ENV_ID,
num_envs=8, vectorization_mode="vector_entry_point")`` makes the batched
:class:`~hgin_env.envs.gym_env.HollywoodGinVectorEnv`.
"""

from importlib import metadata as _metadata

import gymnasium as _gym

from hgin_env import compat as _compat

__all__ = ["ENV_ID", "__version__", "env", "gin_rummy_v4", "parallel_env", "raw_env"]

try:
    #: The installed distribution's version (``pyproject.toml``), read from its metadata.
    __version__: str = _metadata.version("hgin")
except _metadata.PackageNotFoundError:  # a bare checkout on sys.path, never installed
    __version__ = "0+unknown"

# The flat import paths from before the layers (hgin_env.gym_env, ...) are built on
# import by one finder, hgin_env.compat.OldPaths, not by a file each.
_compat.install()

#: The Gymnasium id of :class:`hgin_env.envs.gym_env.HollywoodGinEnv`.
ENV_ID = "hgin/HollywoodGin-v0"

if ENV_ID not in _gym.registry:
    _gym.register(
        id=ENV_ID,
        entry_point="hgin_env.envs.gym_env:HollywoodGinEnv",
        vector_entry_point="hgin_env.envs.gym_env:HollywoodGinVectorEnv",
        # Above the longest legal match under any accepted rules, so Gymnasium's TimeLimit
        # never cuts one (gym_env.MAX_EPISODE_STEPS, derived in docs/rules.md Appendix C;
        # tests/hgin_env/envs/test_gym.py checks the two agree).
        max_episode_steps=40_120_000,
    )


def __getattr__(name: str) -> object:
    # The PettingZoo environment is imported on first use, so ``import hgin_env``
    # (and the engine alone) stays fast and never pulls in pettingzoo.
    if name in ("env", "parallel_env", "raw_env"):
        from hgin_env.envs import aec

        return getattr(aec, name)
    if name == "gin_rummy_v4":
        # PettingZoo 1.27 removed ``pettingzoo.classic.gin_rummy_v4``; this is its home.
        from hgin_env.envs import gin_rummy_v4

        return gin_rummy_v4
    raise AttributeError(f"module 'hgin_env' has no attribute {name!r}")


def __dir__() -> list[str]:
    # The public names and the submodules, not the helpers used above.
    import pkgutil

    return sorted({*__all__, *(m.name for m in pkgutil.iter_modules(__path__))})
