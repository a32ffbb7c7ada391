"""One named test per rule of docs/rules.md, on deals built by hand."""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence

import pytest

from protocol.deals.shuffle import (
    SeedError,
    candidate_deal,
    deal_from_deck,
    seed_text,
    shuffled_deck,
)
from protocol.rules.cards import (
    ALL_CODES,
    DECK_SIZE,
    RANKS,
    SUITS,
    CardError,
    card_code,
    is_adjacent,
    parse_card,
    rank_of,
    suit_of,
)
from protocol.rules.game import (
    DRAW,
    HIDDEN,
    Deal,
    Game,
    Move,
    Outcome,
    Rules,
    Status,
    replay,
    standing_key,
)
from protocol.rules.layout import BOTTOM_ROW, COVERED_BY, COVERS, PEAK_CARDS, ROWS, row_of
from protocol.rules.refusals import REASON_TEXT, IllegalMoveError, InvalidMoveError, Reason

# ---- hand-built deals --------------------------------------------------------

#: The order in which a staircase deal is cleared: bottom row, then upwards.
STAIRCASE_ORDER: tuple[int, ...] = (*range(18, 28), *range(9, 18), *range(3, 9), *range(3))

# Ranks along the staircase: up from A to K, down to A, up to 4.  Every step
# is one rank apart without wrapping, so the line wins with wrap on or off.
_STAIRCASE_RANKS = [*range(13), *range(11, -1, -1), 1, 2, 3]

# A bottom row of fives, sevens and nines: nothing on it fits a K, a J or a 3.
ODD_ROW = ("5C", "5D", "5H", "5S", "7C", "7D", "7H", "7S", "9C", "9D")


def make_deal(
    peaks: Mapping[int, str] | None = None,
    waste: str | None = "KS",
    stock: Sequence[str] = (),
    stock_end: Sequence[str] = (),
    rules: Rules | None = None,
) -> Deal:
    """A deal with the given cards; every other place gets a spare card.

    ``stock`` is drawn first, ``stock_end`` last.  Spare cards go to the
    unnamed peak positions (in position order), then to the middle of the stock.
    """
    rules = rules or Rules(empty_waste=waste is None)
    peaks = dict(peaks or {})
    named = [*peaks.values(), *stock, *stock_end, *([] if waste is None else [waste])]
    spare = [code for code in ALL_CODES if code not in named]
    board = [peaks[p] if p in peaks else spare.pop(0) for p in range(PEAK_CARDS)]
    middle = rules.stock_size - len(stock) - len(stock_end)
    return Deal.from_codes(rules, board, waste, [*stock, *spare[:middle], *stock_end])


def bottom(*codes: str) -> dict[int, str]:
    """Peak cards for the bottom row, from position 18 on."""
    return dict(zip(BOTTOM_ROW, codes, strict=False))


def staircase_deal(rules: Rules | None = None) -> Deal:
    """A deal won by playing :data:`STAIRCASE_ORDER` without a single draw."""
    rules = rules or Rules()
    next_suit = dict.fromkeys(range(13), 0)

    def take(rank: int) -> str:
        code = RANKS[rank] + SUITS[next_suit[rank]]
        next_suit[rank] += 1
        return code

    peaks = {p: take(rank) for p, rank in zip(STAIRCASE_ORDER, _STAIRCASE_RANKS, strict=True)}
    waste = None if rules.empty_waste else take(1)
    return make_deal(peaks, waste, rules=rules)


def stuck_game() -> Game:
    """A game drawn down to an empty stock with a king on top that nothing fits."""
    game = Game(make_deal(bottom(*ODD_ROW), waste="2C", stock_end=["KC"]))
    for _ in range(23):
        game.draw()
    return game


UNDO = "undo"


def refusal(game: Game, move: Move | object = UNDO) -> Reason:
    """Try ``move`` (by default an undo), check it changed nothing, return the reason."""
    before = (game.state_key(), game.view(), game.history)
    with pytest.raises(IllegalMoveError) as raised:
        if move == UNDO:
            game.undo()
        else:
            game.push(move)  # type: ignore[arg-type]
    assert (game.state_key(), game.view(), game.history) == before
    return raised.value.reason


# ---- cards ---------------------------------------------------------------------


def test_a_deck_is_52_distinct_cards_of_13_ranks_in_4_suits() -> None:
    assert len(set(ALL_CODES)) == DECK_SIZE == 52
    assert sorted({rank_of(c) for c in range(52)}) == list(range(13))
    assert sorted({suit_of(c) for c in range(52)}) == list(range(4))


def test_card_notation_is_rank_then_suit() -> None:
    assert [card_code(parse_card(c)) for c in ("AS", "TD", "QH", "7C")] == ["AS", "TD", "QH", "7C"]
    assert rank_of(parse_card("QH")) == 11 and suit_of(parse_card("QH")) == SUITS.index("H")
    assert all(card_code(parse_card(code)) == code for code in ALL_CODES)


@pytest.mark.parametrize("text", ["10D", "qh", "Q", "QHS", "", "XX", "1C", "AZ", " AS"])
def test_anything_but_an_exact_card_code_is_refused(text: str) -> None:
    with pytest.raises(CardError, match="not a card code"):
        parse_card(text)


@pytest.mark.parametrize("value", [-1, 52, True, "AS", None])
def test_card_code_refuses_a_value_that_is_not_a_card(value: object) -> None:
    with pytest.raises(CardError):
        card_code(value)  # type: ignore[arg-type]


def test_suits_do_not_matter_for_play() -> None:
    for suit in SUITS:
        game = Game(make_deal(bottom("7" + suit), waste="8" + ("S" if suit != "S" else "C")))
        game.play(18)
        assert game.view().waste_top == "7" + suit
    # Same suit, wrong rank: the suit does not help.
    game = Game(make_deal(bottom("5H"), waste="8H"))
    assert refusal(game, 18) is Reason.NOT_ADJACENT


# ---- layout and numbering --------------------------------------------------------


def test_layout_has_28_cards_in_rows_of_3_6_9_and_10() -> None:
    assert PEAK_CARDS == 28
    assert [len(row) for row in ROWS] == [3, 6, 9, 10]


def test_positions_are_numbered_row_by_row_from_the_top() -> None:
    assert [list(row) for row in ROWS] == [
        list(range(0, 3)),
        list(range(3, 9)),
        list(range(9, 18)),
        list(range(18, 28)),
    ]
    assert [row_of(p) for p in (0, 2, 3, 8, 9, 17, 18, 27)] == [0, 0, 1, 1, 2, 2, 3, 3]
    with pytest.raises(ValueError):
        row_of(28)


def test_bottom_row_position_18_plus_j_is_covered_by_nothing() -> None:
    assert all(COVERED_BY[18 + j] == () for j in range(10))


def test_row_2_position_9_plus_k_is_covered_by_18_plus_k_and_19_plus_k() -> None:
    assert all(COVERED_BY[9 + k] == (18 + k, 19 + k) for k in range(9))


def test_row_1_position_3_plus_m_is_covered_by_9_plus_k_and_10_plus_k() -> None:
    for m in range(6):
        k = 3 * (m // 2) + (m % 2)
        assert COVERED_BY[3 + m] == (9 + k, 10 + k)


def test_row_0_position_p_is_covered_by_3_plus_2p_and_4_plus_2p() -> None:
    assert all(COVERED_BY[p] == (3 + 2 * p, 4 + 2 * p) for p in range(3))


def test_covering_matches_the_picture_in_the_rules() -> None:
    # Read off the picture by hand: each peak's row-1 pair sits on its own row-2 triple.
    assert COVERED_BY[3:9] == ((9, 10), (10, 11), (12, 13), (13, 14), (15, 16), (16, 17))
    assert COVERED_BY[0:3] == ((3, 4), (5, 6), (7, 8))
    assert COVERED_BY[11] == (20, 21) and COVERED_BY[12] == (21, 22)


def test_every_card_above_the_bottom_row_is_covered_by_two_cards_of_the_next_row() -> None:
    for p in range(18):
        assert len(COVERED_BY[p]) == 2
        assert all(row_of(q) == row_of(p) + 1 for q in COVERED_BY[p])


def test_covers_is_the_reverse_of_covered_by() -> None:
    pairs = {(p, q) for p in range(28) for q in COVERED_BY[p]}
    assert pairs == {(p, q) for q in range(28) for p in COVERS[q]}
    assert COVERS[0] == () and COVERS[18] == (9,) and COVERS[21] == (11, 12)


# ---- the standard deal -------------------------------------------------------------


def test_standard_deal_maps_cards_1_to_28_to_peaks_29_to_waste_and_30_to_52_to_stock() -> None:
    deck = list(range(51, -1, -1))
    deal = deal_from_deck(deck, Rules())
    assert deal.peaks == tuple(deck[:28])
    assert deal.waste == deck[28]
    assert deal.stock == tuple(deck[29:]) and len(deal.stock) == 23


def test_empty_waste_deal_puts_cards_29_to_52_in_the_stock() -> None:
    deck = list(range(52))
    deal = deal_from_deck(deck, Rules(empty_waste=True))
    assert deal.peaks == tuple(deck[:28]) and deal.waste is None
    assert deal.stock == tuple(deck[28:]) and len(deal.stock) == 24


def test_a_deck_that_is_not_52_distinct_cards_cannot_be_dealt() -> None:
    with pytest.raises(CardError, match="52 cards"):
        deal_from_deck(list(range(51)), Rules())
    with pytest.raises(CardError, match="duplicate cards in deal: AC"):
        deal_from_deck([0, *range(1, 51), 0], Rules())


def test_a_deal_with_the_wrong_number_of_peak_cards_is_refused() -> None:
    with pytest.raises(CardError, match="28 peak cards, got 27"):
        Deal.from_codes(Rules(), ALL_CODES[:27], "3H", ALL_CODES[28:29] + ALL_CODES[29:])


def test_a_deal_with_the_wrong_number_of_stock_cards_is_refused() -> None:
    with pytest.raises(CardError, match="23 stock cards, got 22"):
        Deal.from_codes(Rules(), ALL_CODES[:28], "3H", ALL_CODES[29:51])


def test_a_deal_with_a_duplicate_card_is_refused_naming_it() -> None:
    with pytest.raises(CardError, match="duplicate cards in deal: QS"):
        Deal.from_codes(Rules(), ALL_CODES[:28], "3H", [*ALL_CODES[29:51], "QS"])


def test_a_deal_with_an_unknown_card_is_refused_naming_it() -> None:
    with pytest.raises(CardError, match="'ZZ'"):
        Deal.from_codes(Rules(), ALL_CODES[:28], "ZZ", ALL_CODES[29:])
    with pytest.raises(CardError, match=r"only cards 0\.\.51"):
        Deal(Rules(), tuple(range(28)), 52, tuple(range(29, 52)))


def test_a_deal_must_match_its_start_rule() -> None:
    with pytest.raises(CardError, match="need no waste card"):
        Deal.from_codes(Rules(empty_waste=True), ALL_CODES[:28], "3H", ALL_CODES[29:])
    with pytest.raises(CardError, match="need one waste card"):
        Deal.from_codes(Rules(), ALL_CODES[:28], None, ALL_CODES[28:])


def test_a_deal_reads_back_as_the_codes_it_was_built_from() -> None:
    deal = Deal.from_codes(Rules(), ALL_CODES[:28], "3H", ALL_CODES[29:])
    assert deal.codes() == {
        "peaks": list(ALL_CODES[:28]),
        "waste": "3H",
        "stock": list(ALL_CODES[29:]),
    }
    assert Deal(Rules(), list(range(28)), 28, list(range(29, 52))) == deal  # type: ignore[arg-type]


# ---- the start -----------------------------------------------------------------------


def test_at_the_start_only_the_bottom_row_is_face_up() -> None:
    deal = make_deal()
    view = Game(deal).view()
    assert view.board[:18] == (HIDDEN,) * 18
    assert view.board[18:] == tuple(card_code(deal.peaks[p]) for p in BOTTOM_ROW)


def test_at_the_start_the_free_cards_are_the_bottom_row_of_ten() -> None:
    game = Game(make_deal())
    assert [p for p in range(28) if game.is_free(p)] == list(BOTTOM_ROW)


def test_standard_start_turns_card_29_up_as_the_waste_and_leaves_23_in_the_stock() -> None:
    deal = make_deal(waste="7H")
    game = Game(deal)
    assert game.view().waste_top == "7H" and game.waste == (parse_card("7H"),)
    assert game.stock_left == game.view().stock_left == 23


# ---- play ------------------------------------------------------------------------------


def test_a_free_card_one_rank_above_the_waste_card_can_be_played() -> None:
    game = Game(make_deal(bottom("9C"), waste="8D"))
    assert game.play(18) == ()
    assert game.view().waste_top == "9C" and game.view().board[18] is None


def test_a_free_card_one_rank_below_the_waste_card_can_be_played() -> None:
    game = Game(make_deal(bottom("7C"), waste="8D"))
    game.play(18)
    assert game.view().waste_top == "7C"


@pytest.mark.parametrize("code", ["8C", "TC", "6C", "KC", "AC"])
def test_a_free_card_not_one_rank_away_cannot_be_played(code: str) -> None:
    game = Game(make_deal(bottom(code), waste="8D"))
    assert refusal(game, 18) is Reason.NOT_ADJACENT


def test_the_played_card_becomes_the_new_waste_top() -> None:
    game = Game(make_deal(bottom("9C", "TC"), waste="8D"))
    game.play(18)
    assert game.fits(parse_card("TC")) and not game.fits(parse_card("7S"))
    game.play(19)
    assert game.waste_top == parse_card("TC")
    assert game.waste == tuple(parse_card(c) for c in ("8D", "9C", "TC"))


def test_runs_can_climb_fall_and_zig_zag() -> None:
    row = ("6C", "7C", "8C", "7D", "6D", "5C")
    game = Game(make_deal(bottom(*row), waste="5D"))
    for position in range(18, 24):
        game.play(position)
    assert game.waste[1:] == tuple(parse_card(c) for c in row)


def test_a_face_down_card_cannot_be_played() -> None:
    game = Game(make_deal(bottom("9C"), waste="8D"))
    for position in (0, 5, 9, 17):
        assert refusal(game, position) is Reason.COVERED


def test_a_face_down_card_stays_down_while_one_covering_card_remains() -> None:
    game = Game(make_deal(bottom("9C", "TC", "JC"), waste="8D"))
    game.play(18)
    assert not game.is_face_up(9) and game.view().board[9] == HIDDEN
    assert refusal(game, 9) is Reason.COVERED


def test_a_face_down_card_turns_up_when_both_covering_cards_are_played() -> None:
    deal = make_deal({18: "9C", 19: "TC", 20: "JC", 9: "QC"}, waste="8D")
    game = Game(deal)
    game.play(18)
    assert game.play(19) == (9,)
    assert game.is_face_up(9) and game.view().board[9] == "QC"
    assert game.play(20) == (10,)
    game.play(9)
    assert game.is_removed(9) and not game.is_free(9)


def test_a_card_above_the_bottom_rows_turns_up_only_when_its_two_covers_are_gone() -> None:
    game = Game(staircase_deal())
    for position in range(18, 28):
        game.play(position)
    assert [p for p in range(28) if game.is_free(p)] == list(range(9, 18))
    assert game.play(9) == ()
    assert game.play(10) == (3,)
    assert game.play(11) == (4,)
    for position in range(12, 18):
        game.play(position)
    for position in (3, 4):
        game.play(position)
    assert game.play(5) == ()
    assert game.play(6) == (1,)


def test_play_reports_every_card_it_turns_up() -> None:
    game = Game(staircase_deal())
    turned: list[int] = []
    for position in STAIRCASE_ORDER:
        turned.extend(game.play(position))
    assert sorted(turned) == list(range(18))


def test_a_played_card_cannot_be_played_again() -> None:
    game = Game(make_deal(bottom("9C"), waste="8D"))
    game.play(18)
    assert refusal(game, 18) is Reason.ALREADY_PLAYED


# ---- wrap ------------------------------------------------------------------------------


def test_wrap_is_on_by_default() -> None:
    assert Rules().wrap is True and Rules().empty_waste is False


def test_king_plays_on_ace_only_when_wrap_is_on() -> None:
    game = Game(make_deal(bottom("KC"), waste="AD"))
    game.play(18)
    assert game.view().waste_top == "KC"
    game = Game(make_deal(bottom("KC"), waste="AD", rules=Rules(wrap=False)))
    assert refusal(game, 18) is Reason.NOT_ADJACENT


def test_ace_plays_on_king_only_when_wrap_is_on() -> None:
    game = Game(make_deal(bottom("AC"), waste="KD"))
    game.play(18)
    assert game.view().waste_top == "AC"
    game = Game(make_deal(bottom("AC"), waste="KD", rules=Rules(wrap=False)))
    assert refusal(game, 18) is Reason.NOT_ADJACENT


def test_with_wrap_queen_king_ace_two_is_a_run() -> None:
    game = Game(make_deal(bottom("KC", "AC", "2C"), waste="QD"))
    for position in (18, 19, 20):
        game.play(position)
    assert game.view().waste_top == "2C"


def test_without_wrap_king_still_takes_a_queen_and_ace_still_takes_a_two() -> None:
    no_wrap = Rules(wrap=False)
    row = bottom("QC", "2C", *ODD_ROW[:8])
    game = Game(make_deal(row, waste="KD", rules=no_wrap))
    assert game.legal_moves() == [18, DRAW]
    game = Game(make_deal(row, waste="AD", rules=no_wrap))
    assert game.legal_moves() == [19, DRAW]
    assert not is_adjacent(12, 0, wrap=False) and is_adjacent(12, 0, wrap=True)


# ---- draw ------------------------------------------------------------------------------


def test_draw_turns_the_top_stock_card_onto_the_waste() -> None:
    game = Game(make_deal(waste="2C", stock=["9H", "4S"]))
    assert card_code(game.draw()) == "9H"
    assert game.view().waste_top == "9H" and game.stock_left == 22
    assert card_code(game.draw()) == "4S"


def test_draw_is_allowed_even_when_a_card_fits() -> None:
    game = Game(make_deal(bottom("9C", *ODD_ROW[:4]), waste="8D", stock=["2H"]))
    assert game.legal_moves() == [18, DRAW]
    game.draw()
    assert game.view().waste_top == "2H" and game.view().board[18] == "9C"


def test_the_stock_is_gone_through_once_in_order_with_no_redeal() -> None:
    deal = make_deal(bottom(*ODD_ROW), waste="2C", stock_end=["6C"])
    game = Game(deal)
    drawn = [game.draw() for _ in range(23)]
    assert tuple(drawn) == deal.stock and game.stock_left == 0
    assert DRAW not in game.legal_moves()
    # A six fits the fives and sevens, so the game goes on without a stock.
    assert game.status is Status.PLAYING
    assert refusal(game, DRAW) is Reason.STOCK_EMPTY


# ---- empty-waste start ---------------------------------------------------------------


def test_empty_waste_start_turns_no_card_up_and_the_stock_holds_24() -> None:
    rules = Rules(empty_waste=True)
    game = Game(make_deal(waste=None, rules=rules))
    assert game.waste_top is None and game.view().waste_top is None and game.waste == ()
    assert game.stock_left == 24 == rules.stock_size


@pytest.mark.parametrize("wrap", [True, False])
def test_on_an_empty_waste_any_free_card_may_be_played_first(wrap: bool) -> None:
    deal = make_deal(waste=None, rules=Rules(wrap=wrap, empty_waste=True))
    assert Game(deal).legal_moves() == [*BOTTOM_ROW, DRAW]
    for position in BOTTOM_ROW:
        game = Game(deal)
        game.play(position)
        assert game.waste_top == deal.peaks[position]


def test_on_an_empty_waste_the_player_may_draw_first() -> None:
    game = Game(make_deal(waste=None, stock=["JD"]))
    assert card_code(game.draw()) == "JD" and game.stock_left == 23


def test_on_an_empty_waste_a_face_down_card_still_cannot_be_played() -> None:
    game = Game(make_deal(waste=None))
    assert refusal(game, 9) is Reason.COVERED


def test_after_the_first_card_the_empty_waste_game_needs_adjacent_ranks() -> None:
    game = Game(make_deal(bottom("5C", "9C", "6C"), waste=None))
    game.play(18)
    assert refusal(game, 19) is Reason.NOT_ADJACENT
    game.play(20)


# ---- undo ------------------------------------------------------------------------------


def test_undo_takes_back_a_played_card() -> None:
    game = Game(make_deal({18: "9C", 19: "TC", 9: "QC"}, waste="8D"))
    game.play(18)
    before = (game.state_key(), game.view().board, game.view().waste_top)
    game.play(19)
    assert game.undo() == 19
    assert (game.state_key(), game.view().board, game.view().waste_top) == before
    assert game.view().board[19] == "TC" and game.view().board[9] == HIDDEN
    assert game.cleared == 1 and game.history == (18,)


def test_undo_takes_back_a_draw_and_the_card_goes_back_on_the_stock() -> None:
    game = Game(make_deal(waste="2C", stock=["9H"]))
    game.draw()
    assert game.undo() == DRAW
    assert game.view().waste_top == "2C" and game.stock_left == 23
    assert card_code(game.draw()) == "9H"


def test_undo_of_the_first_card_on_an_empty_waste_empties_it_again() -> None:
    game = Game(make_deal(waste=None))
    game.play(22)
    game.undo()
    assert game.waste_top is None and game.legal_moves() == [*BOTTOM_ROW, DRAW]


def test_undo_reveals_nothing_new() -> None:
    game = Game(make_deal({18: "9C", 19: "TC", 9: "QC"}, waste="8D", stock=["4S"]))
    seen: set[str] = set()

    def look() -> set[str]:
        view = game.view()
        return {c for c in (*view.board, view.waste_top) if c not in (None, HIDDEN)}

    for move in (18, 19, DRAW):
        seen |= look()
        game.push(move)
        seen |= look()
    for _ in range(3):
        game.undo()
        assert look() <= seen
    assert "QC" not in look()
    assert game.view().board[9] == HIDDEN


def test_undos_take_back_moves_in_reverse_order() -> None:
    game = Game(make_deal(bottom("9C", "TC"), waste="8D"))
    for move in (18, DRAW, DRAW):
        game.push(move)
    assert [game.undo() for _ in range(3)] == [DRAW, DRAW, 18]
    assert game.state_key() == Game(game.deal).state_key()


def test_undo_with_nothing_played_is_refused() -> None:
    assert refusal(Game(make_deal())) is Reason.NOTHING_TO_UNDO


def test_undo_can_be_switched_off_as_a_room_option() -> None:
    game = Game(make_deal(waste="2C"), allow_undo=False)
    game.draw()
    assert game.check_undo() is Reason.UNDO_NOT_ALLOWED
    assert refusal(game) is Reason.UNDO_NOT_ALLOWED
    assert Game(make_deal()).allow_undo is True


def test_undo_leads_out_of_a_stuck_game() -> None:
    game = stuck_game()
    assert game.status is Status.STUCK
    assert game.undo() == DRAW
    assert game.outcome() is None and game.stock_left == 1


def test_undo_after_a_win_is_refused() -> None:
    game = replay(staircase_deal(), STAIRCASE_ORDER)
    assert refusal(game) is Reason.GAME_OVER


# ---- the end ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rules", [Rules(), Rules(wrap=False), Rules(empty_waste=True), Rules(False, True)]
)
def test_the_game_is_won_when_all_28_peak_cards_are_played(rules: Rules) -> None:
    game = Game(staircase_deal(rules))
    for position in STAIRCASE_ORDER[:-1]:
        game.play(position)
        assert game.outcome() is None
    game.play(STAIRCASE_ORDER[-1])
    assert game.outcome() == Outcome(Status.WON) and game.outcome().won  # type: ignore[union-attr]
    assert game.cleared == 28 and game.view().cleared == 28 and game.view().status is Status.WON


def test_a_win_does_not_need_the_stock_to_be_empty() -> None:
    game = replay(staircase_deal(), STAIRCASE_ORDER)
    assert game.stock_left == 23 and game.status is Status.WON


def test_after_a_win_no_move_is_legal() -> None:
    game = replay(staircase_deal(), STAIRCASE_ORDER)
    assert game.legal_moves() == []
    assert refusal(game, DRAW) is Reason.GAME_OVER
    assert refusal(game, 18) is Reason.GAME_OVER


def test_the_game_is_stuck_when_the_stock_is_empty_and_no_free_card_fits() -> None:
    game = stuck_game()
    assert game.outcome() == Outcome(Status.STUCK) and not game.outcome().won  # type: ignore[union-attr]
    assert game.legal_moves() == [] and game.view().status is Status.STUCK


def test_nothing_fitting_is_not_stuck_while_the_stock_has_cards() -> None:
    game = Game(make_deal(bottom(*ODD_ROW), waste="KC"))
    assert game.legal_moves() == [DRAW] and game.outcome() is None


def test_a_stuck_game_refuses_plays_and_draws_as_game_over() -> None:
    game = stuck_game()
    assert refusal(game, DRAW) is Reason.GAME_OVER
    assert refusal(game, 18) is Reason.GAME_OVER
    with pytest.raises(IllegalMoveError, match=r"the game is over: .* \(stuck\)"):
        game.draw()


def test_standings_rank_cleared_cards_then_finish_time_then_moves() -> None:
    players = {
        "all28_slow": standing_key(28, 90.0, 30),
        "all28_fast_many_moves": standing_key(28, 60.0, 50),
        "all28_fast_few_moves": standing_key(28, 60.0, 40),
        "27_late": standing_key(27, 30.0, 10),
        "27_early": standing_key(27, 20.0, 10),
        "27_unknown_time": standing_key(27, None, 1),
        "26": standing_key(26, 5.0, 5),
    }
    assert sorted(players, key=players.__getitem__) == [
        "all28_fast_few_moves",
        "all28_fast_many_moves",
        "all28_slow",
        "27_early",
        "27_late",
        "27_unknown_time",
        "26",
    ]


# ---- counts ----------------------------------------------------------------------------


def test_moves_count_every_play_and_draw_and_draws_count_the_draws() -> None:
    game = Game(make_deal(bottom("9C", "TC"), waste="8D"))
    for move in (18, DRAW, DRAW):
        game.push(move)
    assert (game.moves, game.draws, game.undos) == (3, 2, 0)


def test_undone_moves_still_count_and_each_undo_is_counted() -> None:
    game = Game(make_deal(bottom("9C"), waste="8D"))
    game.play(18)
    game.undo()
    game.draw()
    game.undo()
    assert (game.moves, game.draws, game.undos) == (2, 1, 2)
    view = game.view()
    assert (view.moves, view.draws, view.undos) == (2, 1, 2)


def test_refused_moves_count_nothing() -> None:
    game = Game(make_deal(bottom("5C"), waste="8D"))
    for move in (18, 9, 30):
        refusal(game, move)
    refusal(game)
    assert (game.moves, game.draws, game.undos) == (0, 0, 0)


# ---- refusals: every reason code ----------------------------------------------------------


def test_reason_codes_are_stable_and_each_has_words() -> None:
    assert {r.name: r.value for r in Reason} == {
        "COVERED": 1,
        "NOT_ADJACENT": 2,
        "ALREADY_PLAYED": 3,
        "STOCK_EMPTY": 4,
        "NOTHING_TO_UNDO": 5,
        "GAME_OVER": 6,
        "NO_SUCH_POSITION": 7,
        "UNDO_NOT_ALLOWED": 8,
    }
    assert set(REASON_TEXT) == set(Reason) and all(REASON_TEXT.values())


def test_an_illegal_move_error_is_a_value_error_with_the_reason_words() -> None:
    error = IllegalMoveError(Reason.STOCK_EMPTY)
    assert isinstance(error, ValueError) and str(error) == "the stock is empty"


def test_an_illegal_move_error_keeps_its_reason_across_processes() -> None:
    error = IllegalMoveError(Reason.COVERED, "position 3 is still covered by 9 and 10")
    copy = pickle.loads(pickle.dumps(error))
    assert copy.reason is Reason.COVERED and str(copy) == str(error)


def test_a_deal_and_its_rules_survive_pickling_for_the_process_pool() -> None:
    deal = staircase_deal(Rules(wrap=False, empty_waste=True))
    assert pickle.loads(pickle.dumps(deal)) == deal
    assert hash(pickle.loads(pickle.dumps(deal))) == hash(deal)


def test_refusal_covered() -> None:
    game = Game(make_deal(bottom("9C"), waste="8D"))
    assert refusal(game, 3) is Reason.COVERED


def test_refusal_not_adjacent() -> None:
    game = Game(make_deal(bottom("3C"), waste="8D"))
    assert refusal(game, 18) is Reason.NOT_ADJACENT


def test_refusal_already_played() -> None:
    game = Game(make_deal(bottom("9C"), waste="8D"))
    game.play(18)
    assert refusal(game, 18) is Reason.ALREADY_PLAYED


def test_refusal_stock_empty() -> None:
    game = Game(make_deal(bottom(*ODD_ROW), waste="2C", stock_end=["6C"]))
    for _ in range(23):
        game.draw()
    assert refusal(game, DRAW) is Reason.STOCK_EMPTY


def test_refusal_nothing_to_undo() -> None:
    assert refusal(Game(make_deal())) is Reason.NOTHING_TO_UNDO


def test_refusal_game_over() -> None:
    assert refusal(stuck_game(), DRAW) is Reason.GAME_OVER


@pytest.mark.parametrize("move", [-1, 28, 100, True, False, "3", "DRAW", None, 2.0])
def test_refusal_no_such_position(move: object) -> None:
    game = Game(make_deal())
    assert game.check(move) is Reason.NO_SUCH_POSITION  # type: ignore[arg-type]
    assert refusal(game, move) is Reason.NO_SUCH_POSITION
    with pytest.raises(InvalidMoveError, match=r"no position|not a move"):
        game.push(move)  # type: ignore[arg-type]


def test_a_malformed_move_is_an_invalid_move_and_a_refused_one_is_not() -> None:
    game = Game(make_deal(bottom("3C"), waste="8D"))
    with pytest.raises(InvalidMoveError) as invalid:
        game.play(28)
    assert isinstance(invalid.value, IllegalMoveError)
    with pytest.raises(IllegalMoveError) as refused:
        game.play(18)
    assert not isinstance(refused.value, InvalidMoveError)
    assert isinstance(pickle.loads(pickle.dumps(invalid.value)), InvalidMoveError)


def test_refusal_undo_not_allowed() -> None:
    game = Game(make_deal(), allow_undo=False)
    assert refusal(game) is Reason.UNDO_NOT_ALLOWED


def test_refusal_messages_say_why_without_naming_a_face_down_card() -> None:
    game = Game(make_deal({9: "QC", 18: "3C"}, waste="8D"))
    with pytest.raises(IllegalMoveError) as covered:
        game.play(9)
    assert str(covered.value) == "position 9 is still covered by 18 and 19"
    assert "QC" not in str(covered.value)
    with pytest.raises(IllegalMoveError) as wrong_rank:
        game.play(18)
    assert str(wrong_rank.value) == "3C is not one rank above or below the waste card 8D"


def test_position_queries_refuse_a_position_off_the_board() -> None:
    game = Game(make_deal())
    with pytest.raises(IndexError):
        game.is_free(-1)
    with pytest.raises(IndexError):
        game.is_face_up(28)
    with pytest.raises(TypeError):
        game.is_removed("3")  # type: ignore[arg-type]


# ---- the player view and the API ---------------------------------------------------------


def test_the_view_shows_face_up_cards_hides_face_down_ones_and_blanks_played_ones() -> None:
    game = Game(make_deal({18: "9C", 19: "TC", 9: "QC", 10: "KH"}, waste="8D"))
    game.play(18)
    game.play(19)
    board = game.view().board
    assert board[18] is None and board[19] is None and board[9] == "QC"
    assert board[10] == HIDDEN and board[3] == HIDDEN and board[20] != HIDDEN


def test_the_view_counts_the_stock_but_never_names_a_stock_card() -> None:
    deal = make_deal(waste="2C")
    game = Game(deal)
    game.draw()
    text = repr(game.view())
    assert game.view().stock_left == 22
    assert all(f"'{card_code(card)}'" not in text for card in deal.stock[1:])


def test_legal_moves_lists_free_fitting_positions_in_order_then_draw() -> None:
    game = Game(make_deal(bottom("5C", "9C", "7C", "7D", "9D"), waste="8D"))
    assert game.legal_moves() == [19, 20, 21, 22, DRAW]
    assert all(game.is_legal(m) for m in game.legal_moves())
    assert not game.is_legal(18)


def test_push_plays_a_position_or_draws() -> None:
    game = Game(make_deal(bottom("9C"), waste="8D", stock=["4H"]))
    game.push(18)
    game.push(DRAW)
    assert game.history == (18, DRAW) and game.view().waste_top == "4H"


def test_replay_of_the_history_gives_the_same_state() -> None:
    game = Game(staircase_deal())
    for move in (18, 19, DRAW, DRAW):
        game.push(move)
    game.undo()
    assert replay(game.deal, game.history).state_key() == game.state_key()


def test_replay_raises_on_an_illegal_move() -> None:
    with pytest.raises(IllegalMoveError) as raised:
        replay(staircase_deal(), [18, 20])
    assert raised.value.reason is Reason.NOT_ADJACENT


# ---- seeds -----------------------------------------------------------------------------


def test_an_integer_seed_is_its_decimal_text() -> None:
    assert seed_text(42) == "42" and seed_text(2**64 - 1) == str(2**64 - 1)
    assert candidate_deal(seed_text(42), 0, Rules()) == candidate_deal("42", 0, Rules())


@pytest.mark.parametrize("seed", ["", "x" * 65, "tab\there", "new\nline"])
def test_a_seed_is_1_to_64_printable_characters(seed: str) -> None:
    with pytest.raises(SeedError):
        shuffled_deck(seed)
    assert shuffled_deck("x" * 64) != shuffled_deck("x" * 63)


@pytest.mark.parametrize("seed", [True, 2**64, -(2**63) - 1, 1.5])
def test_a_seed_that_is_not_text_or_a_64_bit_integer_is_refused(seed: object) -> None:
    with pytest.raises(SeedError):
        seed_text(seed)  # type: ignore[arg-type]


def test_the_same_seed_gives_the_same_deal_and_each_candidate_another() -> None:
    assert candidate_deal("race", 0, Rules()) == candidate_deal("race", 0, Rules())
    assert candidate_deal("race", 1, Rules()) != candidate_deal("race", 0, Rules())
    with pytest.raises(SeedError):
        shuffled_deck("race", -1)
