"""Action masks and the observation as raw bytes, from Python ints: the one-game encoder.

:func:`hgin_env.observation.encode` is the definition; the one-game engine
(:mod:`hgin_env.engine.single`) assembles the same vector from these precomputed
byte strings (card planes 8 cards at a time, scalars scaled by the
``observation.LAYOUT`` scales), checked byte for byte against ``encode`` in
``tests/hgin_env/engine/test_single.py``.
"""

from __future__ import annotations

import struct

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS
from hgin_env.hollywood import SheetBatch
from hgin_env.melds import SENTINEL
from hgin_env.observation import (
    DEADWOOD_SCALE,
    KNOCK_LIMIT_SCALE,
    MAX_COLUMNS,
    OBS_DIM,
    STOCK_SCALE,
    observation_spec,
)

__all__ = [
    "BYTE_ACTION_IDS",
    "FLAG",
    "FLOAT_BITS",
    "HUNDREDTHS",
    "LIMIT_FLOATS",
    "NO_DISCARD",
    "PHASE_FLOATS",
    "STOCK_FLOATS",
    "mask_bytes",
    "sheet_floats",
]


_SPEC = observation_spec()
_F32 = struct.Struct("<f")


def _f32(x: float) -> bytes:
    return _F32.pack(x)


_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")
#: Byte value -> the 8 float32 0/1 flags of its bits (LSB first), as 32 bytes.
FLOAT_BITS = [row.tobytes() for row in _BYTE_BITS.astype(np.float32)]
#: Byte value -> its 8 int8 0/1 flags (LSB first).
_BITS_I8 = [row.tobytes() for row in _BYTE_BITS]
ZERO_FLOAT = _f32(0.0)
ONE_FLOAT = _f32(1.0)
FLAG = (ZERO_FLOAT, ONE_FLOAT)
#: ``value / 100`` as float32, index SENTINEL (cards not held) gives 0.
HUNDREDTHS = [_f32(v / DEADWOOD_SCALE) for v in range(SENTINEL)] + [ZERO_FLOAT]
STOCK_FLOATS = [_f32(s / STOCK_SCALE) for s in range(NUM_CARDS + 1)]
LIMIT_FLOATS = [_f32(k / KNOCK_LIMIT_SCALE) for k in range(11)]
PHASE_FLOATS = [b"".join(FLAG[p == q] for q in range(A.NUM_PHASES)) for p in range(A.NUM_PHASES)]
PHASE_FLOATS.append(ZERO_FLOAT * A.NUM_PHASES)  # PHASE_MATCH_OVER: no live phase
NO_DISCARD = ZERO_FLOAT * NUM_CARDS
_SHEET_START = _SPEC["column_exists"].start
assert _SPEC["deadwood_after_discard"].start == 6 * NUM_CARDS
assert _SPEC["phase"].start == 7 * NUM_CARDS and _SHEET_START == _SPEC["deadwood"].stop
assert OBS_DIM - _SHEET_START == 8 * MAX_COLUMNS

def _mask_bytes(legal: int) -> bytes:
    return b"".join([_BITS_I8[x] for x in legal.to_bytes(14, "little")])[: A.NUM_ACTIONS]


#: Masks without a discard or knock (the draw phases): few, so kept once made.
_NON_DISCARD_MASKS: dict[int, bytes] = {}
_DISCARD_IDS = (1 << A.DRAW_STOCK) - 1


_BYTE_BITS_SET = [[i for i in range(8) if v >> i & 1] for v in range(256)]
#: Per byte k of an action bit mask (14 bytes, little-endian): byte value -> the action
#: ids its set bits stand for.
BYTE_ACTION_IDS = [[[8 * k + i for i in bits] for bits in _BYTE_BITS_SET] for k in range(14)]


def mask_bytes(legal: int) -> bytes:
    """The 108 int8 flags of the action bit mask ``legal``."""
    if legal & _DISCARD_IDS:
        return _mask_bytes(legal)
    cached = _NON_DISCARD_MASKS.get(legal)
    if cached is None:
        cached = _NON_DISCARD_MASKS[legal] = _mask_bytes(legal)
    return cached


def sheet_floats(sheets: SheetBatch, target: int, seat: int) -> bytes:
    """The sheet part of ``observation.encode`` (``column_exists`` … ``open_to_opponent``)."""
    c = sheets.columns
    opp = 1 - seat
    scores = sheets.scores[0].tolist()
    decided = sheets.decided[0].tolist()
    winner = sheets.column_winner[0].tolist()
    wins = sheets.wins[0].tolist()
    t = float(target)
    groups = (
        [1.0] * c,
        [s / t for s in scores[seat]],
        [s / t for s in scores[opp]],
        [float(d) for d in decided],
        [float(w == seat) for w in winner],
        [float(w == opp) for w in winner],
        [float(wins[seat] > j) for j in range(c)],
        [float(wins[opp] > j) for j in range(c)],
    )
    pad = [0.0] * (MAX_COLUMNS - c)
    values = [v for g in groups for v in (*g, *pad)]
    return struct.pack(f"<{len(values)}f", *values)
