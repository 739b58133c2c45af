"""Match records: every deal, action and showdown of full matches, as JSON Lines.

One line per match (format ``hgin-match``, see docs/records.md for the
schema); a path ending in ``.gz`` is read and written gzip-compressed.  A
record holds enough to re-play the match through the engine and to check
every outcome (:func:`hgin_env.records.replay.replay`), so a shared game cannot
silently disagree with the rules that produced it.

:class:`MatchRecorder` collects records from a batched loop at a small cost:
per engine step it keeps three small arrays (never a Python object per
game); the rarer ends of hands are read once per step for all the games they end.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import json
import reprlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields
from functools import lru_cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from hgin_env.cards import NUM_CARDS, NUM_RANKS, mask_to_cards
from hgin_env.engine.hand import HandRecord
from hgin_env.hollywood import Sheet, SheetBatch
from hgin_env.melds import best_melds
from hgin_env.rules import PROFILES, Rules, field_names

if TYPE_CHECKING:
    from hgin_env.state import GameView

__all__ = [
    "FORMAT",
    "MAX_LINE_BYTES",
    "VERSION",
    "MatchRecorder",
    "MatchStream",
    "RecordWriter",
    "check_record",
    "hgin_version",
    "in_progress",
    "make_record",
    "meld_lists",
    "open_text",
    "read_records",
    "sheet_dict",
    "showdown_dict",
    "shown",
]

#: The ``format`` field of every record.
FORMAT = "hgin-match"
#: The ``version`` field; bumped whenever a field changes meaning or is removed.
VERSION = 1
#: How the first hand of a record is dealt on replay.
FIRST_DEALS = ("seeded", "given")
_TOP_KEYS = ("format", "version", "hgin", "match", "rules", "seed", "first_deal", "agents",
             "hands", "result")
_HAND_KEYS = ("dealer", "deck", "actions", "showdown", "sheet")
#: The longest line :func:`read_records` reads (its newline included).  The longest
#: matches seen (random against random, 500+ hands) take under 1 MB; a longer line is
#: refused rather than read whole, so a small .gz cannot expand into gigabytes of memory.
MAX_LINE_BYTES = 16 * 2**20


@lru_cache(maxsize=1)
def hgin_version() -> str:
    """The installed hgin version, ``"unknown"`` when run from a tree that is not installed.

    Cached: looking the version up costs about a millisecond, once per record otherwise.
    """
    try:
        return importlib.metadata.version("hgin")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 4, 80, 80, 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = 60
_REPR.maxdict = 20


def shown(value: Any) -> str:
    """``repr(value)``, cut short: an error names a hostile value in one bounded line
    (a deeply nested or huge value would otherwise overflow the stack or the screen)."""
    return _REPR.repr(value)


# ---------------------------------------------------------------------- record parts


def showdown_dict(record: HandRecord, row: int) -> dict[str, Any]:
    """The finished hand of game ``row`` of an engine's ``last_hand``, by seat, as plain values.

    ``melds`` lists each seat's melds (card ids, ascending); the knocker's
    big gin is regrouped into melds as the text renderer does.  A dead hand
    has ``dead`` true, no melds and no deadwood (nothing was scored).
    """
    return showdown_dicts(record, np.array([row]))[0]


def showdown_dicts(record: HandRecord, rows: np.ndarray) -> list[dict[str, Any]]:
    """:func:`showdown_dict` of several rows, reading each field of the record once."""
    v = {f.name: getattr(record, f.name)[rows].tolist() for f in fields(record)}
    return [_showdown(v, i) for i in range(len(rows))]


def _showdown(v: dict[str, list[Any]], i: int) -> dict[str, Any]:
    hands = [mask_to_cards(v["knocker_hand"][i]), mask_to_cards(v["defender_hand"][i])]
    if v["dead"][i]:
        # For a dead hand the engine keeps seat 0's hand as "knocker_hand".
        return {"dead": True, "knocker": -1, "winner": -1, "award": 0, "gin": False,
                "big_gin": False, "undercut": False, "hands": hands, "melds": None,
                "layoffs": [], "deadwood": None}
    knocker, big = v["knocker"][i], v["big_gin"][i]
    k_sets, k_melded = v["knocker_set_mask"][i], v["knocker_meld_mask"][i]
    d_sets, d_melded = v["defender_set_mask"][i], v["defender_meld_mask"][i]
    if big:  # recorded as one block of melded cards: regrouped as the renderer does
        k_melds = [mask_to_cards(m) for m in best_melds(v["knocker_hand"][i])[0]]
    else:
        k_melds = meld_lists(k_sets, k_melded & ~k_sets)
    melds = [k_melds, meld_lists(d_sets, d_melded & ~d_sets)]
    deadwood = [v["knocker_deadwood"][i], v["defender_deadwood"][i]]
    if knocker == 1:
        hands, melds, deadwood = hands[::-1], melds[::-1], deadwood[::-1]
    return {"dead": False, "knocker": knocker, "winner": v["winner"][i],
            "award": v["award"][i], "gin": v["gin"][i], "big_gin": big,
            "undercut": v["undercut"][i], "hands": hands, "melds": melds,
            "layoffs": mask_to_cards(v["layoffs"][i]), "deadwood": deadwood}


def meld_lists(set_cards: int, run_cards: int) -> list[list[int]]:
    """:func:`~hgin_env.melds.split_melds` as lists of card ids, in its order (sets by
    rank, then runs by suit), walking only the cards held: it runs once per hand recorded."""
    sets: dict[int, list[int]] = {}
    for card in mask_to_cards(set_cards):
        sets.setdefault(card % NUM_RANKS, []).append(card)
    melds = [sets[rank] for rank in sorted(sets)]
    run: list[int] = []
    for card in mask_to_cards(run_cards):  # ascending ids: suit by suit, rank by rank
        if run and (card != run[-1] + 1 or card % NUM_RANKS == 0):
            melds.append(run)
            run = []
        run.append(card)
    if run:
        melds.append(run)
    return melds


def sheet_dict(sheet: Sheet) -> dict[str, Any]:
    """A sheet as plain values (``Sheet.to_dict`` without the target, which the rules hold)."""
    out = sheet.to_dict()
    del out["target"]
    return out


def sheet_dicts(sheets: SheetBatch, rows: np.ndarray) -> list[dict[str, Any]]:
    """:func:`sheet_dict` of several games' sheets, computing the bonuses once for all."""
    part = sheets.take(rows)
    bonuses = part.bonuses()
    totals = part.scores.sum(axis=2, dtype=np.int32) + bonuses.sum(axis=2, dtype=np.int32)
    v = {name: arr.tolist() for name, arr in part.arrays().items()}
    bonus_list, total_list = bonuses.tolist(), totals.tolist()
    return [{"scores": v["scores"][i], "decided": v["decided"][i],
             "column_winner": v["column_winner"][i], "wins": v["wins"][i],
             "boxes": v["boxes"][i], "bonuses": bonus_list[i], "totals": total_list[i],
             "match_winner": v["match_winner"][i]} for i in range(len(rows))]


def result_dict(sheet: dict[str, Any], hands: int, truncated: bool = False) -> dict[str, Any]:
    """The match result from its final sheet (a :func:`sheet_dict`).

    A match cut off by the match bound (``hand.MAX_HANDS_PER_MATCH``) has no winner
    (-1) and says ``"truncated": true``, which tells it apart from a match in progress.
    """
    won = [sum(1 for decided, winner in zip(sheet["decided"], sheet["column_winner"],
                                           strict=True) if decided and winner == seat)
           for seat in (0, 1)]
    out = {"winner": sheet["match_winner"], "columns_won": won, "totals": sheet["totals"],
           "hands": hands}
    if truncated:
        out["truncated"] = True
    return out


def rules_dict(rules: Rules, profile: str | None) -> dict[str, Any]:
    """The rules: every switch, and the profile name when they came from a named profile."""
    return {"profile": profile if profile in PROFILES else None,
            "switches": dict(_switches(rules))}


@lru_cache(maxsize=8)
def _switches(rules: Rules) -> tuple[tuple[str, Any], ...]:
    """``rules.to_dict()``, cached: a tournament records thousands of matches of one rule set."""
    return tuple(rules.to_dict().items())


def make_record(
    match: int,
    game: dict[str, Any],
    rules: Rules,
    agents: Sequence[str],
    profile: str | None = None,
    context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A complete record from one match of :meth:`MatchRecorder.matches` and its metadata.

    ``agents`` names the players by seat; ``context`` (optional, free-form)
    says where the match came from, e.g. the tournament seed and pairing.
    """
    if len(agents) != 2:
        raise ValueError(f"agents must name the two seats, got {list(agents)!r}")
    record = {
        "format": FORMAT,
        "version": VERSION,
        "hgin": hgin_version(),
        "match": int(match),
        "rules": rules_dict(rules, profile),
        "seed": int(game["seed"]),
        "first_deal": game["first_deal"],
        "agents": [str(a) for a in agents],
        "hands": game["hands"],
        "result": game["result"],
    }
    if context:
        record["context"] = context
    return record


# ---------------------------------------------------------------------- recorder


class MatchRecorder:
    """Collects the matches of a batched loop over a :class:`~hgin_env.engine.VectorGame`.

    Matches are numbered ``0..num_matches-1``; ``ids`` maps the engine's rows
    to match numbers (so a loop may shrink its batch), and ``live`` says
    which rows still count.  Call :meth:`start` once after the engine's
    reset, and :meth:`step` after every ``game.step``::

        recorder.start(game, ids)
        seats = game.current_player.copy()
        _, info = game.step(actions)
        recorder.step(game, ids, live, seats, actions, info)

    A match recorded from the engine's seed stream (the default
    ``first_deal="seeded"``) re-plays from its seed alone; use ``"given"``
    when the first deal was passed to ``reset(decks=..., dealer=...)``.
    Each row's match ends once: from then on its row must not be ``live``
    (an autoreset engine deals it a new match, which is not recorded).  Rows
    whose match number is ``num_matches`` or more are not recorded, so a loop
    over many matches can keep only its first few.
    """

    def __init__(self, num_matches: int, first_deal: str = "seeded") -> None:
        if first_deal not in FIRST_DEALS:
            raise ValueError(f"first_deal must be one of {FIRST_DEALS}, got {first_deal!r}")
        self.num_matches = int(num_matches)
        self.first_deal = first_deal
        self.seeds = np.zeros(self.num_matches, np.uint64)
        self.hand_index = np.zeros(self.num_matches, np.int32)
        self.hands: list[list[dict[str, Any]]] = [[] for _ in range(self.num_matches)]
        self.results: dict[int, dict[str, Any]] = {}
        self.finished = np.zeros(self.num_matches, bool)
        self._moves: list[tuple[np.ndarray, ...]] = []

    def start(self, game: GameView, ids: np.ndarray | None = None) -> None:
        """Note the seed and first deal of every row's match."""
        ids = np.arange(game.num_games) if ids is None else np.asarray(ids)
        for row, match in enumerate(ids.tolist()):
            if match < self.num_matches:
                self.seeds[match] = game.seeds[row]
                self.hands[match] = [_deal(game, row)]

    def step(self, game: GameView, ids: np.ndarray, live: np.ndarray, seats: np.ndarray,
             actions: np.ndarray, info: dict[str, np.ndarray]) -> None:
        """Record one engine step: the actions of live rows, and the hands it ended."""
        live = live & (ids < self.num_matches)
        rows = np.flatnonzero(live)
        matches = ids[rows]
        if self.finished[matches].any():
            match = int(matches[self.finished[matches]][0])
            raise ValueError(f"match {match} is over; its row must not be live any more")
        self._moves.append((matches.astype(np.int32), self.hand_index[matches],
                            np.asarray(seats)[rows].astype(np.int8),
                            np.asarray(actions)[rows].astype(np.int8)))
        ended = np.flatnonzero(info["hand_over"] & live)
        if ended.size == 0:
            return
        # Read per batch of ended rows, not per row: the engine's arrays are costly to
        # index one element at a time.
        cut = info["truncated"][ended] if "truncated" in info else np.zeros(ended.size, bool)
        over = info["match_over"][ended] | cut
        showdowns = showdown_dicts(game.last_hand, ended)
        going, done = ended[~over], ended[over]
        sheets = dict(zip(going.tolist(), sheet_dicts(game.sheets, going), strict=True))
        sheets.update(zip(done.tolist(), sheet_dicts(game.last_match, done), strict=True))
        dealers, decks = game.dealer[going].tolist(), game.deck[going].tolist()
        deals = {row: {"dealer": dealers[k], "deck": decks[k]}
                 for k, row in enumerate(going.tolist())}
        self.hand_index[ids[ended]] += 1
        for k, row in enumerate(ended.tolist()):
            match = int(ids[row])
            hand = self.hands[match][-1]
            hand["showdown"], hand["sheet"] = showdowns[k], sheets[row]
            if row in deals:
                self.hands[match].append(deals[row])
            else:
                self.results[match] = result_dict(sheets[row], len(self.hands[match]),
                                                  truncated=bool(cut[k]))
                self.finished[match] = True

    def matches(self) -> list[dict[str, Any] | None]:
        """Per match: ``{"seed", "first_deal", "hands", "result"}`` once finished, else None."""
        moves = self._actions_by_hand()
        out: list[dict[str, Any] | None] = []
        for match in range(self.num_matches):
            if match not in self.results:
                out.append(None)
                continue
            out.append({"seed": int(self.seeds[match]), "first_deal": self.first_deal,
                        "hands": self._hand_list(match, moves), "result": self.results[match]})
        return out

    def _hand_list(self, match: int, moves: dict[tuple[int, int], np.ndarray]
                   ) -> list[dict[str, Any]]:
        """The hands of ``match`` with their actions; a hand in play has no showdown yet."""
        hands = []
        for h, hand in enumerate(self.hands[match]):
            pairs = moves.get((match, h))
            hands.append({"dealer": hand["dealer"], "deck": hand["deck"],
                          "actions": [] if pairs is None else pairs.tolist(),
                          "showdown": hand.get("showdown"), "sheet": hand.get("sheet")})
        return hands

    def match_so_far(self, match: int, game: GameView, row: int) -> dict[str, Any]:
        """``match`` as :meth:`matches` gives it, but also while it goes on (row ``row``).

        An unfinished match ends with the hand in play: its actions so far, with
        ``showdown`` and ``sheet`` null, and its ``result`` (from the sheet now)
        has ``winner`` -1 (docs/records.md, "A match in progress").
        """
        hands = self._hand_list(match, self._actions_by_hand())
        if self.finished[match]:
            result = self.results[match]
        else:
            result = result_dict(sheet_dicts(game.sheets, np.array([row]))[0], len(hands))
        return {"seed": int(self.seeds[match]), "first_deal": self.first_deal,
                "hands": hands, "result": result}

    def _actions_by_hand(self) -> dict[tuple[int, int], np.ndarray]:
        """Every recorded action grouped by (match, hand), in play order: one sort in all."""
        if not self._moves:
            return {}
        match, hand, seat, action = (np.concatenate(parts) for parts in zip(*self._moves,
                                                                             strict=True))
        order = np.lexsort((hand, match))  # stable: play order kept within a hand
        match, hand = match[order], hand[order]
        pairs = np.stack([seat[order], action[order]], axis=1).astype(np.int64)
        starts = np.flatnonzero(np.r_[True, (match[1:] != match[:-1]) | (hand[1:] != hand[:-1])])
        ends = np.r_[starts[1:], match.size]
        return {(int(match[s]), int(hand[s])): pairs[s:e]
                for s, e in zip(starts.tolist(), ends.tolist(), strict=True)}


def _deal(game: GameView, row: int) -> dict[str, Any]:
    return {"dealer": int(game.dealer[row]), "deck": game.deck[row].tolist()}


class MatchStream:
    """Records the matches a one-game environment plays, handing each out as it finishes.

    Where :class:`MatchRecorder` keeps a fixed set of matches until the end of
    a batched loop, an environment plays match after match on one
    :class:`~hgin_env.engine.single.SingleGame`, so this recorder holds only the
    match in progress and calls ``emit(match)`` when it ends (``match`` as an
    entry of :meth:`MatchRecorder.matches`, for :func:`make_record`).  The
    environment calls it (``raw_env.recorder``, set by
    :class:`hgin_env.envs.wrappers.RecordMatches`): :meth:`start` after the first
    deal of every match, :meth:`played` after every action.  A match started
    again before it ends (a reset, a forfeit, the env closed) is dropped and
    counted in ``dropped``: a record must replay to its end.
    """

    def __init__(self, emit: Callable[[dict[str, Any]], None]) -> None:
        self.emit = emit
        self.dropped = 0
        self.live = False
        self._seed = 0
        self._first_deal = "seeded"
        self._hands: list[dict[str, Any]] = []
        self._actions: list[int] = []  # seat * 128 + action: a cached small int, no allocation
        self._game: Any = None
        self._finished: dict[str, Any] | None = None

    def start(self, game: GameView, first_deal: str = "seeded") -> None:
        """Begin recording the match just dealt in ``game`` (a ``SingleGame``, read again
        at the end of every hand)."""
        if first_deal not in FIRST_DEALS:
            raise ValueError(f"first_deal must be one of {FIRST_DEALS}, got {first_deal!r}")
        self.dropped += self.live
        self._game = game
        self._seed = game.seed
        self._first_deal = first_deal
        self._hands = [{"dealer": game.dealer, "deck": list(game.deck)}]
        self._actions = []
        self._finished = None
        self.live = True

    def played(self, seat: int, action: int, hand_over: bool, match_over: bool,
               truncated: bool = False) -> None:
        """One action (the per-step path: a list append unless the hand ended);
        ``truncated``: this hand cut the match off at the match bound."""
        self._actions.append(seat << 7 | action)
        if hand_over and self.live:
            self._hand_ended(match_over or truncated, truncated)

    def close(self) -> None:
        """Drop (and count) the match in progress, if any."""
        self.dropped += self.live
        self.live = False

    def _hand_ended(self, match_over: bool, truncated: bool = False) -> None:
        # SingleGame's own layout (Python ints for the next deal): a fifth of the time
        # MatchRecorder's batched reads take for one game.
        game = self._game
        sheet = sheet_dict((game.last_match if match_over else game.sheets).sheet(0))
        hands = self._hands
        hand = hands[-1]
        hands[-1] = {"dealer": hand["dealer"], "deck": hand["deck"], "actions": self._actions,
                     "showdown": showdown_dict(game.last_hand, 0), "sheet": sheet}
        self._actions = []
        if not match_over:
            hands.append({"dealer": game.dealer, "deck": list(game.deck)})
            return
        self.live = False
        for hand in hands:
            hand["actions"] = _pairs(hand["actions"])
        self._finished = {"seed": self._seed, "first_deal": self._first_deal, "hands": hands,
                          "result": result_dict(sheet, len(hands), truncated)}
        self.emit(self._finished)

    def so_far(self) -> dict[str, Any]:
        """The match as :meth:`MatchRecorder.match_so_far` gives it: once finished, what
        was emitted; while it goes on, its hands so far, the hand in play last (its
        actions so far, ``showdown`` and ``sheet`` null) and ``winner`` -1."""
        if self._finished is not None:
            return self._finished
        if not self.live:
            raise ValueError("no match is being recorded: start() one first")
        hands = [{"dealer": hand["dealer"], "deck": hand["deck"],
                  "actions": _pairs(hand.get("actions", self._actions)),
                  "showdown": hand.get("showdown"), "sheet": hand.get("sheet")}
                 for hand in self._hands]
        sheet = sheet_dict(self._game.sheets.sheet(0))
        return {"seed": self._seed, "first_deal": self._first_deal, "hands": hands,
                "result": result_dict(sheet, len(hands))}


def _pairs(codes: list[int]) -> list[list[int]]:
    """``seat << 7 | action`` codes as the record's ``[seat, action]`` pairs."""
    return [[code >> 7, code & 127] for code in codes]


# ---------------------------------------------------------------------- files


def open_text(path: str | Path, mode: str) -> IO[str]:
    """A text file, gzip-compressed when ``path`` ends in ``.gz``."""
    if str(path).endswith(".gz"):
        # Level 6 (zlib's default): near level 9's size at a fraction of its time.
        return gzip.open(path, mode + "t", encoding="utf-8", compresslevel=6)
    return open(path, mode, encoding="utf-8")


class RecordWriter:
    """Writes records to a new JSON Lines file (gzip by ``.gz``), one match per line.

    Use as a context manager.  Each record's top-level fields are checked
    before it is written; its hands are checked when read (:func:`read_records`)
    and played by :func:`~hgin_env.records.replay.replay` (checking every action here
    would cost a tenth of an evaluation's time).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.count = 0
        self._file = open_text(self.path, "w")

    def write(self, record: dict[str, Any]) -> None:
        check_record(record, hands=False)
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
        self.count += 1

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of a file, checked one by one; ``ValueError`` names the bad line.

    Lines are read in bounded chunks and refused past :data:`MAX_LINE_BYTES`, so
    memory stays bounded whatever the file holds (a .gz may expand a thousandfold).
    """
    try:
        with _open_binary(path) as fh:
            number = 0
            while line := fh.readline(MAX_LINE_BYTES + 1):
                number += 1
                if len(line) > MAX_LINE_BYTES:
                    raise ValueError(f"{path}: line {number} is longer than "
                                     f"{MAX_LINE_BYTES // 2**20} MiB: not a match record")
                if not line.strip():
                    continue
                yield _parse_line(path, number, line)
    except (OSError, EOFError) as err:
        raise ValueError(f"{path}: cannot read records: {err}") from None


def _open_binary(path: str | Path) -> IO[bytes]:
    """The file as bytes (gunzipped by ``.gz``): lines are split before they are decoded."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def _parse_line(path: str | Path, number: int, line: bytes) -> dict[str, Any]:
    """One line as a checked record; every failure is a ``ValueError`` naming the line."""
    try:
        record = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: line {number} is not UTF-8 text: {err}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: line {number} (match {number - 1} by position) "
                         f"is not a complete JSON record (truncated?): {err}") from None
    except RecursionError:
        raise ValueError(f"{path}: line {number} is nested too deeply to be a match "
                         "record") from None
    check_record(record, where=f"{path}: line {number}")
    return record


# ---------------------------------------------------------------------- checks


def check_record(record: Any, where: str | None = None, hands: bool = True) -> None:
    """Check a record's structure (not its play: that is :func:`~hgin_env.records.replay.replay`).

    ``ValueError`` names the match, and the hand of a malformed hand;
    ``hands=False`` checks the top-level fields only.
    """
    if not isinstance(record, dict):
        raise ValueError(f"{where or 'record'}: a record must be a JSON object, "
                         f"got {type(record).__name__}")
    match = record.get("match")
    label = f"match {match if _is_int(match) else shown(match)}"
    label = label if where is None else f"{where}: {label}"

    def need(ok: bool, what: str) -> None:
        if not ok:
            raise ValueError(f"{label}{',' if what.startswith('hand ') else ':'} {what}")

    missing = [key for key in _TOP_KEYS if key not in record]
    need(not missing, f"missing field(s) {', '.join(missing)}")
    need(record["format"] == FORMAT, f"format is {shown(record['format'])}, expected {FORMAT!r}")
    need(record["version"] == VERSION,
         f"version {shown(record['version'])} is not supported (this hgin reads {VERSION})")
    need(isinstance(record["hgin"], str), "'hgin' must be a version string")
    need(_is_int(match) and match >= 0, "'match' must be a non-negative integer")
    need(_is_int(record["seed"]) and 0 <= record["seed"] < 2**64,
         "'seed' must be an unsigned 64-bit integer")
    need(record["first_deal"] in FIRST_DEALS, f"'first_deal' must be one of {FIRST_DEALS}")
    agents = record["agents"]
    need(isinstance(agents, list) and len(agents) == 2
         and all(isinstance(a, str) for a in agents), "'agents' must be two names, by seat")
    rules = record["rules"]
    need(isinstance(rules, dict) and isinstance(rules.get("switches"), dict),
         "'rules' must hold 'switches' (every rules switch)")
    # Printed and shown as they are: a string or null, not any JSON value.
    profile = rules.get("profile", ...)
    need(profile is None or isinstance(profile, str),
         "'rules' must hold 'profile' (a profile name or null)")
    # Every switch, exactly: a missing one must not silently take this version's default,
    # except a switch added after records were first written, whose absence means the one
    # behaviour hgin had before it (SWITCHES_ADDED_LATER).
    missing = sorted(set(field_names()) - set(rules["switches"]) - set(SWITCHES_ADDED_LATER))
    unknown = sorted(set(rules["switches"]) - set(field_names()))
    need(not missing, f"rules switch(es) missing: {', '.join(missing)}")
    need(not unknown, f"unknown rules switch(es) {', '.join(unknown)} (a newer hgin?)")
    # The rules check the values; a list or object here would only make a deep or huge error.
    bad = sorted(k for k, v in rules["switches"].items() if isinstance(v, (list, dict)))
    need(not bad, f"rules switch(es) {', '.join(bad)} must be a number, boolean or name")
    need(isinstance(record["result"], dict) and "winner" in record["result"],
         "'result' must hold the match 'winner'")
    need(isinstance(record["hands"], list) and len(record["hands"]) > 0,
         "'hands' must be a non-empty list")
    if hands:
        last = len(record["hands"])
        for h, hand in enumerate(record["hands"], 1):
            _check_hand(hand, lambda ok, what, step=0, h=h: need(
                ok, f"hand {h}, step {step}: {what}"), in_play=h == last and in_progress(record))


#: Rules switches added after the record format was fixed, with the value every earlier
#: hgin played by: a record without the switch was written under that value.
SWITCHES_ADDED_LATER: dict[str, Any] = {"layoff": "optimal"}


def record_switches(record: dict[str, Any]) -> dict[str, Any]:
    """The record's rules switches, with the earlier value of any switch added later."""
    switches = dict(record["rules"]["switches"])
    for name, value in SWITCHES_ADDED_LATER.items():
        switches.setdefault(name, value)
    return switches


def in_progress(record: dict[str, Any]) -> bool:
    """Whether ``record`` is a match still being played (its ``result`` has ``winner`` -1
    and is not a match cut off at the match bound)."""
    return record["result"]["winner"] == -1 and record["result"].get("truncated") is not True


def _check_hand(hand: Any, need: Any, in_play: bool = False) -> None:
    """A hand's fields; ``need(ok, what, step)`` reports at the deal (step 0) or a step."""
    need(isinstance(hand, dict), "a hand must be a JSON object")
    missing = [key for key in _HAND_KEYS if key not in hand]
    need(not missing, f"missing field(s) {', '.join(missing)}")
    need(hand["dealer"] in (0, 1) and _is_int(hand["dealer"]), "'dealer' must be 0 or 1")
    deck = hand["deck"]
    need(isinstance(deck, list) and len(deck) == NUM_CARDS and all(map(_is_int, deck))
         and sorted(deck) == list(range(NUM_CARDS)),
         "'deck' must be an order of the 52 card ids")
    actions = hand["actions"]
    need(isinstance(actions, list), "'actions' must be a list of [seat, action] pairs")
    for k, pair in enumerate(actions, 1):
        need(isinstance(pair, list) and len(pair) == 2 and all(map(_is_int, pair))
             and pair[0] in (0, 1), f"expected a [seat, action] pair, got {shown(pair)}", k)
    end = len(actions)
    if in_play:  # the hand of a match in progress has not ended
        need(hand["showdown"] is None and hand["sheet"] is None,
             "the hand in play of a match in progress has 'showdown' and 'sheet' null", end)
        return
    need(isinstance(hand["showdown"], dict), "'showdown' must be a JSON object", end)
    need(isinstance(hand["sheet"], dict), "'sheet' must be a JSON object", end)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
