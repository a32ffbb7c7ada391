"""The TriPeaks rules engine (docs/rules.md), in the spirit of python-chess.

A :class:`Game` holds one player's game on a fully known :class:`Deal`.
``legal_moves()``, ``play(position)``, ``draw()``, ``undo()`` and
``outcome()`` are the whole API; an illegal action raises
:class:`IllegalMoveError` carrying a stable :class:`Reason` code.  Those
refusal types live in :mod:`protocol.rules.refusals`; this module re-exports them,
so importers may keep taking them from here.

``view()`` returns a :class:`PlayerView`: exactly what the player may know.
It is built from the visible state only, so a card still face down or still
in the stock can never be reached from it.

>>> from protocol.deals.shuffle import candidate_deal
>>> game = Game(candidate_deal("2", 0, Rules()))
>>> game.view().board[18:]
('8S', '2S', '5C', '8C', '6S', '6D', '2C', '4D', 'JD', 'AS')
>>> game.view().waste_top, game.stock_left, game.legal_moves()
('JC', 23, ['draw'])
>>> game.play(18)
Traceback (most recent call last):
    ...
protocol.rules.refusals.IllegalMoveError: 8S is not one rank above or below the waste card JC
>>> card_code(game.draw()), game.view().waste_top
('4H', '4H')
>>> game.legal_moves()
[20, 'draw']
>>> game.play(20)
()
>>> game.undo(), game.view().waste_top
(20, '4H')
>>> game.moves, game.draws, game.undos, game.outcome() is None
(2, 1, 1, True)
"""

from __future__ import annotations

import enum
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from mypy_extensions import mypyc_attr

from protocol.rules.cards import (
    ALL_CODES,
    DECK_SIZE,
    Card,
    CardError,
    card_code,
    is_adjacent,
    parse_card,
    rank_of,
)
from protocol.rules.layout import COVERED_BY, COVERS, PEAK_CARDS
from protocol.rules.refusals import IllegalMoveError, InvalidMoveError, Reason, error_for

DRAW: Final = "draw"
Move = int | Literal["draw"]

#: How a face-down position appears in a :class:`PlayerView`.
HIDDEN: Final = "??"


@dataclass(frozen=True, slots=True)
class Rules:
    """Rule options that change play: rank wrap and the empty-waste start."""

    wrap: bool = True
    empty_waste: bool = False

    @property
    def stock_size(self) -> int:
        """Cards in the stock at the start: 23, or 24 with an empty waste."""
        return DECK_SIZE - PEAK_CARDS - (0 if self.empty_waste else 1)

    def __reduce__(self) -> tuple[type[Rules], tuple[bool, bool]]:
        # Rules go to the deal workers pickled; compiled (tools/native.py), a frozen
        # dataclass has no pickle support of its own.
        return Rules, (self.wrap, self.empty_waste)


def _is_card(value: object) -> bool:
    # bool is an int subclass; True must not pass for the two of clubs.
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < DECK_SIZE


# A Python class even in the native build (tools/native.py): a compiled dataclass
# checks its fields' types before __post_init__, which takes any sequence of cards.
@mypyc_attr(native_class=False)
@dataclass(frozen=True, slots=True)
class Deal:
    """A full deal: 28 peak cards by position, the starting waste card, the stock.

    ``stock[0]`` is drawn first.  ``waste`` is ``None`` exactly when the rules
    use the empty-waste start.  Construction validates the deal and raises
    :class:`~protocol.rules.cards.CardError` on a wrong count, a duplicate or a
    value that is not a card.
    """

    rules: Rules
    peaks: tuple[Card, ...]
    waste: Card | None
    stock: tuple[Card, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.rules, Rules):
            raise TypeError(f"a deal needs Rules, got {type(self.rules).__name__}")
        # Accept any sequence but store tuples, so a deal stays hashable and immutable.
        # Read through getattr: compiled (tools/native.py), reading the field would
        # insist on the declared tuple before it is one.
        peaks: Iterable[Card] = getattr(self, "peaks")  # noqa: B009
        stock: Iterable[Card] = getattr(self, "stock")  # noqa: B009
        object.__setattr__(self, "peaks", tuple(peaks))
        object.__setattr__(self, "stock", tuple(stock))
        if len(self.peaks) != PEAK_CARDS:
            raise CardError(f"a deal needs {PEAK_CARDS} peak cards, got {len(self.peaks)}")
        if (self.waste is None) != self.rules.empty_waste:
            wanted = "no waste card" if self.rules.empty_waste else "one waste card"
            raise CardError(f"these rules need {wanted}")
        if len(self.stock) != self.rules.stock_size:
            raise CardError(
                f"a deal with these rules needs {self.rules.stock_size} stock cards, "
                f"got {len(self.stock)}"
            )
        cards = [*self.peaks, *self.stock, *([] if self.waste is None else [self.waste])]
        if not all(_is_card(c) for c in cards):
            raise CardError("a deal holds only cards 0..51")
        if len(set(cards)) != DECK_SIZE:
            counts = Counter(cards)
            dupes = sorted(card_code(c) for c, n in counts.items() if n > 1)
            raise CardError(f"duplicate cards in deal: {', '.join(dupes)}")

    @classmethod
    def from_codes(
        cls, rules: Rules, peaks: Sequence[str], waste: str | None, stock: Sequence[str]
    ) -> Deal:
        """Build a deal from card codes, raising :class:`CardError` on bad input.

        >>> from protocol.rules.cards import ALL_CODES
        >>> deal = Deal.from_codes(Rules(), ALL_CODES[:28], "3H", ALL_CODES[29:])
        >>> deal.codes()["waste"], deal.codes()["stock"][0]
        ('3H', '4H')
        >>> Deal.from_codes(Rules(), ALL_CODES[:28], "AC", ALL_CODES[29:])
        Traceback (most recent call last):
            ...
        protocol.rules.cards.CardError: duplicate cards in deal: AC
        """
        return cls(
            rules,
            tuple(parse_card(c) for c in peaks),
            None if waste is None else parse_card(waste),
            tuple(parse_card(c) for c in stock),
        )

    def codes(self) -> dict[str, object]:
        """The deal as card codes: ``peaks``, ``waste`` and ``stock``."""
        return {
            "peaks": [card_code(c) for c in self.peaks],
            "waste": None if self.waste is None else card_code(self.waste),
            "stock": [card_code(c) for c in self.stock],
        }


class Status(enum.Enum):
    """Where a game stands."""

    PLAYING = "playing"
    WON = "won"
    STUCK = "stuck"


_PLAYING: Final = Status.PLAYING  # an enum member read from its class costs a lookup each time


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a finished game ended: ``WON`` or ``STUCK``."""

    status: Status

    @property
    def won(self) -> bool:
        """True when all 28 peak cards were played."""
        return self.status is Status.WON


@dataclass(frozen=True, slots=True)
class PlayerView:
    """What one player may know, and nothing more.

    ``board`` has 28 entries by position: a card code when face up,
    :data:`HIDDEN` when face down, ``None`` once played.  Stock cards are
    only counted, never named.
    """

    board: tuple[str | None, ...]
    waste_top: str | None
    stock_left: int
    moves: int
    draws: int
    undos: int
    status: Status

    @property
    def cleared(self) -> int:
        """How many peak cards have been played."""
        return sum(1 for entry in self.board if entry is None)


#: ``_FITS_ON[wrap][top]``: the cards that may go on a waste whose top card is ``top``.
_FITS_ON: Final = {
    wrap: tuple(
        frozenset(c for c in range(DECK_SIZE) if is_adjacent(rank_of(c), rank_of(top), wrap))
        for top in range(DECK_SIZE)
    )
    for wrap in (False, True)
}


def _check_position(position: int) -> None:
    if isinstance(position, bool) or not isinstance(position, int):
        raise TypeError(f"a position is an int, got {position!r}")
    if not 0 <= position < PEAK_CARDS:
        raise IndexError(f"no such position: {position} (0 to {PEAK_CARDS - 1})")


class Game:
    """One player's game on a known deal.

    ``moves`` counts every play and draw made (undone ones included),
    ``draws`` the draws among them and ``undos`` the undos.  With
    ``allow_undo=False`` (a room option) :meth:`undo` is refused with
    :attr:`Reason.UNDO_NOT_ALLOWED`.
    """

    def __init__(self, deal: Deal, *, allow_undo: bool = True) -> None:
        self.deal: Final = deal
        self.allow_undo: Final = allow_undo
        #: The deal's peak cards by position and its stock, held here: the deal is a
        #: Python object, and compiled, each of its attributes read per move is a lookup.
        self.peaks: Final = deal.peaks
        self._stock: Final = deal.stock
        self._stock_size: Final = len(deal.stock)
        self._removed = [False] * PEAK_CARDS
        # Cards still lying on each position: a position is face up at 0.  Kept up to
        # date by play and undo, so views and status need no walk over the layout.
        self._covering = [len(on_top) for on_top in COVERED_BY]
        # The board as the player sees it (see PlayerView), also kept up to date.
        self._board: list[str | None] = [
            HIDDEN if self._covering[p] else ALL_CODES[deal.peaks[p]] for p in range(PEAK_CARDS)
        ]
        self._cleared = 0
        self._drawn = 0
        self._waste: list[Card] = [] if deal.waste is None else [deal.waste]
        self._history: list[Move] = []
        self._moves = self._draws = self._undos = 0
        self._fits_on = _FITS_ON[deal.rules.wrap]
        # The status of the current state, worked out on first use after each change.
        self._status: Status | None = None

    # ---- queries -------------------------------------------------------
    @property
    def rules(self) -> Rules:
        """The deal's rule options."""
        return self.deal.rules

    @property
    def waste_top(self) -> Card | None:
        """The waste's top card, or ``None`` while the waste is empty."""
        return self._waste[-1] if self._waste else None

    @property
    def waste(self) -> tuple[Card, ...]:
        """The whole waste pile, bottom first (the player sees only its top)."""
        return tuple(self._waste)

    @property
    def stock_left(self) -> int:
        """Cards still in the stock."""
        return self._stock_size - self._drawn

    @property
    def cleared(self) -> int:
        """Peak cards played so far."""
        return self._cleared

    @property
    def moves(self) -> int:
        """Plays and draws made, undone ones included."""
        return self._moves

    @property
    def draws(self) -> int:
        """Draws made, undone ones included."""
        return self._draws

    @property
    def undos(self) -> int:
        """Undos made."""
        return self._undos

    @property
    def board(self) -> tuple[str | None, ...]:
        """:attr:`PlayerView.board` alone, without building the whole view."""
        return tuple(self._board)

    @property
    def history(self) -> tuple[Move, ...]:
        """The moves that stand (undone moves are gone from it)."""
        return tuple(self._history)

    def tally(self) -> tuple[Card | None, int, int, int, int, int, Status]:
        """``(waste_top, stock_left, cleared, moves, draws, undos, status)`` in one call:
        what the server sends after every move."""
        waste = self._waste
        return (
            waste[-1] if waste else None,
            self._stock_size - self._drawn,
            self._cleared,
            self._moves,
            self._draws,
            self._undos,
            self._status or self.status,
        )

    def is_removed(self, position: int) -> bool:
        """True when the card at ``position`` has been played."""
        _check_position(position)
        return self._removed[position]

    def is_face_up(self, position: int) -> bool:
        """True when every card covering ``position`` has been played."""
        _check_position(position)
        return self._face_up(position)

    def is_free(self, position: int) -> bool:
        """True when the card at ``position`` is still there and uncovered."""
        _check_position(position)
        return self._free(position)

    def fits(self, card: Card) -> bool:
        """True when ``card`` may go on the waste (any card fits an empty waste)."""
        waste = self._waste
        return not waste or card in self._fits_on[waste[-1]]

    def legal_moves(self) -> list[Move]:
        """Every legal move: free fitting positions in order, then ``"draw"``."""
        if self._cleared == PEAK_CARDS:
            return []
        moves: list[Move] = [p for p in range(PEAK_CARDS) if self._playable(p)]
        if self.stock_left:
            moves.append(DRAW)
        return moves

    def outcome(self) -> Outcome | None:
        """``None`` while playing, else the :class:`Outcome`."""
        status = self.status
        return None if status is Status.PLAYING else Outcome(status)

    @property
    def status(self) -> Status:
        """``WON`` with all 28 played, ``STUCK`` with no stock and no fit, else ``PLAYING``."""
        status = self._status
        if status is None:
            status = self._status = self._work_out_status()
        return status

    def _work_out_status(self) -> Status:
        if self._cleared == PEAK_CARDS:
            return Status.WON
        if self._drawn == self._stock_size:
            # The waste is never empty here: every stock card has gone onto it.
            fits, peaks, removed, covering = (
                self._fits_on[self._waste[-1]], self.peaks, self._removed, self._covering
            )
            for p in range(PEAK_CARDS):
                if not removed[p] and not covering[p] and peaks[p] in fits:
                    return Status.PLAYING
            return Status.STUCK
        return Status.PLAYING

    def check(self, move: object) -> Reason | None:
        """The reason ``move`` is illegal now, or ``None`` when it is legal.

        A finished game (won or stuck) refuses every move with ``GAME_OVER``;
        only :meth:`undo` can lead out of a stuck position.  Any value may be asked
        about (anything but a position or ``"draw"`` is ``NO_SUCH_POSITION``): typed
        ``object``, so that the compiled engine (tools/native.py) answers it too.
        """
        return self._refusal(move)[0]

    def check_undo(self) -> Reason | None:
        """The reason :meth:`undo` would be refused now, or ``None``."""
        if not self.allow_undo:
            return Reason.UNDO_NOT_ALLOWED
        if self._cleared == PEAK_CARDS:
            # A won game is finished for good: the race has recorded the win.
            return Reason.GAME_OVER
        if not self._history:
            return Reason.NOTHING_TO_UNDO
        return None

    def is_legal(self, move: object) -> bool:
        """True when ``move`` may be pushed now."""
        return self.check(move) is None

    # ---- actions -------------------------------------------------------
    def play(self, position: int) -> tuple[int, ...]:
        """Play the card at ``position``; return the positions it turned face up."""
        removed, covering, waste = self._removed, self._covering, self._waste
        peaks = self.peaks
        # The common legal play is recognised here; anything else gets the full check,
        # which has the last word (and the refusal's reason and message).
        if not (
            type(position) is int
            and 0 <= position < PEAK_CARDS
            and (self._status or self.status) is _PLAYING
            and not removed[position]
            and not covering[position]
            and (not waste or peaks[position] in self._fits_on[waste[-1]])
        ):
            reason, detail = self._refusal(position)
            if reason is not None:
                raise error_for(reason, detail)
        removed[position] = True
        self._cleared += 1
        waste.append(peaks[position])
        self._history.append(position)
        self._moves += 1
        # Still playing while cards are left on both; otherwise worked out when asked.
        self._status = (
            _PLAYING if self._cleared < PEAK_CARDS and self._drawn < self._stock_size else None
        )
        board = self._board
        board[position] = None
        turned: list[int] = []
        for q in COVERS[position]:
            covering[q] -= 1
            if not covering[q]:
                turned.append(q)
                board[q] = ALL_CODES[peaks[q]]
        return tuple(turned)

    def draw(self) -> Card:
        """Turn the next stock card onto the waste and return it."""
        drawn, stock = self._drawn, self._stock
        if drawn == len(stock) or (self._status or self.status) is not _PLAYING:
            reason, detail = self._refusal(DRAW)
            assert reason is not None
            raise error_for(reason, detail)
        card = stock[drawn]
        self._drawn = drawn + 1
        self._waste.append(card)
        self._history.append(DRAW)
        self._moves += 1
        self._draws += 1
        self._status = _PLAYING if drawn + 1 < len(stock) else None  # cleared is under 28
        return card

    def push(self, move: object) -> None:
        """Apply ``move``: a position to play, or ``"draw"`` (anything else is refused
        with ``NO_SUCH_POSITION``, as :meth:`check` says)."""
        if move == DRAW:
            self.draw()
        elif isinstance(move, int) and not isinstance(move, bool):
            self.play(move)
        else:
            raise InvalidMoveError(Reason.NO_SUCH_POSITION, f"not a move: {move!r}")

    def undo(self) -> Move:
        """Take back the last play or draw and return it.

        The state returns exactly to what it was before that move; a card the
        move turned face up goes face down again, so undo never shows anything
        the player has not already seen.
        """
        return self.take_back()[0]

    def take_back(self) -> tuple[Move, tuple[int, ...]]:
        """:meth:`undo`, also returning the positions the undone play had turned face up
        (now face down again; none for a draw)."""
        history = self._history
        if not (self.allow_undo and history and self._cleared != PEAK_CARDS):
            reason = self.check_undo()
            assert reason is not None
            raise IllegalMoveError(reason)
        move = history.pop()
        self._waste.pop()
        self._undos += 1
        if move == DRAW:
            self._drawn -= 1
            self._status = _PLAYING  # a card is back in the stock
            return move, ()
        assert isinstance(move, int)
        self._removed[move] = False
        self._cleared -= 1
        self._status = _PLAYING if self._drawn < self._stock_size else None
        covering, board = self._covering, self._board
        board[move] = ALL_CODES[self.peaks[move]]
        hidden: list[int] = []
        for q in COVERS[move]:
            covering[q] += 1
            if covering[q] == 1:
                hidden.append(q)
            board[q] = HIDDEN
        return move, tuple(hidden)

    # ---- views ---------------------------------------------------------
    def view(self) -> PlayerView:
        """Exactly what the player may know; see :class:`PlayerView`."""
        board = tuple(self._board)
        top = self.waste_top
        return PlayerView(
            board=board,
            waste_top=None if top is None else card_code(top),
            stock_left=self.stock_left,
            moves=self.moves,
            draws=self.draws,
            undos=self.undos,
            status=self.status,
        )

    def state_key(self) -> tuple[tuple[bool, ...], int, Card | None]:
        """Everything that decides the future of play (for tests and tools)."""
        return (tuple(self._removed), self._drawn, self.waste_top)

    # ---- internals -----------------------------------------------------
    def _face_up(self, position: int) -> bool:
        return not self._covering[position]

    def _free(self, position: int) -> bool:
        return not self._removed[position] and self._face_up(position)

    def _playable(self, position: int) -> bool:
        return self._free(position) and self.fits(self.peaks[position])

    def _refusal(self, move: object) -> tuple[Reason | None, str]:
        """The reason ``move`` is refused with a helpful message, or ``(None, "")``.

        Rank is checked last, and only for a face-up card, so no message can
        hint at a card that is still face down.
        """
        if move == DRAW:
            if self.status is not Status.PLAYING:
                return Reason.GAME_OVER, self._game_over_text()
            if not self.stock_left:
                return Reason.STOCK_EMPTY, ""
            return None, ""
        if isinstance(move, bool) or not isinstance(move, int) or not 0 <= move < PEAK_CARDS:
            return Reason.NO_SUCH_POSITION, f"there is no position {move!r} (0 to 27)"
        if self.status is not Status.PLAYING:
            return Reason.GAME_OVER, self._game_over_text()
        if self._removed[move]:
            return Reason.ALREADY_PLAYED, f"the card at position {move} has already been played"
        if not self._face_up(move):
            still = [q for q in COVERED_BY[move] if not self._removed[q]]
            on_top = " and ".join(str(q) for q in still)
            return Reason.COVERED, f"position {move} is still covered by {on_top}"
        card = self.peaks[move]
        if not self.fits(card):
            top = card_code(self.waste_top) if self.waste_top is not None else "none"
            return (
                Reason.NOT_ADJACENT,
                f"{card_code(card)} is not one rank above or below the waste card {top}",
            )
        return None, ""

    def _game_over_text(self) -> str:
        if self.status is Status.WON:
            return "the game is over: all 28 peak cards are played"
        return "the game is over: the stock is empty and no free card fits (stuck)"


def standing_key(cleared: int, time: float | None, moves: int) -> tuple[int, float, int]:
    """Sort key for race standings (docs/rules.md, "Ranking in a race"): smallest first.

    Cleared cards come first.  Among players who cleared all 28 the earlier
    finish ranks higher, and among equal times fewer moves.  For a player who
    did not clear everything, ``time`` is when they reached their cleared
    count (who got there first ranks higher); ``None`` ranks after any time.

    >>> players = {"ann": (28, 61.5, 40), "bob": (28, 58.0, 45), "cy": (27, 20.0, 30)}
    >>> sorted(players, key=lambda name: standing_key(*players[name]))
    ['bob', 'ann', 'cy']
    """
    return (-cleared, math.inf if time is None else time, moves)


def replay(deal: Deal, moves: Iterable[Move], *, allow_undo: bool = True) -> Game:
    """A fresh game on ``deal`` with ``moves`` pushed; raises on an illegal move."""
    game = Game(deal, allow_undo=allow_undo)
    for move in moves:
        game.push(move)
    return game

