"""Read-only views of a one-game engine in the batched engine's attribute layout.

Code written against :class:`~hgin_env.engine.VectorGame` (the text renderer,
the terminal game, ``observation.encode``) reads a
:class:`~hgin_env.single.SingleGame` through :class:`SingleGameArrays`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hgin_env.state import FIELD_NAMES

if TYPE_CHECKING:
    from hgin_env.single import SingleGame

__all__ = ["SingleGameArrays"]


class SingleGameArrays:
    """A :class:`SingleGame` seen through the ``VectorGame`` attribute layout (one game).

    Each state array (:data:`hgin_env.state.FIELDS`) is read from the synced
    state when asked for, so a view kept across steps stays current: enough of
    ``VectorGame`` for the renderer, the terminal game and ``encode``.
    """

    _FROM_GAME = frozenset({"rules", "sheets", "last_match", "last_hand", "state_dict"})
    _FROM_STATE = frozenset({"stock_size", "top_discard", "sheet"})

    def __init__(self, game: SingleGame) -> None:
        self._g = game
        self.num_games = 1

    def __getattr__(self, name: str) -> Any:
        if name in FIELD_NAMES:
            return getattr(self._g.state, name).copy()
        if name in self._FROM_GAME:
            return getattr(self._g, name)
        if name in self._FROM_STATE:
            return getattr(self._g.state, name)
        if name in ("scores", "wins", "column_winner"):
            return getattr(self._g.sheets, name)
        raise AttributeError(name)

    def legal_action_mask(self) -> np.ndarray:
        return self._g.legal_action_mask()[None, :]

    def observe(self, player: int | None = None) -> dict[str, np.ndarray]:
        return {key: value[None, :] for key, value in self._g.observe(player).items()}
