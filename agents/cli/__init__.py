"""The ``hgin`` command: one entry point with a subcommand per job.

Each subcommand is the ``main(argv, prog=...)`` of the module that already
implements it, so ``hgin train`` and ``python train.py`` (or ``hgin replay`` and
``python -m hgin_env.replay``) take the same options and return the same exit
codes.  The command line uses argparse, the standard library's parser that every
one of those modules already builds on: no second parser library, and each
subcommand's ``--help`` is that module's own complete help.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

__all__ = ["COMMANDS", "main"]

#: Subcommand -> (module, function, one-line summary).  Modules are imported only
#: when their command runs: ``hgin --help`` and ``hgin --version`` stay instant.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "train": ("agents.cli.train", "main",
              "train an agent: imitation of strong, then self-play PPO (--config quick)"),
    "evaluate": ("agents.cli.evaluate", "main",
                 "round robin of agents over full matches: tables, JSON, CSV, heatmap, records"),
    "play": ("hgin_env.apps.play", "cli", "play a match in the terminal against an agent"),
    "serve": ("hgin_env.apps.serve", "main",
              "play in the browser: a local web server (needs the 'web' extra)"),
    "replay": ("hgin_env.apps.replay", "main",
               "verify match records move by move, print a match, or write its HTML page"),
    "plot": ("agents.cli.plot", "main",
             "learning curves of training runs (win rate over steps, one line per seed)"),
}


def _version() -> str:
    from hgin_env import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: ``--version``, and the subcommand with its own arguments."""
    width = max(map(len, COMMANDS))
    listing = "\n".join(f"  {name:<{width}}  {summary}"
                        for name, (_, _, summary) in COMMANDS.items())
    parser = argparse.ArgumentParser(
        prog="hgin",
        description="Hollywood gin rummy for reinforcement learning.",
        epilog=f"commands:\n{listing}\n\n'hgin COMMAND --help' shows a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hgin {_version()}")
    parser.add_argument("command", metavar="COMMAND", choices=list(COMMANDS),
                        help="one of: " + ", ".join(COMMANDS))
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def command_main(name: str) -> Callable[..., int]:
    """The ``main`` function of subcommand ``name``."""
    module, function, _ = COMMANDS[name]
    return getattr(importlib.import_module(module), function)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hgin COMMAND ...``; the exit code is the subcommand's."""
    args = build_parser().parse_args(argv)
    try:
        run = command_main(args.command)
    except KeyboardInterrupt:
        print(f"hgin {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(run(list(args.args), prog=f"hgin {args.command}"))


if __name__ == "__main__":
    sys.exit(main())
