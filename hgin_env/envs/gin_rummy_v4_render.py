"""How ``gin_rummy_v4`` draws one RLCard hand: text, and an image with hgin's card faces.

Both show both hands face up, as PettingZoo 1.26's renderer did, each grouped into
one best arrangement (deadwood outlined), with the stock, the top of the pile and
whose turn it is.  The cards are drawn the way :mod:`hgin_env.ui.image` draws them,
with its sizes and colours (its sprite functions are private to it).
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from hgin_env.cards import SUIT_CHARS, SUIT_SYMBOLS
from hgin_env.envs import rlcard_game as G
from hgin_env.ui import image as I
from hgin_env.ui.render import RANK_TEXT, cards_text, deadwood_text, hand_groups

__all__ = ["table_image", "table_text"]

_PHASE_WORDS = {
    G.PHASE_DISCARD: "to discard, knock or go gin",
    G.PHASE_DRAW: "to draw or pick up",
    G.PHASE_SCORE_0: "to score player 0's hand",
    G.PHASE_SCORE_1: "to score player 1's hand",
}
_ENDS = {G.KNOCK: "knocked", G.GIN: "went gin", G.DEAD_HAND: "declared a dead hand"}


def _status(hand: G.RLCardHand) -> list[str]:
    lines = []
    if hand.going_out >= 0:
        lines.append(f"player_{hand.going_out_player} {_ENDS[hand.going_out]}")
    if hand.phase == G.PHASE_OVER:
        lines.append("hand over")
    else:
        lines.append(f"player_{hand.current} {_PHASE_WORDS[hand.phase]}")
    return lines


def table_text(hand: G.RLCardHand) -> str:
    """Both hands (with their deadwood), the stock, the pile's top, whose turn it is."""
    lines = []
    for seat in (0, 1):
        mask = G.to_hgin_mask(hand.hands[seat])
        dealer = " (dealer)" if seat == hand.dealer else ""
        _melds, rest = hand_groups(mask)
        lines.append(f"player_{seat}{dealer}: {cards_text(mask)}   "
                     f"{deadwood_text(sum(1 << c for c in rest))}")
    top = G.to_hgin_mask(1 << hand.pile[-1]) if hand.pile else 0
    lines.append(f"stock {len(hand.stock)}, pile {len(hand.pile)}"
                 + (f", top {cards_text(top)}" if top else ""))
    return "\n".join(lines + _status(hand))


@cache
def _font(size: int, bold: bool = False) -> Any:
    """DejaVu Sans (matplotlib ships it, as :mod:`hgin_env.ui.image` uses), else Pillow's."""
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    spec = importlib.util.find_spec("matplotlib")
    if spec is not None and spec.submodule_search_locations:
        path = (Path(next(iter(spec.submodule_search_locations))) / "mpl-data" / "fonts"
                / "ttf" / name)
        if path.is_file():
            return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size)


def _has_glyphs() -> bool:
    return isinstance(_font(14), ImageFont.FreeTypeFont)


def _card(draw: ImageDraw.ImageDraw, x: int, y: int, card: int | None,
          deadwood: bool = False) -> None:
    """One card (an hgin card id; ``None``: the back), drawn as hgin's images draw it."""
    box = (x, y, x + I.CARD_W - 1, y + I.CARD_H - 1)
    draw.rounded_rectangle(box, radius=5, fill=I.FACE, outline=(60, 60, 60), width=1)
    if card is None:
        draw.rounded_rectangle((x + 4, y + 4, x + I.CARD_W - 5, y + I.CARD_H - 5), radius=3,
                               fill=I.BACK)
        return
    suit = card // 13
    color = I.RED if suit in (1, 2) else I.BLACK
    glyph = (SUIT_SYMBOLS if _has_glyphs() else SUIT_CHARS)[suit]
    draw.text((x + 4, y + 2), RANK_TEXT[card % 13], font=_font(15, bold=True), fill=color)
    draw.text((x + 5, y + 19), glyph, font=_font(14), fill=color)
    draw.text((x + I.CARD_W - 4, y + I.CARD_H - 4), glyph, font=_font(26), fill=color,
              anchor="rs")
    if deadwood:
        draw.rounded_rectangle(box, radius=5, outline=I.DEADWOOD, width=2)


def _words(text: str) -> str:
    return text if _has_glyphs() else text.translate(str.maketrans(SUIT_SYMBOLS, SUIT_CHARS))


def table_image(hand: G.RLCardHand) -> np.ndarray:
    """The hand as an ``image.HEIGHT x image.WIDTH x 3`` uint8 RGB array: both hands face
    up in one best arrangement (the deadwood outlined), the stock and the pile's top."""
    image = Image.new("RGB", (I.WIDTH, I.HEIGHT), I.FELT)
    draw = ImageDraw.Draw(image)
    draw.text((I.MARGIN, 8), "Gin rummy (RLCard rules)", font=_font(16, True), fill=I.WHITE)
    for seat, y in ((1, I.TOP_ROW_Y), (0, I.BOTTOM_ROW_Y)):
        mask = G.to_hgin_mask(hand.hands[seat])
        to_move = seat == hand.current and hand.phase != G.PHASE_OVER
        label = (f"{'▶ ' if to_move else ''}player_{seat}"
                 f"{' (dealer)' if seat == hand.dealer else ''} · {mask.bit_count()} cards")
        draw.text((I.MARGIN, y - 20), _words(label), font=_font(13, to_move),
                  fill=I.GOLD if to_move else I.WHITE)
        melds, rest = hand_groups(mask)
        x = I.MARGIN
        for group, dead in [*((m, False) for m in melds), (rest, True)]:
            for card in group:
                _card(draw, x, y, card, dead)
                x += I.STEP
            x += I.GROUP_GAP
    y = 148
    _card(draw, I.MARGIN, y, None)
    draw.text((I.MARGIN + I.CARD_W + 8, y + 10), f"Stock {len(hand.stock)}",
              font=_font(14, True), fill=I.WHITE)
    x = 196
    if hand.pile:
        _card(draw, x, y, G.to_hgin_mask(1 << hand.pile[-1]).bit_length() - 1)
        words = f"Pile {len(hand.pile)} card{'s' * (len(hand.pile) != 1)}"
    else:
        draw.rounded_rectangle((x, y, x + I.CARD_W - 1, y + I.CARD_H - 1), radius=5,
                               outline=I.DIM)
        words = "Pile empty"
    draw.text((x + I.CARD_W + 8, y + 10), words, font=_font(14, True), fill=I.WHITE)
    for i, line in enumerate(_status(hand)):
        draw.text((I.MARGIN, 334 + 22 * i), line, font=_font(13, i == 0),
                  fill=I.GOLD if i == 0 else I.WHITE)
    return np.asarray(image, dtype=np.uint8).copy()
