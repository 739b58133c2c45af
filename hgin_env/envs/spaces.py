"""What counts as an action, and the spaces both environments use.

* :func:`action_id` — any integral scalar in ``0..107`` (see its docs);
* :class:`MaskedDiscrete` — ``Discrete(108)`` with a fast ``sample(mask)``;
* :func:`observation_space` — one seat's observation space, from :func:`observation_bounds`;
* :func:`mask_dtype` — the action mask's dtype option (int8, the default, or bool);
* :func:`flat_slices` — where each key lands in ``gymnasium.spaces.flatten`` of a
  ``Dict`` observation (Gymnasium sorts the keys, so the mask comes *first*);
* :class:`IllegalMoveWarning` and :func:`warn_illegal_move` — an illegal move that
  forfeits the match is never silent.
"""

from __future__ import annotations

import math
import operator
import warnings
from typing import Any

import numpy as np
from gymnasium import spaces

from hgin_env.actions import NUM_ACTIONS
from hgin_env.cards import NUM_CARDS
from hgin_env.history import max_hand_actions
from hgin_env.observation import OBS_DIM, observation_spec
from hgin_env.rules import Rules

__all__ = [
    "IllegalMoveWarning",
    "MaskedDiscrete",
    "action_id",
    "flat_slices",
    "mask_dtype",
    "observation_bounds",
    "observation_space",
    "warn_illegal_move",
]

# ----------------------------------------------------------------------------- actions


def _integral_value(action: Any) -> int:
    """The integer that ``action`` holds exactly, or ``ValueError``."""
    if isinstance(action, np.ndarray):
        if action.size != 1:
            raise ValueError(f"an action is one integer, got an array of shape {action.shape}")
        action = action.reshape(()).item()
    elif isinstance(action, np.generic):
        action = action.item()
    if isinstance(action, bool):
        raise ValueError(f"an action is an integer id, got the bool {action!r}")
    if isinstance(action, float):
        if not (math.isfinite(action) and action.is_integer()):
            raise ValueError(f"an action is an integer id, got the non-integral value {action!r}")
        return int(action)
    try:
        return operator.index(action)
    except TypeError:
        raise ValueError(f"an action is an integer id, got {action!r} "
                         f"({type(action).__name__})") from None


def action_id(action: Any) -> int:
    """``action`` as an action id, an ``int`` in ``0..107``.

    RL libraries hand actions over in many shapes, so any *integral scalar* is
    accepted: a Python or numpy integer, a 0-d or 1-element array, and an
    integral float (``105.0``, as a float-typed policy output may be).
    Anything else raises ``ValueError`` naming the value: a non-integral or
    non-finite number (``105.5``, ``nan``), a bool, a string, an array of
    several values, or an integer outside the action space.  (Whether the id
    is *legal now* is the environment's question, not this one.)
    """
    value = action if type(action) is int else _integral_value(action)
    if not 0 <= value < NUM_ACTIONS:
        raise ValueError(f"action {value} is outside the action space "
                         f"(integers 0..{NUM_ACTIONS - 1})")
    return value


class MaskedDiscrete(spaces.Discrete):
    """``Discrete(n)`` with a fast ``sample(mask)``.

    Gymnasium's masked sample costs tens of microseconds (several numpy calls
    and ``Generator.choice``), more than a whole environment step here.  This
    one checks the mask the same way (an int8 array of shape (n,) holding only
    0 and 1; anything else goes to Gymnasium's own checks) and draws uniformly
    among the 1 entries, from uniforms drawn in blocks from ``self.np_random``;
    so it is reproducible under ``seed()``, but it is not the same stream as
    ``Discrete.sample``.  Returns ``start`` when no entry is set, as Gymnasium does.
    """

    _BLOCK = 256
    _INT8 = np.dtype(np.int8)
    _BOOL = np.dtype(np.bool_)

    def __init__(self, n: int, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(n, seed=seed)
        self._uniforms: list[float] = []
        self._source: np.random.Generator | None = None
        self._mask_shape = (int(n),)  # not Space._shape: a Discrete's own shape stays ()
        self._values = [self.start + self.dtype.type(i) for i in range(int(n))]

    def __setstate__(self, state: Any) -> None:
        """Pickles from before ``_mask_shape`` stored the mask's shape in Space's own
        ``_shape``, so their ``shape`` read (n,); both are put right on load."""
        state = dict(state)
        if "_mask_shape" not in state:
            state["_mask_shape"] = (int(state["n"]),)
            state["_shape"] = ()
        super().__setstate__(state)

    def seed(self, seed: int | None = None) -> Any:
        self._uniforms = []
        return super().seed(seed)

    def sample(self, mask: Any = None, probability: Any = None) -> np.int64:
        """A uniform draw among the 1 (or ``True``) entries of ``mask``; a bool mask
        (``mask_dtype=bool``) is read as the int8 mask Gymnasium expects."""
        if type(mask) is np.ndarray and mask.dtype is self._BOOL:
            mask = mask.view(np.int8)
        if (probability is not None or type(mask) is not np.ndarray
                or mask.dtype is not self._INT8 or mask.shape != self._mask_shape):
            return super().sample(mask, probability)
        flags = mask.tobytes()
        count = flags.count(1)
        if count + flags.count(0) != len(flags):
            return super().sample(mask)  # values other than 0/1: Gymnasium's assertion
        if not count:
            return self.start
        uniforms = self._uniforms
        rng = self._np_random
        if rng is None:
            rng = self.np_random
        if not uniforms or self._source is not rng:
            uniforms = self._uniforms = rng.random(self._BLOCK).tolist()
            self._source = rng
        k = int(uniforms.pop() * count)
        pos = flags.index(1)
        for _ in range(k):
            pos = flags.index(1, pos + 1)
        return self._values[pos]


def observation_bounds(rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """Per-entry (low, high) of the observation vector under ``rules``.

    Every entry is at least 0.  Cards and flags are at most 1; an 11-card
    hand's deadwood can reach 106 (÷ 100); a column score stops rising once
    it reaches the target, so it is below target + the largest award.
    """
    spec = observation_spec()
    low = np.zeros(OBS_DIM, np.float32)
    high = np.ones(OBS_DIM, np.float32)
    high[spec["deadwood"]] = 1.1
    # Largest award: gin (or big gin) bonus + a 10-card defender deadwood (at most 98).
    biggest = max(rules.gin_bonus, rules.big_gin_bonus if rules.big_gin else 0) + 100
    biggest = max(biggest, rules.undercut_bonus + 10)
    score_high = (rules.target - 1 + biggest) / rules.target
    high[spec["own_score"]] = score_high
    high[spec["opponent_score"]] = score_high
    return low, high


def mask_dtype(value: Any) -> np.dtype:
    """The ``mask_dtype`` option as a numpy dtype: int8 (the default: PettingZoo's and
    Gymnasium's ``Discrete.sample(mask=...)`` convention) or bool (TorchRL's
    ``ActionMask`` and ``masked_fill_`` need booleans).  Anything else raises ``ValueError``."""
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    if dtype not in (np.dtype(np.int8), np.dtype(np.bool_)):
        raise ValueError(f"mask_dtype must be numpy.int8 or bool, got {value!r}")
    return dtype


def observation_space(rules: Rules, history: bool = False, mask: Any = np.int8
                      ) -> spaces.Dict:
    """One seat's observation space under ``rules``: the ``observation`` vector and the
    ``action_mask`` (of dtype ``mask``: int8 or bool), and with ``history`` the hand's
    public history (:data:`hgin_env.history.HISTORY_KEYS`, one game's rows)."""
    low, high = observation_bounds(rules)
    entries = {
        "observation": spaces.Box(low=low, high=high, shape=(OBS_DIM,), dtype=np.float32),
        "action_mask": spaces.Box(low=0, high=1, shape=(NUM_ACTIONS,),
                                  dtype=mask_dtype(mask)),
    }
    if history:
        length = max_hand_actions(rules)
        entries["history"] = spaces.Box(low=-1, high=2 * NUM_ACTIONS - 1, shape=(length,),
                                        dtype=np.int16)
        entries["history_len"] = spaces.Box(low=0, high=length, shape=(), dtype=np.int16)
        entries["upcard"] = spaces.Box(low=0, high=NUM_CARDS - 1, shape=(), dtype=np.int8)
    return spaces.Dict(entries)


def flat_slices(space: spaces.Dict) -> dict[str, slice]:
    """Where each key of the ``Dict`` observation ``space`` lands in the vector that
    ``gymnasium.spaces.flatten`` (and ``gymnasium.wrappers.FlattenObservation``) makes.

    Gymnasium's ``Dict`` sorts its keys, so for hgin's observation the action mask
    comes first: ``action_mask`` is ``slice(0, 108)`` and ``observation`` is
    ``slice(108, 506)`` (the history keys, with ``history=True``, lie between them).
    Reading the mask from the tail of the flat vector picks the wrong entries.
    """
    if not isinstance(space, spaces.Dict):
        raise ValueError(f"flat_slices needs a gymnasium.spaces.Dict, got {space!r}")
    out: dict[str, slice] = {}
    start = 0
    for key, sub in space.spaces.items():
        size = int(spaces.flatdim(sub))
        out[key] = slice(start, start + size)
        start += size
    return out


class IllegalMoveWarning(UserWarning):
    """An illegal move ended a match as a forfeit (``strict=False``, the default).

    Silence it with ``warnings.filterwarnings("ignore", category=IllegalMoveWarning)``;
    pass ``strict=True`` to raise ``ValueError`` instead, or mask the policy's
    actions with ``obs["action_mask"]`` so that it never happens.
    """


def warn_illegal_move(message: str) -> None:
    """Warn that ``message``'s move forfeited the match (see :class:`IllegalMoveWarning`)."""
    warnings.warn(f"{message}: the match ends as a forfeit (the offender loses). Pass "
                  "strict=True to raise instead, or mask the policy with "
                  "obs['action_mask']", IllegalMoveWarning, stacklevel=3)
