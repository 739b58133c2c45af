"""Training on Ray workers against the in-process trainer, side by side in one run.

    python bench/bench_distributed.py [--config default] [--updates 4] [--workers 0 1 2]
                                      [--learner-updates 3] [--set env.num_games=4096 ...]

1. **Throughput** for each worker count (0 = in-process): one trainer each, its
   schedule at the start of the PPO phase, one warm-up update, then ``--updates``
   timed ones.  Environment steps per second of wall time; CPU seconds per 1k steps
   (this process and every process below it: the collection thread or the Ray
   workers, and Ray's own raylet and GCS); each collector's own rate (its shard's
   steps over its own collection time); the learner's time; the bytes the learner
   receives per update (the shards' rollouts and end states, read from the object
   store) and sends (the weights, one object for all workers).
2. **The learner alone**: samples per second through forward and backward for fp32
   and bf16 autocast (``run.learner_precision``), one and two torch threads, on the
   CPU and, where there is one, on CUDA; and the policy's forward pass at a
   collection step's batch, fp32 against bf16.
3. **A model** of throughput for N workers from those rates (a model, not a
   measurement): ``min(N x per-worker rate, learner rate / (epochs x samples per
   step))``, and the N where the learner becomes the bound.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from agents.training.config import load_config
from agents.training.ppo import Trainer
from bench.common import print_table


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of ``pid`` and every live process below it."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    children: dict[int, list[int]] = {}
    for child, (parent, _) in stats.items():
        children.setdefault(parent, []).append(child)
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += stats.get(p, (0, 0.0))[1]
        todo.extend(children.get(p, []))
    return total


def time_workers(cfg: dict[str, Any], workers: int, updates: int) -> dict[str, float]:
    """One trainer with ``workers`` (0 = in-process), timed over ``updates`` updates."""
    cfg = {s: dict(v) for s, v in cfg.items()}
    cfg["distributed"]["workers"] = workers
    trainer = Trainer(cfg)
    try:
        imi = cfg["imitation"]
        trainer.env_steps = int(imi["steps"]) + int(imi["kickstart_steps"]) \
            if imi["teacher"] != "none" else 0
        trainer.update()  # warm-up: allocations, first snapshot, the workers' first rollout
        me = os.getpid()
        c0, t0 = _cpu_seconds(me), time.perf_counter()
        learn = collect = received = 0.0
        actor = []
        for _ in range(updates):
            out = trainer.update()
            learn += out["perf/learn_s"]
            collect += out["perf/collect_s"]
            received += out.get("perf/received_bytes", 0.0)
            actor.append(out["perf/actor_collect_s"])
        wall = time.perf_counter() - t0
        cpu = _cpu_seconds(me) - c0
        steps = updates * trainer.num_games * trainer.steps
        shard_steps = steps / updates / max(1, workers)
        weights = sum(v.numel() * v.element_size() for v in trainer.model.state_dict().values())
        return {"steps_per_s": steps / wall, "cpu_per_1k": 1000 * cpu / steps,
                "actor_rate": shard_steps / (sum(actor) / len(actor)),
                "learn_s": learn / updates, "wait_s": collect / updates,
                "received_mb": received / updates / 1e6,
                "sent_mb": (weights / 1e6) if workers else 0.0,
                "samples_per_step": out["samples"] / (trainer.num_games * trainer.steps),
                "epochs": float(cfg["ppo"]["epochs"])}
    finally:
        trainer.close()


def learner_rates(cfg: dict[str, Any], updates: int) -> list[tuple[str, float]]:
    """Samples/s through forward + backward of ``Trainer.learn`` on one collected rollout."""
    out = []
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        for precision in ("fp32", "bf16"):
            for threads in ((1, 2) if device == "cpu" else (1,)):
                c = {s: dict(v) for s, v in cfg.items()}
                c["run"]["learner_precision"] = precision
                c["run"]["pipeline"] = False
                c["distributed"]["workers"] = 0
                torch.set_num_threads(threads)
                trainer = Trainer(c, device=device)
                imi = c["imitation"]
                trainer.env_steps = int(imi["steps"]) + int(imi["kickstart_steps"]) \
                    if imi["teacher"] != "none" else 0
                batch = trainer.collection.shard.collect(trainer.plan(),
                                                         trainer.collection.shard.buffers())
                trainer.learn(batch)  # warm-up
                samples = seconds = 0.0
                for _ in range(updates):
                    if device == "cuda":
                        torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    res = trainer.learn(batch)
                    if device == "cuda":
                        torch.cuda.synchronize()
                    seconds += time.perf_counter() - t0
                    samples += res["perf/learn_samples"]
                label = f"{device} {precision}" + (f" x{threads}" if device == "cpu" else "")
                out.append((label, samples / seconds))
                trainer.close()
    torch.set_num_threads(1)
    return out


def forward_rates(cfg: dict[str, Any], rows: int, repeats: int = 30) -> list[tuple[str, float]]:
    """The policy's forward pass at one collection step's batch: rows/s, fp32 and bf16."""
    from agents.training.shard import build_network

    net = build_network(cfg).eval()
    x = torch.rand(rows, net.in_dim).round()
    out = []
    for precision in ("fp32", "bf16"):
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16,
                                                    enabled=precision == "bf16"):
            net(x)
            t0 = time.perf_counter()
            for _ in range(repeats):
                net(x)
            out.append((precision, rows * repeats / (time.perf_counter() - t0)))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default="default")
    p.add_argument("--updates", type=int, default=4)
    p.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--learner-updates", type=int, default=3)
    p.add_argument("--set", dest="overrides", action="append", default=[])
    args = p.parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    torch.set_num_threads(int(cfg["run"]["threads"]) or 1)
    env = cfg["env"]
    import ray

    ray.init(include_dashboard=False, configure_logging=False, log_to_driver=False)
    try:
        results = {w: time_workers(cfg, w, args.updates) for w in args.workers}
    finally:
        ray.shutdown()
    base = results.get(0)
    rows = []
    for w, r in results.items():
        ratio = f"{r['steps_per_s'] / base['steps_per_s']:.2f}" if base else ""
        rows.append(["in-process" if w == 0 else f"Ray N={w}",
                     f"{r['steps_per_s']:,.0f}", ratio, f"{r['cpu_per_1k']:.3f}",
                     f"{r['actor_rate']:,.0f}", f"{r['learn_s']:.2f}", f"{r['wait_s']:.2f}",
                     f"{r['received_mb']:.1f}", f"{r['sent_mb']:.2f}"])
    load = os.getloadavg()[0]
    print_table(f"bench_distributed: config {args.config}, {env['num_games']} games x "
                f"{env['rollout_steps']} steps per update, PPO phase, {args.updates} timed "
                f"updates; {os.cpu_count()} CPUs, load average {load:.2f}",
                ["collection", "steps/s", "ratio", "CPU s/1k", "collector steps/s",
                 "learn s", "wait s", "MB in", "MB out"], rows)
    learner = learner_rates(cfg, args.learner_updates)
    print_table("the learner alone: samples/s through forward + backward",
                ["device, precision, threads", "samples/s"],
                [[label, f"{rate:,.0f}"] for label, rate in learner])
    any_r = next(iter(results.values()))
    batch_rows = int(env["num_games"] * 0.75)  # learner seats to move in a step (about)
    fwd = forward_rates(cfg, batch_rows)
    print_table(f"the policy's forward pass at a collection step ({batch_rows} rows, CPU, "
                "one thread)", ["precision", "rows/s"],
                [[label, f"{rate:,.0f}"] for label, rate in fwd])
    # A worker with a core to itself: N=1 here (with N=2 on two cores the workers share
    # theirs with the learner).
    one = results.get(1, any_r)
    per_worker = one["actor_rate"]
    need = any_r["epochs"] * any_r["samples_per_step"]  # learner samples per env step
    model_rows = []
    for label, rate in learner:
        bound = rate / need
        cut = bound / per_worker
        model_rows.append([label, f"{bound:,.0f}", f"{cut:.1f}"] + [
            f"{min(n * per_worker, bound):,.0f}" for n in (1, 2, 4, 8, 14, 32)])
    print_table(f"a model, not a measurement: steps/s = min(N x {per_worker:,.0f}, learner "
                f"samples/s / ({any_r['epochs']:.0f} epochs x "
                f"{any_r['samples_per_step']:.2f} samples per step))",
                ["learner", "bound", "binds at N", "N=1", "N=2", "N=4", "N=8", "N=14",
                 "N=32"], model_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
