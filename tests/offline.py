"""Playing against the rules engine as an honest server would answer, with no socket."""

from __future__ import annotations

from typing import Any

from client_cli.board import UNDO, Action
from protocol.rules.cards import card_code
from protocol.rules.game import DRAW, Game
from protocol.rules.refusals import IllegalMoveError, Reason


def server_answer(game: Game, action: Action) -> dict[str, Any] | Reason:
    """What an honest server tells the player about ``action``: the facts, or a reason."""
    try:
        if action == UNDO:
            game.undo()
            uncovered: dict[int, str] = {}
        elif action == DRAW:
            game.draw()
            uncovered = {}
        else:
            assert isinstance(action, int)
            uncovered = {q: card_code(game.deal.peaks[q]) for q in game.play(action)}
    except IllegalMoveError as error:
        return error.reason
    top = game.waste_top
    return {
        "uncovered": uncovered,
        "waste_top": None if top is None else card_code(top),
        "stock_left": game.stock_left,
        "counts": {"moves": game.moves, "draws": game.draws, "undos": game.undos},
    }
