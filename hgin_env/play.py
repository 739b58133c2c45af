"""Play a Hollywood gin match in the terminal against an agent.

    python -m hgin_env.play --opponent simple [--rules friendly] [--seed N] [--seat 0|1]

``--opponent`` is ``random``, ``simple``, ``strong``, ``pretrained`` or
``ckpt:PATH`` (resolved by :func:`hgin_env.opponent.load_agent`; from Python,
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
from typing import Any, TextIO

import numpy as np

from hgin_env import actions as A
from hgin_env.aec import AGENTS, raw_env
from hgin_env.cards import SUIT_CHARS, SUIT_SYMBOLS, parse_card
from hgin_env.history import history_for
from hgin_env.opponent import Policy, as_opponent, load_agent
from hgin_env.render import Style, card_text, sheet_text, showdown_text, supports_color, table_text
from hgin_env.rules import PROFILES, Rules, load_rules

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

_DRAW_WORDS = {"d", "draw", "s", "stock", "draw stock", "draw from stock", "draw from the stock"}
_TAKE_WORDS = {"t", "take", "pile", "up", "upcard", "take upcard", "take discard",
               "take the discard", "take the upcard"}
_PASS_WORDS = {"p", "pass"}
_BIG_GIN_WORDS = {"big gin", "biggin", "big-gin", "bg"}
_KNOCK_PREFIXES = ("knock ", "k ", "gin ")
_DISCARD_PREFIXES = ("discard ", "x ", "drop ")


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


def move_options(game: Any, seat: int, style: Style) -> list[tuple[int, str]]:
    """The legal moves of ``seat`` as ``(action, words)``, best-looking first.

    Knocks come first (lowest deadwood first), then discards by the deadwood
    they leave; drawing from the stock comes before taking the discard.
    """
    mask = game.legal_action_mask()[0]
    legal = np.flatnonzero(mask).tolist()
    top = int(game.top_discard()[0])
    after = game.discard_deadwood[0]
    options: list[tuple[int, str]] = []
    if A.BIG_GIN in legal:
        options.append((A.BIG_GIN, "BIG GIN: lay down all 11 cards melded"))
    knocks = sorted((int(after[a - A.KNOCK]), a) for a in legal if A.KNOCK <= a < A.DRAW_STOCK)
    for dead, a in knocks:
        card = card_text(a - A.KNOCK, style)
        if dead == 0:
            options.append((a, f"GIN: knock discarding {card} (no deadwood)"))
        else:
            options.append((a, f"knock, discarding {card} face down (deadwood {dead})"))
    discards = sorted((int(after[a]), a) for a in legal if a < A.KNOCK)
    for dead, a in discards:
        options.append((a, f"discard {card_text(a, style)} (leaves deadwood {dead})"))
    if A.DRAW_STOCK in legal:
        options.append((A.DRAW_STOCK, "draw from the stock"))
    if A.TAKE_DISCARD in legal:
        word = "upcard" if game.phase[0] <= A.PHASE_OFFER_DEALER else "top discard"
        options.append((A.TAKE_DISCARD, f"take the {word} {card_text(top, style)}"))
    if A.PASS in legal:
        options.append((A.PASS, "pass (decline the upcard)"))
    return options


def why_illegal(game: Any, seat: int, action: int, keys: bool = True) -> str:
    """A plain-words reason why ``action`` (an illegal action id of ``seat``, the
    mover) is not allowed now.

    ``keys=True`` (the terminal game) names the keys to type (``'d'``, ``t``,
    ``p``); ``keys=False`` (the play page, which has buttons, not keys) leaves
    them out, so each place shows words that fit it.
    """
    phase = int(game.phase[0])
    top = int(game.top_discard()[0])
    top_txt = card_text(top) if top >= 0 else "the discard"
    hand = int(game.hands[0, seat])
    if phase <= A.PHASE_OFFER_DEALER:
        if keys:
            return f"on the first turn you may only take the upcard {top_txt} (t) or pass (p)"
        return f"on the first turn you may only take the upcard {top_txt} or pass"
    if phase == A.PHASE_DRAW_STOCK:
        return ("both players passed the upcard, so you must draw from the stock"
                + (" (d)" if keys else ""))
    takes = getattr(game, "takes", None)
    if (phase == A.PHASE_DRAW and action == A.TAKE_DISCARD and takes is not None
            and not game.rules.pile_open(int(takes[0]))):
        limit = game.rules.max_discard_takes
        return (f"the discard pile is closed: it was taken from {limit} times this hand (the "
                "take limit), so you must draw from the stock" + (" (d)" if keys else ""))
    if phase == A.PHASE_DRAW:
        if keys:
            return f"draw first: 'd' for the stock or 't' to take {top_txt}"
        return f"draw first: draw from the stock or take {top_txt}"
    # discard phase
    if action in (A.DRAW_STOCK, A.TAKE_DISCARD, A.PASS):
        return "you have already drawn; now discard a card or knock"
    if action == A.BIG_GIN:
        if not game.rules.big_gin:
            return "big gin is not part of these rules"
        return "big gin needs all 11 cards in melds"
    card = action if action < A.KNOCK else action - A.KNOCK
    if not hand >> card & 1:
        return f"you don't hold {card_text(card)}"
    if int(game.taken_card[0]) == card and game.rules.forbid_discard_of_taken:
        return f"you took {card_text(card)} from the pile this turn, so you may not discard it now"
    if action >= A.KNOCK:
        limit = int(game.knock_limit[0])
        dead = int(game.discard_deadwood[0, card])
        if limit == 0:
            return (f"only gin may end this hand; discarding {card_text(card)} leaves "
                    f"deadwood {dead}")
        return (f"you can't knock discarding {card_text(card)}: your deadwood would be {dead}, "
                f"and the knock limit is {limit}")
    return "that move is not allowed now"


def parse_command(text: str, options: list[tuple[int, str]], game: Any, seat: int
                  ) -> tuple[str, int | None, str]:
    """Interpret one line of input.

    Returns ``(kind, action, message)`` with ``kind`` one of ``move``
    (``action`` is legal), ``error`` (``message`` says why), ``help``,
    ``quit``, ``table``, ``sheet``, ``moves``.
    """
    raw = text.strip()
    low = " ".join(raw.lower().split())
    if not low:
        return "error", None, "type a move number or a command ('help' lists them)"
    if low in ("help", "h", "?"):
        return "help", None, ""
    if low in ("quit", "q", "exit"):
        return "quit", None, ""
    if low in ("table", "show", "hand", "board"):
        return "table", None, ""
    if low in ("sheet", "score", "scores"):
        return "sheet", None, ""
    if low in ("moves", "list", "options", "m"):
        return "moves", None, ""
    if low.isdigit():
        n = int(low)
        if 1 <= n <= len(options):
            return "move", options[n - 1][0], ""
        return "error", None, f"there is no move {n}; choose 1 to {len(options)}"
    action: int | None = None
    try:
        if low in _DRAW_WORDS:
            action = A.DRAW_STOCK
        elif low in _TAKE_WORDS:
            action = A.TAKE_DISCARD
        elif low in _PASS_WORDS:
            action = A.PASS
        elif low in _BIG_GIN_WORDS:
            action = A.BIG_GIN
        elif low in ("knock", "k", "gin"):
            knocks = [a for a, _ in options if A.KNOCK <= a < A.DRAW_STOCK]
            if len(knocks) == 1:
                action = knocks[0]
            elif knocks:
                return "error", None, "say which card to discard face down, e.g. 'knock 7H'"
            else:
                action = A.KNOCK + _first_held(game, seat)
        elif low.startswith(_KNOCK_PREFIXES):
            action = A.KNOCK + parse_card(raw.split(None, 1)[1])
        elif low.startswith(_DISCARD_PREFIXES):
            action = parse_card(raw.split(None, 1)[1])
        else:
            action = parse_card(raw)
    except ValueError as err:
        return "error", None, f"I don't understand {raw!r}: {err}. Type 'help' for the commands."
    if action in {a for a, _ in options}:
        return "move", action, ""
    return "error", None, why_illegal(game, seat, action)


def _first_held(game: Any, seat: int) -> int:
    hand = int(game.hands[0, seat])
    return (hand & -hand).bit_length() - 1 if hand else 0


def narrate(name: str, action: int, top: int, drawn: int | None, style: Style) -> str:
    """One move in words: ``name`` (``"You"`` or a third person) played ``action``;
    ``top`` is the discard it may have taken, ``drawn`` the card a draw showed."""
    if action == A.DRAW_STOCK:
        return f"{name} draw{'s' if name != 'You' else ''} from the stock" + (
            f": {card_text(drawn, style)}." if drawn is not None else ".")
    if action == A.TAKE_DISCARD:
        verb = "take" if name == "You" else "takes"
        return f"{name} {verb} {card_text(top, style)} from the discard pile."
    if action == A.PASS:
        return f"{name} pass{'es' if name != 'You' else ''} on the upcard."
    if action < A.KNOCK:
        return f"{name} discard{'s' if name != 'You' else ''} {card_text(action, style)}."
    if action == A.BIG_GIN:
        return f"{name} go{'es' if name != 'You' else ''} out with BIG GIN!"
    return f"{name} knock{'s' if name != 'You' else ''}!"


def play(
    opponent: Policy,
    rules: Any = "friendly",
    seed: int | None = None,
    seat: int = 0,
    input_fn: Callable[[str], str] = input,
    out: TextIO | None = None,
    color: bool | None = None,
    opponent_name: str | None = None,
) -> int:
    """Run one match against ``opponent`` (an agent, see :mod:`hgin_env.opponent`).

    Returns 0 when the match finished or the player quit or closed the input,
    130 on Ctrl-C at the prompt, 1 when the opponent played an illegal move.
    """
    opponent = as_opponent(opponent)
    stream = out if out is not None else sys.stdout
    say = _Out(stream)
    style = Style(supports_color(stream) if color is None else color)
    env = raw_env(rules=rules, reward="match")
    env.reset(seed=seed)
    game = env.game
    # Agents that reason about the order of play (search) get the hand's public history.
    history = history_for(game, opponent)
    rng = np.random.default_rng(seed)
    opp_name = opponent_name or getattr(opponent, "name", "opponent")
    names = ["You", "You"]
    names[1 - seat] = f"Opponent ({opp_name})"
    short = ["You", "You"]
    short[1 - seat] = "Opponent"
    say(style(f"Hollywood gin against {opp_name}. You are {AGENTS[seat]}.", "bold"))
    say(f"Columns: {env.rules.columns}, target {env.rules.target}. Type 'help' for the commands.")
    hand_shown = -1
    while not (env.match_over or env.truncated):
        mover = AGENTS.index(env.agent_selection)
        top = int(game.top_discard()[0])
        before = int(game.hands[0, mover])
        if hand_shown != env.hands_played:  # a new deal, whoever moves first
            hand_shown = env.hands_played
            say()
            say(style(f"── Hand {env.hands_played + 1} " + "─" * 40, "bold", "cyan"))
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
                    say(sheet_text(game.sheet(0), env.rules, names, style))
                elif kind == "moves":
                    _list_moves(say, options)
                else:
                    say(style(f"  {message}", "yellow"))
        else:
            obs = env.observe(AGENTS[mover])
            batch = {"observation": obs["observation"][None],
                     "action_mask": obs["action_mask"][None]}
            if history is not None:
                batch.update(history.observe(np.array([mover])))
            action = int(np.asarray(opponent.act(batch, rng=rng)).reshape(-1)[0])
            if not env.is_legal(action):
                say(f"The opponent chose an illegal move ({action}); it forfeits the match.")
                return 1
        env.step(action)
        info = env.infos[AGENTS[seat]]
        if history is not None:
            history.step_one(game, mover, action, bool(info.get("hand_over")))
        drawn = None
        if action == A.DRAW_STOCK and mover == seat:  # a draw never ends a hand
            new = int(game.hands[0, mover]) & ~before
            drawn = new.bit_length() - 1 if new else None
        if not _ends_hand(action):  # a knock is told by the showdown below
            say(narrate(short[mover], action, top, drawn, style))
        if info.get("hand_over"):
            say()
            discard = action - A.KNOCK if A.KNOCK <= action < A.DRAW_STOCK else None
            say(showdown_text(env.view, 0, names, style, knock_discard=discard))
            say()
            say(sheet_text(env.sheet(), env.rules, names, style))
    sheet = env.sheet()
    winner = sheet.match_winner
    say()
    if env.truncated:
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


def load_match(args: argparse.Namespace) -> tuple[Rules, Policy]:
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
