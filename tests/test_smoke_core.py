from protocol.game import Game, Rules
from protocol.shuffle import candidate_deal


def test_a_fresh_deal_shows_exactly_the_bottom_row() -> None:
    view = Game(candidate_deal("42", 0, Rules())).view()
    assert [p for p, entry in enumerate(view.board) if entry != "??"] == list(range(18, 28))
