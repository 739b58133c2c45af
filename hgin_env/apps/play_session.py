"""One person's match against an agent, as the play server keeps it between clicks.

:class:`PlaySession` holds a :class:`~hgin_env.envs.table.MatchTable` (the
one-game engine), plays the agent's moves through the
:class:`~hgin_env.envs.driver.MatchDriver` as soon as it is the agent's turn,
records every action with a :class:`~hgin_env.records.format.MatchStream`, and
describes the table as the
person's seat may see it (:meth:`PlaySession.view`): the opponent's cards stay
hidden, but for those it took from the discard pile, until a showdown shows them.
The words (moves, why a move is refused, what happened) are the terminal
game's (:mod:`hgin_env.ui.moves`), without its keys (the page has buttons).

Every action applied so far is counted (:attr:`PlaySession.moves`, in the view
as ``"move"``): a client names the count it saw, so a stale click (another tab,
a double click) is refused instead of applied to a table it never saw.  When
the agent fails (it raises, even after a retry, or picks an illegal move) the
match stops in a defined state: :attr:`PlaySession.failed` says why, the view
shows it and no one may move, since the person must never move for the agent.

A session may own its agent (``owns_opponent``: the play server gives every
match its own external program, :meth:`agents.text_agent.TextAgent.spawn`): it
then closes the agent as soon as the match ends or stops, and on :meth:`close`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hgin_env import actions as A
from hgin_env.agent import Agent
from hgin_env.cards import mask_to_cards
from hgin_env.envs.driver import AgentError, MatchDriver
from hgin_env.envs.table import MatchTable
from hgin_env.hollywood import COLUMN_NAMES
from hgin_env.melds import min_deadwood
from hgin_env.records.format import MatchStream, make_record, sheet_dict, showdown_dict
from hgin_env.rules import Rules
from hgin_env.ui.moves import move_options, narrate, why_illegal
from hgin_env.ui.render import Style, hand_groups, phase_text

__all__ = ["AgentFailed", "IllegalMove", "PlaySession", "StaleMove"]

_PLAIN = Style(False)
#: How many lines of the move log a view carries (the newest).
LOG_LINES = 14
#: How often the agent is asked for one move before the match is stopped (it raised).
AGENT_TRIES = 2
#: The buttons of the play page besides the cards (``"knock"`` stands for any knock).
BUTTONS = {"draw": A.DRAW_STOCK, "take": A.TAKE_DISCARD, "pass": A.PASS, "big_gin": A.BIG_GIN}


class IllegalMove(ValueError):
    """A move the rules refuse now: ``str(err)`` says why in plain words, ``detail``
    in the engine's words (:func:`hgin_env.actions.illegal_message`)."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


class StaleMove(IllegalMove):
    """A move sent for a table the client no longer sees (its move number is old)."""


class AgentFailed(RuntimeError):
    """The agent could not reply, so the match was stopped (``str(err)`` says why)."""


class PlaySession:
    """A match of a person (seat ``seat``) against ``opponent``, from the deals of ``seed``.

    ``opponent_name`` names the agent in the page and in the record (its
    spec, e.g. ``"pretrained"``); ``profile`` is the rules' profile name, if any;
    ``number`` is the match's number on its server (shown with the seed).
    With ``owns_opponent`` the session closes the opponent (its ``close()``, when it
    has one) once the match is over or stopped, and on :meth:`close`.
    """

    def __init__(self, opponent: Agent, rules: Rules, seed: int, seat: int = 0,
                 opponent_name: str = "opponent", profile: str | None = None,
                 number: int = 1, owns_opponent: bool = False) -> None:
        if isinstance(seat, bool) or seat not in (0, 1):
            raise ValueError(f"seat must be 0 or 1, got {seat!r}")
        self.opponent = opponent
        self.owns_opponent = owns_opponent
        self.rules = rules
        self.seed = int(seed)
        self.number = int(number)
        #: Actions applied so far (both seats'); a client names it to move.
        self.moves = 0
        #: Why the match was stopped when the agent failed, else ``None``.
        self.failed: str | None = None
        self.seat = seat
        self.profile = profile
        self.agents = ["human", "human"]
        self.agents[1 - seat] = opponent_name
        self.names = ["You", "You"]
        self.names[1 - seat] = f"{opponent_name} (agent)"
        self.table = MatchTable(rules)
        self.recorder = MatchStream(lambda _match: None)  # read with so_far(), not emitted
        self.table.recorder = self.recorder
        self.table.reset(self.seed)
        #: The table in the ``VectorGame`` layout, as the renderers and the moves read it.
        self.game = self.table.game
        # The agent's turns, with the hand's public history for agents that use it (search).
        self.driver = MatchDriver(self.table, {1 - seat: opponent},
                                  np.random.default_rng(self.seed))
        self.driver.new_match()
        self.hand_number = 1
        self.log: list[str] = []
        self.showdown: dict[str, Any] | None = None
        self.showdown_hand = 0
        self.knock_discard = -1
        try:
            self._agent_moves()
        except BaseException:
            self.close()
            raise
        self._release()

    # ------------------------------------------------------------------ moves
    @property
    def over(self) -> bool:
        """Whether the match has ended."""
        return self.table.over

    def play(self, action: int, expected: int | None = None) -> None:
        """Play the person's ``action`` (an id in ``0..107``), then the agent's replies.

        ``expected`` is the move number (:attr:`moves`) the client saw; another
        one raises :class:`StaleMove`.  An action the rules refuse now raises
        :class:`IllegalMove` and changes nothing.  If the agent then fails,
        :class:`AgentFailed` is raised after the person's move was applied and
        the match is stopped.
        """
        if not 0 <= action < A.NUM_ACTIONS:
            raise ValueError(f"action {action} is outside 0..{A.NUM_ACTIONS - 1}")
        if self.failed is not None:
            raise IllegalMove(f"the match was stopped: {self.failed}; start a new one",
                              f"action {action} played after the agent failed")
        if self.over:
            raise IllegalMove("the match is over: start a new one",
                              f"action {action} played after the match ended")
        if expected is not None and expected != self.moves:
            raise StaleMove(f"the table changed since you saw it (move {expected}, now move "
                            f"{self.moves}): look again and choose again",
                            f"expected move {expected}, the match is at move {self.moves}")
        mask = self.game.legal_action_mask()[0]
        if not mask[action]:
            phase = int(self.game.phase[0])
            raise IllegalMove(why_illegal(self.game, self.seat, action, keys=False),
                              A.illegal_message(action, phase, self.seat,
                                                np.flatnonzero(mask).tolist()))
        self._step(action)
        self._agent_moves()
        self._release()
        if self.failed is not None:
            raise AgentFailed(self.failed)

    def _release(self) -> None:
        """Close an owned agent once it has no more moves to make."""
        if self.over or self.failed is not None:
            self.close()

    def close(self) -> None:
        """End the agent's resources (its program) if this session owns it; the view and
        the record stay readable.  Safe to call again."""
        if self.owns_opponent:
            close = getattr(self.opponent, "close", None)
            if callable(close):
                close()

    def _agent_moves(self) -> None:
        """Let the agent move until it is the person's turn or the match is over.

        An agent that raises is asked again (:data:`AGENT_TRIES` in all); one that
        keeps failing, or picks an illegal move, stops the match (:attr:`failed`)
        with the table as it was, so that it is never the person's turn for it.
        """
        table = self.table
        while not self.over and self.failed is None and table.current_player != self.seat:
            mover = table.current_player
            for attempt in range(1, AGENT_TRIES + 1):
                try:
                    action = self.driver.choose(mover)
                    break
                except AgentError as err:
                    self._stop(f"the agent {self.agents[mover]!r} chose an illegal move "
                               f"({err.action})")
                    return
                except Exception as err:  # any agent fault: ask again, then stop
                    if attempt == AGENT_TRIES:
                        self._stop(f"the agent {self.agents[mover]!r} failed "
                                   f"{AGENT_TRIES} times ({type(err).__name__}: {err})")
                        return
            self._step(action)

    def _stop(self, why: str) -> None:
        self.failed = why
        self.log.append(f"The match was stopped: {why}.")

    def _step(self, action: int) -> None:
        game = self.game
        mover = self.table.current_player
        top = int(game.top_discard()[0])
        before = int(game.hands[0, mover])
        _, _, info = self.driver.play(action)
        self.moves += 1
        drawn = None
        if action == A.DRAW_STOCK and mover == self.seat:  # only your own draw is shown
            new = int(game.hands[0, mover]) & ~before
            drawn = new.bit_length() - 1 if new else None
        who = "You" if mover == self.seat else "The agent"
        self.log.append(narrate(who, action, top, drawn, _PLAIN))
        if info["hand_over"]:
            self.showdown = showdown_dict(game.last_hand, 0)
            self.showdown_hand = self.hand_number
            self.knock_discard = action - A.KNOCK if A.KNOCK <= action < A.DRAW_STOCK else -1
            self.log.append(self._hand_summary(self.showdown))
            self.hand_number += 1
            if info["match_over"]:
                winner = int(game.sheet(0).match_winner)
                self.log.append("You win the match!" if winner == self.seat
                                else "The agent wins the match.")
            elif info["truncated"]:  # the match bound: never met in a real match
                self.log.append("The match was cut off undecided at the match bound: "
                                "nobody wins it.")

    def _hand_summary(self, sd: dict[str, Any]) -> str:
        number = self.hand_number
        if sd["dead"]:
            return f"Hand {number} is dead: the stock ran down to two cards, no score."
        how = ("big gin" if sd["big_gin"] else "gin" if sd["gin"]
               else "undercut" if sd["undercut"] else "knock")
        winner = "You win" if sd["winner"] == self.seat else "The agent wins"
        return f"Hand {number}: {winner} by {how}, scoring {sd['award']}."

    # ------------------------------------------------------------------ views
    def view(self) -> dict[str, Any]:
        """The table as the person's seat may see it, as JSON-ready data.

        The opponent's cards appear only as a count and the cards it took from
        the pile (which both players saw); whole hands appear only in the
        showdown of a finished hand.  The hand is in the terminal game's order
        (:func:`hgin_env.ui.render.hand_groups`: melds, then the deadwood by rank).
        """
        game, seat = self.game, self.seat
        other = 1 - seat
        over = self.over
        mine = int(game.hands[0, seat])
        to_move = not over and self.failed is None and int(game.current_player[0]) == seat
        melds, loose = hand_groups(mine) if mine else ([], [])
        after = {}
        if to_move and int(game.phase[0]) == A.PHASE_DISCARD:
            table = game.discard_deadwood[0]
            after = {str(c): int(table[c]) for c in mask_to_cards(mine)}
        sheet = game.sheet(0)
        if self.failed is not None:
            todo = f"The match was stopped: {self.failed}."
        elif over:
            todo = "The match is over."
        else:
            todo = "Your move: " + phase_text(int(game.phase[0])) if to_move else ""
        return {
            "match": self.number,
            "seed": self.seed,
            "seed_text": str(self.seed),  # exact in JavaScript too, however large
            "move": self.moves,
            "error": self.failed,
            "seat": seat,
            "names": self.names,
            "columns": list(COLUMN_NAMES[: self.rules.columns]),
            "hand_number": self.hand_number if not over else self.hand_number - 1,
            "dealer": int(game.dealer[0]),
            "over": over,
            "winner": int(sheet.match_winner),
            "to_move": to_move,
            "todo": todo,
            "hand": {"melds": melds, "loose": loose,
                     "deadwood": int(min_deadwood(np.array([mine], np.uint64))[0])},
            "after_discard": after,
            "opponent": {"count": int(game.hands[0, other]).bit_count(),
                         "known": mask_to_cards(int(game.known[0, other]))},
            "top": int(game.top_discard()[0]) if not over else -1,
            "pile": int(game.pile_size[0]),
            "stock": int(game.stock_size[0]),
            "knock_limit": int(game.knock_limit[0]),
            "legal": np.flatnonzero(game.legal_action_mask()[0]).tolist() if to_move else [],
            "why_not": self._why_not(to_move),
            "why_not_cards": self._why_not_cards(mine) if to_move else {"discard": {},
                                                                          "knock": {}},
            "moves": [[a, words] for a, words in move_options(game, seat, _PLAIN)]
            if to_move else [],
            "sheet": sheet_dict(sheet),
            "showdown": self.showdown,
            "showdown_hand": self.showdown_hand,
            "knock_discard": self.knock_discard,
            "log": self.log[-LOG_LINES:],
        }

    def _why_not(self, to_move: bool) -> dict[str, str]:
        """Why each of the page's buttons (:data:`BUTTONS` and ``"knock"``) is not a
        move now, in the page's words; buttons that are moves are left out."""
        game = self.game
        if not to_move:
            why = (f"the match was stopped: {self.failed}" if self.failed is not None
                   else "the match is over" if self.over else "wait: it is the agent's turn")
            return dict.fromkeys([*BUTTONS, "knock"], why)
        mask = game.legal_action_mask()[0]
        reasons = {name: why_illegal(game, self.seat, action, keys=False)
                   for name, action in BUTTONS.items() if not mask[action]}
        if not mask[A.KNOCK:A.DRAW_STOCK].any():
            if int(game.phase[0]) != A.PHASE_DISCARD:
                reasons["knock"] = why_illegal(game, self.seat, A.KNOCK, keys=False)
            else:
                held = mask_to_cards(int(game.hands[0, self.seat]))
                least = min(int(game.discard_deadwood[0, c]) for c in held)
                limit = int(game.knock_limit[0])
                reasons["knock"] = (
                    f"only gin may end this hand, and the least deadwood you can leave is {least}"
                    if limit == 0 else f"you can't knock: the least deadwood you can leave is "
                    f"{least}, and the knock limit is {limit}")
        return reasons

    def _why_not_cards(self, mine: int) -> dict[str, dict[str, str]]:
        """Why discarding (or knocking with) each held card is not a move now, by card id:
        the page's card titles."""
        mask = self.game.legal_action_mask()[0]
        reasons: dict[str, dict[str, str]] = {"discard": {}, "knock": {}}
        for card in mask_to_cards(mine):
            for kind, action in (("discard", card), ("knock", A.KNOCK + card)):
                if not mask[action]:
                    reasons[kind][str(card)] = why_illegal(self.game, self.seat, action,
                                                           keys=False)
        return reasons

    def record(self) -> dict[str, Any]:
        """The match so far as a match record (docs/records.md), finished or in progress."""
        match = self.recorder.so_far()
        return make_record(0, match, self.rules, self.agents, self.profile,
                           # "hgin_env.serve": the name records have always carried
                           context={"source": "hgin_env.serve", "human_seat": self.seat})
