"""Drawing a board: real-looking cards for the full-screen app, plain text for ``--plain``.

The hotkeys follow the keyboard upside down, so each key stays with its
position for the whole race (muscle memory beats relabelling):

- bottom row (18-27): ``1 2 3 4 5 6 7 8 9 0``
- row 2 (9-17): the home row ``a s d f g h j k l``
- row 1 (3-8): ``z x c v b n``
- row 0, the three peak tops (0-2): ``q w e``

``u`` (undo), ``r`` (resign) and space/enter (draw) are left free.
"""

from __future__ import annotations

from typing import Final

from rich.text import Text

from client_cli.board import UNKNOWN, Knowledge
from protocol.rules.cards import Card, card_code, suit_of
from protocol.rules.layout import PEAK_CARDS, ROWS

_KEYS_BY_ROW: Final = ("qwe", "zxcvbn", "asdfghjkl", "1234567890")

#: ``HOTKEYS[p]`` is the key that plays position ``p``.
HOTKEYS: Final[tuple[str, ...]] = tuple(
    key for row, keys in zip(ROWS, _KEYS_BY_ROW, strict=True) for key in keys[: len(row)]
)
#: Key -> position.
POSITION_OF_KEY: Final[dict[str, int]] = {key: p for p, key in enumerate(HOTKEYS)}

SUIT_GLYPHS: Final = "♣♦♥♠"
_RED_SUITS: Final = frozenset({1, 2})
CARD_WIDTH: Final = 5
CARD_HEIGHT: Final = 4
_STRIDE: Final = CARD_WIDTH + 1
_ROW_STEP: Final = 2
BOARD_WIDTH: Final = 10 * _STRIDE
BOARD_HEIGHT: Final = 3 * _ROW_STEP + CARD_HEIGHT

FACE: Final = "black on grey93"
RED_FACE: Final = "bold red3 on grey93"
BLACK_FACE: Final = "bold black on grey93"
BACK: Final = "bright_white on dark_blue"
KEY_LIVE: Final = "bold black on yellow"
KEY_DULL: Final = "grey50 on grey93"
FLASH: Final = "bold white on red"


def _column(position: int) -> float:
    """Horizontal slot of a position, in card strides (bottom row cards are 0..9)."""
    if position >= 18:
        return float(position - 18)
    if position >= 9:
        return position - 9 + 0.5
    if position >= 3:
        m = position - 3
        return 3 * (m // 2) + (m % 2) + 1.0
    return 3 * position + 1.5


def _origin(position: int) -> tuple[int, int]:
    row = next(i for i, r in enumerate(ROWS) if position in r)
    return int(_column(position) * _STRIDE), row * _ROW_STEP


ORIGINS: Final[tuple[tuple[int, int], ...]] = tuple(_origin(p) for p in range(PEAK_CARDS))


def rank_text(card: Card) -> str:
    """``A``, ``2`` .. ``10``, ``J``, ``Q``, ``K``."""
    code = card_code(card)[0]
    return "10" if code == "T" else code


def card_label(card: Card) -> str:
    """Rank and suit glyph, e.g. ``Q♥``."""
    return rank_text(card) + SUIT_GLYPHS[suit_of(card)]


def is_red(card: Card) -> bool:
    """Hearts and diamonds."""
    return suit_of(card) in _RED_SUITS


class Canvas:
    """A grid of styled characters; later drawings lie on top of earlier ones."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.chars = [[" "] * width for _ in range(height)]
        self.styles: list[list[str]] = [[""] * width for _ in range(height)]

    def put(self, x: int, y: int, text: str, style: str) -> None:
        """Write ``text`` at ``(x, y)``, clipped to the canvas."""
        if not 0 <= y < self.height:
            return
        for i, char in enumerate(text):
            if 0 <= x + i < self.width:
                self.chars[y][x + i] = char
                self.styles[y][x + i] = style

    def card(self, x: int, y: int, card: Card | None, key: str = "", key_style: str = "") -> None:
        """A face-up card (``card``), a back (``UNKNOWN``) or nothing (``None``)."""
        if card is None:
            return
        if card == UNKNOWN:
            self.put(x, y, "╭───╮", BACK)
            for dy in (1, 2):
                self.put(x, y + dy, "│░░░│", BACK)
            self.put(x, y + 3, "╰───╯", BACK)
            return
        ink = RED_FACE if is_red(card) else BLACK_FACE
        self.put(x, y, "╭───╮", FACE)
        self.put(x, y + 1, "│", FACE)
        self.put(x + 1, y + 1, card_label(card).ljust(3), ink)
        self.put(x + 4, y + 1, "│", FACE)
        self.put(x, y + 2, "│   │", FACE)
        if key:
            self.put(x + 2, y + 2, key, key_style)
        self.put(x, y + 3, "╰───╯", FACE)

    def text(self) -> Text:
        """The canvas as rich text (runs of one style joined)."""
        out = Text()
        for row_chars, row_styles in zip(self.chars, self.styles, strict=True):
            start = 0
            for i in range(1, self.width + 1):
                if i == self.width or row_styles[i] != row_styles[start]:
                    out.append("".join(row_chars[start:i]), row_styles[start] or None)
                    start = i
            out.append("\n")
        out.rstrip()
        return out


def draw_board(known: Knowledge, *, flash: int | None = None, keys: bool = True) -> Text:
    """The three peaks, the stock and the waste as cards, with hotkeys on free cards.

    ``flash`` marks a position the player just tried to play illegally.
    """
    canvas = Canvas(BOARD_WIDTH, BOARD_HEIGHT + CARD_HEIGHT + 1)
    for p in range(PEAK_CARDS):
        x, y = ORIGINS[p]
        card = known.visible(p)
        if p == flash:
            _draw_flash(canvas, x, y, known, p)
            continue
        key, key_style = "", ""
        if keys and card is not None and card != UNKNOWN:
            key = HOTKEYS[p]
            key_style = KEY_LIVE if known.fits(card) else KEY_DULL
        canvas.card(x, y, card, key, key_style)
    _draw_piles(canvas, known, BOARD_HEIGHT + 1, hint=keys)
    return canvas.text()


def _draw_flash(canvas: Canvas, x: int, y: int, known: Knowledge, position: int) -> None:
    card = known.visible(position)
    label = "  ✗  " if card is None else f" {HOTKEYS[position]}✗  "
    for dy in range(CARD_HEIGHT):
        canvas.put(x, y + dy, " " * CARD_WIDTH, FLASH)
    canvas.put(x, y + 1, label, FLASH)


def _draw_piles(canvas: Canvas, known: Knowledge, y: int, *, hint: bool) -> None:
    stock_x, waste_x = 3 * _STRIDE, 5 * _STRIDE
    if known.stock_left:
        canvas.card(stock_x, y, UNKNOWN)
        canvas.put(stock_x + 1, y + 1, f"{known.stock_left:^3}", "bold " + BACK)
    else:
        canvas.put(stock_x, y + 1, "empty", "grey50")
    canvas.put(stock_x - 2 - len("stock"), y + 1, "stock", "grey70")
    top = known.waste_top
    if top is None:
        canvas.put(waste_x, y + 1, "(none)", "grey50")
    elif top == UNKNOWN:
        canvas.put(waste_x, y + 1, " …", "grey70")
    else:
        canvas.card(waste_x, y, top)
    canvas.put(waste_x + CARD_WIDTH + 2, y + 1, "waste", "grey70")
    if hint:
        canvas.put(stock_x - 2 - len("space: draw"), y + 2, "space: draw", "grey50")


# ---- plain text -------------------------------------------------------------
def plain_code(card: Card | None) -> str:
    """Two characters for one position: a code, ``??`` face down, ``..`` played."""
    if card is None:
        return ".."
    return "??" if card == UNKNOWN else card_code(card)


def plain_board(known: Knowledge) -> str:
    """The board as lines of text, laid out like the picture in docs/rules.md.

    Every free card is then listed with its position number, a ``*`` marking
    the ones that fit the waste, so ``p NUMBER`` can be typed straight away.
    """
    lines = []
    for row in ROWS:
        line = [" "] * (10 * 4 + 2)
        for p in row:
            x = int(_column(p) * 4) + 2
            line[x : x + 2] = plain_code(known.visible(p))
        lines.append("".join(line).rstrip())
    top = known.waste_top
    waste = "none" if top is None else "?" if top == UNKNOWN else card_code(top)
    lines.append(
        f"waste: {waste}   stock: {known.stock_left}   cleared: {known.cleared}/28   "
        f"moves: {known.moves}   undos: {known.undos}"
    )
    free = []
    for p in sorted(known.free_positions()):
        card = known.peaks[p]
        mark = "*" if known.fits(card) else ""
        free.append(f"{p}={plain_code(card)}{mark}")
    lines.append("free: " + (" ".join(free) if free else "none") + "   (* fits the waste)")
    return "\n".join(lines)


def describe(card: Card) -> str:
    """A card in words for messages: ``Q♥ (QH)``."""
    return f"{card_label(card)} ({card_code(card)})"

