"""The Hollywood score sheet (docs/rules.md §10), batched over many matches.

The engine runs B matches side by side, so the sheet is a handful of numpy
arrays with a leading batch axis and :func:`post` updates every game whose
hand just ended in one vectorised call (a loop over the at most three
columns is the only Python loop).  The scalar :class:`Sheet` and
:func:`replay` are thin views on the same code with B = 1, so there is only
one implementation of the scoring rules to get right.

Decisions on points docs/rules.md leaves open (see also the tests):

* End-of-column bonuses (``game_bonus`` / ``shutout_bonus`` / ``box_bonus``)
  are paid only for *decided* columns: they are "end-of-column" bonuses, and
  paying box bonuses for open columns would make the running total jump
  when a column closes anyway.  Boxes of an open column are still counted
  in ``boxes`` so a display can show them.
* Box bonuses go to both players, for every hand of theirs posted in the
  column (the loser's boxes too); a hand posted with award 0 still counts.
* "The loser scored 0" means the loser's score in that column is 0.
* The match ends only when *every* column is decided, even when one player
  already holds a majority (docs/rules.md §10 says so explicitly).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from hgin_env.rules import Rules, load_rules, require_rules

__all__ = [
    "COLUMN_NAMES",
    "MAX_AWARD",
    "SHEET_ARRAYS",
    "PostResult",
    "Sheet",
    "SheetBatch",
    "post",
    "replay",
]

COLUMN_NAMES = ("I", "II", "III")
#: Largest award accepted; keeps int32 scores far from overflow.
MAX_AWARD = 1_000_000


@dataclass
class SheetBatch:
    """Score sheets of B matches with C = ``rules.columns`` columns.

    Arrays (all indexed by game first):

    * ``scores`` (B, 2, C) int32 — column points; frozen once decided.
    * ``decided`` (B, C) bool — a score in the column reached the target.
    * ``column_winner`` (B, C) int8 — who won the column, -1 while open.
    * ``wins`` (B, 2) int32 — hands won by each player in the whole match
      (keeps counting; it is what opens columns II and III).
    * ``boxes`` (B, 2, C) int32 — hands of each player posted in a column.
    * ``match_winner`` (B,) int8 — -1 while the match goes on.
    """

    rules: Rules
    scores: np.ndarray
    decided: np.ndarray
    column_winner: np.ndarray
    wins: np.ndarray
    boxes: np.ndarray
    match_winner: np.ndarray

    @classmethod
    def new(cls, num_games: int, rules: Rules) -> SheetBatch:
        """Fresh sheets for ``num_games`` matches of ``rules`` (normalised by the caller:
        :func:`~hgin_env.rules.load_rules` runs once, where rules enter the program)."""
        require_rules(rules)
        if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)):
            raise ValueError(f"num_games must be an integer, got {num_games!r}")
        if num_games < 0:
            raise ValueError(f"num_games must be >= 0, got {num_games}")
        b, c = int(num_games), rules.columns
        return cls(
            rules=rules,
            scores=np.zeros((b, 2, c), np.int32),
            decided=np.zeros((b, c), bool),
            column_winner=np.full((b, c), -1, np.int8),
            wins=np.zeros((b, 2), np.int32),
            boxes=np.zeros((b, 2, c), np.int32),
            match_winner=np.full(b, -1, np.int8),
        )

    @property
    def num_games(self) -> int:
        return self.scores.shape[0]

    @property
    def columns(self) -> int:
        return self.scores.shape[2]

    @property
    def match_over(self) -> np.ndarray:
        """(B,) bool: every column of the sheet is decided."""
        return self.decided.all(axis=1)

    def reset_rows(self, rows: Any) -> None:
        """Start a fresh sheet in the given games (autoreset after a match)."""
        rows = _as_rows(rows, self.num_games)
        self.put(rows, SheetBatch.new(rows.size, self.rules))

    def arrays(self) -> dict[str, np.ndarray]:
        """The sheet's arrays by name: the one list of its fields (all but ``rules``)."""
        return {name: getattr(self, name) for name in SHEET_ARRAYS}

    def copy(self) -> SheetBatch:
        return SheetBatch(rules=self.rules, **{k: v.copy() for k, v in self.arrays().items()})

    def take(self, rows: Any) -> SheetBatch:
        """A new batch holding copies of the listed games' sheets."""
        rows = _as_rows(rows, self.num_games)
        return SheetBatch(rules=self.rules, **{k: v[rows] for k, v in self.arrays().items()})

    def put(self, rows: Any, other: SheetBatch) -> None:
        """Overwrite the listed games' sheets with ``other``'s (one row per listed game)."""
        rows = _as_rows(rows, self.num_games)
        for name, arr in self.arrays().items():
            arr[rows] = getattr(other, name)

    def bonuses(self) -> np.ndarray:
        """(B, 2, C) int32 end-of-column bonuses, paid for decided columns only.

        The column winner gets ``game_bonus``, or ``shutout_bonus`` instead
        when the loser's score there is 0; each player gets ``box_bonus`` per
        hand of theirs posted in the column.  Never part of the target check.
        """
        r = self.rules
        decided = self.decided
        if not decided.any():  # most sheets, most of the time: nothing paid yet
            return np.zeros(self.scores.shape, np.int32)
        winner = self.column_winner.astype(np.int64)
        # Score of the loser of each column (meaningless where still open).
        loser_score = np.where(winner == 0, self.scores[:, 1, :], self.scores[:, 0, :])
        game = np.where(loser_score == 0, r.shutout_bonus, r.game_bonus).astype(np.int32)
        players = np.arange(2)[None, :, None]
        won = decided[:, None, :] & (winner[:, None, :] == players)
        out = np.where(won, game[:, None, :], 0).astype(np.int32)
        out += np.where(decided[:, None, :], self.boxes * np.int32(r.box_bonus), 0).astype(np.int32)
        return out

    def totals(self) -> np.ndarray:
        """(B, 2) column points plus bonuses; shown, never decides the match."""
        return self.scores.sum(axis=2, dtype=np.int32) + self.bonuses().sum(axis=2, dtype=np.int32)

    def sheet(self, i: int) -> Sheet:
        """A copy of game ``i``'s sheet as a scalar :class:`Sheet`."""
        if not -self.num_games <= int(i) < self.num_games:
            raise ValueError(f"game index {i} out of range for {self.num_games} games")
        i = int(i)
        bonuses = self.bonuses()[i]
        return Sheet(
            scores=self.scores[i].copy(),
            decided=self.decided[i].copy(),
            column_winner=self.column_winner[i].copy(),
            wins=self.wins[i].copy(),
            boxes=self.boxes[i].copy(),
            bonuses=bonuses,
            totals=self.scores[i].sum(axis=1, dtype=np.int32) + bonuses.sum(axis=1),
            match_winner=int(self.match_winner[i]),
            target=self.rules.target,
        )


#: The per-game arrays of a :class:`SheetBatch`, in field order (derived from its fields).
SHEET_ARRAYS = tuple(f.name for f in fields(SheetBatch) if f.name != "rules")


@dataclass(frozen=True)
class PostResult:
    """What one :func:`post` call did, one entry per posted row (n = len(rows)).

    ``column_delta`` is the per-column RL signal: +1 to a player for each
    column they won in this post, -1 for each column they lost (zero-sum).
    ``points`` is the award actually written in each column (0 where not
    posted), for point-based rewards.
    """

    rows: np.ndarray  # (n,) int64
    winner: np.ndarray  # (n,) int8
    award: np.ndarray  # (n,) int32
    posted: np.ndarray  # (n, C) bool
    points: np.ndarray  # (n, C) int32
    newly_decided: np.ndarray  # (n, C) bool
    match_over: np.ndarray  # (n,) bool
    match_winner: np.ndarray  # (n,) int8, -1 if not over
    column_delta: np.ndarray  # (n, 2) float32


def post(
    rules: Rules,
    sheets: SheetBatch,
    rows: Any,
    winner: Any,
    award: Any,
) -> PostResult:
    """Post one finished hand per listed game (docs/rules.md §10), in place.

    ``rows`` are distinct game indices whose hand just ended with a winner
    (dead hands are simply not passed), ``winner`` in {0, 1} and ``award``
    non-negative integers, one per row.  All input is checked before the
    sheets are touched, so a ValueError leaves them unchanged.
    """
    if rules.columns != sheets.columns:
        raise ValueError(
            f"rules have {rules.columns} column(s) but the sheets have {sheets.columns}"
        )
    rows = _as_rows(rows, sheets.num_games)
    n = rows.shape[0]
    winner = _as_vector(winner, n, "winner")
    award = _as_vector(award, n, "award")
    _check_winner(winner)
    award = _check_award(award)
    ordered = np.sort(rows)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if repeated.size:
        raise ValueError(
            f"rows must be distinct; repeated game index(es): {np.unique(repeated).tolist()}"
        )
    finished = rows[sheets.match_winner[rows] >= 0]
    if finished.size:
        raise ValueError(
            f"cannot post to a finished match: game(s) {finished.tolist()} are over; "
            "reset them first"
        )
    return _apply(rules.target, sheets, rows, winner.astype(np.int64), award)


def _apply(
    target: int, sheets: SheetBatch, rows: np.ndarray, winner: np.ndarray, award: np.ndarray
) -> PostResult:
    """The scoring itself, on already validated input (int64 rows/winner, int32 award)."""
    c = sheets.columns
    sheets.wins[rows, winner] += 1
    win_count = sheets.wins[rows, winner]
    # The k-th win opens the first min(k, 3) columns (capped by the sheet).
    eligible = np.arange(c) < np.minimum(win_count, 3)[:, None]
    decided = sheets.decided[rows]
    posted = eligible & ~decided
    points = np.where(posted, award[:, None], 0).astype(np.int32)
    new_scores = sheets.scores[rows, winner] + points
    sheets.scores[rows, winner] = new_scores
    sheets.boxes[rows, winner] += posted
    # Only the poster's score moved, so only the poster can decide a column.
    newly = posted & (new_scores >= target)
    decided |= newly
    sheets.decided[rows] = decided
    column_winner = np.where(newly, winner[:, None], sheets.column_winner[rows]).astype(np.int8)
    sheets.column_winner[rows] = column_winner

    over = decided.all(axis=1)
    ones = (column_winner == 1).sum(axis=1)
    match_winner = np.where(over, 2 * ones > c, -1).astype(np.int8)
    sheets.match_winner[rows] = match_winner

    won = newly.sum(axis=1).astype(np.float32)
    sign = np.where(winner[:, None] == np.arange(2), 1.0, -1.0).astype(np.float32)
    return PostResult(
        rows=rows,
        winner=winner.astype(np.int8),
        award=award,
        posted=posted,
        points=points,
        newly_decided=newly,
        match_over=over,
        match_winner=match_winner,
        column_delta=sign * won[:, None],
    )


@dataclass(eq=False)
class Sheet:
    """One match's sheet (a copy; changing it changes nothing else).

    ``scores``/``boxes``/``bonuses`` are (2, C), ``decided``/``column_winner``
    (C,), ``wins``/``totals`` (2,); ``match_winner`` is -1 while the match
    goes on.
    """

    scores: np.ndarray
    decided: np.ndarray
    column_winner: np.ndarray
    wins: np.ndarray
    boxes: np.ndarray
    bonuses: np.ndarray
    totals: np.ndarray
    match_winner: int
    target: int = 100

    @property
    def columns(self) -> int:
        return self.scores.shape[1]

    @property
    def match_over(self) -> bool:
        return bool(self.decided.all())

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values (lists/ints), e.g. for JSON or comparisons."""
        return {
            "scores": self.scores.tolist(),
            "decided": self.decided.tolist(),
            "column_winner": self.column_winner.tolist(),
            "wins": self.wins.tolist(),
            "boxes": self.boxes.tolist(),
            "bonuses": self.bonuses.tolist(),
            "totals": self.totals.tolist(),
            "match_winner": self.match_winner,
            "target": self.target,
        }

    def format(self) -> str:
        """A plain-text table: a ``*`` marks the winner of a decided column."""
        names = COLUMN_NAMES[: self.columns]
        header = ["", *names, "bonus", "total", "wins"]
        lines = [header]
        for p in range(2):
            cells = [f"player {p}"]
            for j in range(self.columns):
                mark = "*" if self.decided[j] and self.column_winner[j] == p else ""
                cells.append(f"{int(self.scores[p, j])}{mark}")
            cells += [
                str(int(self.bonuses[p].sum())),
                str(int(self.totals[p])),
                str(int(self.wins[p])),
            ]
            lines.append(cells)
        status = ["column"]
        for j in range(self.columns):
            status.append(f"won p{int(self.column_winner[j])}" if self.decided[j] else "open")
        lines.append([*status, "", "", ""])
        widths = [max(len(row[k]) for row in lines) for k in range(len(header))]
        text = [
            "  ".join(
                cell.rjust(w) if k else cell.ljust(w)
                for k, (cell, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
            for row in lines
        ]
        if self.match_over:
            result = f"match won by player {self.match_winner}"
        else:
            result = "match in progress"
        return f"Hollywood sheet (target {self.target})\n" + "\n".join(text) + f"\n{result}"

    def __str__(self) -> str:
        return self.format()


def replay(
    rules: Rules | str | None,
    results: Iterable[tuple[int | None, int]],
) -> Sheet:
    """The sheet after posting ``(winner, award)`` results in order.

    ``winner = None`` marks a dead hand: it is skipped (its award ignored).
    Posting after the match has ended is an error, not a silent no-op,
    because it almost always means two matches were mixed up.
    """
    rules = load_rules(rules)
    sheets = SheetBatch.new(1, rules)
    row = np.zeros(1, np.int64)
    for k, item in enumerate(results):
        if not isinstance(item, Sequence) or isinstance(item, str) or len(item) != 2:
            raise ValueError(f"result #{k} must be a (winner, award) pair, got {item!r}")
        win, award = item
        if win is None:
            continue
        if isinstance(win, bool) or not isinstance(win, (int, np.integer)) or win not in (0, 1):
            raise ValueError(f"result #{k}: winner must be 0, 1 or None, got {win!r}")
        if isinstance(award, bool) or not isinstance(award, (int, np.integer, float, np.floating)):
            raise ValueError(f"result #{k}: award must be an integer, got {award!r}")
        if sheets.match_winner[0] >= 0:
            raise ValueError(
                f"result #{k}: the match is already over (won by player "
                f"{int(sheets.match_winner[0])}); cannot post more hands"
            )
        try:
            checked = _check_award(np.array([award]))
        except ValueError as err:
            raise ValueError(f"result #{k}: {err}") from None
        _apply(rules.target, sheets, row, np.array([int(win)], np.int64), checked)
    return sheets.sheet(0)


# --------------------------------------------------------------------------- checks


def _as_rows(rows: Any, num_games: int) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(rows))
    if arr.ndim != 1:
        raise ValueError(f"rows must be a 1-D array of game indices, got shape {arr.shape}")
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"rows must be integer game indices, got dtype {arr.dtype}")
    bad = arr[(arr < 0) | (arr >= num_games)]
    if bad.size:
        raise ValueError(f"rows out of range 0..{num_games - 1}: {bad.tolist()}")
    return arr.astype(np.int64)


def _as_vector(values: Any, n: int, name: str) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(values))
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) like rows, got {arr.shape}")
    return arr


def _check_winner(winner: np.ndarray) -> None:
    if winner.size == 0:
        return
    if winner.dtype.kind not in "iu":
        raise ValueError(f"winner must be integers 0 or 1, got dtype {winner.dtype}")
    bad = winner[(winner != 0) & (winner != 1)]
    if bad.size:
        raise ValueError(f"winner must be 0 or 1, got {bad.tolist()}")


def _check_award(award: np.ndarray) -> np.ndarray:
    if award.size == 0:
        return award.astype(np.int32)
    if award.dtype.kind == "f":
        whole = np.isfinite(award) & (award == np.round(award))
        if not whole.all():
            raise ValueError(f"award must be whole numbers, got {award[~whole].tolist()}")
    elif award.dtype.kind not in "iu":
        raise ValueError(f"award must be integers, got dtype {award.dtype}")
    bad = award[(award < 0) | (award > MAX_AWARD)]
    if bad.size:
        raise ValueError(f"award must be in 0..{MAX_AWARD}, got {bad.tolist()}")
    return award.astype(np.int32)
