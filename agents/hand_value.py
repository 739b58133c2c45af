"""A search-time value network: what the rest of a hand is worth, given every card.

Why: ``search`` values a move by playing the blueprint to the end of the hand in each
sampled world, 20 to 40 network calls a world; most of its time goes there.  With a
value network a rollout can stop after ``depth`` moves and read the value of the
position instead (``search:depth=N``), so the same CPU buys several times the worlds.
A rollout world is fully known to the search (its own sampled opponent hand and stock),
so the network reads the mover's observation plus that world's hidden cards
(:mod:`hgin_env.hidden`): it is a value of *sampled worlds*, never of the real game's
hidden state, which no agent sees.

The value is the mover's expected return from the position to the end of the hand
when the blueprint plays both seats: columns won on the Hollywood sheet plus the
points posted times ``points_coef`` over the match's points (what search's rollouts
add up).  ``bench/train_value.py`` trains it on the blueprint's self-play; the shipped
file is ``agents/pretrained/hand_value.pt``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hgin_env.hidden import HIDDEN_DIM, encode_hidden
from hgin_env.observation import OBS_DIM
from hgin_env.state import GameState

__all__ = ["FEATURES", "HAND_VALUE_PATH", "HandValueNet", "load_hand_value", "value_features"]

HAND_VALUE_PATH = Path(__file__).resolve().parent / "pretrained" / "hand_value.pt"
#: The network's input: the mover's observation and its world's hidden cards.
FEATURES = OBS_DIM + HIDDEN_DIM
#: The widest hidden layer a value file may declare.
MAX_HIDDEN = 4096


def value_features(obs: np.ndarray, state: GameState) -> np.ndarray:
    """(B, FEATURES) float32: each game's mover's observation ``obs`` (B, OBS_DIM) and what
    that mover cannot see in ``state`` (a world the caller built, sampled or simulated)."""
    hidden = encode_hidden(state, state.current_player.astype(np.int64))
    return np.concatenate([np.asarray(obs, np.float32), hidden], axis=1)


class HandValueNet:
    """An MLP from :func:`value_features` to the mover's value of the rest of the hand."""

    def __init__(self, hidden: int = 256, state: dict[str, Any] | None = None,
                 meta: dict[str, Any] | None = None) -> None:
        import torch
        from torch import nn

        self.hidden = hidden
        #: What the file says it was trained for (rules, points_coef, blueprint, data).
        self.meta = dict(meta or {})
        self.module = nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(),
                                    nn.Linear(hidden, hidden), nn.ReLU(),
                                    nn.Linear(hidden, 1))
        if state is not None:
            self.module.load_state_dict(state)
        self.module.eval()
        self._torch = torch

    def values(self, features: np.ndarray) -> np.ndarray:
        """(B,) float64 values of :func:`value_features` rows."""
        torch = self._torch
        with torch.inference_mode():
            out = self.module(torch.from_numpy(np.asarray(features, np.float32)))
        return out.squeeze(-1).numpy().astype(np.float64)

    def save(self, path: Path | str) -> None:
        self._torch.save({"kind": "hgin-hand-value", "features": FEATURES, "hidden": self.hidden,
                          "meta": self.meta, "state": self.module.state_dict()}, str(path))


def load_hand_value(path: Path | str = HAND_VALUE_PATH) -> HandValueNet:
    """The shipped (or a given) value network; a one-line ``ValueError`` if the file is not
    one.  Read as :func:`agents.belief.load_belief` reads a belief: archive checked first,
    ``weights_only=True``, width bounded."""
    from agents.torch_agent import read_network_file

    path = Path(path)
    data = read_network_file(path, "hgin-hand-value", FEATURES, "hand value network",
                             "bench/train_value.py", MAX_HIDDEN)
    hidden = data["hidden"]
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: 'meta' must be a table, got {type(meta).__name__}")
    try:
        return HandValueNet(hidden, data.get("state"), meta)
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path}: its weights do not fit a hand value network of width "
                         f"{hidden}: {str(exc).splitlines()[0][:200]}") from None
