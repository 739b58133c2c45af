"""Training throughput: environment steps per second, collection plus PPO update.

    python bench/bench_train.py [--config default] [--updates 4] [--threads N]
                                [--set env.num_games=4096 ...]

Runs the trainer of ``--config`` for one warm-up update and then ``--updates``
timed ones, and reports environment steps (one action in one game) per second
of wall time, split into collection and learning.  The machine's load average
is printed too: on a shared machine other processes take CPU from the run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from agents.ppo import Trainer
from agents.train_config import load_config
from bench.common import print_table


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default="default")
    p.add_argument("--updates", type=int, default=4)
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads (default: run.threads of the config, 0 = torch's default)")
    p.add_argument("--set", dest="overrides", action="append", default=[])
    args = p.parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    threads = cfg["run"]["threads"] if args.threads is None else args.threads
    if threads:
        torch.set_num_threads(threads)
    trainer = Trainer(cfg)
    trainer.update()  # warm-up: allocations, first snapshot, opponent construction
    rows = []
    total_steps = 0
    wall = collect = learn = cpu = 0.0
    for _ in range(args.updates):
        c0, t0 = time.process_time(), time.perf_counter()
        out = trainer.update()
        dt = time.perf_counter() - t0
        dc = time.process_time() - c0
        steps = trainer.num_games * trainer.steps
        total_steps += steps
        wall += dt
        cpu += dc
        collect += out["perf/collect_s"]
        learn += out["perf/learn_s"]
        rows.append([str(trainer.updates), f"{steps:,}", f"{int(out['samples']):,}",
                     f"{out['perf/collect_s']:.2f}", f"{out['perf/learn_s']:.2f}",
                     f"{steps / dt:,.0f}"])
    rows.append(["all", f"{total_steps:,}", "", f"{collect:.2f}", f"{learn:.2f}",
                 f"{total_steps / wall:,.0f}"])
    mode = "pipelined: collection overlaps learning" if trainer.pipeline else "sequential"
    print_table(
        f"bench_train: config {args.config}, {trainer.num_games} games x "
        f"{trainer.steps} steps, hidden {cfg['model']['hidden']}, "
        f"{torch.get_num_threads()} torch thread(s), {mode}",
        ["update", "env steps", "samples",
         "collect s (not overlapped)" if trainer.pipeline else "collect s", "learn s",
         "env steps/s"], rows)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"environment steps/s (collection + update): {total_steps / wall:,.0f}   "
          f"[process CPU {cpu / wall:.2f} cores busy; load average {load:.2f} "
          f"on {os.cpu_count()} CPUs]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
