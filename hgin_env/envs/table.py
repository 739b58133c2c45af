"""One match on the one-game engine, with what every interface reports about it.

:class:`MatchTable` is the part of an environment that is not an API: the
:class:`~hgin_env.engine.SingleGame`, whose turn it is, how the match ended (its
last hand, a forfeit, or the match bound), the hands and steps played, the last move
and showdown to show, and the recorder that sees every deal and action.  The
PettingZoo env (:mod:`.aec`) puts agent names and PettingZoo's dictionaries on top,
the Gymnasium env (:mod:`.gym_env`) one learner seat, and the terminal game a
person; all three play the match through this one object, so they cannot drift apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hgin_env import actions as A
from hgin_env.engine.single import SingleGame, SingleGameArrays, mask_bytes
from hgin_env.envs.spaces import action_id
from hgin_env.hollywood import Sheet
from hgin_env.rules import Rules

if TYPE_CHECKING:
    from hgin_env.records.format import MatchStream

__all__ = ["AGENTS", "TERMINAL_MASK_ACTION", "MatchTable"]

#: The agents' names by seat, in every interface.
AGENTS = ("player_0", "player_1")
#: The single entry set in a finished match's action mask: a placeholder, so that a
#: mask is never empty (masked maxima and softmaxes stay finite).
TERMINAL_MASK_ACTION = A.PASS
_TERMINAL_MASK = mask_bytes(1 << TERMINAL_MASK_ACTION)
_ZERO_MASK = bytes(A.NUM_ACTIONS)
_INT64 = np.int64


class MatchTable:
    """One match of ``rules`` on a :class:`SingleGame`, rewarded by ``reward``.

    ``keep_last_move`` remembers each move (seat, action, the card a take took) for
    the renderers; the environments set it when they render.  ``recorder`` (a
    :class:`~hgin_env.records.format.MatchStream`), when set, sees every deal and
    action.
    """

    def __init__(self, rules: Rules, reward: str = "columns", keep_last_move: bool = False
                 ) -> None:
        self.rules = rules
        self.reward_mode = reward
        self.keep_last_move = keep_last_move
        self.single = SingleGame(rules, seed=0, reward=reward, autoreset=False)
        self.recorder: MatchStream | None = None
        self._clear()

    def _clear(self) -> None:
        #: The match has ended: by its last hand, a forfeit or the match bound.
        self.over = False
        #: The match bound cut the match off undecided (no winner).
        self.truncated = False
        #: What the forfeiting move was (:meth:`forfeit_illegal`), else ``None``.
        self.forfeit: dict[str, Any] | None = None
        self.hands_played = 0
        self.steps = 0
        #: ``(seat, action, card taken or -1)`` of the latest move, with ``keep_last_move``.
        self.last_move: tuple[int, int, int] | None = None
        #: The step at which the latest hand ended (-1: none yet).
        self.last_hand_step = -1
        #: The card the latest knock discarded, -1 when the latest hand ended otherwise.
        self.knock_discard = -1

    def reset(self, seed: int, deck: Any = None, dealer: Any = None) -> None:
        """Deal a new match from ``seed`` (or the given first ``deck`` and ``dealer``)."""
        self.single.reset(seed=seed, deck=deck, dealer=dealer)
        self._clear()
        if self.recorder is not None:
            given = deck is not None or dealer is not None
            self.recorder.start(self.single, first_deal="given" if given else "seeded")

    # ----------------------------------------------------------------- what a seat sees
    @property
    def current_player(self) -> int:
        """The seat to move."""
        return self.single.current_player

    def observe(self, seat: int) -> dict[str, np.ndarray]:
        """``seat``'s observation and action mask (fresh arrays the caller may keep)."""
        game = self.single
        if self.over:
            mask = _TERMINAL_MASK
        elif seat == game.current_player:
            mask = game.legal_mask_bytes()
        else:
            mask = _ZERO_MASK
        return {"observation": np.frombuffer(bytearray(game.observation_bytes(seat)), np.float32),
                "action_mask": np.frombuffer(bytearray(mask), np.int8)}

    def action_mask(self, seat: int) -> np.ndarray:
        """``seat``'s action mask, without building the observation vector."""
        if self.over:
            mask = _TERMINAL_MASK
        elif seat != self.single.current_player:
            mask = _ZERO_MASK
        else:
            mask = self.single.legal_mask_bytes()
        return np.frombuffer(bytearray(mask), np.int8)

    def is_legal(self, action: Any) -> bool:
        """Whether ``action`` is a legal action id for the seat to move (``False`` for a
        value that is not an action id, and once the match is over)."""
        try:
            a = action if type(action) is int else action_id(action)
        except ValueError:
            return False
        return not self.over and self.single.is_legal(a)

    def illegal_action_message(self, seat: int, action: Any) -> str:
        """Why ``action`` cannot be played by ``seat`` now, with the legal actions."""
        agent = AGENTS[seat]
        try:
            a: Any = action_id(action)
            what = A.action_name(a)
        except ValueError as err:
            a, what = action, str(err)
        if self.over:
            return f"{agent}: action {a!r} ({what}) played after the match ended"
        legal = self.single.legal_actions()
        phase = A.PHASE_NAMES[self.single.phase]
        listed = ", ".join(f"{x} ({A.action_name(x)})" for x in legal)
        return (f"illegal action {a!r} ({what}) by {agent} in phase '{phase}'; "
                f"legal actions: {listed}")

    # ----------------------------------------------------------------- moves
    def legal_id(self, action: Any) -> int | None:
        """``action`` as an id if it is legal now, else ``None``; a value that is not an
        action id at all raises ``ValueError`` (:func:`~hgin_env.envs.spaces.action_id`)."""
        kind = type(action)
        if (kind is int or kind is _INT64) and 0 <= action < A.NUM_ACTIONS:
            a = int(action)  # the common case, without action_id's general checks
        else:
            a = action_id(action)
        if self.over or not self.single.legal >> a & 1:
            return None
        return a

    def play(self, a: int) -> tuple[float, float, dict[str, Any]]:
        """Apply the legal action ``a`` of the seat to move: ``(reward 0, reward 1, info)``
        as :meth:`SingleGame.step` reports them."""
        game = self.single
        seat = game.current_player
        if self.keep_last_move:
            top = game.top_discard if a == A.TAKE_DISCARD else -1
            self.last_move = (seat, a, top)
        (r0, r1), info = game.step(a)
        self.steps += 1
        if self.recorder is not None:
            self.recorder.played(seat, a, info["hand_over"], info["match_over"],
                                 info["truncated"])
        if info["hand_over"]:
            self.knock_discard = a - A.KNOCK if A.KNOCK <= a < A.DRAW_STOCK else -1
            self.hands_played += 1
            self.last_hand_step = self.steps
            if info["match_over"]:
                self.over = True
            elif info["truncated"]:
                self.over = self.truncated = True
        return r0, r1, info

    def forfeit_illegal(self, action: Any) -> dict[str, Any]:
        """End the match because the seat to move chose ``action``, an illegal action;
        returns what ``self.forfeit`` now holds."""
        seat = self.single.current_player
        try:
            a: Any = action_id(action)
            meaning = A.action_name(a)
        except ValueError:
            a, meaning = action, "not a valid action id"
        self.forfeit = {
            "agent": AGENTS[seat],
            "action": a,
            "meaning": meaning,
            "legal_actions": self.single.legal_actions(),
            "message": self.illegal_action_message(seat, a),
        }
        self.over = True
        return self.forfeit

    # ----------------------------------------------------------------- views
    @property
    def game(self) -> SingleGameArrays:
        """The game in the ``VectorGame`` array layout (a live, read-only view; it stays
        in its final position once the match is over)."""
        return self.single.arrays

    def sheet(self) -> Sheet:
        """The score sheet; the final one once the match is over."""
        return self.single.sheet()

    def _title(self) -> str:
        return f"Hollywood gin · hand {self.hands_played + (0 if self.over else 1)}"

    def render_text(self, color: bool = False, viewer: int | None = None) -> str:
        """The table as text: both hands (or only ``viewer``'s), the sheet, the last showdown."""
        from hgin_env.ui import render as R

        style = R.Style(color)
        game = self.game
        parts = []
        if self.last_move is not None:
            seat, a, top = self.last_move
            parts.append(f"{AGENTS[seat]}: {R.move_text(a, style, card=top)}")
        if self.last_hand_step == self.steps and self.steps > 0:
            discard = self.knock_discard if self.knock_discard >= 0 else None
            parts.append(R.showdown_text(game, 0, AGENTS, style, knock_discard=discard))
        if self.forfeit is not None:
            parts.append(style(f"Match over: {self.forfeit['message']}. "
                               f"{self.forfeit['agent']} forfeits the match.", "bold"))
            parts.append(R.sheet_text(self.sheet(), self.rules, AGENTS, style))
        elif self.truncated:
            parts.append(style(f"Match cut off undecided after {self.hands_played} hands "
                               "(the match bound): no winner.", "bold"))
            parts.append(R.sheet_text(self.sheet(), self.rules, AGENTS, style))
        elif self.over:
            parts.append(style("Match over.", "bold"))
            parts.append(R.sheet_text(self.sheet(), self.rules, AGENTS, style))
        else:
            parts.append(R.table_text(game, 0, viewer, AGENTS, style, title=self._title()))
        return "\n\n".join(parts)

    def render_image(self, viewer: int | None = None) -> np.ndarray:
        """The table as an RGB image (``image.HEIGHT x image.WIDTH x 3`` uint8).

        ``viewer`` (a seat) sees its own hand and, of the other hand, only the cards
        taken from the discard pile; ``None`` shows both hands.  Both are shown once
        the match is over.
        """
        from hgin_env.ui import render as R
        from hgin_env.ui.image import table_image

        notes = []
        if self.last_move is not None:
            mover, a, top = self.last_move
            notes.append(f"{AGENTS[mover]}: {R.move_text(a, card=top)}")
        if self.forfeit is not None:
            notes.append(f"{self.forfeit['agent']} forfeits: illegal move "
                         f"{self.forfeit['action']!r}")
        elif self.truncated:
            notes.append("Match cut off undecided: no winner")
        elif self.over:
            notes.append(f"Match over: {AGENTS[self.sheet().match_winner]} wins")
        return table_image(self.game, 0, viewer, AGENTS, title=self._title(), notes=notes,
                           reveal=self.over)
