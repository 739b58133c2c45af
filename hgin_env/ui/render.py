"""Text rendering of the table, the score sheet and the showdown.

Used by the PettingZoo/Gymnasium ``render()`` methods and by the terminal game
(``python -m hgin_env.play``).  Everything here only *reads* engine state:
melds come from :func:`hgin_env.melds.best_melds`, the showdown from the
engine's ``last_hand`` record and the sheet from ``VectorGame.sheet``.

Cards use the Unicode suit symbols (``10♥``, ``K♠``).  With ``color=True``
hearts and diamonds are red, melds green and deadwood yellow, using plain ANSI
escape codes; :func:`supports_color` decides for a given stream.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from hgin_env import actions as A
from hgin_env.cards import CARD_VALUES, NUM_RANKS, SUIT_SYMBOLS, mask_to_cards
from hgin_env.hollywood import COLUMN_NAMES, Sheet
from hgin_env.melds import best_melds, split_melds

if TYPE_CHECKING:
    from hgin_env.rules import Rules
    from hgin_env.state import GameView

__all__ = [
    "Style",
    "arrangement_text",
    "card_text",
    "cards_text",
    "hand_groups",
    "hand_summary",
    "move_text",
    "phase_text",
    "sheet_text",
    "showdown_text",
    "supports_color",
    "table_text",
]

RANK_TEXT = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
_CODES = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36",
          "bold": "1", "dim": "2"}
DEFAULT_NAMES = ("player_0", "player_1")


def supports_color(stream: TextIO | None) -> bool:
    """Whether ANSI colour should be written to ``stream``.

    ``NO_COLOR`` (any value) turns colour off, ``FORCE_COLOR`` turns it on;
    otherwise colour is used on a terminal whose ``TERM`` is not ``dumb``.
    """
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if stream is None or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # closed or detached stream
        return False


class Style:
    """Applies ANSI styles when ``color`` is on; otherwise returns text unchanged."""

    def __init__(self, color: bool = False) -> None:
        self.color = bool(color)

    def __call__(self, text: str, *styles: str) -> str:
        if not self.color or not styles:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


_PLAIN = Style(False)


def card_text(card: int, style: Style = _PLAIN) -> str:
    """``10♥``-style text of one card; red suits coloured when ``style`` has colour."""
    card = int(card)
    text = RANK_TEXT[card % NUM_RANKS] + SUIT_SYMBOLS[card // NUM_RANKS]
    return style(text, "red") if card // NUM_RANKS in (1, 2) else text


def _sorted_for_display(mask: int) -> list[int]:
    """Cards of ``mask`` by suit (♣ ♦ ♥ ♠) then rank, the order card ids have."""
    return mask_to_cards(mask)


def cards_text(mask: int, style: Style = _PLAIN) -> str:
    """The cards of ``mask`` sorted by suit then rank, space separated."""
    return " ".join(card_text(c, style) for c in _sorted_for_display(mask))


def _value(mask: int) -> int:
    return int(sum(int(CARD_VALUES[c]) for c in mask_to_cards(mask)))


def _meld_sort_key(meld: int) -> tuple[int, int]:
    cards = mask_to_cards(meld)
    return (min(c % NUM_RANKS for c in cards), min(cards))


def melds_text(melds: Sequence[int], style: Style = _PLAIN) -> str:
    """``[4♥ 5♥ 6♥] [9♣ 9♦ 9♠]`` for a list of meld masks."""
    parts = []
    for meld in sorted(melds, key=_meld_sort_key):
        inner = " ".join(card_text(c, style) for c in _sorted_meld(meld))
        parts.append(style("[", "green") + inner + style("]", "green"))
    return " ".join(parts)


def _sorted_meld(meld: int) -> list[int]:
    cards = mask_to_cards(meld)
    return sorted(cards, key=lambda c: (c % NUM_RANKS, c // NUM_RANKS))


def deadwood_text(mask: int, style: Style = _PLAIN, label: str = "deadwood") -> str:
    """``deadwood: K♦ 2♣ = 12`` (``deadwood: none`` when empty), the cards marked."""
    if not mask:
        return f"{label}: none"
    cards = sorted(mask_to_cards(mask), key=lambda c: (c % NUM_RANKS, c // NUM_RANKS))
    shown = " ".join(style(card_text(c), "yellow") for c in cards)
    return f"{label}: {shown} = {_value(mask)}"


def hand_groups(mask: int) -> tuple[list[list[int]], list[int]]:
    """A hand in one best arrangement, in display order: ``(melds, deadwood)``,
    each meld a list of card ids (runs by rank), the deadwood by rank."""
    melds, deadwood = best_melds(int(mask))
    groups = [_sorted_meld(meld) for meld in sorted(melds, key=_meld_sort_key)]
    rest = sorted(mask_to_cards(deadwood), key=lambda c: (c % NUM_RANKS, c // NUM_RANKS))
    return groups, rest


def arrangement_text(mask: int, style: Style = _PLAIN) -> str:
    """A hand grouped into one best arrangement: melds first, then the deadwood."""
    mask = int(mask)
    if not mask:
        return "(no cards)"
    melds, deadwood = best_melds(mask)
    head = melds_text(melds, style)
    tail = deadwood_text(deadwood, style)
    return f"{head}   {tail}" if head else tail


# ----------------------------------------------------------------------------- moves


def move_text(action: int, style: Style = _PLAIN, card: int | None = None) -> str:
    """Plain words for an action id, e.g. ``knock, discarding 7♥ face down``.

    ``card`` names the card taken for :data:`actions.TAKE_DISCARD`.
    """
    action = int(action)
    if 0 <= action < A.KNOCK:
        return f"discard {card_text(action, style)}"
    if A.KNOCK <= action < A.DRAW_STOCK:
        return f"knock, discarding {card_text(action - A.KNOCK, style)} face down"
    if action == A.DRAW_STOCK:
        return "draw from the stock"
    if action == A.TAKE_DISCARD:
        if card is not None and card >= 0:
            return f"take {card_text(card, style)} from the discard pile"
        return "take the top discard"
    if action == A.PASS:
        return "pass (decline the upcard)"
    if action == A.BIG_GIN:
        return "go out with big gin (all 11 cards melded)"
    raise ValueError(f"action {action} is outside 0..{A.NUM_ACTIONS - 1}")


# ----------------------------------------------------------------------------- sheet


def _has_bonuses(rules: Rules | None) -> bool:
    return rules is not None and (rules.game_bonus or rules.shutout_bonus or rules.box_bonus) > 0


def sheet_text(
    sheet: Sheet,
    rules: Rules | None = None,
    names: Sequence[str] = DEFAULT_NAMES,
    style: Style = _PLAIN,
) -> str:
    """The Hollywood sheet of both players.

    Per column: each player's score, ``-`` where the column is not yet open
    to that player (a player's k-th hand win opens the first k columns), and a
    ``*`` on the winner of a decided column; then each player's hands won and,
    when the rules pay bonuses, bonuses and totals.
    """
    c = sheet.columns
    bonus = _has_bonuses(rules)
    header = ["", *COLUMN_NAMES[:c], "hands won"]
    if bonus:
        header += ["bonus", "total"]
    rows = [header]
    for p in range(2):
        cells = [names[p]]
        for j in range(c):
            opened = int(sheet.wins[p]) > j
            score = int(sheet.scores[p, j])
            if sheet.decided[j] and int(sheet.column_winner[j]) == p:
                cells.append(f"{score}*")
            elif opened or score:
                cells.append(str(score))
            else:
                cells.append("-")
        cells.append(str(int(sheet.wins[p])))
        if bonus:
            cells += [str(int(sheet.bonuses[p].sum())), str(int(sheet.totals[p]))]
        rows.append(cells)
    status = ["column"]
    for j in range(c):
        winner = int(sheet.column_winner[j])
        status.append(f"won by {names[winner]}" if sheet.decided[j] else "open")
    status += [""] * (len(header) - len(status))
    rows.append(status)
    widths = [max(len(r[k]) for r in rows) for k in range(len(header))]
    lines = []
    for i, r in enumerate(rows):
        cells = [r[0].ljust(widths[0])] + [r[k].rjust(widths[k]) for k in range(1, len(r))]
        line = "  ".join(cells).rstrip()
        if i == 0:
            line = style(line, "bold")
        lines.append(line)
    title = f"Score sheet (target {sheet.target} per column"
    title += ", bonuses paid on decided columns)" if bonus else ")"
    out = [style(title, "bold", "cyan"), *lines]
    if sheet.match_over:
        won = int(sum(1 for j in range(c) if int(sheet.column_winner[j]) == sheet.match_winner))
        out.append(style(f"Match won by {names[sheet.match_winner]} ({won} of {c} column"
                         f"{'s' if c > 1 else ''})", "bold", "green"))
    return "\n".join(out)


# ----------------------------------------------------------------------------- showdown


def showdown_text(
    game: GameView,
    row: int = 0,
    names: Sequence[str] = DEFAULT_NAMES,
    style: Style = _PLAIN,
    knock_discard: int | None = None,
) -> str:
    """The last finished hand of game ``row``: both arrangements, layoffs, award."""
    rec = game.last_hand
    if not bool(rec.valid[row]):
        return "No hand has finished yet."
    if bool(rec.dead[row]):
        return style("Dead hand", "bold") + (
            ": the stock is down to its last two cards. No score, no hand win."
        )
    knocker = int(rec.knocker[row])
    defender = 1 - knocker
    k_hand = int(rec.knocker_hand[row])
    d_hand = int(rec.defender_hand[row])
    k_sets = int(rec.knocker_set_mask[row])
    k_melded = int(rec.knocker_meld_mask[row])
    d_sets = int(rec.defender_set_mask[row])
    d_melded = int(rec.defender_meld_mask[row])
    layoffs = int(rec.layoffs[row])
    big = bool(rec.big_gin[row])
    gin = bool(rec.gin[row])
    if big:
        # Recorded as one block of melded cards; regroup it for display.
        k_melds, _ = best_melds(k_hand)
    else:
        k_melds = split_melds(k_sets, k_melded & ~k_sets)
    d_melds = split_melds(d_sets, d_melded & ~d_sets)
    k_dead = k_hand & ~k_melded
    d_dead = d_hand & ~d_melded & ~layoffs
    kd, dd = int(rec.knocker_deadwood[row]), int(rec.defender_deadwood[row])
    if big:
        how = "went out with BIG GIN"
    elif gin:
        how = "went GIN"
    else:
        how = f"knocked with {kd} deadwood"
    if knock_discard is not None and not big:
        how += f", discarding {card_text(knock_discard, style)} face down"
    lines = [style(f"{names[knocker]} {how}.", "bold")]
    width = max(len(names[0]), len(names[1]))
    lines.append(f"  {names[knocker].ljust(width)}  {melds_text(k_melds, style) or '(no melds)'}"
                 f"   {deadwood_text(k_dead, style)}")
    d_line = f"  {names[defender].ljust(width)}  {melds_text(d_melds, style) or '(no melds)'}"
    if layoffs:
        d_line += f"   lays off: {cards_text(layoffs, style)}"
    elif not (gin or big):
        d_line += "   lays off: nothing"
    d_line += f"   {deadwood_text(d_dead, style)}"
    lines.append(d_line)
    winner = int(rec.winner[row])
    award = int(rec.award[row])
    if big or gin:
        rules = game.rules
        bonus = rules.big_gin_bonus if big else rules.gin_bonus
        kind = "big gin" if big else "gin"
        result = f"{award} points to {names[winner]} ({kind} bonus {bonus} + {dd} deadwood)."
    elif bool(rec.undercut[row]):
        result = (f"UNDERCUT ({names[defender]} {dd} vs {names[knocker]} {kd}): {award} points "
                  f"to {names[winner]} (undercut bonus {game.rules.undercut_bonus} + {kd} - {dd}).")
    else:
        result = f"{award} points to {names[winner]} ({dd} - {kd})."
    lines.append(style(result, "bold", "green"))
    return "\n".join(lines)


def hand_summary(game: GameView, row: int = 0, names: Sequence[str] = DEFAULT_NAMES) -> str:
    """One line on the last finished hand of game ``row`` (``""`` before the first)."""
    rec = game.last_hand
    if not bool(rec.valid[row]):
        return ""
    if bool(rec.dead[row]):
        return "Last hand: dead (no score)"
    knocker, winner = int(rec.knocker[row]), int(rec.winner[row])
    if bool(rec.big_gin[row]):
        how = "went big gin"
    elif bool(rec.gin[row]):
        how = "went gin"
    else:
        how = f"knocked with {int(rec.knocker_deadwood[row])}"
    result = f"{int(rec.award[row])} to {names[winner]}"
    if bool(rec.undercut[row]):
        result = "undercut: " + result
    return f"Last hand: {names[knocker]} {how}; {result}"


# ----------------------------------------------------------------------------- table


def phase_text(phase: int) -> str:
    """What the player to move does in ``phase``, e.g. ``to discard or knock``."""
    return {
        A.PHASE_OFFER_NONDEALER: "may take the upcard or pass (non-dealer first)",
        A.PHASE_OFFER_DEALER: "may take the upcard or pass (dealer)",
        A.PHASE_DRAW_STOCK: "must draw from the stock (both passed the upcard)",
        A.PHASE_DRAW: "to draw (stock or discard pile)",
        A.PHASE_DISCARD: "to discard or knock",
    }[int(phase)]


def table_text(
    game: GameView,
    row: int = 0,
    viewer: int | None = None,
    names: Sequence[str] = DEFAULT_NAMES,
    style: Style = _PLAIN,
    title: str | None = None,
    sheet: bool = True,
) -> str:
    """The table of game ``row`` as text.

    ``viewer`` is the seat whose hand is shown; the other hand is hidden but
    for the cards that player took from the discard pile and still holds.
    ``viewer=None`` is the spectator's view, showing both hands.
    """
    rules = game.rules
    lines = []
    if title:
        lines.append(style(title, "bold", "cyan"))
    dealer = int(game.dealer[row])
    mover = int(game.current_player[row])
    top = int(game.top_discard()[row])
    pile = int(game.pile_size[row])
    stock = int(game.stock_size[row])
    if top >= 0:
        pile_txt = f"{style(card_text(top, style), 'bold')} on top ({pile} card{'s' * (pile != 1)})"
    else:
        pile_txt = "empty"
    limit = int(game.knock_limit[row])
    limit_txt = "gin only" if limit == 0 else f"deadwood {limit} or less"
    lines.append(f"Discard pile: {pile_txt}"
                 f"   Stock: {stock} cards ({max(stock - 2, 0)} may be drawn)"
                 f"   Knock: {limit_txt}")
    seats = (0, 1) if viewer is None else (1 - viewer, viewer)
    width = max(len(n) for n in names) + len(" (dealer)")
    for seat in seats:
        label = names[seat] + (" (dealer)" if seat == dealer else "")
        hand = int(game.hands[row, seat])
        count = hand.bit_count()
        marker = style("▶ ", "bold") if seat == mover else "  "
        if viewer is None or seat == viewer:
            body = arrangement_text(hand, style)
        else:
            known = int(game.known[row, seat])
            body = f"{count} cards hidden"
            if known:
                body += f"; took from the pile: {cards_text(known, style)}"
        lines.append(f"{marker}{label.ljust(width)} {body}")
    lines.append(f"To move: {style(names[mover], 'bold')} {phase_text(int(game.phase[row]))}")
    taken = int(game.taken_card[row])
    if game.phase[row] == A.PHASE_DISCARD and taken >= 0 and rules.forbid_discard_of_taken:
        lines.append(f"  ({names[mover]} took {card_text(taken, style)} this turn and may not "
                     "discard it)")
    if sheet:
        lines.append("")
        lines.append(sheet_text(game.sheet(row), rules, names, style))
    return "\n".join(lines)
