"""What each RL library's wrapping costs: random legal play, steps per second, in one run.

Run: ``python bench/bench_integrations.py [--seconds 2]`` in an environment with the
libraries (``pip install -e '.[tianshou,torchrl,supersuit,shimmy]'``; a missing one is a
row that says so).  Every row plays uniformly random legal moves over whole matches,
resetting when one ends, and counts decisions (env steps) per wall-clock second:

* ``hgin AEC env``: ``hgin_env.env()`` in PettingZoo's loop (``last()``, ``step``), the
  baseline the wrapped rows are compared with (the last column);
* ``hgin parallel_env``: the turn-based parallel form;
* ``hgin Gym env``: ``HollywoodGinEnv`` (one seat, a ``random`` opponent, whose moves
  are not counted);
* ``hgin vector env (64)``: ``HollywoodGinVectorEnv`` with 64 matches, the learner's
  decisions in all of them;
* ``Tianshou PettingZooEnv``: ``tianshou.env.PettingZooEnv(env(numeric_infos=True))``;
* ``TorchRL GymEnv + ActionMask``: ``TransformedEnv(GymEnv(ENV_ID, mask_dtype=bool),
  ActionMask())`` stepped with TensorDicts (``rand_action`` then ``step``);
* ``SuperSuit flatten_v0 + dtype_v0``: on ``env(mask_in_infos=True)``;
* ``Shimmy OpenSpiel``: ``OpenSpielCompatibilityV0(game_name="python_hollywood_gin")``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import print_table

Loop = Callable[[int], int]  # plays about n decisions, returns how many it played


def _legal(mask: np.ndarray, rng: np.random.Generator) -> int:
    legal = np.flatnonzero(mask)
    return int(legal[rng.integers(legal.size)])


def _aec_loop(env, mask_of: Callable[[object, dict], np.ndarray], seed: int) -> Loop:
    """PettingZoo's loop; ``mask_of(obs, info)`` reads the mask where the env puts it."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)

    def run(n: int) -> int:
        played = 0
        while played < n:
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                if not env.agents:
                    env.reset()
                continue
            env.step(_legal(mask_of(obs, info), rng))
            played += 1
        return played

    return run


def hgin_aec(seed: int) -> Loop:
    import hgin_env

    return _aec_loop(hgin_env.env(), lambda obs, info: obs["action_mask"], seed)


def hgin_parallel(seed: int) -> Loop:
    import hgin_env

    env = hgin_env.parallel_env()
    rng = np.random.default_rng(seed)
    state = {"obs": env.reset(seed=seed)[0]}

    def run(n: int) -> int:
        for _ in range(n):
            obs = state["obs"]
            mover = next(a for a in env.agents if obs[a]["action_mask"].any())
            obs, _, term, trunc, _ = env.step({mover: _legal(obs[mover]["action_mask"], rng)})
            state["obs"] = env.reset()[0] if any(term.values()) or any(trunc.values()) else obs
        return n

    return run


def hgin_gym(seed: int) -> Loop:
    from hgin_env.envs.gym_env import HollywoodGinEnv

    env = HollywoodGinEnv(opponent="random")
    rng = np.random.default_rng(seed)
    state = {"obs": env.reset(seed=seed)[0]}

    def run(n: int) -> int:
        for _ in range(n):
            obs, _, term, trunc, _ = env.step(_legal(state["obs"]["action_mask"], rng))
            state["obs"] = env.reset()[0] if term or trunc else obs
        return n

    return run


def hgin_vector(seed: int, num_envs: int = 64) -> Loop:
    from hgin_env.envs.gym_env import HollywoodGinVectorEnv

    env = HollywoodGinVectorEnv(num_envs, opponent="random")
    rng = np.random.default_rng(seed)
    state = {"obs": env.reset(seed=seed)[0]}

    def run(n: int) -> int:
        played = 0
        while played < n:
            mask = state["obs"]["action_mask"].astype(bool)
            keys = np.where(mask, rng.random(mask.shape), -1.0)
            state["obs"] = env.step(keys.argmax(axis=1))[0]
            played += num_envs
        return played

    return run


def tianshou_env(seed: int) -> Loop:
    from tianshou.env import PettingZooEnv

    import hgin_env

    env = PettingZooEnv(hgin_env.env(numeric_infos=True))
    rng = np.random.default_rng(seed)
    state = {"obs": env.reset(seed=seed)[0]}

    def run(n: int) -> int:
        for _ in range(n):
            obs, _, term, trunc, _ = env.step(_legal(np.asarray(state["obs"]["mask"]), rng))
            state["obs"] = env.reset()[0] if term or trunc else obs
        return n

    return run


def torchrl_env(seed: int) -> Loop:
    from torchrl.envs import GymEnv, TransformedEnv
    from torchrl.envs.transforms import ActionMask

    from hgin_env import ENV_ID

    env = TransformedEnv(GymEnv(ENV_ID, mask_dtype=bool), ActionMask())
    env.set_seed(seed)
    state = {"td": env.reset()}

    def run(n: int) -> int:
        for _ in range(n):
            td = env.rand_action(state["td"])
            out = env.step(td)["next"]
            state["td"] = env.reset() if bool(out["done"]) else out
        return n

    return run


def supersuit_env(seed: int) -> Loop:
    import supersuit as ss

    import hgin_env

    env = ss.dtype_v0(ss.flatten_v0(hgin_env.env(mask_in_infos=True)), np.float32)
    return _aec_loop(env, lambda obs, info: info["action_mask"], seed)


def shimmy_env(seed: int) -> Loop:
    from shimmy import OpenSpielCompatibilityV0

    import hgin_env.envs.openspiel  # noqa: F401  (registers the game)

    env = OpenSpielCompatibilityV0(game_name="python_hollywood_gin")
    return _aec_loop(env, lambda obs, info: info["action_mask"], seed)


ROWS: dict[str, Callable[[int], Loop]] = {
    "hgin AEC env": hgin_aec,
    "hgin parallel_env": hgin_parallel,
    "hgin Gym env": hgin_gym,
    "hgin vector env (64)": hgin_vector,
    "Tianshou PettingZooEnv": tianshou_env,
    "TorchRL GymEnv + ActionMask": torchrl_env,
    "SuperSuit flatten_v0 + dtype_v0": supersuit_env,
    "Shimmy OpenSpiel": shimmy_env,
}


def rate(loop: Loop, seconds: float, chunk: int = 200) -> float:
    """Decisions per second over about ``seconds`` (after one warm-up chunk)."""
    loop(chunk)
    played, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        played += loop(chunk)
    return played / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0, help="per row")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rates: dict[str, float | str] = {}
    for name, make in ROWS.items():
        try:
            loop = make(args.seed)
        except ImportError as exc:
            rates[name] = f"not installed ({exc.name})"
            continue
        rates[name] = rate(loop, args.seconds)
    base = rates["hgin AEC env"]
    rows = []
    for name, value in rates.items():
        if isinstance(value, str):
            rows.append([name, value, ""])
        else:
            rows.append([name, f"{value:,.0f}", f"{value / base:.2f}" if isinstance(base, float)
                         else ""])
    print_table("random legal play: decisions per second", ["interface", "steps/s",
                                                             "vs hgin AEC env"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
