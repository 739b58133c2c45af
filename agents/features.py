"""Decode a batch of observation vectors back into masks and integers.

Agents see only what ``VectorGame.observe()`` (or the AEC / Gymnasium
wrappers) hand them: ``{"observation": float32 (B, OBS_DIM), "action_mask":
int8 (B, 108)}``.  :func:`decode` turns the card slices into ``uint64``
hand masks (so the batched meld code applies) and undoes the scaling of the
scalar slices with the divisors of ``observation.LAYOUT`` (``SCALE``), the
one place the layout is written.  Every field is decoded on first use, so a
caller that reads three fields (the network's features) pays for three.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS, pack_masks
from hgin_env.melds import SENTINEL
from hgin_env.observation import MAX_COLUMNS, SCALE, observation_spec

SPEC = observation_spec()
_CARD_SLICES = ("hand", "top_discard", "pile_below_top", "opponent_known", "unseen",
                "forbidden_discard")


def _scale(name: str) -> float:
    scale = SCALE[name]
    if scale is None:  # pragma: no cover - only the score slices, decoded as fractions
        raise ValueError(f"slice {name!r} is scaled by the rules' target, not a constant")
    return scale


class ObsView:
    """One seat's view of B games, decoded from observations.

    Masks are ``uint64`` (B,); ``bits`` arrays are bool (B, 52).  ``pile``
    holds every face-up discard including the top card.  ``after_discard``
    (B, 52) int is the mover's deadwood after each discard in the discard
    phase, ``SENTINEL`` for cards not held or outside that phase.  Scores are
    fractions of the target, as in the observation.  ``mask`` is the action
    mask (``None`` when only observations were decoded).
    """

    def __init__(self, obs: np.ndarray, mask: np.ndarray | None = None,
                 rows: np.ndarray | None = None) -> None:
        # A subset view (see :meth:`take`) keeps the full batch and its row indices, and
        # each field reads just those rows of the slices it needs.
        self._source, self._mask_source, self._rows = obs, mask, rows

    @cached_property
    def obs(self) -> np.ndarray:
        return self._source if self._rows is None else self._source[self._rows]

    @cached_property
    def mask(self) -> np.ndarray | None:
        if self._rows is None or self._mask_source is None:
            return self._mask_source
        return self._mask_source[self._rows]

    @property
    def size(self) -> int:
        return int(self._source.shape[0] if self._rows is None else self._rows.shape[0])

    def take(self, rows: np.ndarray) -> ObsView:
        """The view of a subset of the games; each field decodes just those rows.  Every row,
        in order, is this view itself, so the fields it has decoded are not decoded again."""
        rows = np.asarray(rows)
        if rows.shape == (self.size,) and np.array_equal(rows, np.arange(self.size)):
            return self
        absolute = rows if self._rows is None else self._rows[rows]
        sub = ObsView(self._source, self._mask_source, absolute)
        # What this view has decoded, the subset reuses (every field is one row per game),
        # so the network's two feature sets never decode a slice of a row twice.
        for name, value in vars(self).items():
            if value is not None and isinstance(getattr(ObsView, name, None), cached_property):
                vars(sub)[name] = value[rows]
        return sub

    # ------------------------------------------------------------------ helpers
    def _cols(self, start: int, stop: int) -> np.ndarray:
        if self._rows is None:
            return self._source[:, start:stop]
        return self._source[self._rows, start:stop]

    def _slice(self, name: str) -> np.ndarray:
        return self._cols(SPEC[name].start, SPEC[name].stop)

    def _first(self, name: str) -> np.ndarray:
        return self._cols(SPEC[name].start, SPEC[name].start + 1)[:, 0]

    def _flag(self, name: str) -> np.ndarray:
        return self._first(name) > 0.5

    def _scalar(self, name: str) -> np.ndarray:
        return np.rint(self._first(name) * _scale(name)).astype(np.int64)

    def _columns(self, name: str) -> np.ndarray:
        s = SPEC[name]
        return self._cols(s.start, s.start + MAX_COLUMNS)

    def _bits(self, name: str) -> np.ndarray:
        return self._slice(name) > 0.5

    @cached_property
    def _masks(self) -> np.ndarray:
        bits = np.stack([self.hand_bits, self._top_slice > 0.5,
                         self._bits("pile_below_top"), self.opp_known_bits, self.unseen_bits,
                         self.forbidden_bits], axis=1)
        return pack_masks(bits)  # (B, 6)

    # ------------------------------------------------------------------ cards
    @cached_property
    def hand_bits(self) -> np.ndarray:
        return self._bits("hand")

    @cached_property
    def hand(self) -> np.ndarray:
        return self._masks[:, 0]

    @cached_property
    def _top_slice(self) -> np.ndarray:
        return self._slice("top_discard")

    @cached_property
    def has_top(self) -> np.ndarray:
        """Whether the discard pile has a top card."""
        return self._top_slice.max(axis=1) > 0.5

    @cached_property
    def top(self) -> np.ndarray:
        """The top discard's card id, -1 for an empty pile."""
        return np.where(self.has_top, np.argmax(self._top_slice, axis=1),
                        -1).astype(np.int64)

    @cached_property
    def top_mask(self) -> np.ndarray:
        return self._masks[:, 1]

    @cached_property
    def pile(self) -> np.ndarray:
        return self._masks[:, 1] | self._masks[:, 2]

    @cached_property
    def opp_known(self) -> np.ndarray:
        return self._masks[:, 3]

    @cached_property
    def opp_known_bits(self) -> np.ndarray:
        return self._bits("opponent_known")

    @cached_property
    def unseen(self) -> np.ndarray:
        return self._masks[:, 4]

    @cached_property
    def unseen_bits(self) -> np.ndarray:
        return self._bits("unseen")

    @cached_property
    def forbidden_bits(self) -> np.ndarray:
        return self._bits("forbidden_discard")

    @cached_property
    def after_discard(self) -> np.ndarray:
        name = "deadwood_after_discard"
        raw = np.rint(self._slice(name) * _scale(name)).astype(np.int64)
        discarding = (self.phase == A.PHASE_DISCARD)[:, None] & self.hand_bits
        return np.where(discarding, raw, SENTINEL)

    # ------------------------------------------------------------------ scalars
    @cached_property
    def phase(self) -> np.ndarray:
        return np.argmax(self._slice("phase"), axis=1).astype(np.int64)

    @cached_property
    def to_move(self) -> np.ndarray:
        return self._flag("to_move")

    @cached_property
    def is_dealer(self) -> np.ndarray:
        return self._flag("is_dealer")

    @cached_property
    def stock_size(self) -> np.ndarray:
        return self._scalar("stock_size")

    @cached_property
    def knock_limit(self) -> np.ndarray:
        return self._scalar("knock_limit")

    @cached_property
    def deadwood(self) -> np.ndarray:
        return self._scalar("deadwood")

    # ------------------------------------------------------------------ score sheet
    @cached_property
    def column_exists(self) -> np.ndarray:
        return self._columns("column_exists") > 0.5

    @cached_property
    def own_score(self) -> np.ndarray:
        return self._columns("own_score").astype(np.float64)

    @cached_property
    def opp_score(self) -> np.ndarray:
        return self._columns("opponent_score").astype(np.float64)

    @cached_property
    def column_decided(self) -> np.ndarray:
        return self._columns("column_decided") > 0.5

    @cached_property
    def column_won(self) -> np.ndarray:
        return self._columns("column_won") > 0.5

    @cached_property
    def column_lost(self) -> np.ndarray:
        return self._columns("column_lost") > 0.5

    @cached_property
    def open_to_me(self) -> np.ndarray:
        return self._columns("open_to_me") > 0.5

    @cached_property
    def open_to_opp(self) -> np.ndarray:
        return self._columns("open_to_opponent") > 0.5


def _as_rows(arr: np.ndarray, name: str) -> np.ndarray:
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be (B, width) or (width,), got shape {arr.shape}")
    return arr


def decode(obs: dict[str, np.ndarray] | np.ndarray) -> ObsView:
    """An :class:`ObsView` of ``{"observation", "action_mask"}`` rows, or of bare
    observation rows (then ``mask`` is ``None``)."""
    if not isinstance(obs, dict):
        return ObsView(_as_rows(np.asarray(obs, dtype=np.float32), "observation"))
    o = _as_rows(np.asarray(obs["observation"], dtype=np.float32), "observation")
    mask = obs.get("action_mask")
    return ObsView(o, None if mask is None else _as_rows(np.asarray(mask), "action_mask"))


def card_bit(cards: np.ndarray) -> np.ndarray:
    """``uint64`` one-card masks of card ids (``-1`` gives 0)."""
    cards = np.asarray(cards)
    ok = cards >= 0
    return np.where(ok, np.uint64(1) << np.maximum(cards, 0).astype(np.uint64), np.uint64(0))


__all__ = ["NUM_CARDS", "SPEC", "ObsView", "card_bit", "decode"]
