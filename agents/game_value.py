"""The chance of winning one game to ``target`` from its score, for search's rollouts.

In a single game to 100 (``columns = 1``: the ``eaai`` profile) a hand's points are worth
what they do to the chance of winning the game: twenty points at 0-0 move it less than
twenty at 85-85, and being undercut at 90-60 costs more than at 10-10.  Search values a
rollout by the points it posts, a straight line; with a win table
(``search:game_value=FILE``) it values the hand's end by the probability of winning the
game from the new score instead.

The table comes from dynamic programming over one hand's outcome (who wins it, dealer or
not, and by how many points), whose distribution :func:`hand_outcomes` counts in the
blueprint's self-play: :func:`win_table`.  Every non-dead hand posts at least one point
(a knock wins by the deadwood difference, an undercut or gin scores a bonus), so the
recursion runs from the highest scores down; a dead hand changes neither the score nor
the dealer (the ``eaai`` profile's ``dead_hand_dealer = "same"``), so it drops out.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from hgin_env.engine.vector import VectorGame
from hgin_env.rules import Rules, load_rules

__all__ = ["MAX_AWARD", "hand_outcomes", "load_win_table", "save_win_table", "win_table",
           "win_values"]

#: The largest award counted (a hand's points are capped here in the table).
MAX_AWARD = 160


def _check_rules(rules: Rules) -> None:
    if rules.columns != 1 or rules.next_dealer != "alternate":
        raise ValueError(f"a win table is for one game with the deal alternating "
                         f"(columns = 1, next_dealer = 'alternate', as in the eaai "
                         f"profile); these rules have columns = {rules.columns}, "
                         f"next_dealer = {rules.next_dealer!r}")


def hand_outcomes(agent: Any, rules: Rules | str, hands: int, seed: int = 0,
                  batch: int = 256) -> np.ndarray:
    """Counts (2, MAX_AWARD + 1) of ``hands`` finished hands of ``agent`` playing both
    seats: row 0 the dealer won the hand, row 1 the non-dealer; column the points
    awarded.  Dead hands are not counted (they change nothing in the game)."""
    rules = load_rules(rules)
    _check_rules(rules)
    if hands < 1:
        raise ValueError(f"hands must be a positive integer, got {hands!r}")
    if getattr(agent, "uses_history", False):
        raise ValueError("hand_outcomes plays the engine's batched observations, which keep "
                         "no history: use a policy that does not search (e.g. the blueprint)")
    counts = np.zeros((2, MAX_AWARD + 1), np.int64)
    game = VectorGame(min(batch, hands), rules, seed=seed, reward="columns")
    while counts.sum() < hands:
        dealer = game.state.dealer.copy()
        actions = agent.act(game.observe())
        _, info = game.step(actions)
        won = np.flatnonzero(info["hand_over"] & (info["hand_winner"] >= 0))
        if won.size:
            award = np.minimum(info["award"][won], MAX_AWARD)
            by_dealer = (info["hand_winner"][won] != dealer[won]).astype(np.int64)
            np.add.at(counts, (by_dealer, award), 1)
    return counts


def win_table(counts: np.ndarray, target: int) -> np.ndarray:
    """``W`` (target, target, 2): ``W[a, b, d]`` is the probability that the player on
    ``a`` points wins the game against ``b`` points, dealing the next hand if ``d`` is 1,
    when each hand's outcome follows ``counts`` (as from :func:`hand_outcomes`)."""
    counts = np.asarray(counts, np.float64)
    if counts.ndim != 2 or counts.shape[0] != 2 or (counts < 0).any():
        raise ValueError(f"counts must be (2, awards) and non-negative, got {counts.shape}")
    counts = counts.copy()
    counts[:, 0] = 0.0  # a hand that posts nothing leaves the game as it was
    total = counts.sum()
    if total <= 0:
        raise ValueError("counts hold no finished hand with points")
    p = counts / total  # p[0, x]: the dealer wins x; p[1, x]: the non-dealer does
    awards = np.arange(counts.shape[1])
    nonzero = [np.flatnonzero(p[k]) for k in (0, 1)]
    w = np.zeros((target, target, 2))
    for total_score in range(2 * target - 2, -1, -1):
        for a in range(max(0, total_score - target + 1), min(target - 1, total_score) + 1):
            b = total_score - a
            for d in (0, 1):
                # I deal (d = 1): the dealer's points are mine; else the non-dealer's.
                mine, theirs = (p[0], p[1]) if d else (p[1], p[0])
                x_mine = awards[nonzero[0 if d else 1]]
                x_theirs = awards[nonzero[1 if d else 0]]
                # After the hand the deal passes on (1 - d); scores past the target end it.
                w[a, b, d] = (
                    mine[x_mine] @ win_values(w, a + x_mine, np.full_like(x_mine, b), 1 - d)
                    + theirs[x_theirs] @ win_values(w, np.full_like(x_theirs, a),
                                                    b + x_theirs, 1 - d)
                )
    return w


def win_values(table: np.ndarray, mine: np.ndarray, theirs: np.ndarray,
               i_deal: np.ndarray) -> np.ndarray:
    """Win probabilities of positions between hands: 1 where ``mine`` reached the
    target, 0 where ``theirs`` did, else the table's entry."""
    target = table.shape[0]
    mine = np.asarray(mine, np.int64)
    theirs = np.asarray(theirs, np.int64)
    out = np.where(mine >= target, 1.0, 0.0)
    inside = (mine < target) & (theirs < target)
    deal = np.broadcast_to(np.asarray(i_deal, np.int64), mine.shape)
    out[inside] = table[mine[inside], theirs[inside], deal[inside]]
    return out


def save_win_table(path: Path | str, table: np.ndarray, counts: np.ndarray,
                   meta: dict[str, Any]) -> None:
    """The table with the counts it came from and how they were played (``meta``)."""
    np.savez_compressed(path, table=table, counts=counts,
                        meta=np.array(repr(sorted(meta.items()))))


def load_win_table(path: Path | str, rules: Rules) -> np.ndarray:
    """A saved table, checked against the rules' target (a clear error otherwise).  The
    stored array's size and its .npy header (the shape numpy would allocate) are read from
    the archive before anything is decoded, so a file that claims more than a table of
    this target needs is refused unread."""
    _check_rules(rules)
    limit = rules.target * rules.target * 2 * 8 + 4096  # float64 cells and the .npy header
    try:
        with zipfile.ZipFile(path) as archive:
            size = archive.getinfo("table.npy").file_size
            if size > limit:
                raise ValueError(f"its table holds {size} bytes, a game to {rules.target} "
                                 f"needs at most {limit}")
            with archive.open("table.npy") as member:
                version = np.lib.format.read_magic(member)
                read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                               (2, 0): np.lib.format.read_array_header_2_0}.get(version)
                if read_header is None:
                    raise ValueError(f"its table is in .npy format {version}, not 1.0 or 2.0")
                shape, _, dtype = read_header(member)
        if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize > limit or dtype.hasobject:
            raise ValueError(f"its table is {shape} of {dtype}, a game to {rules.target} "
                             f"needs at most {limit} bytes")
        with np.load(path, allow_pickle=False) as data:
            table = np.asarray(data["table"], np.float64)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise ValueError(f"cannot read a win table from {path}: {exc}") from None
    if table.shape != (rules.target, rules.target, 2):
        raise ValueError(f"win table {path} is for a game to {table.shape[0]}, these rules "
                         f"play to {rules.target}")
    return table
