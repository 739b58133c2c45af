"""Throughput of ``hgin_env.envs.gin_rummy_v4`` beside PettingZoo 1.26.1's ``gin_rummy_v4``.

Run: ``python bench/bench_gin_rummy_v4.py [--seconds 3]``; in an environment with the
``pz-legacy`` extra (pettingzoo 1.26.1 and rlcard) the original's rows are measured in
the same run, otherwise they say it is not installed.

Rows, each a random legal player on both seats over whole hands (``reset()`` when a hand
ends), in the documented loop: ``last()``, an action, ``step``:

* ``env(), numpy pick``: the wrapped env, the action picked from the mask with numpy;
* ``env(), sample(mask)``: the same with ``action_space(agent).sample(mask)``
  (Gymnasium's ``Discrete.sample``, the loop of PettingZoo's docs);
* ``raw_env, numpy pick``: the unwrapped env.

Rates are per wall-clock second and per CPU second of this process (the latter is less
disturbed by other work sharing the cores), median over rounds of 500 steps; the last
column is hgin's CPU median over the original's on the same loop.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import print_table
from common import random_legal as _pick

from hgin_env.envs import gin_rummy_v4


def original_module() -> ModuleType | None:
    """PettingZoo's own ``gin_rummy_v4`` when pettingzoo 1.26 and rlcard are installed."""
    try:
        import pettingzoo
        from pettingzoo.classic import gin_rummy_v4 as original
    except ImportError:
        return None
    return original if pettingzoo.__version__.startswith("1.26.") else None


def loop(make: Callable[[], object], seed: int, mode: str) -> Callable[[int], int]:
    env = make()
    env.reset(seed=seed)  # type: ignore[attr-defined]
    rng = np.random.default_rng(seed)

    def run(n: int) -> int:
        steps = 0
        while steps < n:
            agent = env.agent_selection  # type: ignore[attr-defined]
            obs, _, term, trunc, _ = env.last()  # type: ignore[attr-defined]
            if term or trunc:
                action = None
            elif mode == "sample":
                action = env.action_space(agent).sample(obs["action_mask"])  # type: ignore[attr-defined]
            else:
                action = _pick(obs["action_mask"], rng)
            env.step(action)  # type: ignore[attr-defined]
            steps += action is not None
            if not env.agents:  # type: ignore[attr-defined]
                env.reset()  # type: ignore[attr-defined]
        return steps

    return run


def rate(run: Callable[[int], int], seconds: float) -> tuple[float, float]:
    """Median (wall-clock, CPU-time) steps/s over rounds of 500 steps."""
    run(200)  # warm up
    walls, cpus = [], []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or not walls:
        wall, cpu = time.perf_counter(), time.process_time()
        steps = run(500)
        walls.append(steps / (time.perf_counter() - wall))
        cpus.append(steps / max(time.process_time() - cpu, 1e-9))
    return float(np.median(walls)), float(np.median(cpus))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="timing budget per row")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    original = original_module()
    rows = []
    for name, mode, wrapped in (("env(), numpy pick", "numpy", True),
                                ("env(), sample(mask)", "sample", True),
                                ("raw_env, numpy pick", "numpy", False)):
        ours = gin_rummy_v4.env if wrapped else gin_rummy_v4.raw_env
        wall, cpu = rate(loop(ours, args.seed, mode), args.seconds)
        row = [name, f"{wall:,.0f}", f"{cpu:,.0f}"]
        if original is None:
            row += ["not installed", "", ""]
        else:
            theirs = original.env if wrapped else original.raw_env
            o_wall, o_cpu = rate(loop(theirs, args.seed, mode), args.seconds)
            row += [f"{o_wall:,.0f}", f"{o_cpu:,.0f}", f"{cpu / o_cpu:.1f}x"]
        rows.append(row)
    print_table(
        f"gin_rummy_v4 random-agent loop, steps/s (this machine, ~{args.seconds:.0f} s per cell)",
        ["loop", "hgin wall", "hgin CPU", "PettingZoo 1.26.1 wall", "PettingZoo 1.26.1 CPU",
         "hgin ÷ PettingZoo (CPU)"],
        rows,
    )


if __name__ == "__main__":
    main()
