"""Training throughput: environment steps per second, collection plus update.

    python bench/bench_train.py [--config default] [--updates 4] [--threads N]
                                [--phase all|imitation|ppo] [--progress P]
                                [--set env.num_games=4096 ...]

A run of a config with an ``[imitation]`` teacher has two phases that cost
differently: imitation (the heuristic teacher plays every learner seat, the
network is fitted by cross-entropy) and self-play PPO.  Each phase is timed
on its own trainer: one warm-up update, then ``--updates`` timed ones.  The
PPO phase plays the opponent mixture of the schedule at ``--progress``
(fraction of the run; 0 = its start).  Throughput is environment steps (one
action in one game) per second of wall time, split into collection and
learning.  The machine's load average is printed too: on a shared machine
other processes take CPU from the run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from agents.training.config import load_config
from agents.training.ppo import Trainer
from bench.common import print_table


def time_phase(cfg: dict, updates: int, env_steps: int) -> tuple[list[list[str]], float, float]:
    """Timed updates of a trainer whose schedule starts at ``env_steps``.

    Returns table rows, steps/s and the process CPU cores kept busy.
    """
    trainer = Trainer(cfg)
    trainer.env_steps = env_steps
    trainer.update()  # warm-up: allocations, first snapshot, opponent construction
    rows = []
    total_steps = 0
    wall = collect = learn = cpu = 0.0
    for _ in range(updates):
        c0, t0 = time.process_time(), time.perf_counter()
        out = trainer.update()
        dt = time.perf_counter() - t0
        cpu += time.process_time() - c0
        steps = trainer.num_games * trainer.steps
        total_steps += steps
        wall += dt
        collect += out["perf/collect_s"]
        learn += out["perf/learn_s"]
        rows.append([str(trainer.updates), f"{steps:,}", f"{int(out['samples']):,}",
                     f"{out['perf/collect_s']:.2f}", f"{out['perf/learn_s']:.2f}",
                     f"{steps / dt:,.0f}"])
    rows.append(["all", f"{total_steps:,}", "", f"{collect:.2f}", f"{learn:.2f}",
                 f"{total_steps / wall:,.0f}"])
    return rows, total_steps / wall, cpu / wall


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default="default")
    p.add_argument("--updates", type=int, default=4)
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads (default: run.threads of the config, 0 = torch's default)")
    p.add_argument("--phase", choices=["all", "imitation", "ppo"], default="all")
    p.add_argument("--progress", type=float, default=0.0,
                   help="where in the run the PPO phase's opponent mixture is taken (0..1)")
    p.add_argument("--set", dest="overrides", action="append", default=[])
    args = p.parse_args(argv)
    if not 0.0 <= args.progress <= 1.0:
        p.error("--progress must be in [0, 1]")
    cfg = load_config(args.config, args.overrides)
    threads = cfg["run"]["threads"] if args.threads is None else args.threads
    if threads:
        torch.set_num_threads(threads)
    total = cfg["run"]["total_steps"]
    imitation = cfg["imitation"]["teacher"] != "none" and cfg["imitation"]["steps"] > 0
    phases = []
    if imitation and args.phase in ("all", "imitation"):
        phases.append(("imitation", 0))
    if args.phase in ("all", "ppo"):
        start = max(int(args.progress * total), cfg["imitation"]["steps"] if imitation else 0)
        phases.append(("ppo", start))
    if not phases:
        p.error(f"config {args.config} has no imitation phase")
    mode = "pipelined: collection overlaps learning" if cfg["run"]["pipeline"] else "sequential"
    summary = []
    for name, start in phases:
        rows, rate, busy = time_phase(cfg, args.updates, start)
        label = name if name == "imitation" else f"{name} (schedule at {start / total:.0%})"
        print_table(
            f"bench_train {label}: config {args.config}, {cfg['env']['num_games']} games x "
            f"{cfg['env']['rollout_steps']} steps, hidden {cfg['model']['hidden']}, "
            f"{torch.get_num_threads()} torch thread(s), {mode}",
            ["update", "env steps", "samples",
             "collect s (not overlapped)" if cfg["run"]["pipeline"] else "collect s",
             "learn s", "env steps/s"], rows)
        summary.append([label, f"{rate:,.0f}", f"{busy:.2f}"])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print_table(f"environment steps/s (collection + update); load average {load:.2f} "
                f"on {os.cpu_count()} CPUs", ["phase", "env steps/s", "CPU cores busy"],
                summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
