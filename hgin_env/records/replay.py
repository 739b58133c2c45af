"""Re-play a match record through the engine and verify every outcome (the library;
the ``hgin replay`` command is :mod:`hgin_env.apps.replay`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hgin_env import actions as A
from hgin_env.engine.vector import VectorGame
from hgin_env.records.format import (
    check_record,
    in_progress,
    record_switches,
    result_dict,
    sheet_dict,
    showdown_dict,
    shown,
)
from hgin_env.rules import rules_from_dict
from hgin_env.ui.render import move_text, sheet_text, showdown_text, table_text

__all__ = ["ReplayResult", "escape_controls", "match_text", "replay", "seat_names"]


@dataclass
class ReplayResult:
    """What a verified replay found: hands and actions played, the winner's seat
    (-1 for a match in progress)."""

    match: int
    hands: int
    actions: int
    winner: int


class _Failure:
    """Raises the one error shape of a replay: match, hand, step, then what differs."""

    def __init__(self, match: Any) -> None:
        self.match = match

    def __call__(self, hand: int, step: int, what: str) -> ValueError:
        return ValueError(f"match {self.match}, hand {hand}, step {step}: {what}")


#: Called with (event, hand, step, game, details) as the replay goes; see :func:`match_text`.
Listener = Callable[[str, int, int, VectorGame, dict[str, Any]], None]


def replay(record: dict[str, Any], listener: Listener | None = None) -> ReplayResult:
    """Re-play ``record`` through the engine, verifying every outcome; see the module doc.

    ``listener`` (optional) sees each ``"deal"``, ``"move"`` and
    ``"hand_end"`` with the engine after it, e.g. to print the match.
    """
    check_record(record)
    fail = _Failure(record["match"])
    try:
        rules = rules_from_dict(record_switches(record), source="the record's rules")
    except ValueError as err:
        raise fail(1, 0, str(err)) from None
    hands = record["hands"]
    game = VectorGame(1, rules, seed=np.array([record["seed"]], np.uint64), autoreset=False)
    if record["first_deal"] == "given":
        try:
            game.reset(decks=np.array([hands[0]["deck"]]), dealer=np.array([hands[0]["dealer"]]))
        except ValueError as err:
            raise fail(1, 0, f"the deal is refused by the engine: {err}") from None
    total = 0
    cut = False
    info: dict[str, np.ndarray] = {}
    unfinished = in_progress(record)
    for h, hand in enumerate(hands, 1):
        _check_deal(game, hand, fail, h)
        if listener is not None:
            listener("deal", h, 0, game, {})
        in_play = unfinished and h == len(hands)
        info = _play_hand(game, hand, fail, h, listener, in_play)
        total += len(hand["actions"])
        steps = len(hand["actions"])
        if in_play:
            break
        _check_equal(fail, h, steps, "showdown", showdown_dict(game.last_hand, 0),
                     hand["showdown"])
        sheet = sheet_dict(game.sheet(0))
        _check_equal(fail, h, steps, "sheet after the hand", sheet, hand["sheet"])
        cut = bool(info["truncated"][0]) if "truncated" in info else False
        over = bool(info["match_over"][0]) or cut
        if listener is not None:
            listener("hand_end", h, steps, game, {"match_over": over})
        if over and h < len(hands):
            raise fail(h, steps, f"the match ends with this hand, but the record has "
                                 f"{len(hands) - h} more hand(s)")
        if not over and h == len(hands):
            raise fail(h, steps, "the record ends before the match does (truncated?); "
                                 "a match in progress has result winner -1")
    _check_equal(fail, len(hands), len(hands[-1]["actions"]), "match result",
                 result_dict(sheet_dict(game.sheet(0)), len(hands), truncated=cut),
                 record["result"])
    return ReplayResult(int(record["match"]), len(hands), total, int(game.sheet(0).match_winner))


def _check_deal(game: VectorGame, hand: dict[str, Any], fail: _Failure, h: int) -> None:
    deck = game.deck[0].tolist()
    if deck != hand["deck"]:
        k = next(i for i, (a, b) in enumerate(zip(deck, hand["deck"], strict=True)) if a != b)
        raise fail(h, 0, f"deck position {k} is card {hand['deck'][k]} in the record but "
                         f"{deck[k]} in the engine's deal from the seed")
    if int(game.dealer[0]) != hand["dealer"]:
        raise fail(h, 0, f"the record's dealer is seat {hand['dealer']}, the rules make "
                         f"seat {int(game.dealer[0])} deal")


def _play_hand(game: VectorGame, hand: dict[str, Any], fail: _Failure, h: int,
               listener: Listener | None, in_play: bool = False) -> dict[str, np.ndarray]:
    """Play one hand's actions; the hand ends at its last action unless it is ``in_play``."""
    actions = hand["actions"]
    info: dict[str, np.ndarray] = {"hand_over": np.zeros(1, bool)}
    for k, (seat, action) in enumerate(actions, 1):
        mover = int(game.current_player[0])
        if seat != mover:
            raise fail(h, k, f"the record has seat {seat} moving, but it is seat {mover}'s turn")
        mask = game.legal_action_mask()[0]
        if not 0 <= action < A.NUM_ACTIONS or not mask[action]:
            legal = np.flatnonzero(mask).tolist()
            raise fail(h, k, A.illegal_message(action, int(game.phase[0]), mover, legal))
        top = int(game.top_discard()[0])
        _, info = game.step(np.array([action]))
        if listener is not None:
            listener("move", h, k, game, {"seat": seat, "action": action, "top": top})
        if info["hand_over"][0] and (k < len(actions) or in_play):
            if in_play:
                raise fail(h, k, "the hand ends here, but the record has it still in play")
            raise fail(h, k, f"the hand ends here, but the record has {len(actions) - k} "
                             "more action(s)")
    if not info["hand_over"][0] and not in_play:
        raise fail(h, len(actions), "the record's actions end before the hand does (truncated?)")
    return info


def _check_equal(fail: _Failure, h: int, step: int, what: str, engine: dict[str, Any],
                 recorded: dict[str, Any]) -> None:
    for key in sorted(set(engine) | set(recorded)):
        if engine.get(key) != recorded.get(key):
            raise fail(h, step, f"{what}: '{key}' is {shown(recorded.get(key, '(missing)'))} in "
                                f"the record but {shown(engine.get(key, '(absent)'))} in the "
                                "replay")


# ---------------------------------------------------------------------- text

# Control characters (C0, DEL, C1: ANSI escapes among them), bidi overrides, line and
# paragraph separators and lone surrogates: what lets a name move the cursor, clear the
# screen, reorder a line or fail to encode.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                     "\u2066-\u2069\ud800-\udfff]")


def escape_controls(text: str) -> str:
    """``text`` with every control character written as a Python escape (``\\x1b``).

    Names come from record files anyone may share: printed raw, a name could
    drive the terminal (ANSI escapes), fake lines, or stop the print.
    """
    return _UNSAFE.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100
                       else f"\\u{ord(m[0]):04x}", text)


def seat_names(record: dict[str, Any]) -> tuple[str, str]:
    """The agents' names by seat, told apart when both seats play the same agent."""
    a, b = record["agents"]
    return (a, b) if a != b else (f"{a} (seat 0)", f"{b} (seat 1)")


def match_text(record: dict[str, Any]) -> str:
    """The match as text, hand by hand, with the engine's text renderer (verified as it goes).

    The record's strings are shown with :func:`escape_controls`: the text is for a terminal.
    """
    a, b = seat_names(record)
    names = (escape_controls(a), escape_controls(b))
    rules = record["rules"]
    profile = escape_controls(rules["profile"] or "custom rules")
    lines = [f"Match {record['match']}: {names[0]} (seat 0) vs {names[1]} (seat 1), "
             f"{profile}, seed {record['seed']}, recorded by hgin "
             f"{escape_controls(record['hgin'])}"]
    knock_card: list[int | None] = [None]

    def listen(event: str, h: int, k: int, game: VectorGame, details: dict[str, Any]) -> None:
        if event == "deal":
            dealer = names[int(game.dealer[0])]
            lines.extend(["", f"=== Hand {h} (dealer: {dealer}) ===",
                          table_text(game, 0, viewer=None, names=names, sheet=False)])
            knock_card[0] = None
        elif event == "move":
            action = details["action"]
            card = details["top"] if action == A.TAKE_DISCARD else None
            if A.KNOCK <= action < A.DRAW_STOCK:
                knock_card[0] = action - A.KNOCK
            lines.append(f"  {k:3d}. {names[details['seat']]}: {move_text(action, card=card)}")
        else:
            lines.extend([showdown_text(game, 0, names, knock_discard=knock_card[0]),
                          sheet_text(game.sheet(0), game.rules, names)])

    replay(record, listen)
    return "\n".join(lines)

