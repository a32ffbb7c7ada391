"""A quick end-to-end look at the core: a seeded deal, a view, a move."""

from __future__ import annotations

from protocol.deals.shuffle import candidate_deal
from protocol.rules.game import HIDDEN, Game, Rules


def test_a_fresh_deal_shows_exactly_the_bottom_row() -> None:
    view = Game(candidate_deal("42", 0, Rules())).view()
    assert [p for p, entry in enumerate(view.board) if entry != HIDDEN] == list(range(18, 28))


def test_a_seeded_game_can_be_played_drawn_and_undone() -> None:
    game = Game(candidate_deal("42", 0, Rules()))
    game.push(game.legal_moves()[0])
    game.draw()
    game.undo()
    assert game.moves == 2 and game.undos == 1 and game.outcome() is None
