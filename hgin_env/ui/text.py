"""A text interface: one seat's position in words, and free-text moves back to action ids.

For programs that play through text (a script, a language model, a person
at a pipe): :func:`describe` writes what one seat may know, read from its
observation alone (so nothing hidden leaks): the hand grouped into melds and
deadwood, the discard pile, the cards the opponent is known to hold, the
stock, the knock limit, the sheet, and the legal moves, each with a short code
(``7H``, ``knock 7H``, ``draw``, ``take``, ``pass``, ``big gin``).
:func:`parse_move` turns a reply (a code, or words such as ``discard the 7 of
hearts``) into an action id, or raises ``ValueError`` saying what was wrong
and listing the legal moves.

The move words and the parser are the terminal game's
(:func:`hgin_env.ui.moves.move_options`, :func:`~hgin_env.ui.moves.parse_command`,
:func:`~hgin_env.ui.moves.why_illegal`), so both interfaces accept and explain
moves the same way; this module only adds the codes and rewrites free-text
phrasings into the commands that parser reads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS, SUIT_CHARS, SUIT_SYMBOLS, parse_card
from hgin_env.hollywood import COLUMN_NAMES
from hgin_env.observation import MAX_COLUMNS, OBS_DIM, SCALE, observation_spec
from hgin_env.rules import Rules, load_rules
from hgin_env.ui.moves import move_options, parse_command
from hgin_env.ui.render import (
    Style,
    arrangement_text,
    card_text,
    cards_text,
    hand_groups,
    move_text,
)

__all__ = ["Move", "describe", "legal_moves", "move_code", "parse_move"]

_SPEC = observation_spec()
_PLAIN = Style(False)
_ASCII = str.maketrans(dict(zip(SUIT_SYMBOLS, SUIT_CHARS, strict=True)))


@dataclass(frozen=True)
class Move:
    """One legal move: the ``code`` a reply may give, its ``action`` id and its ``words``."""

    code: str
    action: int
    words: str


@functools.cache
def _default_rules() -> Rules:
    return load_rules(None)


def _rules(rules: Rules | str | None) -> Rules:
    """``rules`` loaded; the default profile is read once (parsing is the slow part)."""
    return _default_rules() if rules is None else load_rules(rules)


def move_code(action: int) -> str:
    """The short code of ``action``: ``7H`` (discard), ``knock 7H``, ``draw``, ``take``,
    ``pass`` or ``big gin``; ASCII, so any program can type it back."""
    action = int(action)
    if 0 <= action < A.KNOCK:
        return card_text(action).translate(_ASCII)
    if A.KNOCK <= action < A.DRAW_STOCK:
        return "knock " + card_text(action - A.KNOCK).translate(_ASCII)
    codes = {A.DRAW_STOCK: "draw", A.TAKE_DISCARD: "take", A.PASS: "pass", A.BIG_GIN: "big gin"}
    if action not in codes:
        raise ValueError(f"action {action} is outside 0..{A.NUM_ACTIONS - 1}")
    return codes[action]


# ----------------------------------------------------------------------------- one seat's view


def _mask_bits(vec: np.ndarray, name: str) -> int:
    """The card slice ``name`` as a Python int mask (bit ``c`` for card ``c``)."""
    packed = np.packbits(vec[_SPEC[name]] > 0.5, bitorder="little")
    return int.from_bytes(packed.tobytes(), "little")


def _scale(name: str) -> float:
    scale = SCALE[name]
    if scale is None:  # pragma: no cover - only the score slices, read as fractions
        raise ValueError(f"slice {name!r} is scaled by the rules' target")
    return scale


def _scalar(vec: np.ndarray, name: str) -> int:
    return int(np.rint(vec[_SPEC[name].start] * _scale(name)))


@dataclass(frozen=True)
class _Seat:
    """One observation row decoded into ints: everything a description may use."""

    mask: np.ndarray  # int8 (108,)
    hand: int
    top: int  # -1: empty pile
    pile_below: int
    opp_known: int
    unseen: int
    forbidden: int  # -1: none
    after: np.ndarray  # (52,) deadwood after each discard (discard phase, held cards)
    phase: int
    to_move: bool
    is_dealer: bool
    stock: int
    knock_limit: int
    columns: np.ndarray  # (C, 7): own, opp, decided, won, lost, open to me, open to opp

    @classmethod
    def read(cls, vec: np.ndarray, mask: np.ndarray) -> _Seat:
        vec = np.asarray(vec, np.float64).reshape(-1)
        if vec.shape != (OBS_DIM,):
            raise ValueError(f"expected an observation row of {OBS_DIM} values, got {vec.shape}")
        top_bits = np.flatnonzero(vec[_SPEC["top_discard"]] > 0.5)
        forbidden = np.flatnonzero(vec[_SPEC["forbidden_discard"]] > 0.5)
        after = np.rint(vec[_SPEC["deadwood_after_discard"]]
                        * _scale("deadwood_after_discard")).astype(np.int64)
        phase = vec[_SPEC["phase"]]
        names = ("own_score", "opponent_score", "column_decided", "column_won", "column_lost",
                 "open_to_me", "open_to_opponent")
        cols = np.stack([vec[_SPEC[n].start:_SPEC[n].start + MAX_COLUMNS] for n in names], 1)
        exists = vec[_SPEC["column_exists"].start:_SPEC["column_exists"].start + MAX_COLUMNS]
        return cls(
            mask=mask, hand=_mask_bits(vec, "hand"),
            top=int(top_bits[0]) if top_bits.size else -1,
            pile_below=_mask_bits(vec, "pile_below_top"),
            opp_known=_mask_bits(vec, "opponent_known"), unseen=_mask_bits(vec, "unseen"),
            forbidden=int(forbidden[0]) if forbidden.size else -1, after=after,
            phase=int(np.argmax(phase)) if phase.max() > 0.5 else A.PHASE_MATCH_OVER,
            to_move=bool(vec[_SPEC["to_move"].start] > 0.5),
            is_dealer=bool(vec[_SPEC["is_dealer"].start] > 0.5),
            stock=_scalar(vec, "stock_size"), knock_limit=_scalar(vec, "knock_limit"),
            columns=cols[exists > 0.5],
        )


class _GameView:
    """The few engine attributes :mod:`hgin_env.apps.play`'s move helpers read, filled from one
    seat's observation (seat 0 here), so they list and explain moves without hidden state."""

    def __init__(self, seat: _Seat, rules: Rules) -> None:
        self.rules = rules
        self.phase = np.array([seat.phase])
        self.hands = np.array([[seat.hand, 0]], np.uint64)
        self.discard_deadwood = seat.after[None]
        # The observation shows the taken card only where the rules forbid discarding it.
        self.taken_card = np.array([seat.forbidden])
        self.knock_limit = np.array([seat.knock_limit])
        self.mask = seat.mask[None]
        self.top = np.array([seat.top])

    def legal_action_mask(self) -> np.ndarray:
        return self.mask

    def top_discard(self) -> np.ndarray:
        return self.top


def _rows(obs: Mapping[str, Any], row: int) -> tuple[np.ndarray, np.ndarray]:
    """Row ``row`` of an observation dict (batched, as ``VectorGame.observe()`` gives, or
    one game's 1-D arrays) as ``(observation, action_mask)``."""
    vec = np.asarray(obs["observation"])
    mask = np.asarray(obs["action_mask"])
    if vec.ndim == 2:
        vec, mask = vec[row], mask[row]
    if vec.shape != (OBS_DIM,) or mask.shape != (A.NUM_ACTIONS,):
        raise ValueError(f"expected an observation row and a ({A.NUM_ACTIONS},) action mask, "
                         f"got shapes {vec.shape} and {mask.shape}")
    return vec, mask


def _options(seat: _Seat, rules: Rules) -> list[tuple[int, str]]:
    return move_options(_GameView(seat, rules), 0, _PLAIN) if seat.to_move else []


def legal_moves(obs: Mapping[str, Any], row: int = 0, rules: Rules | str | None = None
                ) -> list[Move]:
    """The legal moves of row ``row`` in the order the terminal game lists them (knocks
    by deadwood, discards by the deadwood they leave, then draw, take, pass)."""
    seat = _Seat.read(*_rows(obs, row))
    return [Move(move_code(a), a, words) for a, words in _options(seat, _rules(rules))]


def _sheet_lines(seat: _Seat, rules: Rules) -> list[str]:
    lines = [f"Sheet (target {rules.target} per column; a player's k-th hand win opens "
             "column k to them):"]
    for j, (own, opp, decided, won, lost, mine, theirs) in enumerate(seat.columns):
        score = f"you {round(own * rules.target)}, opponent {round(opp * rules.target)}"
        if decided > 0.5:
            state = "won by you" if won > 0.5 else "won by the opponent" if lost > 0.5 else "over"
        else:
            state = {(1, 1): "open to both", (1, 0): "open to you only",
                     (0, 1): "open to the opponent only", (0, 0): "not yet open"}[
                         (int(mine > 0.5), int(theirs > 0.5))]
        lines.append(f"  column {COLUMN_NAMES[j]}: {score}; {state}")
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def describe(obs: Mapping[str, Any], row: int = 0, rules: Rules | str | None = None) -> str:
    """Row ``row`` of ``obs`` (what ``VectorGame.observe()`` returns) in plain text.

    ``rules`` (default ``friendly``) gives the sheet's points (the observation holds
    scores as fractions of the target) and whether big gin exists; everything else
    comes from the observation, so the text shows only what that seat may know.
    """
    rules = _rules(rules)
    seat = _Seat.read(*_rows(obs, row))
    pile = seat.pile_below | (1 << seat.top if seat.top >= 0 else 0)
    opp_count = NUM_CARDS - seat.hand.bit_count() - pile.bit_count() - seat.stock
    if seat.top >= 0:
        below = cards_text(seat.pile_below) if seat.pile_below else "nothing"
        pile_txt = f"{card_text(seat.top)} on top; below it (in no order): {below}"
    else:
        pile_txt = "empty"
    known = cards_text(seat.opp_known) if seat.opp_known else "none"
    limit = "gin only" if seat.knock_limit == 0 else f"deadwood {seat.knock_limit} or less"
    lines = [
        "You are the dealer." if seat.is_dealer else "The opponent is the dealer.",
        f"Your hand ({_count(seat.hand.bit_count(), 'card')}): "
        f"{'' if hand_groups(seat.hand)[0] else 'no melds; '}{arrangement_text(seat.hand)}",
        f"Discard pile ({_count(pile.bit_count(), 'card')}): {pile_txt}",
        f"Opponent: {_count(opp_count, 'card')}; known to hold (taken from the pile): {known}",
        f"Stock: {_count(seat.stock, 'card')} ({max(seat.stock - 2, 0)} may be drawn). "
        f"Knock: {limit}.",
        f"Unseen by you ({seat.unseen.bit_count()}): {cards_text(seat.unseen) or 'none'}",
        *_sheet_lines(seat, rules),
    ]
    if not seat.to_move or seat.phase >= A.NUM_PHASES:
        lines.append("It is not your turn.")
        return "\n".join(lines)
    lines.append(f"Your turn: {A.PHASE_NAMES[seat.phase]}.")
    if seat.forbidden >= 0:
        lines.append(f"You took {card_text(seat.forbidden)} from the pile this turn and may "
                     "not discard it now.")
    moves = [Move(move_code(a), a, words) for a, words in _options(seat, rules)]
    width = max(len(m.code) for m in moves)
    lines.append("Legal moves (answer with one code, or the move in words):")
    lines += [f"  {m.code.ljust(width)}  {m.words}" for m in moves]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- free text

_RANK_WORDS = {"ace": "A", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
               "seven": "7", "eight": "8", "nine": "9", "ten": "10", "jack": "J",
               "queen": "Q", "king": "K", **{str(n): str(n) for n in range(2, 11)},
               "a": "A", "j": "J", "q": "Q", "k": "K", "t": "10"}
_SUIT_WORDS = {"club": "C", "diamond": "D", "heart": "H", "spade": "S"}
_CARD_PHRASE = re.compile(
    r"\b(" + "|".join(sorted(_RANK_WORDS, key=len, reverse=True)) + r")\s+of\s+"
    r"(club|diamond|heart|spade)s?\b", re.IGNORECASE)
#: "discard" as a noun (the pile), not the verb.
_PILE_NOUN = re.compile(r"\b(top discard|discard pile|the discard)\b", re.IGNORECASE)
_FILLER = {"the", "a", "an", "i", "i'll", "ill", "will", "would", "like", "to", "please",
           "my", "card", "move", "answer", "play", "let's", "lets", "me", "with", "it", "and",
           "face", "down", "now", "on", "from", "choose", "up", "want", "go", "of"}
_VERBS = {"knock": "knock", "knocks": "knock", "knocking": "knock", "gin": "knock",
          "discard": "discard", "discards": "discard", "discarding": "discard",
          "drop": "discard", "throw": "discard", "dump": "discard",
          "draw": "draw", "draws": "draw", "drawing": "draw",
          "take": "take", "takes": "take", "taking": "take", "pick": "take", "pickup": "take",
          "pass": "pass", "passes": "pass", "decline": "pass", "refuse": "pass"}
_NOUNS = {"stock": "draw", "deck": "draw", "pile": "take", "upcard": "take"}


def _card_of(word: str) -> int | None:
    try:
        return parse_card(word)
    except ValueError:
        return None


def _cleaned(text: str) -> str:
    """``text`` without quotes, a trailing full stop, parentheses, and with ``7 of hearts``
    written ``7H``."""
    s = " ".join(text.split()).strip().strip("`\"'").strip().rstrip(".!")
    s = re.sub(r"\([^)]*\)", " ", s)
    s = _CARD_PHRASE.sub(lambda m: _RANK_WORDS[m.group(1).lower()]
                         + _SUIT_WORDS[m.group(2).lower()], s)
    return " ".join(s.split())


def _from_words(text: str) -> tuple[str, int | None]:
    """A free-text sentence rewritten as one of the parser's commands, and the card it
    names (for ``take the 9S``, checked against the pile).  ``ValueError`` when it names
    several moves or several cards."""
    words = [w.strip(".,;:!?") for w in _PILE_NOUN.sub(" pile ", text).split()]
    words = [w for w in words if w and w.lower() not in _FILLER]
    low = [w.lower() for w in words]
    if any(low[i] == "big" and i + 1 < len(low) and low[i + 1] == "gin"
           for i in range(len(low))) or "biggin" in low or "big-gin" in low:
        return "big gin", None
    cards = [c for c in (_card_of(w) for w in words) if c is not None]
    verbs = {_VERBS[w] for w in low if w in _VERBS}
    if "knock" in verbs:
        verbs.discard("discard")  # "knock, discarding 7H" is one move
    if not verbs:
        verbs = {_NOUNS[w] for w in low if w in _NOUNS}
    if not verbs and len(cards) == 1:
        verbs = {"discard"}
    if len(verbs) > 1:
        raise ValueError(f"it names several moves ({', '.join(sorted(verbs))}); give one")
    verb = next(iter(verbs), None)
    if verb in ("knock", "discard"):
        if len(cards) > 1:
            raise ValueError(f"it names several cards ({', '.join(card_text(c) for c in cards)});"
                             f" say which one to {verb} with")
        if not cards:
            return verb, None
        return f"{verb} {move_code(cards[0])}", None
    if verb is None:
        return text, None
    return verb, cards[0] if verb == "take" and len(cards) == 1 else None


#: Every action as an option: what the parser understands, legal or not.
_EVERY = [(a, "") for a in range(A.NUM_ACTIONS)]


def _legal_list(options: list[tuple[int, str]]) -> str:
    return "; ".join(f"{move_code(a)} = {words}" for a, words in options) or "none"


def parse_move(text: str, mask: Any, observation: Any = None,
               rules: Rules | str | None = None) -> int:
    """The action id a reply ``text`` names, legal under ``mask`` (the seat's (108,)
    action mask); ``ValueError`` says what was wrong and lists the legal moves.

    ``text`` is a listed code (``7H``, ``knock 7H``, ``draw``, ``take``, ``pass``,
    ``big gin``), anything the terminal game accepts (``10d``, ``k 7H``, ``t``), or a
    sentence (``discard the 7 of hearts``, ``I'll take the upcard``).  Given the seat's
    ``observation`` row as well, the reason for an illegal move is specific (a card not
    held, the deadwood a knock would leave); from the mask alone it says only that the
    move is not legal now.  ``rules`` (default ``friendly``): whether big gin exists.
    """
    rules = _rules(rules)
    mask = np.asarray(mask).reshape(-1)
    if mask.shape != (A.NUM_ACTIONS,):
        raise ValueError(f"expected a ({A.NUM_ACTIONS},) action mask, got {mask.shape}")
    legal = np.flatnonzero(mask).tolist()
    if observation is not None:
        seat = _Seat.read(observation, mask)
        game = _GameView(seat, rules)
        options = move_options(game, 0, _PLAIN) if legal else []
    else:
        # Only the legal moves are known; the cards that may be discarded stand in for the
        # hand (read only to resolve a bare "knock").
        hand = sum(1 << (a % A.KNOCK) for a in legal if a < A.DRAW_STOCK)
        seat = _Seat(mask=mask, hand=hand, top=-1, pile_below=0, opp_known=0, unseen=0,
                     forbidden=-1, after=np.zeros(NUM_CARDS, np.int64), phase=_phase_of(legal),
                     to_move=True, is_dealer=False, stock=0, knock_limit=0,
                     columns=np.zeros((0, 7)))
        game = _GameView(seat, rules)
        options = [(a, move_text(a)) for a in legal]

    def fail(why: str) -> ValueError:
        why = why.split(" Type 'help'")[0].rstrip(".")  # the terminal's help is not here
        return ValueError(f"cannot play {text!r}: {why}. Legal moves: {_legal_list(options)}")

    def attempt(command: str, named: int | None) -> tuple[int | None, str]:
        """The legal action ``command`` names, or ``(None, message)`` when the parser does
        not understand it; raises when it names a move that is not legal."""
        kind, action, message = parse_command(command, options, game, 0)
        if kind == "move" and action is not None:
            if named is not None and observation is not None and named != seat.top:
                raise fail(f"the card to take is {card_text(seat.top)}, not {card_text(named)}")
            return int(action), ""
        probe_kind, meant, _ = parse_command(command, _EVERY, game, 0)
        if probe_kind == "move" and meant is not None:  # understood, but not legal now
            raise fail(message if observation is not None else f"{move_text(meant)} is not "
                       "legal now")
        if observation is None and command.lower() in ("knock", "k", "gin"):
            message = "no knock is legal now"  # the parser's reason would need the hand
        return None, message or f"{command!r} is not a move"

    if not isinstance(text, str):
        raise ValueError(f"a move must be text, got {type(text).__name__}")
    cleaned = _cleaned(text)
    if not cleaned:
        raise fail("the answer is empty")
    if cleaned.isdigit():
        raise fail("answer with a move's code (such as its card), not a number")
    action, message = attempt(cleaned, None)
    if action is not None:
        return action
    try:
        worded, named = _from_words(cleaned)
    except ValueError as err:
        raise fail(str(err)) from None
    if worded != cleaned:
        action, _ = attempt(worded, named)
        if action is not None:
            return action
    raise fail(message)


def _phase_of(legal: list[int]) -> int:
    """The phase a legal mask implies (for reasons given from the mask alone)."""
    if A.PASS in legal:
        return A.PHASE_OFFER_NONDEALER
    if A.DRAW_STOCK in legal:
        return A.PHASE_DRAW if A.TAKE_DISCARD in legal else A.PHASE_DRAW_STOCK
    return A.PHASE_DISCARD
