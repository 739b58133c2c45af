"""The table as an RGB image, for ``render_mode="rgb_array"``.

:func:`table_image` draws one game (a ``VectorGame`` row or the AEC env's
``SingleGame`` view) as an ``HEIGHT x WIDTH x 3`` uint8 array with Pillow, so
Gymnasium's ``RecordVideo`` and TensorBoard's video summaries can show
matches.  It reads the same public state as the text renderer
(:mod:`hgin_env.ui.render`) and shows what a given seat may see:

* both hands — the viewer's face up, grouped into one best arrangement
  (melds, then the deadwood, outlined in yellow); the other player's cards
  face down except the ones it took from the discard pile and still holds
  (``viewer=None``, or ``reveal=True`` at the end of a match, shows both);
* the stock (count, and how many may still be drawn), the discard pile's top
  card and size, the knock limit;
* whose turn it is (a marker and a status line), the last move and the last
  hand's result;
* the score sheet: per column each player's score (``-`` where the column is
  not open to that player), the column winners highlighted, hands won, and
  totals when the rules pay bonuses.

Card sprites, text and the background are drawn once with Pillow and cached;
a frame is then composed with numpy (copies and small alpha blends), so it
costs about a millisecond (``bench/bench_render.py``).  Glyphs come from the
DejaVu Sans font that matplotlib ships (found without importing matplotlib);
without it Pillow's default font is used and suits are spelled as letters.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from hgin_env.cards import NUM_RANKS, SUIT_CHARS, SUIT_SYMBOLS, mask_to_cards
from hgin_env.hollywood import COLUMN_NAMES
from hgin_env.ui.render import DEFAULT_NAMES, RANK_TEXT, hand_groups, hand_summary, phase_text

if TYPE_CHECKING:
    from hgin_env.state import GameView

__all__ = ["HEIGHT", "WIDTH", "table_image"]

#: Frame size: 16:9 and a multiple of 16 both ways, as video encoders like.
WIDTH, HEIGHT = 768, 432
CARD_W, CARD_H = 48, 68
STEP = 40  # horizontal offset between overlapping cards
GROUP_GAP = 10  # extra space between melds and the deadwood
MARGIN = 16
TOP_ROW_Y, BOTTOM_ROW_Y = 58, 250
PANEL_X = 540

FELT = (24, 94, 56)
PANEL = (14, 62, 36)
WHITE = (245, 245, 240)
DIM = (170, 200, 180)
GOLD = (236, 190, 60)
FACE = (252, 252, 246)
RED = (196, 28, 36)
BLACK = (22, 22, 22)
BACK = (38, 64, 150)
BACK_LINE = (92, 122, 200)
DEADWOOD = (240, 196, 40)


# ----------------------------------------------------------------------------- sprites


def _paste(frame: np.ndarray, patch: np.ndarray, x: int, y: int) -> None:
    """Copy an RGB ``patch`` onto ``frame`` at (x, y), clipped at the edges."""
    h, w = patch.shape[:2]
    x0, y0 = max(x, 0), max(y, 0)
    x1, y1 = min(x + w, frame.shape[1]), min(y + h, frame.shape[0])
    if x0 < x1 and y0 < y1:
        frame[y0:y1, x0:x1] = patch[y0 - y : y1 - y, x0 - x : x1 - x]


def _flatten(image: Image.Image, base: tuple[int, int, int]) -> np.ndarray:
    """An RGBA drawing composed over the solid colour ``base``, read-only RGB.

    Every patch is pre-composed over the colour it will lie on (the felt, the
    score panel, another card's white edge), so a frame is built from plain
    slice copies.
    """
    under = Image.new("RGBA", image.size, (*base, 255))
    under.alpha_composite(image)
    patch = np.array(under.convert("RGB"))
    patch.flags.writeable = False
    return patch


def _font_path(name: str) -> Path | None:
    """``name`` in matplotlib's bundled fonts, located without importing matplotlib."""
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "mpl-data" / "fonts" / "ttf" / name
    return path if path.is_file() else None


@cache
def _font(size: int, bold: bool = False) -> Any:
    path = _font_path("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf")
    if path is not None:
        return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size)


@cache
def _suits() -> str:
    """The suit glyphs the font can draw: ``♣♦♥♠``, or ``CDHS`` without DejaVu."""
    return SUIT_SYMBOLS if _font_path("DejaVuSans.ttf") is not None else SUIT_CHARS


def _plain(text: str) -> str:
    """``text`` with suit symbols spelled as letters when the font lacks them."""
    if _suits() == SUIT_SYMBOLS:
        return text
    return text.translate(str.maketrans(SUIT_SYMBOLS + "▶·", SUIT_CHARS + ">-"))


@lru_cache(maxsize=4096)
def _text_patch(text: str, size: int, bold: bool, anchor: str, color: tuple[int, int, int],
                base: tuple[int, int, int]) -> tuple[np.ndarray, int, int]:
    """``text`` drawn in ``color`` on ``base`` and its offset from the anchor point."""
    font = _font(size, bold)
    left, top, right, bottom = font.getbbox(text, anchor=anchor)
    image = Image.new("RGBA", (max(right - left, 1), max(bottom - top, 1)), (0, 0, 0, 0))
    ImageDraw.Draw(image).text((-left, -top), text, font=font, fill=(*color, 255),
                               anchor=anchor)
    return _flatten(image, base), left, top


def _text(frame: np.ndarray, xy: tuple[int, int], text: str, color: tuple[int, int, int],
          size: int = 13, bold: bool = False, anchor: str = "la",
          base: tuple[int, int, int] = FELT) -> None:
    """Draw ``text`` at ``xy`` (Pillow's ``anchor``) over the solid colour ``base``."""
    patch, dx, dy = _text_patch(_plain(text), size, bold, anchor, color, base)
    _paste(frame, patch, xy[0] + dx, xy[1] + dy)


def _card_shape(fill: tuple[int, int, int]) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGBA", (CARD_W, CARD_H), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.rounded_rectangle((0, 0, CARD_W - 1, CARD_H - 1), radius=5, fill=fill,
                           outline=(60, 60, 60), width=1)
    return image, draw


@cache
def _face(card: int, deadwood: bool = False, base: tuple[int, int, int] = FELT) -> np.ndarray:
    """One card face: rank and suit in the corner (what stays visible when the
    cards overlap) and a large suit in the middle; outlined when ``deadwood``."""
    image, draw = _card_shape(FACE)
    suit = card // NUM_RANKS
    color = RED if suit in (1, 2) else BLACK
    glyph = _suits()[suit]
    draw.text((4, 2), RANK_TEXT[card % NUM_RANKS], font=_font(15, bold=True), fill=color)
    draw.text((5, 19), glyph, font=_font(14), fill=color)
    draw.text((CARD_W - 4, CARD_H - 4), glyph, font=_font(26), fill=color, anchor="rs")
    if deadwood:
        draw.rounded_rectangle((0, 0, CARD_W - 1, CARD_H - 1), radius=5, outline=DEADWOOD,
                               width=2)
    return _flatten(image, base)


@cache
def _back(base: tuple[int, int, int] = FELT) -> np.ndarray:
    image, _ = _card_shape(FACE)
    inner = Image.new("RGBA", (CARD_W - 8, CARD_H - 8), BACK)
    lattice = ImageDraw.Draw(inner)
    for x in range(-CARD_H, CARD_W, 7):  # a diagonal lattice
        lattice.line((x, 0, x + CARD_H, CARD_H), fill=BACK_LINE)
        lattice.line((x + CARD_H, 0, x, CARD_H), fill=BACK_LINE)
    image.paste(inner, (4, 4))
    return _flatten(image, base)


@cache
def _empty_pile() -> np.ndarray:
    image = Image.new("RGBA", (CARD_W, CARD_H), (0, 0, 0, 0))
    ImageDraw.Draw(image).rounded_rectangle((0, 0, CARD_W - 1, CARD_H - 1), radius=5,
                                            outline=DIM)
    return _flatten(image, FELT)


@cache
def _winner_box() -> np.ndarray:
    image = Image.new("RGBA", (34, 19), (0, 0, 0, 0))
    ImageDraw.Draw(image).rounded_rectangle((0, 0, 33, 18), radius=4, fill=GOLD)
    return _flatten(image, PANEL)


@cache
def _background() -> np.ndarray:
    image = Image.new("RGB", (WIDTH, HEIGHT), FELT)
    ImageDraw.Draw(image).rounded_rectangle((PANEL_X - 8, 34, WIDTH - 8, 236), radius=8,
                                            fill=PANEL)
    frame = np.array(image)
    frame.flags.writeable = False
    return frame


# ----------------------------------------------------------------------------- layout


@lru_cache(maxsize=1024)
def _arranged(hand: int) -> tuple[list[list[int]], list[int]]:
    return hand_groups(hand)  # the meld search, once per hand seen


def _visible_groups(hand: int, known: int, face_up: bool) -> tuple[list[list[int | None]], int]:
    """The groups to draw for one hand (``None`` = face down) and the deadwood
    mask to outline."""
    if face_up:
        melds, deadwood = _arranged(hand)
        return [*melds, list(deadwood)], sum(1 << c for c in deadwood)
    shown: list[int | None] = list(mask_to_cards(hand & known))
    hidden: list[int | None] = [None] * (int(hand).bit_count() - len(shown))
    return [shown, hidden], 0


def _draw_hand(frame: np.ndarray, hand: int, known: int, face_up: bool, y: int) -> None:
    groups, dead_mask = _visible_groups(hand, known, face_up)
    x = MARGIN
    for group in groups:
        base = FELT  # the first card of a group lies on the felt, the others on a card's edge
        for card in group:
            if card is None:
                patch = _back(base)
            else:
                patch = _face(card, bool(dead_mask >> card & 1), base)
            _paste(frame, patch, x, y)
            x += STEP
            base = FACE
        if group:
            x += GROUP_GAP


def _draw_label(frame: np.ndarray, y: int, name: str, dealer: bool, to_move: bool,
                count: int) -> None:
    text = f"{name}{' (dealer)' if dealer else ''} · {count} cards"
    if to_move:
        _text(frame, (MARGIN, y), "▶ " + text, GOLD, 13, bold=True)
    else:
        _text(frame, (MARGIN, y), text, WHITE, 13)


def _draw_middle(frame: np.ndarray, game: GameView, row: int) -> None:
    y = 148
    stock = int(game.stock_size[row])
    _paste(frame, _back(), MARGIN, y)
    _text(frame, (MARGIN + CARD_W + 8, y + 10), f"Stock {stock}", WHITE, 14, bold=True)
    _text(frame, (MARGIN + CARD_W + 8, y + 32), f"{max(stock - 2, 0)} may be drawn", DIM, 12)
    x = 196
    top = int(game.top_discard()[row])
    pile = int(game.pile_size[row])
    if top >= 0:
        _paste(frame, _face(top), x, y)
        words = f"Pile {pile} card{'s' * (pile != 1)}"
    else:
        _paste(frame, _empty_pile(), x, y)
        words = "Pile empty"
    _text(frame, (x + CARD_W + 8, y + 10), words, WHITE, 14, bold=True)
    limit = int(game.knock_limit[row])
    _text(frame, (x + CARD_W + 8, y + 32),
          "gin only" if limit == 0 else f"knock at {limit} or less", DIM, 12)


def _draw_sheet(frame: np.ndarray, game: GameView, row: int, names: Sequence[str],
                order: tuple[int, int]) -> None:
    sheet = game.sheet(row)
    rules = game.rules
    c = sheet.columns
    x0 = PANEL_X

    def text(xy: tuple[int, int], words: str, color: tuple[int, int, int], size: int,
             bold: bool = False, anchor: str = "la", base: tuple[int, int, int] = PANEL) -> None:
        _text(frame, xy, words, color, size, bold, anchor, base)

    text((x0, 40), f"Score sheet · target {sheet.target}", WHITE, 13, bold=True)
    centers = [x0 + 80 + 36 * j for j in range(c)]
    hands_x = x0 + 80 + 36 * 2 + 42  # the same place for one column or three
    for j in range(c):
        text((centers[j], 64), COLUMN_NAMES[j], DIM, 12, bold=True, anchor="ma")
    text((hands_x, 64), "hands", DIM, 12, bold=True, anchor="ma")
    for i, seat in enumerate(order):
        y = 86 + 24 * i
        text((x0, y), names[seat][:10], WHITE, 12, bold=True)
        for j in range(c):
            score = int(sheet.scores[seat, j])
            won = bool(sheet.decided[j]) and int(sheet.column_winner[j]) == seat
            shown = str(score) if score or int(sheet.wins[seat]) > j else "-"
            if won:
                _paste(frame, _winner_box(), centers[j] - 17, y - 3)
                text((centers[j], y), shown, BLACK, 12, bold=True, anchor="ma", base=GOLD)
            else:
                text((centers[j], y), shown, WHITE, 12, anchor="ma")
        text((hands_x, y), str(int(sheet.wins[seat])), WHITE, 12, anchor="ma")
    for j in range(c):
        text((centers[j], 134), "won" if sheet.decided[j] else "open", DIM, 11, anchor="ma")
    if rules.game_bonus or rules.shutout_bonus or rules.box_bonus:
        for i, seat in enumerate(order):
            text((x0, 178 + 20 * i), f"{names[seat][:10]}: bonus "
                 f"{int(sheet.bonuses[seat].sum())}, total {int(sheet.totals[seat])}", DIM, 11)


# ----------------------------------------------------------------------------- frame


def table_image(
    game: GameView,
    row: int = 0,
    viewer: int | None = None,
    names: Sequence[str] = DEFAULT_NAMES,
    *,
    title: str = "Hollywood gin",
    notes: Sequence[str] = (),
    reveal: bool = False,
) -> np.ndarray:
    """Game ``row`` drawn as a (``HEIGHT``, ``WIDTH``, 3) uint8 RGB array.

    ``viewer`` is the seat whose view is drawn, at the bottom: the other hand
    is face down but for the cards that player took from the discard pile.
    ``viewer=None`` (the spectator) or ``reveal=True`` (e.g. once the match
    is over) shows both hands; the spectator sees seat 0 at the bottom.
    ``notes`` are extra status lines (the last move, a forfeit, ...).
    """
    if viewer not in (None, 0, 1):
        raise ValueError(f"viewer must be 0, 1 or None, got {viewer!r}")
    frame = _background().copy()
    bottom = 0 if viewer is None else viewer
    top = 1 - bottom
    mover = int(game.current_player[row])
    dealer = int(game.dealer[row])
    _text(frame, (MARGIN, 8), title, WHITE, 16, bold=True)
    for seat, y in ((top, TOP_ROW_Y), (bottom, BOTTOM_ROW_Y)):
        hand = int(game.hands[row, seat])
        face_up = reveal or viewer is None or seat == viewer
        _draw_label(frame, y - 20, names[seat], seat == dealer, seat == mover and not reveal,
                    hand.bit_count())
        _draw_hand(frame, hand, int(game.known[row, seat]), face_up, y)
    _draw_middle(frame, game, row)
    _draw_sheet(frame, game, row, names, (bottom, top))
    lines = [] if reveal else [f"{names[mover]} {phase_text(int(game.phase[row]))}"]
    lines += [note for note in notes if note]
    summary = hand_summary(game, row, names)
    if summary:
        lines.append(summary)
    for i, line in enumerate(lines[:4]):
        first = i == 0 and not reveal
        _text(frame, (MARGIN, 334 + 22 * i), line, GOLD if first else WHITE, 13, bold=first)
    return frame
