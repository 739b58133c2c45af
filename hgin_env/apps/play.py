"""Play a Hollywood gin match in the terminal against an agent.

    python -m hgin_env.play --opponent simple [--rules friendly] [--seed N] [--seat 0|1]

``--opponent`` is ``random``, ``simple``, ``strong``, ``pretrained`` or
``ckpt:PATH`` (resolved by :func:`hgin_env.envs.opponents.load_agent`; from Python,
:func:`play` takes any agent object); ``--rules`` a profile name or a rules
TOML file.  On your turn
the legal moves are listed with numbers; type a number, or a move in words:

* a card (``7H``, ``7♥``, ``10d``, ``td``) or ``discard 7H`` — discard it;
* ``knock 7H`` (or ``k 7H``, ``gin 7H``) — knock, discarding 7H face down;
* ``d`` / ``draw`` — draw from the stock, ``t`` / ``take`` — take the top
  discard (or the upcard), ``p`` / ``pass`` — pass on the upcard;
* ``big gin`` when the ``big_gin`` switch is on;
* ``help``, ``table``, ``sheet``, ``moves``, ``quit``.

Anything else is answered with a message and the prompt comes back.  End of
input (Ctrl-D) abandons the match; Ctrl-C and a closed output (``| head``)
end the program with a one-line message (exit codes 130 and 1).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TextIO

import numpy as np

from hgin_env import actions as A
from hgin_env.agent import Agent
from hgin_env.cards import SUIT_CHARS, SUIT_SYMBOLS
from hgin_env.envs.driver import AgentError, MatchDriver
from hgin_env.envs.opponents import as_opponent, load_agent
from hgin_env.envs.table import AGENTS, MatchTable
from hgin_env.rules import PROFILES, Rules, load_rules
from hgin_env.ui.moves import move_options, narrate, parse_command
from hgin_env.ui.render import (
    Style,
    sheet_text,
    showdown_text,
    supports_color,
    table_text,
)

__all__ = ["HELP", "add_match_arguments", "cli", "load_match", "main", "play"]

HELP = """Commands:
  <number>             play the move with that number from the list
  7H, 7♥, 10d, td      discard that card (also: discard 7H)
  knock 7H, k 7H       knock, discarding 7H face down (gin when nothing is left over)
  d, draw              draw from the stock
  t, take              take the top card of the discard pile (or the upcard)
  p, pass              pass on the upcard
  big gin              go out with all 11 cards melded (only with the big_gin rule)
  table, sheet, moves  show the table, the score sheet, or the list of moves again
  help, quit"""


class _Out:
    """Writes to a stream, spelling suits as letters if it cannot encode ♣♦♥♠."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            SUIT_SYMBOLS.encode(encoding)
            self.table = None
        except (UnicodeEncodeError, LookupError):
            self.table = str.maketrans({s: c for s, c in zip(SUIT_SYMBOLS, SUIT_CHARS, strict=True)}
                                       | {"▶": ">", "─": "-", "÷": "/"})

    def __call__(self, text: str = "") -> None:
        if self.table is not None:
            text = text.translate(self.table)
        self.stream.write(text + "\n")
        self.stream.flush()


def play(
    opponent: Agent,
    rules: Rules | str = "friendly",
    seed: int | None = None,
    seat: int = 0,
    input_fn: Callable[[str], str] = input,
    out: TextIO | None = None,
    color: bool | None = None,
    opponent_name: str | None = None,
) -> int:
    """Run one match against ``opponent`` (an agent, see :mod:`hgin_env.envs.opponents`).

    Returns 0 when the match finished or the player quit or closed the input,
    130 on Ctrl-C at the prompt, 1 when the opponent played an illegal move.
    """
    opponent = as_opponent(opponent)
    rules = load_rules(rules)
    stream = out if out is not None else sys.stdout
    say = _Out(stream)
    style = Style(supports_color(stream) if color is None else color)
    table = MatchTable(rules, reward="match")
    if seed is None:
        table.reset(int(np.random.default_rng().integers(0, 2**63 - 1)))
    else:
        table.reset(seed)
    game = table.game
    # The opponent's turns, with the hand's public history for agents that use it (search).
    driver = MatchDriver(table, {1 - seat: opponent}, np.random.default_rng(seed))
    driver.new_match()
    opp_name = opponent_name or getattr(opponent, "name", "opponent")
    names = ["You", "You"]
    names[1 - seat] = f"Opponent ({opp_name})"
    short = ["You", "You"]
    short[1 - seat] = "Opponent"
    say(style(f"Hollywood gin against {opp_name}. You are {AGENTS[seat]}.", "bold"))
    say(f"Columns: {rules.columns}, target {rules.target}. Type 'help' for the commands.")
    hand_shown = -1
    while not table.over:
        mover = table.current_player
        top = int(game.top_discard()[0])
        before = int(game.hands[0, mover])
        if hand_shown != table.hands_played:  # a new deal, whoever moves first
            hand_shown = table.hands_played
            say()
            say(style(f"── Hand {table.hands_played + 1} " + "─" * 40, "bold", "cyan"))
        if mover == seat:
            options = move_options(game, seat, style)
            say()
            say(table_text(game, 0, seat, names, style, sheet=False))
            _list_moves(say, options)
            action = None
            while action is None:
                try:
                    line = input_fn("Your move> ")
                except EOFError:
                    say()
                    say("Goodbye: the match was abandoned.")
                    return 0
                except KeyboardInterrupt:
                    say()
                    say("Goodbye: the match was abandoned.")
                    return 130
                kind, chosen, message = parse_command(line, options, game, seat)
                if kind == "move":
                    action = chosen
                elif kind == "quit":
                    say("You left the match. Goodbye.")
                    return 0
                elif kind == "help":
                    say(HELP)
                elif kind == "table":
                    say(table_text(game, 0, seat, names, style, sheet=False))
                elif kind == "sheet":
                    say(sheet_text(game.sheet(0), rules, names, style))
                elif kind == "moves":
                    _list_moves(say, options)
                else:
                    say(style(f"  {message}", "yellow"))
        else:
            try:
                action = driver.choose(mover)
            except AgentError as err:
                say(f"The opponent chose an illegal move ({err.action}); it forfeits the match.")
                return 1
        _, _, info = driver.play(action)
        drawn = None
        if action == A.DRAW_STOCK and mover == seat:  # a draw never ends a hand
            new = int(game.hands[0, mover]) & ~before
            drawn = new.bit_length() - 1 if new else None
        if not _ends_hand(action):  # a knock is told by the showdown below
            say(narrate(short[mover], action, top, drawn, style))
        if info["hand_over"]:
            say()
            discard = action - A.KNOCK if A.KNOCK <= action < A.DRAW_STOCK else None
            say(showdown_text(game, 0, names, style, knock_discard=discard))
            say()
            say(sheet_text(table.sheet(), rules, names, style))
    winner = table.sheet().match_winner
    say()
    if table.truncated:
        say(style("The match was cut off undecided at the match bound (docs/rules.md, "
                  "Appendix C): nobody wins it.", "bold"))
    elif winner == seat:
        say(style("You win the match. Well played!", "bold", "green"))
    else:
        say(style(f"{names[1 - seat]} wins the match.", "bold"))
    return 0


def _ends_hand(action: int) -> bool:
    return A.KNOCK <= action < A.DRAW_STOCK or action == A.BIG_GIN


def _list_moves(say: Callable[[str], None], options: list[tuple[int, str]]) -> None:
    say("Your moves:")
    for i, (_, words) in enumerate(options, 1):
        say(f"  {i:>2}) {words}")


def add_match_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a match against an agent: ``--opponent``, ``--rules``, ``--seed``,
    ``--seat`` (shared by the terminal game and the play server)."""
    parser.add_argument("--opponent", default="simple",
                        help="an agent spec: random, simple, strong, pretrained, search, ckpt:PATH "
                             "or text:COMMAND (default: simple)")
    parser.add_argument("--rules", default="friendly",
                        help=f"rule profile ({', '.join(PROFILES)}) or a rules TOML file")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed (a non-negative integer) for reproducible deals")
    parser.add_argument("--seat", type=int, choices=(0, 1), default=0, help="your seat (default 0)")


def load_match(args: argparse.Namespace) -> tuple[Rules, Agent]:
    """The rules and the agent that :func:`add_match_arguments`' options name.

    ``ValueError`` says which option is wrong (a negative seed, a bad rules
    file, an agent that cannot be loaded).
    """
    if args.seed is not None and args.seed < 0:
        raise ValueError(f"--seed must be a non-negative integer, got {args.seed}")
    rules = load_rules(args.rules)
    try:
        opponent = load_agent(args.opponent, rules)
    except (ValueError, ImportError, OSError, RuntimeError) as err:
        raise ValueError(f"cannot load opponent {args.opponent!r}: {err}") from err
    return rules, opponent


def main(
    argv: list[str] | None = None,
    input_fn: Callable[[str], str] = input,
    out: TextIO | None = None,
    prog: str = "python -m hgin_env.play",
) -> int:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Play a Hollywood gin match in the terminal against an agent.",
        epilog="exit codes: 0 the match ended or you left it, 1 the agent made an illegal "
               "move or the output was closed, 2 bad arguments, 130 Ctrl-C",
    )
    add_match_arguments(parser)
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the cards: auto (when the output is a terminal that "
                             "supports it; NO_COLOR turns it off), always or never")
    args = parser.parse_args(argv)
    stream = out if out is not None else sys.stdout
    try:
        rules, opponent = load_match(args)
    except ValueError as err:
        print(f"error: {err}", file=stream)
        return 2
    color = {"auto": None, "always": True, "never": False}[args.color]
    return play(opponent, rules, seed=args.seed, seat=args.seat, input_fn=input_fn,
                out=stream, color=color, opponent_name=args.opponent)


def cli(argv: list[str] | None = None, prog: str = "python -m hgin_env.play") -> int:
    """:func:`main` for the command line: Ctrl-C (exit 130) and a closed output
    (``| head``, exit 1) end with a one-line message instead of a traceback."""
    try:
        return main(argv, prog=prog)
    except KeyboardInterrupt:
        print("\nInterrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # As the Python docs advise: point stdout at /dev/null so that the
        # interpreter's final flush does not fail a second time.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        print("error: the output was closed (broken pipe); the match was abandoned.",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(cli())
