"""Speed of ``render_mode="rgb_array"``: frames per second.

Run: ``python bench/bench_render.py [--seconds 3] [--rules friendly]``.

Rows, each over whole matches of the Gymnasium env against the ``simple``
agent (the learner plays uniformly random legal moves), resetting when a
match ends:

* ``render() only``: the learner's-view frame of the current position,
  drawn again and again while the game advances one step per frame
  (the step is not timed);
* ``step + render()``: what ``gymnasium.wrappers.RecordVideo`` costs per
  recorded step, the env step included;
* ``step only``: the same loop without frames, for comparison;
* ``AEC render()``: the PettingZoo env's spectator frame (both hands face
  up), one per step of a random-agent loop (the step is not timed).

Rates are per wall-clock second and per CPU second of this process (the
latter is less disturbed by other work sharing the cores), best and median
over rounds of 100 frames.  The first frames of a run also draw the card and
text sprites that later frames reuse; the warm-up excludes them.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import print_table
from common import random_legal as _pick

import hgin_env
from hgin_env.envs.gym_env import HollywoodGinEnv

ROUND = 100


def gym_loop(rules: str, seed: int, render: bool, time_step: bool) -> Callable[[], float]:
    """One round of ``ROUND`` steps; returns the seconds and CPU seconds timed."""
    env = HollywoodGinEnv(opponent="simple", rules=rules, render_mode="rgb_array" if render
                          else None, seat=0)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)

    def run() -> tuple[float, float]:
        nonlocal obs
        wall = cpu = 0.0
        for _ in range(ROUND):
            w, c = time.perf_counter(), time.process_time()
            if time_step:
                obs, _, terminated, _, _ = env.step(_pick(obs["action_mask"], rng))
            if render:
                env.render()
            wall += time.perf_counter() - w
            cpu += time.process_time() - c
            if not time_step:
                obs, _, terminated, _, _ = env.step(_pick(obs["action_mask"], rng))
            if terminated:
                obs, _ = env.reset()
        return wall, cpu

    return run


def aec_loop(rules: str, seed: int) -> Callable[[], tuple[float, float]]:
    env = hgin_env.env(rules=rules, render_mode="rgb_array")
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)

    def run() -> tuple[float, float]:
        wall = cpu = 0.0
        for _ in range(ROUND):
            w, c = time.perf_counter(), time.process_time()
            env.render()
            wall += time.perf_counter() - w
            cpu += time.process_time() - c
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else _pick(obs["action_mask"], rng))
            if not env.agents:
                env.reset()
        return wall, cpu

    return run


def rate(run: Callable[[], tuple[float, float]], seconds: float) -> tuple[list[float], list[float]]:
    """(wall-clock, CPU-time) frames/s of each round."""
    for _ in range(3):
        run()  # warm up: the sprite caches fill
    walls, cpus = [], []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        wall, cpu = run()
        walls.append(ROUND / max(wall, 1e-9))
        cpus.append(ROUND / max(cpu, 1e-9))
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="timing budget per row")
    parser.add_argument("--rules", default="friendly")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cases = [
        ("render() only", gym_loop(args.rules, args.seed, render=True, time_step=False)),
        ("step + render()", gym_loop(args.rules, args.seed, render=True, time_step=True)),
        ("step only", gym_loop(args.rules, args.seed, render=False, time_step=True)),
        ("AEC render()", aec_loop(args.rules, args.seed)),
    ]
    rows = []
    for name, run in cases:
        walls, cpus = rate(run, args.seconds)
        cpu = float(np.median(cpus))
        rows.append([name, f"{max(walls):,.0f}", f"{np.median(walls):,.0f}",
                     f"{max(cpus):,.0f}", f"{cpu:,.0f}", f"{1e3 / cpu:.2f}"])
    print_table(
        f"hgin rgb_array frames/s ({args.rules}, 432x768, this machine, "
        f"~{args.seconds:.0f} s per row)",
        ["loop", "wall best", "wall median", "CPU best", "CPU median", "ms/frame CPU"],
        rows,
    )


if __name__ == "__main__":
    main()
