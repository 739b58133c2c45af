"""Round-robin tournament of agents over full Hollywood matches: the command line.

    hgin evaluate --agents random simple strong [ckpt:PATH ...]   (or python evaluate.py)
        [--matches N] [--rules friendly] [--seed S] [--batch-size B] [--workers N]
        [--json FILE|DIR] [--csv FILE|DIR] [--plot FILE.{png,svg,pdf}|DIR]
        [--record FILE.jsonl[.gz]|DIR]

The tournament itself (duplicate format, pair-clustered 95% intervals, Elo)
is :func:`agents.evaluation.tournament.run_tournament`.  This script only checks its
arguments, every output path included, before the first match, plays, prints
the tables and writes the files.  Ctrl-C exits 130 and a closed output pipe
(``| head``) exits 141, each with a one-line message.  An agent that fails (a
``text:`` program that stops answering, say) exits 3 with one line naming the
agent, the match and the move; the ``--record`` file keeps every match that
finished.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# The library (numpy, the engine, the agents) is imported under main()'s guard, so that
# Ctrl-C during start-up gets the same one-line exit as Ctrl-C during play.

PROG = "evaluate.py"
#: File name used when an output option names an existing directory.
DEFAULT_STEM = "tournament"
EXIT_AGENT_FAILED = 3  # an agent raised instead of choosing a move
EXIT_INTERRUPTED = 130  # 128 + SIGINT, the shell convention
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE

EPILOG = f"""\
outputs:
  --json, --csv, --plot and --record are checked before the first match: the
  directory must exist and be writable.  An existing directory gets the file
  {DEFAULT_STEM}.json, {DEFAULT_STEM}.csv, {DEFAULT_STEM}.png or {DEFAULT_STEM}.jsonl inside it;
  every file written is printed.  Keep run outputs under outputs/ (ignored by git), for example
  `mkdir -p outputs && hgin evaluate ... --json outputs/ --plot outputs/eval.pdf`.

records (--record):
  every match of the tournament as one JSON line (gzip when the name ends in
  .gz), written as matches finish: rules, seeds, agents by seat, every deal,
  action and showdown (docs/records.md).  Verify or print them with
  `hgin replay FILE [--match N]`.

heatmap (--plot):
  match win rate of each agent (row) against each opponent (column), with the
  95% pair-clustered interval printed in every cell, in the colour-blind-safe
  cividis colormap, titled with the rules profile, the matches per pairing and
  the seed.  The extension picks the format: .png (raster, 150 dpi), .svg or
  .pdf (vector, for papers).

results do not depend on --batch-size or --workers: every match draws its
random choices from its own generator, derived from the seed and the match's
index, and the workers' matches are put back in order.

exit codes:
  0 done, 1 an output could not be written, 2 bad arguments, 3 an agent failed
  (one line names it, the match and the move; --record keeps the finished
  matches, no other file is written), 130 Ctrl-C, 141 standard output closed
  (the files asked for are written first)
"""


def _int_at_least(low: int, what: str) -> Callable[[str], int]:
    """An argparse type: an integer >= ``low``, with a message naming what is expected."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value

    return parse


_positive_int = _int_at_least(1, "a positive integer")
_seed = _int_at_least(0, "a non-negative integer")


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    from agents import AGENT_SPECS
    from agents.evaluation.tournament import DEFAULT_MATCHES

    parser = argparse.ArgumentParser(
        prog=prog, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Round robin of agents over full Hollywood gin matches (duplicate format: "
                    "every deal sequence played twice, seats swapped).")
    parser.add_argument("--agents", nargs="+", required=True, metavar="SPEC",
                        help=f"agent specs: {', '.join(AGENT_SPECS)} (two or more)")
    parser.add_argument("--names", nargs="+", metavar="NAME",
                        help="names for the agents in the tables, files and records, one per "
                             "--agents spec (default: the specs)")
    parser.add_argument("--matches", type=_positive_int, default=DEFAULT_MATCHES,
                        help=f"matches per pairing, rounded up to even (default {DEFAULT_MATCHES})")
    parser.add_argument("--rules", default="friendly",
                        help="rules profile name or path to a rules TOML (default friendly)")
    parser.add_argument("--seed", type=_seed, default=0,
                        help="seed of the deals and of every random choice (default 0)")
    parser.add_argument("--json", metavar="FILE|DIR", help="write the results as JSON")
    parser.add_argument("--csv", metavar="FILE|DIR", help="write one CSV row per pairing")
    parser.add_argument("--plot", metavar="FILE|DIR",
                        help="write the win-rate heatmap; .png, .svg or .pdf by extension "
                             "(a directory gets tournament.png)")
    parser.add_argument("--record", metavar="FILE|DIR",
                        help="record every match as JSON Lines (.gz to compress; a directory "
                             "gets tournament.jsonl)")
    parser.add_argument("--batch-size", type=_positive_int, default=None, metavar="N",
                        help="play at most N matches at once (memory; results do not change)")
    parser.add_argument("--no-duplicate", action="store_true",
                        help="independent deals instead of seat-swapped pairs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--workers", type=_int_at_least(0, "a non-negative integer"), default=0,
                        metavar="N",
                        help="play the matches on N Ray worker processes (the ray extra: "
                             "pip install 'hgin[ray]'); 0, the default, plays them here. The "
                             "results and records are the same for every N")
    parser.add_argument("--address", metavar="ADDR",
                        help="with --workers: join the Ray cluster at ADDR ('auto' or "
                             "HOST:PORT) instead of starting a local Ray on this machine")
    return parser


def output_path(option: str, value: str, extension: str) -> Path:
    """Where ``option`` writes, checked now so no result is lost after the matches.

    An existing directory gets ``tournament.<extension>`` inside it.
    Raises ``ValueError`` naming the option when the file cannot be written.
    """
    from hgin_env.apps.outputs import check_output_file

    path = Path(value)
    if value.endswith(("/", os.sep)) and not path.is_dir():
        raise ValueError(f"{option} {value}: directory {path} does not exist")
    if path.is_dir():
        path = path / f"{DEFAULT_STEM}.{extension}"
    check_output_file(option, value, path)
    if option == "--plot":
        from agents.evaluation.tournament import plot_format

        plot_format(path)  # ValueError unless the extension names a supported format
    return path


def check_outputs(args: argparse.Namespace) -> dict[str, Path]:
    """Every requested output path, validated; ``ValueError`` on the first bad one."""
    outputs: dict[str, Path] = {}
    for option, extension in (("json", "json"), ("csv", "csv"), ("plot", "png"),
                              ("record", "jsonl")):
        value = getattr(args, option)
        if value is not None:
            path = output_path(f"--{option}", value, extension)
            for other, taken in outputs.items():
                if path.resolve() == taken.resolve():
                    raise ValueError(f"--{option} and --{other} both write {path}")
            outputs[option] = path
    return outputs


def _run(argv: Sequence[str] | None, prog: str) -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if len(args.agents) < 2:
        parser.error("--agents needs at least two agent specs")
    names = args.names if args.names is not None else args.agents
    if len(names) != len(args.agents):
        parser.error(f"--names gives {len(names)} name(s) for {len(args.agents)} agent(s)")
    if len(set(names)) != len(names):
        parser.error("--names must be distinct")
    try:
        outputs = check_outputs(args)
    except ValueError as exc:
        parser.error(str(exc))
    if args.address is not None and not args.workers:
        parser.error("--address joins a Ray cluster for --workers: give --workers N too")
    if args.workers:
        from agents.evaluation.cluster import require_ray

        try:
            require_ray("--workers")
        except ValueError as exc:
            parser.error(str(exc))

    from agents import make_agent
    from agents.evaluation.arena import AgentFailed
    from agents.evaluation.tournament import run_tournament
    from hgin_env.records.format import RecordWriter
    from hgin_env.rules import load_rules

    try:
        rules = load_rules(args.rules)
        agents = [make_agent(spec, seed=args.seed, rules=rules) for spec in args.agents]
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    if args.workers:  # join (or start) Ray now: a wrong address fails before any match
        from agents.evaluation.cluster import check_capacity, connect

        try:
            check_capacity(connect(args.address, "--workers"), args.workers)
        except ValueError as exc:
            parser.error(str(exc))
    recording = outputs.pop("record", None)
    try:
        writer = None if recording is None else RecordWriter(recording)
    except OSError as exc:
        _close(agents)
        print(f"{prog}: could not write {recording}: {exc}", file=sys.stderr)
        return 1
    failed: AgentFailed | None = None
    try:
        # Workers build their agents from the specs (an agent object may hold what
        # cannot travel, such as a text agent's program); here they were built to check them.
        result = run_tournament(list(args.agents) if args.workers else agents, args.matches,
                                args.rules, args.seed, duplicate=not args.no_duplicate,
                                progress=not args.no_progress, batch_size=args.batch_size,
                                names=names, record=None if writer is None else writer.write,
                                workers=args.workers, address=args.address)
    except AgentFailed as exc:
        failed = exc
    finally:
        if writer is not None:
            writer.close()
        _close(agents)
    if failed is not None:
        print(f"{prog}: {_one_line(str(failed))}", file=sys.stderr)
        if writer is not None:
            unfinished = (f"; the {failed.in_play} match(es) in play when the agent failed "
                          "are not in it, being unfinished" if failed.in_play else "")
            print(f"{prog}: wrote {recording} ({writer.count} finished matches{unfinished})",
                  file=sys.stderr)
        if outputs:
            print(f"{prog}: not written, the tournament being unfinished: "
                  f"{', '.join(f'--{option}' for option in outputs)}", file=sys.stderr)
        return EXIT_AGENT_FAILED
    if writer is not None:
        print(f"{prog}: wrote {recording} ({writer.count} matches)", file=sys.stderr)
    if result.cluster:
        c = result.cluster
        print(f"{prog}: played on {c['workers']} Ray workers on {c['nodes']} node(s)"
              + (f"; {c['replayed']} chunk(s) played again after a lost worker"
                 if c["replayed"] else ""), file=sys.stderr)
    # The files first: a closed standard output (``| head``) must not lose them.
    writers = {"json": result.write_json, "csv": result.write_csv, "plot": result.plot}
    for option, path in outputs.items():
        try:
            writers[option](path)
        except OSError as exc:  # checked before the matches; the disk can still fill up
            print(f"{prog}: could not write {path}: {exc}", file=sys.stderr)
            return 1
        print(f"{prog}: wrote {path}", file=sys.stderr)
    result.print(_console())
    return 0


def _close(agents: Sequence[Any]) -> None:
    """End the programs of the agents that hold one (``text:``)."""
    for agent in agents:
        close = getattr(agent, "close", None)
        if callable(close):
            close()


def _one_line(text: str) -> str:
    """``text`` with any line breaks (an agent's own message may hold them) as spaces."""
    return " ".join(text.split())


def _console() -> Any:
    """A rich console for stdout that reports a closed pipe as ``BrokenPipeError``.

    rich's default exits 1 without a word; ``main`` turns the error into its
    one-line message and exit code 141 instead.
    """
    from rich.console import Console

    class PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError("standard output was closed")

    console = PipeConsole()
    return console if console.is_terminal else PipeConsole(width=max(console.width, 120))


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Run the command line (``prog`` names it in messages: ``evaluate.py`` or
    ``hgin evaluate``).

    Exit codes: 0 done, 1 an output could not be written, 2 bad arguments,
    3 an agent failed (the record keeps the finished matches), 130 Ctrl-C, 141
    standard output closed (the files asked for are written first).
    """
    try:
        return _run(argv, prog)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        print(f"{prog}: output pipe closed, stopped", file=sys.stderr)
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
