"""The fine-tune recipe's training speed on two checkouts, side by side.

Run: ``git worktree add /tmp/hgin_old <commit>`` then
``python bench/bench_finetune_speed.py --old /tmp/hgin_old [--new .] [--rounds 2]
[--updates 3] [--config finetune]``.

Why: heuristic opponents (``strong`` plays 30% of ``finetune.toml``'s games) set a
fine-tune's speed, so a change to them is judged by the recipe's environment steps per
second before and after.  Each round times ``bench/bench_train.py``'s PPO phase (one
warm-up update, then ``--updates`` timed ones, schedule at its start) of each checkout in
a fresh process, alternating, with one torch thread, ``OMP_NUM_THREADS=1`` and the
pipeline off (collection and learning in turn, on one core), so both checkouts meet the
same load; the table gives each round and the best.  On a shared machine read the ratio,
not the absolute rates.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import print_table

ROOT = Path(__file__).resolve().parent.parent

_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
import torch
torch.set_num_threads(1)
from agents.training.config import load_config
from bench.bench_train import time_phase
cfg = load_config({config!r}, ["run.pipeline=false", "run.threads=1"])
_, rate, _ = time_phase(cfg, {updates}, 0)
print(json.dumps({{"rate": rate}}))
"""


def steps_per_second(root: Path, config: str, updates: int) -> float:
    """Environment steps/s of the PPO phase of ``config`` run from checkout ``root``."""
    code = _CHILD.format(root=str(root), config=config, updates=updates)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["rate"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="checkout before the change")
    parser.add_argument("--new", type=Path, default=ROOT, help="checkout after (default: this)")
    parser.add_argument("--config", default="finetune")
    parser.add_argument("--updates", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(args.rounds):
        for name in ("old", "new"):
            rates[name].append(steps_per_second(getattr(args, name).resolve(), args.config,
                                                args.updates))
    rows = [[f"round {i + 1}", f"{o:,.0f}", f"{n:,.0f}", f"{n / o:.2f}"]
            for i, (o, n) in enumerate(zip(rates["old"], rates["new"], strict=True))]
    best_old, best_new = max(rates["old"]), max(rates["new"])
    rows.append(["best", f"{best_old:,.0f}", f"{best_new:,.0f}", f"{best_new / best_old:.2f}"])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print_table(f"{args.config}: env steps/s, PPO phase, 1 thread, pipeline off; "
                f"load average {load:.2f} on {os.cpu_count()} CPUs",
                ["", f"old ({args.old})", f"new ({args.new})", "new / old"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
