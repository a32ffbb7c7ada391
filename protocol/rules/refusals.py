"""Why the rules engine refuses a move: :class:`Reason` and the two error types.

Like python-chess, a malformed move (:class:`InvalidMoveError`: not a move
at all) is told apart from a well-formed move the rules refuse
(:class:`IllegalMoveError`); the first is a kind of the second, so one
``except`` catches both.  :mod:`protocol.rules.game` raises them and re-exports
every name here, so ``from protocol.rules.game import Reason`` keeps working.

>>> error = IllegalMoveError(Reason.STOCK_EMPTY)
>>> error.reason, str(error)
(<Reason.STOCK_EMPTY: 4>, 'the stock is empty')
>>> isinstance(error_for(Reason.NO_SUCH_POSITION, "not a move: 'x'"), InvalidMoveError)
True
"""

from __future__ import annotations

import enum
from typing import Final


class Reason(enum.IntEnum):
    """Why a move was refused.  The values are stable: they go on the wire."""

    COVERED = 1
    NOT_ADJACENT = 2
    ALREADY_PLAYED = 3
    STOCK_EMPTY = 4
    NOTHING_TO_UNDO = 5
    GAME_OVER = 6
    NO_SUCH_POSITION = 7
    UNDO_NOT_ALLOWED = 8


REASON_TEXT: Final[dict[Reason, str]] = {
    Reason.COVERED: "that card is still covered",
    Reason.NOT_ADJACENT: "that card is not one rank above or below the waste card",
    Reason.ALREADY_PLAYED: "that card has already been played",
    Reason.STOCK_EMPTY: "the stock is empty",
    Reason.NOTHING_TO_UNDO: "there is nothing to undo",
    Reason.GAME_OVER: "the game is over",
    Reason.NO_SUCH_POSITION: "there is no such position (0 to 27)",
    Reason.UNDO_NOT_ALLOWED: "undo is switched off in this race",
}


class IllegalMoveError(ValueError):
    """A move the rules do not allow in the current state.

    ``reason`` is the stable code; the message may add detail about the
    position, but never names a card the player has not seen.
    """

    def __init__(self, reason: Reason, detail: str = "") -> None:
        self.reason = reason
        super().__init__(detail or REASON_TEXT[reason])

    def __reduce__(self) -> tuple[type[IllegalMoveError], tuple[Reason, str]]:
        # The default would rebuild from the message alone and lose the reason,
        # which matters when the error crosses a process-pool boundary.
        return (type(self), (self.reason, str(self)))


class InvalidMoveError(IllegalMoveError):
    """Not a move at all: neither a position 0..27 nor ``"draw"``.

    Like python-chess, a malformed move is told apart from a well-formed move
    the rules refuse; it is still an :class:`IllegalMoveError` with reason
    :attr:`Reason.NO_SUCH_POSITION`, so one ``except`` catches both.
    """

    def __init__(self, reason: Reason = Reason.NO_SUCH_POSITION, detail: str = "") -> None:
        super().__init__(reason, detail)


def error_for(reason: Reason, detail: str) -> IllegalMoveError:
    """The error :class:`~protocol.rules.game.Game` raises for a refusal: an
    :class:`InvalidMoveError` for ``NO_SUCH_POSITION``, else an :class:`IllegalMoveError`."""
    if reason is Reason.NO_SUCH_POSITION:
        return InvalidMoveError(reason, detail)
    return IllegalMoveError(reason, detail)
