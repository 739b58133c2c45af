"""The move language of a person at the table: the moves on offer, the words that
name them, why a move is refused, and a move told as a sentence.

Shared by the terminal game, the browser play page and the text protocol
(:mod:`hgin_env.ui.text`), so a move reads the same everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import parse_card
from hgin_env.ui.render import Style, card_text

if TYPE_CHECKING:
    from hgin_env.state import GameView

__all__ = ["move_options", "narrate", "parse_command", "why_illegal"]

_DRAW_WORDS = {"d", "draw", "s", "stock", "draw stock", "draw from stock", "draw from the stock"}
_TAKE_WORDS = {"t", "take", "pile", "up", "upcard", "take upcard", "take discard",
               "take the discard", "take the upcard"}
_PASS_WORDS = {"p", "pass"}


_BIG_GIN_WORDS = {"big gin", "biggin", "big-gin", "bg"}
_KNOCK_PREFIXES = ("knock ", "k ", "gin ")


_DISCARD_PREFIXES = ("discard ", "x ", "drop ")


def move_options(game: GameView, seat: int, style: Style) -> list[tuple[int, str]]:
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


def why_illegal(game: GameView, seat: int, action: int, keys: bool = True) -> str:
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


def parse_command(text: str, options: list[tuple[int, str]], game: GameView, seat: int
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
        elif _is_plain_words(low):
            return "error", None, (f"I don't understand {raw!r}: it is not a move (a move's "
                                   "number, a card to discard such as 7H, draw, take, pass or "
                                   "knock 7H). Type 'help' for the commands.")
        else:
            action = parse_card(raw)
    except ValueError as err:
        return "error", None, f"I don't understand {raw!r}: {err}. Type 'help' for the commands."
    if action in {a for a, _ in options}:
        return "move", action, ""
    return "error", None, why_illegal(game, seat, action)


def _is_plain_words(low: str) -> bool:
    """``low`` is words of letters only, longer than any card (``hello``, ``help me``): a
    card is a rank and a suit, at most two letters (``TD``), so this is no card at all."""
    return len(low.replace(" ", "")) > 2 and all(w.isascii() and w.isalpha()
                                                 for w in low.split(" "))


def _first_held(game: GameView, seat: int) -> int:
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
