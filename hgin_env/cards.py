"""Card ids, 52-bit hand masks and the text form of cards (docs/rules.md §1).

``card = suit * 13 + rank`` with rank 0 = ace … 12 = king and suits
clubs, diamonds, hearts, spades = 0..3.  A hand is a ``uint64`` whose bit
``card`` is set when the card is held, so set operations on hands are single
integer instructions and a batch of hands is a plain ``uint64`` array.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

import numpy as np

NUM_CARDS = 52
NUM_RANKS = 13
NUM_SUITS = 4
RANK_CHARS = "A23456789TJQK"
SUIT_CHARS = "CDHS"
SUIT_SYMBOLS = "♣♦♥♠"
FULL_DECK = (1 << NUM_CARDS) - 1

#: Deadwood value of each card id: A = 1, 2..10 face value, J/Q/K = 10.
CARD_VALUES = np.array(
    [min(rank + 1, 10) for _suit in range(NUM_SUITS) for rank in range(NUM_RANKS)],
    dtype=np.int16,
)

_RANK_LOOKUP = {ch: i for i, ch in enumerate(RANK_CHARS)}
_RANK_LOOKUP["10"] = 9
_SUIT_LOOKUP = {ch: i for i, ch in enumerate(SUIT_CHARS)}
_SUIT_LOOKUP.update({ch: i for i, ch in enumerate(SUIT_SYMBOLS)})


def card_id(rank: int, suit: int) -> int:
    """Card id of ``rank`` (0 = ace) in ``suit`` (0 = clubs)."""
    if not (0 <= rank < NUM_RANKS and 0 <= suit < NUM_SUITS):
        raise ValueError(f"no card with rank {rank} and suit {suit}")
    return suit * NUM_RANKS + rank


def rank_of(card: int) -> int:
    return card % NUM_RANKS


def suit_of(card: int) -> int:
    return card // NUM_RANKS


def card_value(card: int) -> int:
    return int(CARD_VALUES[card])


def bit(card: int) -> int:
    """The one-card mask of ``card``."""
    return 1 << card


def popcount(mask: int) -> int:
    return int(mask).bit_count()


#: Variation selectors that pasted emoji suits carry (``"7♥️"`` is 7, ♥, U+FE0F).
_VARIATION_SELECTORS = dict.fromkeys(map(ord, "\ufe0e\ufe0f"))


def _as_text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, got {type(value).__name__} {value!r}")
    return value


def _as_int(value: object, what: str) -> int:
    """``value`` as an int if it is integral (Python or numpy), else ValueError."""
    try:
        index = operator.index(value)  # ints and numpy integers, not floats
    except TypeError:
        kind = type(value).__name__
        raise ValueError(f"{what} must be an integer, got {kind} {value!r}") from None
    if isinstance(value, bool):
        raise ValueError(f"{what} must be an integer, got {value!r}")
    return int(index)


def parse_card(token: str) -> int:
    """Card id from one token such as ``"TD"``, ``"10d"``, ``"7♥"`` or ``"7♥️"``."""
    text = _as_text(token, "a card").translate(_VARIATION_SELECTORS).strip().upper()
    if len(text) < 2:
        raise ValueError(f"malformed card {token!r}: expected rank then suit, e.g. 'TD' or '7♥'")
    rank_text, suit_text = text[:-1], text[-1]
    if rank_text not in _RANK_LOOKUP or suit_text not in _SUIT_LOOKUP:
        raise ValueError(
            f"malformed card {token!r}: rank must be one of {RANK_CHARS} or 10, "
            f"suit one of {SUIT_CHARS} or {SUIT_SYMBOLS}"
        )
    return _SUIT_LOOKUP[suit_text] * NUM_RANKS + _RANK_LOOKUP[rank_text]


def parse_cards(text: str) -> list[int]:
    """Card ids in the order written; duplicates raise ``ValueError``."""
    tokens = _as_text(text, "cards").replace(",", " ").split()
    cards: list[int] = []
    for token in tokens:
        card = parse_card(token)
        if card in cards:
            raise ValueError(f"duplicated card {token!r} in {text!r}")
        cards.append(card)
    return cards


def parse(text: str) -> int:
    """Hand mask from text such as ``"4H 5H 6H 9C"`` (commas allowed)."""
    mask = 0
    for card in parse_cards(text):
        mask |= 1 << card
    return mask


def cards_to_mask(cards: Iterable[int]) -> int:
    mask = 0
    for card in cards:
        card = _as_int(card, "a card id")
        if not 0 <= card < NUM_CARDS:
            raise ValueError(f"card id {card} is out of range 0..51")
        if mask >> card & 1:
            raise ValueError(f"duplicated card id {card}")
        mask |= 1 << card
    return mask


def mask_to_cards(mask: int) -> list[int]:
    """Card ids held in ``mask``, ascending."""
    mask = _as_int(mask, "a card mask")
    if mask < 0 or mask > FULL_DECK:
        raise ValueError(f"mask {mask:#x} has bits outside the 52 cards")
    cards = []
    while mask:
        low = mask & -mask
        cards.append(low.bit_length() - 1)
        mask ^= low
    return cards


def card_str(card: int, symbols: bool = False) -> str:
    """Text of one card: ``"TD"``, or ``"T♦"`` with ``symbols``."""
    card = _as_int(card, "a card id")
    if not 0 <= card < NUM_CARDS:
        raise ValueError(f"card id {card} is out of range 0..51")
    suits = SUIT_SYMBOLS if symbols else SUIT_CHARS
    return RANK_CHARS[card % NUM_RANKS] + suits[card // NUM_RANKS]


def format(mask: int, symbols: bool = False) -> str:
    """Text of a hand, cards sorted by suit then rank."""
    return " ".join(card_str(card, symbols) for card in mask_to_cards(mask))


def hand_value(mask: int) -> int:
    """Sum of the deadwood values of every card in ``mask``."""
    return int(sum(int(CARD_VALUES[c]) for c in mask_to_cards(mask)))


def unpack_masks(masks: np.ndarray) -> np.ndarray:
    """Bits of ``uint64`` masks as a ``(..., 52)`` uint8 array (bit i = card i)."""
    masks = np.ascontiguousarray(masks, dtype=np.uint64)
    as_bytes = masks.reshape(-1).view(np.uint8).reshape(-1, 8)
    if np.little_endian:
        bits = np.unpackbits(as_bytes, axis=1, bitorder="little")
    else:  # pragma: no cover - big-endian hosts
        bits = np.unpackbits(as_bytes[:, ::-1], axis=1, bitorder="little")
    return bits[:, :NUM_CARDS].reshape((*masks.shape, NUM_CARDS))


def pack_masks(bits: np.ndarray) -> np.ndarray:
    """Inverse of :func:`unpack_masks`: ``(..., 52)`` 0/1 array to ``uint64``."""
    bits = np.asarray(bits).astype(np.uint8)
    shape = bits.shape[:-1]
    padded = np.zeros((int(np.prod(shape, dtype=np.int64)), 64), dtype=np.uint8)
    padded[:, :NUM_CARDS] = bits.reshape(-1, NUM_CARDS)
    packed = np.packbits(padded, axis=1, bitorder="little")
    if not np.little_endian:  # pragma: no cover
        packed = packed[:, ::-1]
    return np.ascontiguousarray(packed).view(np.uint64).reshape(shape)


def popcount64(masks: np.ndarray) -> np.ndarray:
    """Number of set bits of each ``uint64`` mask."""
    masks = np.asarray(masks, dtype=np.uint64)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(masks).astype(np.int64)
    return unpack_masks(masks).sum(axis=-1, dtype=np.int64)  # pragma: no cover
