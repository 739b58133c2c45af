"""A search-time value network: what the rest of a hand is worth, given every card.

Why: ``search`` values a move by playing the blueprint to the end of the hand in each
sampled world, 20 to 40 network calls a world; most of its time goes there.  With a
value network a rollout can stop after ``depth`` moves and read the value of the
position instead (``search:depth=N``), so the same CPU buys several times the worlds.
A rollout world is fully known to the search (its own sampled opponent hand and stock),
so the network reads the mover's observation plus that world's hidden cards
(:mod:`hgin_env.hidden`) and what they make of each hand (:func:`world_features`): it
is a value of *sampled worlds*, never of the real game's hidden state, which no agent
sees.

The value is the mover's expected return from the position to the end of the hand
when the blueprint plays both seats: columns won on the Hollywood sheet plus the
points posted times ``points_coef`` over the match's points (what search's rollouts
add up).  ``bench/train_value.py`` trains it on the blueprint's self-play, and
``bench/train_value_siblings.py`` fine-tunes it on the sibling positions search compares;
the shipped file, ``agents/pretrained/hand_value.pt``, is the latter's (:data:`SHIPPED_VALUE`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hgin_env.cards import NUM_CARDS, pack_masks
from hgin_env.draw_melds import after_draws
from hgin_env.hidden import HIDDEN_DIM, encode_hidden
from hgin_env.melds import min_deadwood, min_deadwood_after_discard
from hgin_env.observation import KNOCK_LIMIT_SCALE, OBS_DIM, observation_spec
from hgin_env.rules import Rules, load_rules
from hgin_env.state import GameState

__all__ = ["BASE_FEATURES", "FEATURES", "HAND_VALUE_PATH", "SHIPPED_VALUE", "UPCARD_FEATURES",
           "WIDTHS", "WORLD_FEATURES", "WORLD_WIDTH", "HandValueNet", "extend_features",
           "load_hand_value", "shipped_value_file", "upcard_features", "value_features",
           "world_features"]

HAND_VALUE_PATH = Path(__file__).resolve().parent / "pretrained" / "hand_value.pt"
#: The shipped value networks: (rules profile, blueprint spec) -> file, all trained with
#: ``points_coef`` 1 (the training reward's).  ``search`` cuts its rollouts short by
#: default only where one fits (:func:`shipped_value_file`).
SHIPPED_VALUE = {("friendly", "pretrained"): HAND_VALUE_PATH}
#: The mover's observation and its world's hidden cards (the input of the first files).
BASE_FEATURES = OBS_DIM + HIDDEN_DIM
#: Per hand (the opponent's, then the mover's): what its cards and the world's stock make
#: of it (:func:`world_features`).
WORLD_PER_HAND = 12
WORLD_FEATURES = 2 * WORLD_PER_HAND
#: The base features, then the world features (the input of the world files).
WORLD_WIDTH = BASE_FEATURES + WORLD_FEATURES
#: What the top of the discard pile does for the mover's hand (:func:`upcard_features`).
UPCARD_FEATURES = 5
#: Every feature: the base, the world, then the upcard features.  A file trained on fewer
#: (``features`` = BASE_FEATURES or WORLD_WIDTH) reads the first columns.
FEATURES = WORLD_WIDTH + UPCARD_FEATURES
#: The input widths a value file may declare, oldest first.
WIDTHS = (BASE_FEATURES, WORLD_WIDTH, FEATURES)
#: The widest hidden layer a value file may declare.
MAX_HIDDEN = 4096
_KNOCK_LIMIT = observation_spec()["knock_limit"].start
_HAND = observation_spec()["hand"]
_TOP = observation_spec()["top_discard"]
_NO_CARD = np.uint64(0)


def value_features(obs: np.ndarray, state: GameState, world: bool = True) -> np.ndarray:
    """(B, FEATURES) float32: each game's mover's observation ``obs`` (B, OBS_DIM), what
    that mover cannot see in ``state`` (a world the caller built, sampled or simulated),
    then :func:`world_features` and :func:`upcard_features` of the two (``world=False``:
    (B, BASE_FEATURES), without them)."""
    hidden = encode_hidden(state, state.current_player.astype(np.int64))
    base = np.concatenate([np.asarray(obs, np.float32), hidden], axis=1)
    return extend_features(base) if world else base


def extend_features(rows: np.ndarray, width: int = FEATURES, chunk: int = 65536
                    ) -> np.ndarray:
    """(B, width) rows of any width in :data:`WIDTHS` with the derived columns they lack
    appended (or cut to ``width``), in the rows' own float type: positions saved by an
    older file read on.  Computed ``chunk`` rows at a time (a saved file holds millions)."""
    rows = np.asarray(rows)
    if rows.ndim != 2 or rows.shape[1] not in WIDTHS or width not in WIDTHS \
            or rows.dtype.kind != "f":
        raise ValueError(f"value feature rows are float (B, {' or '.join(map(str, WIDTHS))}), "
                         f"got {rows.dtype} {rows.shape}; width {width}")
    have = rows.shape[1]
    if have >= width:
        return rows[:, :width]
    out = np.empty((rows.shape[0], width), rows.dtype)
    out[:, :have] = rows
    for at in range(0, rows.shape[0], chunk):
        base = rows[at:at + chunk, :BASE_FEATURES].astype(np.float32)
        parts = []
        if have < WORLD_WIDTH:
            parts.append(world_features(base))
        if width == FEATURES:
            parts.append(upcard_features(base))
        out[at:at + chunk, have:] = np.concatenate(parts, axis=1)[:, :width - have]
    return out


def world_features(base: np.ndarray) -> np.ndarray:
    """(B, WORLD_FEATURES) float32 from base rows (B, BASE_FEATURES): per hand of ten cards
    (the opponent's; the mover's when it holds ten), its least deadwood and what the
    world's stock does to it, card by card: ``draw c, then discard best``.

    Why: in a world every card is known, and what the rest of a hand is worth turns on
    how far each hand is from knocking and how many of the stock's cards bring it
    closer, which an MLP on the card flags learns only roughly.  Given as numbers, a
    value network trained on the same positions errs a fifth less, and its value read at
    once after a searched move picks moves instead of losing (docs/search.md).

    Per hand: least deadwood / 100; of the stock's cards, the shares (and counts, over
    31 and 10) that lower its deadwood, that make gin and that reach the knock limit,
    and the mean saving / 10; after drawing the stock's top card, the deadwood / 100 and
    whether that is gin and a knock; and whether the hand was valued (ten cards).
    """
    base = np.asarray(base, np.float32)
    if base.ndim != 2 or base.shape[1] != BASE_FEATURES:
        raise ValueError(f"world_features needs (B, {BASE_FEATURES}) rows, got {base.shape}")
    n = base.shape[0]
    mine = pack_masks(base[:, :NUM_CARDS] > 0.5)
    at = OBS_DIM
    opp = pack_masks(base[:, at:at + NUM_CARDS] > 0.5)
    stock = pack_masks(base[:, at + NUM_CARDS:at + 2 * NUM_CARDS] > 0.5)
    top_flags = base[:, at + 2 * NUM_CARDS:at + 3 * NUM_CARDS] > 0.5
    top = np.where(top_flags.any(axis=1),
                   np.uint64(1) << top_flags.argmax(axis=1).astype(np.uint64), _NO_CARD)
    limit = np.rint(base[:, _KNOCK_LIMIT] * KNOCK_LIMIT_SCALE)
    out = np.zeros((n, WORLD_FEATURES), np.float32)
    for k, hand in enumerate((opp, mine)):
        valid = np.bitwise_count(hand) == 10
        hand = np.where(valid, hand, _NO_CARD)
        cols = out[:, k * WORLD_PER_HAND:(k + 1) * WORLD_PER_HAND]
        dw = np.zeros(n, np.float64)
        if valid.any():
            dw[valid] = min_deadwood(hand[valid])
        rows, after, _ = after_draws(hand, np.where(valid, stock & ~hand, _NO_CARD))
        after = after.astype(np.float64)
        count = np.bincount(rows, minlength=n)
        better = np.bincount(rows, weights=after < dw[rows], minlength=n)
        saving = np.bincount(rows, weights=np.maximum(dw[rows] - after, 0), minlength=n)
        gin = np.bincount(rows, weights=after == 0, minlength=n)
        knock = np.bincount(rows, weights=after <= limit[rows], minlength=n)
        per = np.maximum(count, 1)
        with_top = np.where(valid & (top != _NO_CARD) & ((hand & top) == 0), hand | top,
                            _NO_CARD)
        drawn = with_top != _NO_CARD
        after_top = dw.copy()
        if drawn.any():
            after_top[drawn] = min_deadwood_after_discard(with_top[drawn])
        cols[:] = np.stack([
            dw / 100, better / per, saving / per / 10, gin / per, knock / per,
            better / 31, gin / 10, knock / 31, after_top / 100,
            drawn & (after_top == 0), drawn & (after_top <= limit), valid,
        ], axis=1)
    return out


def upcard_features(base: np.ndarray) -> np.ndarray:
    """(B, UPCARD_FEATURES) float32 from base rows: what the top of the discard pile does
    for the mover's hand of ten cards, taken and the best card (any) discarded.

    Why: right after a discard (where ``search:depth=1`` reads the value) the discarded
    card lies on top, and whether the next mover can use it separates sibling positions
    more than anything else the world features hold: a network given these five numbers
    explains several times more of the value difference between candidate discards
    (docs/search.md, "What the discard gives the opponent").

    The least deadwood after taking it / 100, whether that is lower than without it, the
    saving / 10, and whether it makes gin or reaches the knock limit; all zero where the
    mover does not hold ten cards or the pile is empty.
    """
    base = np.asarray(base, np.float32)
    if base.ndim != 2 or base.shape[1] != BASE_FEATURES:
        raise ValueError(f"upcard_features needs (B, {BASE_FEATURES}) rows, got {base.shape}")
    hand = pack_masks(base[:, _HAND] > 0.5)
    top = pack_masks(base[:, _TOP] > 0.5)
    ok = (np.bitwise_count(hand) == 10) & (top != _NO_CARD) & ((hand & top) == _NO_CARD)
    out = np.zeros((base.shape[0], UPCARD_FEATURES), np.float32)
    if ok.any():
        before = min_deadwood(hand[ok]).astype(np.float64)
        after = min_deadwood_after_discard(hand[ok] | top[ok]).astype(np.float64)
        limit = np.rint(base[ok, _KNOCK_LIMIT] * KNOCK_LIMIT_SCALE)
        out[ok] = np.stack([after / 100, after < before, (before - after) / 10, after == 0,
                            after <= limit], axis=1)
    return out


class HandValueNet:
    """An MLP from :func:`value_features` to the mover's value of the rest of the hand."""

    def __init__(self, hidden: int = 256, state: dict[str, Any] | None = None,
                 meta: dict[str, Any] | None = None, features: int = FEATURES) -> None:
        import torch
        from torch import nn

        if features not in WIDTHS:
            raise ValueError(f"a hand value network reads {', '.join(map(str, WIDTHS))} "
                             f"features, not {features}")
        self.hidden = hidden
        #: Its input width, one of :data:`WIDTHS`: a file trained before the world or the
        #: upcard features reads the first columns.
        self.features = features
        #: What the file says it was trained for (rules, points_coef, blueprint, data).
        self.meta = dict(meta or {})
        self.module = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(),
                                    nn.Linear(hidden, hidden), nn.ReLU(),
                                    nn.Linear(hidden, 1))
        if state is not None:
            self.module.load_state_dict(state)
        self.module.eval()
        self._torch = torch

    def values(self, features: np.ndarray) -> np.ndarray:
        """(B,) float64 values of :func:`value_features` rows."""
        torch = self._torch
        rows = np.asarray(features, np.float32)[:, :self.features]
        with torch.inference_mode():
            out = self.module(torch.from_numpy(np.ascontiguousarray(rows)))
        return out.squeeze(-1).numpy().astype(np.float64)

    def value_positions(self, obs: np.ndarray, state: GameState,
                        rows: np.ndarray | None = None) -> np.ndarray:
        """The movers' values of ``state``'s games seen through ``obs`` (only the games
        ``rows``, where given): only the features this network reads are computed."""
        base = value_features(obs, state, world=False)
        if rows is not None:
            base = base[rows]
        return self.values(extend_features(base, self.features))

    def widened(self, features: int = FEATURES) -> HandValueNet:
        """This network reading ``features`` columns, the new ones weighted zero: the
        same values until it is trained on them (a start for fine-tuning)."""
        import torch

        if features not in WIDTHS or features < self.features:
            raise ValueError(f"a network of {self.features} features widens to one of "
                             f"{[w for w in WIDTHS if w >= self.features]}, not {features}")
        state = {k: v.clone() for k, v in self.module.state_dict().items()}
        first = torch.zeros(self.hidden, features)
        first[:, :self.features] = state["0.weight"]
        state["0.weight"] = first
        return HandValueNet(self.hidden, state, dict(self.meta), features)

    def save(self, path: Path | str) -> None:
        self._torch.save({"kind": "hgin-hand-value", "features": self.features,
                          "hidden": self.hidden,
                          "meta": self.meta, "state": self.module.state_dict()}, str(path))


def shipped_value_file(rules: Rules, blueprint: str, points_coef: float = 1.0) -> Path | None:
    """The shipped value network made for ``rules``, the ``blueprint`` spec and
    ``points_coef``, if any."""
    if points_coef != 1.0:
        return None
    for (profile, made_for), path in SHIPPED_VALUE.items():
        if blueprint.strip().lower() == made_for and load_rules(profile) == rules:
            return path
    return None


def load_hand_value(path: Path | str = HAND_VALUE_PATH) -> HandValueNet:
    """The shipped (or a given) value network; a one-line ``ValueError`` if the file is not
    one.  Read as :func:`agents.belief.load_belief` reads a belief: archive checked first,
    ``weights_only=True``, width bounded."""
    from agents.torch_agent import read_network_file

    path = Path(path)
    data = read_network_file(path, "hgin-hand-value", WIDTHS,
                             "hand value network", "bench/train_value.py", MAX_HIDDEN)
    hidden = data["hidden"]
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: 'meta' must be a table, got {type(meta).__name__}")
    try:
        return HandValueNet(hidden, data.get("state"), meta, data["features"])
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path}: its weights do not fit a hand value network of width "
                         f"{hidden}: {str(exc).splitlines()[0][:200]}") from None
