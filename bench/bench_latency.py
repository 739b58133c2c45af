"""Latency of one ``act`` of the pretrained agent by batch size and torch threads.

Run: ``python bench/bench_latency.py [--sizes 1 4 16 64 128 256 1024] [--threads 1 2]
[--seconds 0.5] [--busy N]``.  Each row is a batch size (the first observation of
``VectorGame(B, "friendly", seed=0)``, as one decision of a game, a search or a
tournament sees it), and each column the milliseconds per ``act``:

* ``T threads``: the network always on T torch threads (``small_batch=0``);
* ``before``: the caller's thread count (torch's default) for every batch, which is
  what ``TorchAgent`` did before it chose threads by batch size;
* ``after``: the agent as shipped: batches under ``SMALL_BATCH`` rows on one thread.

``before / after`` is the speed-up.  ``--busy N`` keeps N other processes spinning
meanwhile, as on a machine whose cores are shared: two threads then wait on each other.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from agents import make_agent
from agents.torch_agent import SMALL_BATCH, TorchAgent
from bench.common import best_time, print_table
from hgin_env.engine import VectorGame


def ms_per_act(agent: TorchAgent, obs: dict, threads: int, small_batch: int,
               seconds: float) -> float:
    """Best milliseconds per ``agent.act(obs)`` on ``threads`` torch threads."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    agent.small_batch = small_batch
    try:
        return 1e3 * best_time(lambda: agent.act(obs), min_seconds=seconds)
    finally:
        torch.set_num_threads(before)
        agent.small_batch = SMALL_BATCH


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16, 64, 128, 256, 1024])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seconds", type=float, default=0.5, help="timing per cell")
    parser.add_argument("--busy", type=int, default=0,
                        help="spinning processes to run alongside (a shared machine)")
    args = parser.parse_args()
    agent = make_agent("pretrained")
    if not isinstance(agent, TorchAgent):
        raise SystemExit("the pretrained agent is not a TorchAgent")
    default = torch.get_num_threads()
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(args.busy)]
    rows = []
    try:
        for size in args.sizes:
            obs = VectorGame(size, "friendly", seed=0).observe()
            fixed = [ms_per_act(agent, obs, t, 0, args.seconds) for t in args.threads]
            before = ms_per_act(agent, obs, default, 0, args.seconds)
            after = ms_per_act(agent, obs, default, SMALL_BATCH, args.seconds)
            rows.append([str(size), *(f"{ms:.3f}" for ms in fixed), f"{before:.3f}",
                         f"{after:.3f}", f"{before / after:.2f}x"])
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()
    columns = ["batch", *(f"{t} thread{'s' * (t != 1)}" for t in args.threads),
               f"before ({default})", "after", "before / after"]
    print_table(f"ms per act, pretrained agent (SMALL_BATCH = {SMALL_BATCH}, torch default "
                f"{default} threads, {args.busy} busy processes)", columns, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
