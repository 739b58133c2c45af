"""The text form of a ``python_hollywood_gin`` state: plain, versioned, size-capped JSON.

pyspiel's own serialisation of a Python game (``state.serialize()`` before hgin gave
its state one, ``serialize_game_and_state``, ``pickle``) ends in a base64 pickle of
the state's ``__dict__``, and loading it unpickles whatever the string holds: code
runs.  This form holds only numbers and short strings, is parsed by :func:`json.loads`
under a length cap fixed before parsing, and every field is checked here (shapes,
ranges, the stage's invariants) and then by the engine (``GameState.from_dict``),
so a hostile or broken string is a one-line ``ValueError`` in bounded time and memory.

It is the *full* state, not the action history: a world from
``resample_from_infostate`` has hidden cards no history produces.  The history is
kept too (``state.history()`` must survive a round trip), as bookkeeping only.

Layout (``version`` 1)::

    {"format": "hgin-openspiel-state", "version": 1,
     "history": "-1:1,-1:33,...,0:106",        # OpenSpiel's player:action pairs
     "stage": "deal", "dealer": 0, "dealt": [..], "hands_done": 0,
     "totals": [0.0, 0.0], "views": ["hex", "hex"], "past": ["", ""],
     "engine": null | {<GameState.to_dict() as lists>}}
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Any

from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS

FORMAT = "hgin-openspiel-state"
VERSION = 1
#: The wrapper's stages, in the order the state module numbers them.
STAGES = ("dealer", "deal", "draw", "play", "over")
#: Bytes of a state apart from its history and views: the engine's arrays as JSON
#: (about 3 KB) with room to spare.
_BASE_CHARS = 64 * 1024
#: Upper bound of the characters one history entry takes ("-1:107," is 7).
_CHARS_PER_MOVE = 8
#: Kinds of information-state event (``openspiel._EV_*``), one byte each plus a value.
_EVENT_KINDS = 8
_HISTORY_ENTRY = re.compile(r"(-1|0|1):(\d{1,3})")
_PAST = re.compile(r"(|[0-9a-f]{16})")
_HEX = re.compile(r"[0-9a-f]*")
_KEYS = ("format", "version", "history", "stage", "dealer", "dealt", "hands_done",
         "totals", "views", "past", "engine")


@dataclasses.dataclass
class StateText:
    """The fields of one state, as read from or written to text (plain Python values)."""

    history: list[tuple[int, int]]
    stage: int
    dealer: int
    dealt: list[int]
    hands_done: int
    totals: tuple[float, float]
    views: tuple[bytes, bytes]
    past: tuple[str, str]
    engine: dict[str, Any] | None  # GameState.to_dict() as nested lists of ints

    def dumps(self) -> str:
        body = {
            "format": FORMAT, "version": VERSION,
            "history": ",".join(f"{p}:{a}" for p, a in self.history),
            "stage": STAGES[self.stage], "dealer": self.dealer, "dealt": list(self.dealt),
            "hands_done": self.hands_done, "totals": list(self.totals),
            "views": [v.hex() for v in self.views], "past": list(self.past),
            "engine": self.engine,
        }
        return json.dumps(body, separators=(",", ":"))


def max_chars(history_limit: int) -> int:
    """The longest text a game's state can have: the fixed part plus every move twice
    (once in the history, once in an information-state view as hex)."""
    return _BASE_CHARS + 2 * _CHARS_PER_MOVE * max(int(history_limit), 0)


def loads(text: Any, history_limit: int) -> StateText:
    """Parse and check a state's text; ``ValueError`` naming the first problem."""
    if not isinstance(text, str):
        raise ValueError(f"a python_hollywood_gin state string must be text, got "
                         f"{type(text).__name__}")
    limit = max_chars(history_limit)
    if len(text) > limit:
        raise ValueError(f"state string is {len(text)} characters, more than this game's "
                         f"limit of {limit}")
    if not text.lstrip().startswith("{"):
        raise ValueError(f"not a python_hollywood_gin state string (expected JSON with "
                         f"format {FORMAT!r}); pyspiel's pickled form is refused: it can "
                         f"run code")
    try:
        body = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("state string nests too deeply") from None
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise ValueError(f"state string is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ValueError("state string must be a JSON object")
    if body.get("format") != FORMAT:
        raise ValueError(f"state string format must be {FORMAT!r}, got {body.get('format')!r}")
    if body.get("version") != VERSION:
        raise ValueError(f"state string version {body.get('version')!r} is not supported "
                         f"(this hgin reads version {VERSION})")
    if sorted(body) != sorted(_KEYS):
        extra = sorted(set(body) - set(_KEYS))
        missing = sorted(set(_KEYS) - set(body))
        raise ValueError(f"state string fields: missing {missing}, unexpected {extra}")
    history = _history(body["history"], history_limit)
    stage = body["stage"]
    if stage not in STAGES:
        raise ValueError(f"state stage must be one of {STAGES}, got {stage!r}")
    views = tuple(_view(v, seat, history_limit) for seat, v in enumerate(_pair(body, "views")))
    past = _pair(body, "past")
    for seat, digest in enumerate(past):
        if not isinstance(digest, str) or not _PAST.fullmatch(digest):
            raise ValueError(f"state past[{seat}] must be empty or 16 hex digits")
    totals = _pair(body, "totals")
    for t in totals:
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
            raise ValueError(f"state totals must be two finite numbers, got {totals!r}")
    engine = body["engine"]
    if engine is not None:
        engine = _engine_arrays(engine)
    return StateText(
        history=history, stage=STAGES.index(stage),
        dealer=_int(body, "dealer", -1, 1), dealt=_cards(body["dealt"]),
        hands_done=_int(body, "hands_done", 0, history_limit),
        totals=(float(totals[0]), float(totals[1])),
        views=(views[0], views[1]), past=(past[0], past[1]), engine=engine)


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a state holds")


def _pair(body: dict[str, Any], key: str) -> list[Any]:
    value = body[key]
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(f"state {key} must be a list of two, one per seat")
    return value


def _int(body: dict[str, Any], key: str, low: int, high: int) -> int:
    value = body[key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"state {key} must be an integer in [{low}, {high}], got {value!r}")
    return value


def _cards(value: Any) -> list[int]:
    if not isinstance(value, list) or len(value) > 2 * 10 + 1:
        raise ValueError("state dealt must be a list of at most 21 cards")
    for c in value:
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < NUM_CARDS:
            raise ValueError(f"state dealt holds {c!r}, not a card id 0..{NUM_CARDS - 1}")
    if len(set(value)) != len(value):
        raise ValueError("state dealt holds a card twice")
    return list(value)


def _history(value: Any, history_limit: int) -> list[tuple[int, int]]:
    if not isinstance(value, str):
        raise ValueError("state history must be a string of player:action pairs")
    if not value:
        return []
    entries = value.split(",")
    if len(entries) > history_limit:
        raise ValueError(f"state history has {len(entries)} moves, more than one episode "
                         f"of this game can have ({history_limit})")
    out = []
    for i, entry in enumerate(entries):
        match = _HISTORY_ENTRY.fullmatch(entry)
        if match is None or int(match[2]) >= A.NUM_ACTIONS:
            raise ValueError(f"state history entry {i} is {entry[:20]!r}, not player:action "
                             f"with player -1, 0 or 1 and action 0..{A.NUM_ACTIONS - 1}")
        out.append((int(match[1]), int(match[2])))
    return out


def _view(value: Any, seat: int, history_limit: int) -> bytes:
    if not isinstance(value, str) or not _HEX.fullmatch(value) or len(value) % 4:
        raise ValueError(f"state views[{seat}] must be hex, two bytes per event")
    if len(value) > _CHARS_PER_MOVE * max(history_limit, 1):
        raise ValueError(f"state views[{seat}] is longer than any hand of this game")
    raw = bytes.fromhex(value)
    if any(kind >= _EVENT_KINDS for kind in raw[0::2]):
        raise ValueError(f"state views[{seat}] holds an unknown event kind")
    return raw


def _engine_arrays(value: Any) -> dict[str, Any]:
    """The engine's arrays: a flat object of at most 64 names, each a list nested at
    most 4 deep of plain integers or booleans (checked before numpy sees it)."""
    if not isinstance(value, dict) or len(value) > 64:
        raise ValueError("state engine must be an object of named integer arrays")
    for name, arr in value.items():
        _check_ints(arr, name, depth=0)
    return value


def _check_ints(value: Any, name: str, depth: int) -> None:
    if isinstance(value, list):
        if depth >= 4:
            raise ValueError(f"state engine array {name!r} nests too deeply")
        for item in value:
            _check_ints(item, name, depth + 1)
    elif not isinstance(value, int) or not -(1 << 63) <= value < 1 << 64:  # bools are ints
        raise ValueError(f"state engine array {name!r} holds {str(value)[:20]!r}, "
                         f"not a 64-bit integer")
