"""A self-contained HTML page that steps through one recorded match.

    python -m hgin_env.replay FILE --match N --html out.html

The positions are computed here, by re-playing (and so verifying) the record
through the engine with :func:`hgin_env.records.replay.replay`; the page's script only
displays them, so what the page shows is what the engine played.  The page has
no external asset: CSS, script and the match data are inlined (:mod:`hgin_env.ui.webpage`).
A match in progress (a download from the play server) shows up to its last move.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from hgin_env import actions as A
from hgin_env.cards import NUM_RANKS, mask_to_cards
from hgin_env.engine.vector import VectorGame
from hgin_env.hollywood import COLUMN_NAMES
from hgin_env.records.replay import replay, seat_names
from hgin_env.ui.render import card_text, move_text, phase_text
from hgin_env.ui.webpage import inline_json, page

__all__ = ["inline_json", "match_html", "viewer_data", "write_html"]

TEMPLATE = "viewer_template.html"


def _cards(mask: int) -> list[int]:
    return [int(c) for c in mask_to_cards(int(mask))]


def _position(game: VectorGame) -> dict[str, Any]:
    """What the table shows after a step: both hands, pile, stock, who moves."""
    return {
        "hands": [_cards(game.hands[0, 0]), _cards(game.hands[0, 1])],
        "top": int(game.top_discard()[0]),
        "pile": int(game.pile_size[0]),
        "stock": int(game.stock_size[0]),
        "mover": int(game.current_player[0]),
        "todo": phase_text(int(game.phase[0])),
    }


def _end_position(before: dict[str, Any], action: int, showdown: dict[str, Any]) -> dict[str, Any]:
    """The table as the hand ends.

    The engine deals the next hand in the same step, so the final hands come
    from the (verified) showdown and the pile from the step before.
    """
    top, pile = before["top"], before["pile"]
    if 0 <= action < A.KNOCK:  # an ordinary discard lands face up on the pile
        top, pile = action, pile + 1
    return {"hands": [list(h) for h in showdown["hands"]], "top": top, "pile": pile,
            "stock": before["stock"], "mover": -1, "todo": "the hand is over"}


def viewer_data(record: dict[str, Any]) -> dict[str, Any]:
    """Every step of ``record`` as the page shows it (verifying the record on the way).

    A ``ValueError`` names the match, hand and step of any disagreement, as
    :func:`~hgin_env.records.replay.replay` does.
    """
    names = seat_names(record)
    hands: list[dict[str, Any]] = []
    last: dict[str, Any] = {}

    def listen(event: str, h: int, k: int, game: VectorGame, details: dict[str, Any]) -> None:
        if event == "deal":
            sheet_before = record["hands"][h - 2]["sheet"] if h > 1 else None
            hands.append({"number": h, "dealer": int(game.dealer[0]), "steps": [],
                          "sheet_before": sheet_before, "knock_limit": int(game.knock_limit[0])})
            position = _position(game)
            position.update(step=0, seat=-1, action=None, words="the deal")
            hands[-1]["steps"].append(position)
            last.clear()
            last.update(position)
        elif event == "move":
            hand = record["hands"][h - 1]
            action, seat = int(details["action"]), int(details["seat"])
            card = int(details["top"]) if action == A.TAKE_DISCARD else None
            words = f"{names[seat]}: {move_text(action, card=card)}"
            if k == len(hand["actions"]) and hand["showdown"] is not None:
                position = _end_position(last, action, hand["showdown"])
            else:
                position = _position(game)
            position.update(step=k, seat=seat, action=action, words=words)
            hands[-1]["steps"].append(position)
            last.clear()
            last.update(position)
        else:
            hand = record["hands"][h - 1]
            hands[-1]["showdown"] = hand["showdown"]
            hands[-1]["sheet"] = hand["sheet"]

    replay(record, listen)
    rules = record["rules"]
    return {
        "match": record["match"],
        "names": list(names),
        "profile": rules["profile"] or "custom rules",
        "seed": str(record["seed"]),
        "hgin": record["hgin"],
        "columns": list(COLUMN_NAMES[: int(rules["switches"]["columns"])]),
        "cards": [card_text(c) for c in range(4 * NUM_RANKS)],
        "hands": hands,
        "result": record["result"],
    }


def match_html(record: dict[str, Any]) -> str:
    """The whole page for ``record``: one string, no external asset (built by
    :func:`hgin_env.ui.webpage.page`, which escapes every name it inlines)."""
    data = viewer_data(record)
    title = f"hgin match {data['match']}: {data['names'][0]} vs {data['names'][1]}"
    return page(TEMPLATE, title, data)


def write_html(record: dict[str, Any], path: str | Path) -> Path:
    """Write the page for ``record`` to ``path`` (UTF-8) and return the path.

    Atomically: the page goes to a temporary file in the same folder, then
    replaces ``path`` in one step, so a failure (a bad record, a full disk)
    never leaves an empty or half page over an earlier one.  A link is
    followed: the file it names is the one replaced.
    """
    path = Path(path)
    content = match_html(record).encode("utf-8")  # every failure of the record comes first
    target = Path(os.path.realpath(path))
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    # O_EXCL: never write through a file someone else put there; 0o666 less the umask,
    # as an ordinary open would give it.
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return path
