"""Self-play PPO training for Hollywood Gin.

    hgin train --config quick [--logdir runs/quick]        (or python train.py ...)
               [--device cpu|cuda] [--resume runs/quick/checkpoints/latest.pt]
               [--opponent SPEC] [--set ppo.lr=1e-4 --set env.num_games=512 ...]
               [--workers N [--address auto|HOST:PORT]]

``--config`` takes a shipped config by name (quick, default, best_response) or a
TOML file; ``--print-config`` prints the resolved config to copy and edit.
``--opponent SPEC`` trains against that one frozen agent only and evaluates
against it (a best response: ``--config best_response``).

Writes to the log directory: ``config.toml`` (the resolved config; a resume
leaves it as it is, names every setting it changes on stderr and writes its own
full config to ``config.resume-N.toml``, headed by those changes), TensorBoard
scalars, ``checkpoints/latest.pt`` (the full training state,
atomically replaced every ``run.checkpoint_every`` updates and on Ctrl-C /
SIGTERM), ``agent_final.pt`` and ``agent_best.pt`` (model-only agents for
``make_agent("ckpt:PATH")``), ``agents/update_NNNNN.pt`` at each evaluation,
``eval.jsonl``, ``final_eval.json``, ``learning_curve.png`` / ``.svg`` (``hgin plot``
draws several runs), and ``records/eval_NNNNN.jsonl.gz`` (``records/final_eval.jsonl.gz``
for the final evaluation): the first ``run.eval_record_matches`` matches against
each opponent as match records (docs/records.md).  At the end it prints the
evaluation table of the new agent against the baselines.

``--workers N`` collects the rollouts on N Ray actors (``pip install 'hgin[ray]'``), each
playing ``env.num_games / N`` of the games, while this process learns; ``--address``
joins a running Ray cluster instead of starting a local one.  The same seed and N give
the same run; N = 1 gives the in-process run.  A lost worker is replaced and its shard's
rollout collected again from the state it began from; with every worker lost the run
stops with exit code 1 and keeps its last checkpoint.

The run holds a lock on its log directory (``.train.lock``) until it ends, so
a second run into the same directory is refused.  It stops at the last whole
update within ``run.total_steps``.  A NaN or infinity in a loss, gradient or
parameter stops it before anything is saved.  Exit codes: 0 finished, 1
diverged or every worker lost, 2 bad config / checkpoint / log directory, 130 (Ctrl-C) or 143
(SIGTERM) stopped and resumable, 141 output closed (``| head``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agents.training.ppo import Trainer

# torch and the trainer are imported inside the functions that need them: the import
# takes seconds, and a Ctrl-C during it must end with one line, not a traceback.

PROG = "train.py"
#: Settings a resumed run cannot change: they fix the network, the games' state and
#: the rules the checkpoint was trained for.
FIXED_ON_RESUME = (("env", "rules"), ("env", "num_games"), ("model", "hidden"),
                   ("model", "card_head"), ("model", "features"), ("model", "knock_gate"),
                   ("model", "critic"), ("model", "critic_hidden"), ("model", "init"))


EXIT_CODES = """\
exit codes:
  0 finished, 1 diverged (nothing saved from the bad update) or every worker lost (the
  last checkpoint kept), 2 bad config, checkpoint or log directory, 130 Ctrl-C / 143
  SIGTERM (stopped, resumable), 141 output closed
"""


def _integer(text: str) -> int:
    """An integer flag value; integral floats such as ``1e5`` are accepted."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not value.is_integer():
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer (e.g. 100000 or 1e5)")
    return int(value)


def parse_args(argv: list[str] | None = None, prog: str = PROG) -> argparse.Namespace:
    from agents.training.config import shipped_configs

    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0],
                                epilog=EXIT_CODES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="a TOML file or the name of a shipped config ("
                   + ", ".join(shipped_configs()) + "; default: quick)")
    p.add_argument("--print-config", action="store_true",
                   help="print the resolved config (with --set applied) as TOML and exit: "
                        "a starting point for a config file of your own")
    p.add_argument("--logdir", help="output folder (default: runs/<config name>)")
    p.add_argument("--resume", help="a training checkpoint (checkpoints/latest.pt) to continue")
    p.add_argument("--device", help="cpu, cuda or cuda:N (overrides run.device)")
    p.add_argument("--seed", type=_integer, help="overrides run.seed")
    p.add_argument("--total-steps", type=_integer,
                   help="overrides run.total_steps (the run ends at the last whole update "
                        "within it)")
    p.add_argument("--threads", type=_integer,
                   help="torch CPU threads (overrides run.threads; 0 leaves torch's default, "
                        "one per core)")
    p.add_argument("--opponent", metavar="SPEC",
                   help="train against this agent spec only (random, simple, strong, "
                        "pretrained, ckpt:PATH), frozen, and evaluate against it; --set "
                        "overrides apply after it")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. --set ppo.lr=1e-4 (repeatable)")
    p.add_argument("--workers", type=_integer, metavar="N",
                   help="collect on N Ray workers (overrides distributed.workers; 0: in this "
                        "process)")
    p.add_argument("--address", metavar="ADDR",
                   help="with --workers: join the Ray cluster at ADDR ('auto' or HOST:PORT; "
                        "overrides distributed.address) instead of starting a local one")
    p.add_argument("--no-progress", action="store_true", help="plain log lines, no progress bar")
    p.add_argument("--no-final-eval", action="store_true", help="skip the final evaluation table")
    p.set_defaults(prog=prog)
    args = p.parse_args(argv)
    if args.workers is not None and args.workers < 0:
        p.error(f"argument --workers: {args.workers} is not a number of workers (0 or more)")
    return args


def _command(args: argparse.Namespace) -> str:
    """How the user started this run, to repeat in a hint (``hgin train``, ``python train.py``)."""
    prog = getattr(args, "prog", PROG)
    return f"python {prog}" if prog.endswith(".py") else prog


def resolve_config(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The run's config and, with ``--resume``, the checkpoint it continues."""
    from agents.torch_agent import CheckpointError, load_checkpoint
    from agents.training.config import load_config, parse_override, single_opponent, validate

    overrides = single_opponent(args.opponent) if args.opponent is not None else []
    overrides += args.overrides
    for flag, key in ((args.device, "run.device"), (args.seed, "run.seed"),
                      (args.total_steps, "run.total_steps"), (args.threads, "run.threads"),
                      (args.workers, "distributed.workers"),
                      (args.address, "distributed.address")):
        if flag is not None:
            overrides.append(f"{key}={json.dumps(flag)}")
    ckpt = None
    if args.resume:
        ckpt = load_checkpoint(args.resume)
        if not isinstance(ckpt.get("trainer"), dict):
            raise CheckpointError(f"{args.resume}: holds only a model, not a training state; "
                                  "resume from <logdir>/checkpoints/latest.pt")
        saved = ckpt.get("config")
        if not isinstance(saved, dict) or not all(isinstance(v, dict) for v in saved.values()):
            raise CheckpointError(f"{args.resume}: its saved training config is not a table "
                                  "of sections")
        if args.config:
            cfg = load_config(args.config, overrides)
        else:
            raw = {s: dict(v) for s, v in saved.items()}
            for item in overrides:
                section, key, value = parse_override(item)
                raw.setdefault(section, {})[key] = value
            cfg = validate(raw)
        check_resume_config(saved, cfg, args.resume)
    else:
        cfg = load_config(args.config or "quick", overrides)
    return cfg, ckpt


def check_resume_config(saved: dict[str, Any], cfg: dict[str, Any], path: str) -> None:
    """Refuse to resume with a setting in :data:`FIXED_ON_RESUME` changed, naming it."""
    for section, key in FIXED_ON_RESUME:
        before = saved.get(section, {}).get(key)
        now = cfg[section][key]
        if before is not None and before != now:
            raise ValueError(f"cannot resume {path} with {section}.{key} = {json.dumps(now)}: "
                             f"it was trained with {section}.{key} = {json.dumps(before)}, "
                             "and that setting cannot change within a run")


def config_changes(saved: dict[str, Any], cfg: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(section.key, old, new)`` for every setting of ``cfg`` that differs from the
    checkpoint's ``saved`` config, in the config's order.  A key the checkpoint lacks (an
    older version) is compared with its default, which is what that run used."""
    from agents.training.config import validate

    try:
        before = validate({s: dict(v) for s, v in saved.items()})
    except ValueError:  # a section or key this version no longer knows: compare as saved
        before = saved
    missing = object()
    changes = []
    for section, keys in cfg.items():
        for key, now in keys.items():
            old = before.get(section, {}).get(key, missing)
            if old is missing or old != now:
                changes.append((f"{section}.{key}", None if old is missing else old, now))
    return changes


def _shown(value: Any) -> str:
    """A config value as the TOML / ``--set`` text a user would type."""
    from agents.training.config import toml_value

    return "(unset)" if value is None else toml_value(value)


def write_resume_config(logdir: Path, cfg: dict[str, Any], saved: dict[str, Any],
                        changes: list[tuple[str, Any, Any]], source: str,
                        updates: int) -> Path:
    """Record a resume without touching the run's original ``config.toml``: the resumed
    run's full config goes to ``config.resume-N.toml`` (N counting the resumes), headed by
    the settings it changed.  A log folder without a ``config.toml`` (a resume into a new
    ``--logdir``) first gets the checkpoint's config there."""
    from agents.training.config import to_toml

    original = logdir / "config.toml"
    if not original.exists():
        original.write_text(to_toml(saved))
    done = [int(f.name[len("config.resume-"):-len(".toml")])
            for f in logdir.glob("config.resume-*.toml")
            if f.name[len("config.resume-"):-len(".toml")].isdigit()]
    n = max(done, default=0) + 1
    lines = [f"# Resume {n} of this run: {source}, from update {updates}.",
             "# The full config of the resumed run; config.toml holds the run's original.",
             "# Settings changed from the checkpoint's config:" if changes
             else "# No setting changed from the checkpoint's config."]
    lines += [f"#   {key} = {_shown(new)}  (was {_shown(old)})" for key, old, new in changes]
    path = logdir / f"config.resume-{n}.toml"
    path.write_text("\n".join(lines) + "\n\n" + to_toml(cfg))
    return path


def remove_orphan_temporaries(logdir: Path) -> list[Path]:
    """Delete the temporary files of checkpoint writes a killed run left behind
    (``.latest.pt.*.tmp``, several MB each).  Call only while holding the run's lock."""
    removed = []
    for folder in (logdir, logdir / "checkpoints", logdir / "agents"):
        for tmp in sorted(folder.glob(".*.pt.*.tmp")) if folder.is_dir() else []:
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


class RunLocked(ValueError):
    """Another training run holds the log directory."""


class _GiveUp(KeyboardInterrupt):
    """A second Ctrl-C / SIGTERM: stop at once, without saving, with that signal's code."""

    def __init__(self, exit_code: int) -> None:
        super().__init__(exit_code)
        self.exit_code = exit_code


class _Stop:
    """Ctrl-C / SIGTERM, or the output pipe closing: finish the current update, save, exit.

    ``exit_code`` follows the shell's convention for the signal that stopped the run
    (130 for Ctrl-C, 143 for SIGTERM, 141 for a closed pipe).  A collection waiting on a
    stuck worker gives it up sooner once this is set (``RayCollection.stopping``), so the
    update ends within seconds.
    """

    def __init__(self) -> None:
        self.requested = False
        self.exit_code = 0
        self._old: dict[int, Any] = {}

    def __enter__(self) -> _Stop:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._old[sig] = signal.signal(sig, self._handler)
            except ValueError:  # not the main thread
                pass
        return self

    def request(self, exit_code: int) -> None:
        self.requested = True
        self.exit_code = self.exit_code or exit_code

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested:  # second signal: give up at once
            raise _GiveUp(128 + signum)
        self.request(128 + signum)

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


def status_line(out: dict[str, float], rate: float, last_eval: dict[str, dict[str, float]],
                eval_update: int) -> str:
    """The progress line's middle: what phase the run is in, its speed, its entropy and the
    latest evaluation, each labelled (the imitation figure is the share of the teacher's
    moves the network predicts, not progress)."""
    parts = [phase_label(out)]
    parts.append(f"{rate / 1000:.1f}k steps/s")
    parts.append(f"entropy {out.get('loss/entropy', 0):.2f}")
    if last_eval:
        rates = ", ".join(f"{k} {100 * v['win_rate']:.0f}%" for k, v in last_eval.items())
        parts.append(f"eval at update {eval_update}: match wins vs {rates}")
    return "  ".join(parts)


def phase_label(out: dict[str, float]) -> str:
    """The phase an update belongs to (imitation, kickstarted PPO or PPO), with the
    figure that tells how it goes, so the progress line names it throughout the run."""
    if "imitation/accuracy" in out or out.get("schedule/imitate", 0.0) > 0:
        accuracy = out.get("imitation/accuracy")
        shown = "" if accuracy is None else f" (teacher-move accuracy {100 * accuracy:.0f}%)"
        return "imitation" + shown
    kick = out.get("schedule/kickstart", 0.0)
    if kick > 0:
        return f"ppo, kickstarted (teacher weight {kick:.2f})"
    return "ppo"


def _minutes(seconds: float) -> str:
    return f"{max(seconds, 0.0) / 60:.1f} min"


def _stdout_closed() -> None:
    """After a ``BrokenPipeError`` (``train.py ... | head``): send further output nowhere,
    so neither later prints nor the interpreter's final flush raise again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def run_evaluation(trainer: Trainer, matches: int, opponents: list[str],
                   seed: int = 2024, record_matches: int = 0,
                   record_path: Path | None = None) -> dict[str, dict[str, float]]:
    """The learner (greedy) against each baseline, in duplicate matches.

    Rates and their 95% intervals come from ``agents.evaluation.arena.duplicate_rates``
    (pair-clustered Wilson), the same evaluator as ``evaluate.py``, flattened
    for the logs: ``win_rate``/``ci_low``/``ci_high`` for matches, and
    ``column_*``/``hand_*`` likewise.  With ``record_path``, the first
    ``record_matches`` matches against each opponent are written there as
    match records (docs/records.md), so a run's games can be watched later.
    """
    from agents.evaluation.arena import duplicate_rates
    from agents.evaluation.tournament import record_keeper
    from agents.torch_agent import TorchAgent
    from agents.training.ppo import make_baseline
    from hgin_env.records.format import RecordWriter
    from hgin_env.rules import profile_name

    agent = TorchAgent(trainer.model, greedy=True, device=trainer.device, name="learner")
    writer = None
    if record_matches > 0 and record_path is not None:
        record_path.parent.mkdir(parents=True, exist_ok=True)
        writer = RecordWriter(record_path)
    results = {}
    try:
        for spec in opponents:
            opp = make_baseline(spec, seed=seed, rules=trainer.rules)
            keep = None
            if writer is not None:
                context = {"update": trainer.updates, "env_steps": trainer.env_steps,
                           "eval_seed": seed}
                keep = record_keeper(writer.write, ("learner", spec), trainer.rules,
                                     str(profile_name(trainer.rules)), context,
                                     first=writer.count)
            rates = duplicate_rates(agent, opp, matches, trainer.rules, seed=seed, record=keep,
                                    record_matches=record_matches)
            results[spec] = flatten_rates(rates)
    finally:
        if writer is not None:
            writer.close()
    trainer.model.train()
    return results


def flatten_rates(rates: dict[str, Any]) -> dict[str, float]:
    """``duplicate_rates``' nested report as flat scalars (TensorBoard, eval.jsonl)."""
    match, column, hand = rates["match"], rates["column"], rates["hand"]
    return {"matches": float(rates["matches"]),
            "win_rate": match["rate"], "ci_low": match["low"], "ci_high": match["high"],
            "column_rate": column["rate"], "column_low": column["low"],
            "column_high": column["high"],
            "hand_rate": hand["rate"], "hand_low": hand["low"], "hand_high": hand["high"]}


def eval_score(results: dict[str, dict[str, float]]) -> float:
    """What "best" means: the mean win rate against simple and strong (else all)."""
    keys = [k for k in ("simple", "strong") if k in results] or list(results)
    return sum(results[k]["win_rate"] for k in keys) / max(len(keys), 1)


def print_table(results: dict[str, dict[str, float]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    # Short headers and no wrapping: the table must fit an 80-column pipe or log.
    for col in ("opponent", "matches", "win %", "95% interval", "columns %", "hands %"):
        table.add_column(col, justify="right", no_wrap=True)
    for spec, r in results.items():
        table.add_row(spec, f"{int(r['matches'])}", f"{100 * r['win_rate']:.1f}",
                      f"{100 * r['ci_low']:.1f}–{100 * r['ci_high']:.1f}",
                      f"{100 * r['column_rate']:.1f}", f"{100 * r['hand_rate']:.1f}")
    Console().print(table)


def final_table_title(agent: Path, rules: object) -> str:
    """The final table's title: the agent by its folder and file name (the line after the
    table gives the whole path), so a deep log folder does not fold the title mid-word."""
    from agents.evaluation.tournament import short_name

    shown = short_name(str(agent), width=40)
    rules_name = short_name(str(rules), width=40)
    return f"{shown}: duplicate matches ({rules_name} rules)"


def train(args: argparse.Namespace) -> dict[str, Any]:
    """One training run (or the continuation of one); returns what it did.

    The log directory is locked (``filelock``) for the whole run, so a second
    run into it is refused instead of mixing two runs' files.
    """
    from filelock import FileLock, Timeout

    cfg, ckpt = resolve_config(args)
    name = Path(args.config).stem if args.config else "quick"
    if args.logdir:
        logdir = Path(args.logdir)
    elif args.resume:
        logdir = Path(args.resume).resolve().parent.parent
    else:
        logdir = Path("runs") / name
    logdir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(logdir / ".train.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise RunLocked(f"another training run is using {logdir} (it holds "
                        f"{logdir / '.train.lock'}); wait for it to end or choose another "
                        "--logdir") from None
    try:
        return _train_locked(args, cfg, ckpt, logdir)
    finally:
        lock.release()


def _train_locked(args: argparse.Namespace, cfg: dict[str, Any], ckpt: dict[str, Any] | None,
                  logdir: Path) -> dict[str, Any]:
    import torch

    from agents.training.config import to_toml
    from agents.training.ppo import Trainer

    run = cfg["run"]
    latest = logdir / "checkpoints" / "latest.pt"
    if ckpt is None and latest.exists():
        raise ValueError(f"{logdir} already holds a run; continue it with --resume {latest} "
                         "or choose another --logdir")
    removed = remove_orphan_temporaries(logdir)
    if removed:
        print(f"removed {len(removed)} temporary file(s) left by an interrupted run in {logdir}")
    if run["threads"]:
        torch.set_num_threads(int(run["threads"]))
    if run["device"].startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"run.device is {run['device']!r} but CUDA is not available")
    if args.address is not None and not cfg["distributed"]["workers"]:
        raise ValueError("--address joins a Ray cluster for the collection workers: give "
                         "--workers N too")
    if cfg["distributed"]["workers"]:
        from agents.evaluation.cluster import require_ray

        require_ray("--workers")
    if ckpt is None:
        (logdir / "config.toml").write_text(to_toml(cfg))
    else:
        changes = config_changes(ckpt["config"], cfg)
        for key, old, new in changes:
            print(f"resume: {key} changed: {_shown(old)} -> {_shown(new)}", file=sys.stderr)
        updates = int(ckpt.get("meta", {}).get("updates", 0))
        recorded = write_resume_config(logdir, cfg, ckpt["config"], changes, str(args.resume),
                                       updates)
        print(f"resume: config written to {recorded} ({logdir / 'config.toml'} is the "
              "run's original)", file=sys.stderr)

    bar: dict[str, Any] = {}  # the progress bar, once there is one

    def notify(text: str) -> None:
        """A worker event, as its own line (above the progress bar when there is one)."""
        line = f"workers: {text}"
        if bar.get("progress") is not None:
            bar["progress"].console.print(line, markup=False, highlight=False)
        else:
            print(line, file=sys.stderr, flush=True)

    trainer = Trainer(cfg, on_event=notify)
    try:
        return _train_with(args, cfg, ckpt, logdir, trainer, bar)
    finally:
        trainer.close()


def _train_with(args: argparse.Namespace, cfg: dict[str, Any], ckpt: dict[str, Any] | None,
                logdir: Path, trainer: Trainer, bar: dict[str, Any]) -> dict[str, Any]:
    from agents.torch_agent import atomic_save, save_agent
    from agents.training.config import to_toml
    from agents.training.distributed import WorkersLostError
    from agents.training.ppo import TrainingDivergedError

    run = cfg["run"]
    latest = logdir / "checkpoints" / "latest.pt"
    if trainer.workers:
        c = trainer.collection
        print(f"collecting on {c.count} Ray worker(s) on {c.nodes} node(s)", file=sys.stderr)
    best = {"score": -1.0, "update": -1}
    if ckpt is not None:
        trainer.load_trainer_state(ckpt, args.resume)
        best = dict(ckpt.get("meta", {}).get("best", best))

    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(logdir), purge_step=trainer.env_steps or None)
    writer.add_text("config", "```toml\n" + to_toml(cfg) + "\n```", trainer.env_steps)
    writer.add_text("command", " ".join(sys.argv), trainer.env_steps)

    total = int(run["total_steps"])

    def save(reason: str) -> None:
        meta = {"best": best, "reason": reason, "time": time.time(), "elapsed_s": elapsed_s()}
        atomic_save(trainer.checkpoint(meta), latest)

    def evaluate(matches: int) -> dict[str, dict[str, float]]:
        records = logdir / "records" / f"eval_{trainer.updates:05d}.jsonl.gz"
        res = run_evaluation(trainer, matches, list(run["eval_opponents"]),
                             record_matches=int(run["eval_record_matches"]), record_path=records)
        for spec, r in res.items():
            for key in ("win_rate", "ci_low", "ci_high", "column_rate", "hand_rate"):
                writer.add_scalar(f"eval/{spec}_{key}", r[key], trainer.env_steps)
        with open(logdir / "eval.jsonl", "a") as f:
            f.write(json.dumps({"update": trainer.updates, "env_steps": trainer.env_steps,
                                "results": res}) + "\n")
        meta = {"updates": trainer.updates, "env_steps": trainer.env_steps, "eval": res}
        save_agent(logdir / "agents" / f"update_{trainer.updates:05d}.pt", trainer.model, cfg,
                   meta)
        score = eval_score(res)
        if score > best["score"]:
            best.update(score=score, update=trainer.updates)
            save_agent(logdir / "agent_best.pt", trainer.model, cfg, meta)
        return res

    per_update = trainer.num_games * trainer.steps
    end = total // per_update * per_update  # the last whole update within the budget
    if end != total:
        print(f"note: run.total_steps = {total:,} is not a multiple of env.num_games x "
              f"env.rollout_steps = {per_update:,}; the run ends at {end:,} steps")
    elapsed_before = float(ckpt.get("meta", {}).get("elapsed_s", 0.0)) if ckpt else 0.0
    show_bar = not args.no_progress and sys.stdout.isatty()
    progress = None
    task = None
    if show_bar:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
        from rich.table import Column

        # The labelled figures are longer than a terminal line: they wrap under the bar.
        progress = Progress(TextColumn("[bold]train"), BarColumn(bar_width=20),
                            MofNCompleteColumn(),
                            TextColumn("steps  elapsed {task.fields[elapsed]}  ETA "
                                       "{task.fields[eta]}  {task.fields[info]}",
                                       table_column=Column(ratio=1, overflow="fold")),
                            expand=True)
        progress.start()
        bar["progress"] = progress
        task = progress.add_task("train", total=end, completed=trainer.env_steps, info="",
                                 elapsed=_minutes(elapsed_before), eta="?")
    last_line = 0.0
    start_steps, start_time = trainer.env_steps, time.perf_counter()
    eval_every = int(run["eval_every"])
    last_eval: dict[str, dict[str, float]] = {}
    eval_update = 0

    def elapsed_s() -> float:
        """Training time of the whole run, across resumes."""
        return elapsed_before + time.perf_counter() - start_time

    def say(text: str) -> None:
        try:
            print(text, flush=True)
        except BrokenPipeError:
            _stdout_closed()
            stop.request(128 + signal.SIGPIPE)

    stop = _Stop()
    if trainer.workers:
        trainer.collection.stopping = lambda: stop.requested
    try:
        with stop:
            while trainer.env_steps + per_update <= end and not stop.requested:
                out = trainer.update()
                step = trainer.env_steps
                for key, value in out.items():
                    writer.add_scalar(key, value, step)
                session = time.perf_counter() - start_time
                rate = (step - start_steps) / max(session, 1e-9)
                writer.add_scalar("perf/avg_steps_per_s", rate, step)
                if eval_every and trainer.updates % eval_every == 0:
                    last_eval = evaluate(int(run["eval_matches"]))
                    eval_update = trainer.updates
                if trainer.updates % int(run["checkpoint_every"]) == 0:
                    save("interval")
                summary = status_line(out, rate, last_eval, eval_update)
                eta = _minutes((end - step) / max(rate, 1e-9))
                if progress is not None:
                    progress.update(task, completed=min(step, end), info=summary,
                                    elapsed=_minutes(elapsed_s()), eta=eta)
                elif time.perf_counter() - last_line > 30 or step >= end:
                    last_line = time.perf_counter()
                    say(f"update {trainer.updates}  {step:,}/{end:,} steps  {summary}  "
                        f"elapsed {_minutes(elapsed_s())}  ETA {eta}")
            save("stopped" if stop.requested else "finished")
    except TrainingDivergedError as exc:
        kept = (f"the last good checkpoint, {latest}, was kept" if latest.exists()
                else "no checkpoint had been written yet")
        raise TrainingDivergedError(f"{exc}; nothing was saved from this update, {kept}") from exc
    except WorkersLostError as exc:
        kept = (f"the last good checkpoint, {latest}, was kept; continue with "
                f"{_command(args)} --resume {latest}" if latest.exists()
                else "no checkpoint had been written yet")
        raise WorkersLostError(f"{exc}; nothing was learned from the unfinished update, "
                               f"{kept}") from exc
    finally:
        trainer.close()  # the workers' CPUs are free for the final evaluation and others
        if progress is not None:
            progress.stop()
    writer.flush()
    result: dict[str, Any] = {"logdir": str(logdir), "updates": trainer.updates,
                              "env_steps": trainer.env_steps, "stopped": stop.requested,
                              "exit_code": stop.exit_code}
    if stop.requested:
        print(f"stopped after update {trainer.updates}; resume with: "
              f"{_command(args)} --resume {latest}", file=sys.stderr)
        writer.close()
        return result
    meta = {"updates": trainer.updates, "env_steps": trainer.env_steps}
    save_agent(logdir / "agent_final.pt", trainer.model, cfg, meta)
    if best["update"] < 0:
        save_agent(logdir / "agent_best.pt", trainer.model, cfg, meta)
    if not args.no_final_eval and run["final_eval_matches"]:
        res = run_evaluation(trainer, int(run["final_eval_matches"]),
                             list(run["eval_opponents"]), seed=7,
                             record_matches=int(run["eval_record_matches"]),
                             record_path=logdir / "records" / "final_eval.jsonl.gz")
        for spec, r in res.items():
            writer.add_scalar(f"final_eval/{spec}_win_rate", r["win_rate"], trainer.env_steps)
        (logdir / "final_eval.json").write_text(json.dumps(
            {"update": trainer.updates, "env_steps": trainer.env_steps,
             # the deals' seed (fixed, so every run is evaluated on the same deals) beside
             # the seed the run was trained with
             "eval_seed": 7, "run_seed": int(run["seed"]), "results": res}, indent=1) + "\n")
        print_table(res, final_table_title(logdir / "agent_final.pt", cfg["env"]["rules"]))
        result["final_eval"] = res
    writer.close()
    print(f"agent: {logdir / 'agent_final.pt'}  (best by evaluation: {logdir / 'agent_best.pt'})")
    curve = draw_learning_curve(logdir)
    if curve:
        print(f"learning curve: {curve}")
    return result


def draw_learning_curve(logdir: Path) -> Path | None:
    """``learning_curve.png`` / ``.svg`` of the run's evaluations, if it had any."""
    from agents.training.curves import plot_runs, read_run

    try:
        run = read_run(logdir)
    except ValueError:
        return None
    return plot_runs([run], logdir / "learning_curve")[0]


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """Exit codes: 0 done, 1 training diverged, 2 a bad config, checkpoint or log
    directory, 130 / 143 stopped by Ctrl-C / SIGTERM (resumable), 141 output closed."""
    try:
        args = parse_args(argv, prog)
        from agents.training.distributed import WorkersLostError
        from agents.training.ppo import TrainingDivergedError

        try:
            if args.print_config:
                from agents.training.config import to_toml

                print(to_toml(resolve_config(args)[0]))
                return 0
            result = train(args)
        except TrainingDivergedError as exc:
            print(f"error: training diverged: {exc}", file=sys.stderr)
            return 1
        except WorkersLostError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except (ValueError, FileNotFoundError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return int(result.get("exit_code", 0))
    except KeyboardInterrupt as exc:
        print(f"{prog}: interrupted", file=sys.stderr)
        return exc.exit_code if isinstance(exc, _GiveUp) else 130
    except BrokenPipeError:
        _stdout_closed()
        print(f"{prog}: output closed (broken pipe)", file=sys.stderr)
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
