"""Cost of recording an evaluation (the issue's limit: at most 20% slower).

Run: ``python bench/bench_records.py [--matches 200] [--agents random simple]...
[--rules friendly] [--repeats 3]``.  Per pairing, the same tournament (the same
matches: same seed, duplicate pairs) is played the way ``evaluate.py`` plays it,
without recording, recording to ``.jsonl`` and recording to ``.jsonl.gz``; runs
alternate so a busy machine slows every variant alike, and the best of
``--repeats`` is reported.  Times are the process's CPU seconds (the bench runs
single-threaded), which other jobs on a shared machine barely disturb; wall
seconds are shown beside them.  The overhead is that of the slower recording.
Default pairings: random-simple (the fastest agents, so the largest relative
cost) and simple-simple.

``--instructions`` counts instructions instead (``valgrind --tool=callgrind``,
``PYTHONHASHSEED=0``), which no other load on the machine changes: each
variant runs in a child process at ``--matches`` and at three times that, and
the overhead is the ratio of the two slopes, so start-up costs cancel.  Slow
(valgrind runs Python ~50x slower); use a small ``--matches``, e.g. 20.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.evaluation.tournament import run_tournament
from bench.common import print_table, print_verdict
from hgin_env.records import RecordWriter

LIMIT = 0.20


def _timed(specs: list[str], args: argparse.Namespace,
           path: Path | None) -> tuple[float, float, dict]:
    """(CPU seconds, wall seconds, pairing summary) of one tournament."""
    start, cpu = time.perf_counter(), time.process_time()
    if path is None:
        result = run_tournament(specs, args.matches, args.rules, args.seed)
    else:
        with RecordWriter(path) as writer:
            result = run_tournament(specs, args.matches, args.rules, args.seed,
                                    record=writer.write)
    return time.process_time() - cpu, time.perf_counter() - start, result.pairs[0].summary()


def _child(specs: list[str], matches: int, rules: str, seed: int, gz: str) -> None:
    """One tournament, recorded to ``gz`` unless it is "off" (run under valgrind)."""
    if gz == "off":
        run_tournament(specs, matches, rules, seed)
        return
    with tempfile.TemporaryDirectory() as tmp, RecordWriter(Path(tmp) / f"m.{gz}") as writer:
        run_tournament(specs, matches, rules, seed, record=writer.write)


def _instructions(specs: list[str], matches: int, args: argparse.Namespace, variant: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out",
               sys.executable, __file__, "--child", variant, "--matches", str(matches),
               "--rules", args.rules, "--seed", str(args.seed), "--agents", *specs]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def instruction_overheads(pairings: list[list[str]], args: argparse.Namespace) -> float:
    """The slope method under callgrind; prints a table, returns the worst overhead."""
    rows, worst = [], 0.0
    small, large = args.matches, 3 * args.matches
    for specs in pairings:
        slope = {}
        for variant in ("off", "jsonl", "jsonl.gz"):
            counts = [_instructions(specs, n, args, variant) for n in (small, large)]
            slope[variant] = (counts[1] - counts[0]) / (large - small)
        over = {v: slope[v] / slope["off"] - 1 for v in ("jsonl", "jsonl.gz")}
        worst = max(worst, *over.values())
        rows.append([f"{specs[0]}-{specs[1]}", f"{small} / {large}",
                     f"{slope['off'] / 1e6:.1f}", f"{100 * over['jsonl']:+.1f}%",
                     f"{100 * over['jsonl.gz']:+.1f}%"])
    print_table("Recording cost in instructions (callgrind, slope between the two sizes)",
                ["pairing", "matches", "off: M instructions/match", "jsonl", "jsonl.gz"], rows)
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--matches", type=int, default=200)
    parser.add_argument("--agents", nargs=2, action="append", metavar="SPEC",
                        help="one pairing; repeat for more (default: random simple, "
                             "simple simple)")
    parser.add_argument("--rules", default="friendly")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="report the best of N runs")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind instead of timing")
    parser.add_argument("--child", choices=["off", "jsonl", "jsonl.gz"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    pairings = args.agents or [["random", "simple"], ["simple", "simple"]]
    if args.child:
        _child(pairings[0], args.matches, args.rules, args.seed, args.child)
        return 0
    if args.instructions:
        worst = instruction_overheads(pairings, args)
        print_verdict(worst, LIMIT, "more instructions")
        return 0
    rows, worst = [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        variants = {"off": None, "jsonl": Path(tmp) / "m.jsonl",
                    "jsonl.gz": Path(tmp) / "m.jsonl.gz"}
        for specs in pairings:
            best = dict.fromkeys(variants, float("inf"))
            wall = dict.fromkeys(variants, float("inf"))
            summaries = {}
            for _ in range(args.repeats):
                for name, path in variants.items():
                    seconds, wall_s, summaries[name] = _timed(list(specs), args, path)
                    best[name] = min(best[name], seconds)
                    wall[name] = min(wall[name], wall_s)
            for summary in summaries.values():
                del summary["seconds"]
            if any(summary != summaries["off"] for summary in summaries.values()):
                raise AssertionError("recording changed the results")
            sizes = {name: path.stat().st_size for name, path in variants.items() if path}
            overhead = max(best["jsonl"], best["jsonl.gz"]) / best["off"] - 1
            worst = max(worst, overhead)
            rows.append([f"{specs[0]}-{specs[1]}", str(summaries["off"]["matches"]),
                         *(f"{best[v]:.2f} ({wall[v]:.2f})" for v in variants),
                         f"{100 * overhead:+.1f}%",
                         f"{sizes['jsonl'] / 1e3 / summaries['off']['matches']:.1f}",
                         f"{sizes['jsonl.gz'] / 1e3 / summaries['off']['matches']:.1f}"])
    print_table(f"Recording cost ({args.rules}, best of {args.repeats})",
                ["pairing", "matches", "off: CPU s (wall)", "jsonl", "jsonl.gz", "CPU overhead",
                 "kB/match", "kB/match gz"], rows)
    print_verdict(worst, LIMIT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
