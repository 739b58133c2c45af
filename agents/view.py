"""Decode a batch of observation vectors back into masks and integers.

Agents see only what ``VectorGame.observe()`` (or the AEC / Gymnasium
wrappers) hand them: ``{"observation": float32 (B, OBS_DIM), "action_mask":
int8 (B, 108)}``.  :func:`decode` turns the card slices into ``uint64``
hand masks (so the batched meld code applies) and undoes the scaling of the
scalar slices, using the slice names of :func:`observation_spec`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS, pack_masks
from hgin_env.melds import SENTINEL
from hgin_env.observation import MAX_COLUMNS, observation_spec

SPEC = observation_spec()
_CARD_SLICES = ("hand", "top_discard", "pile_below_top", "opponent_known", "unseen",
                "forbidden_discard")


@dataclass
class ObsView:
    """One seat's view of B games, decoded from observations.

    Masks are ``uint64`` (B,); ``bits`` arrays are bool (B, 52).  ``pile``
    holds every face-up discard including the top card.  ``after_discard``
    (B, 52) int is the mover's deadwood after each discard in the discard
    phase, ``SENTINEL`` for cards not held or outside that phase.  Scores are
    fractions of the target, as in the observation.
    """

    obs: np.ndarray
    mask: np.ndarray
    hand: np.ndarray
    hand_bits: np.ndarray
    top: np.ndarray
    top_mask: np.ndarray
    pile: np.ndarray
    opp_known: np.ndarray
    opp_known_bits: np.ndarray
    unseen: np.ndarray
    unseen_bits: np.ndarray
    forbidden_bits: np.ndarray
    after_discard: np.ndarray
    phase: np.ndarray
    is_dealer: np.ndarray
    stock_size: np.ndarray
    knock_limit: np.ndarray
    deadwood: np.ndarray
    column_exists: np.ndarray
    own_score: np.ndarray
    opp_score: np.ndarray
    column_decided: np.ndarray
    column_won: np.ndarray
    column_lost: np.ndarray
    open_to_me: np.ndarray
    open_to_opp: np.ndarray

    @property
    def size(self) -> int:
        return int(self.obs.shape[0])


def _scalar(obs: np.ndarray, name: str, scale: float) -> np.ndarray:
    return np.rint(obs[:, SPEC[name].start] * scale).astype(np.int64)


def _columns(obs: np.ndarray, name: str) -> np.ndarray:
    s = SPEC[name]
    return obs[:, s.start : s.start + MAX_COLUMNS]


def decode(obs: dict[str, np.ndarray]) -> ObsView:
    """Decode ``{"observation", "action_mask"}`` rows into an :class:`ObsView`."""
    o = np.asarray(obs["observation"], dtype=np.float32)
    if o.ndim == 1:
        o = o[None, :]
    mask = np.asarray(obs["action_mask"])
    if mask.ndim == 1:
        mask = mask[None, :]
    card_bits = np.stack([o[:, SPEC[name]] > 0.5 for name in _CARD_SLICES], axis=1)
    masks = pack_masks(card_bits)  # (B, 6)
    hand_bits = card_bits[:, 0]
    top_bits = card_bits[:, 1]
    has_top = top_bits.any(axis=1)
    top = np.where(has_top, np.argmax(top_bits, axis=1), -1).astype(np.int64)
    phase = np.argmax(o[:, SPEC["phase"]], axis=1).astype(np.int64)
    raw = np.rint(o[:, SPEC["deadwood_after_discard"]] * 100.0).astype(np.int64)
    discarding = (phase == A.PHASE_DISCARD)[:, None] & hand_bits
    after = np.where(discarding, raw, SENTINEL)
    exists = _columns(o, "column_exists") > 0.5
    return ObsView(
        obs=o,
        mask=mask,
        hand=masks[:, 0],
        hand_bits=hand_bits,
        top=top,
        top_mask=masks[:, 1],
        pile=masks[:, 1] | masks[:, 2],
        opp_known=masks[:, 3],
        opp_known_bits=card_bits[:, 3],
        unseen=masks[:, 4],
        unseen_bits=card_bits[:, 4],
        forbidden_bits=card_bits[:, 5],
        after_discard=after,
        phase=phase,
        is_dealer=o[:, SPEC["is_dealer"].start] > 0.5,
        stock_size=_scalar(o, "stock_size", 31.0),
        knock_limit=_scalar(o, "knock_limit", 10.0),
        deadwood=_scalar(o, "deadwood", 100.0),
        column_exists=exists,
        own_score=_columns(o, "own_score").astype(np.float64),
        opp_score=_columns(o, "opponent_score").astype(np.float64),
        column_decided=_columns(o, "column_decided") > 0.5,
        column_won=_columns(o, "column_won") > 0.5,
        column_lost=_columns(o, "column_lost") > 0.5,
        open_to_me=_columns(o, "open_to_me") > 0.5,
        open_to_opp=_columns(o, "open_to_opponent") > 0.5,
    )


def card_bit(cards: np.ndarray) -> np.ndarray:
    """``uint64`` one-card masks of card ids (``-1`` gives 0)."""
    cards = np.asarray(cards)
    ok = cards >= 0
    return np.where(ok, np.uint64(1) << np.maximum(cards, 0).astype(np.uint64), np.uint64(0))


__all__ = ["NUM_CARDS", "SPEC", "ObsView", "card_bit", "decode"]
