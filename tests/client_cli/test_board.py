"""The client's board model agrees with the shared engine and never knows more than the player."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client_cli.board import (
    UNDO,
    UNKNOWN,
    UNSURE,
    Action,
    Board,
    Knowledge,
    start_knowledge,
    view_codes,
)
from client_cli.state import Opponent
from client_cli.tui.watch import watch_panel
from protocol.deals.shuffle import candidate_deal
from protocol.rules.cards import card_code, parse_card
from protocol.rules.game import DRAW, Game, Rules, Status
from protocol.rules.layout import BOTTOM_ROW
from protocol.rules.refusals import Reason
from protocol.wire import messages as m
from tests.offline import server_answer

RULE_SETS = [Rules(), Rules(wrap=False), Rules(empty_waste=True), Rules(False, True)]


def fresh(seed: str, rules: Rules) -> tuple[Game, Board]:
    game = Game(candidate_deal(seed, 0, rules))
    view = game.view()
    known = start_knowledge(rules, view.board[18:], view.waste_top)  # type: ignore[arg-type]
    return game, Board(known)


def truth_check(game: Game, action: Action) -> Reason | None:
    if action == UNDO:
        return game.check_undo()
    return game.check(action)


def assert_same(known: Knowledge, game: Game) -> None:
    view = game.view()
    assert view_codes(known) == view.board
    top = known.waste_top
    assert (None if top is None else card_code(top)) == view.waste_top
    assert known.stock_left == view.stock_left
    assert known.status is view.status
    assert (known.moves, known.draws, known.undos) == (view.moves, view.draws, view.undos)


actions = st.lists(
    st.one_of(st.integers(-1, 28), st.just(DRAW), st.just(UNDO)), min_size=1, max_size=120
)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), rules=st.sampled_from(RULE_SETS), script=actions)
def test_confirmed_board_matches_the_engine_move_by_move(
    seed: int, rules: Rules, script: list[Action]
) -> None:
    game, board = fresh(str(seed), rules)
    assert_same(board.confirmed, game)
    for action in script:
        verdict = board.check(action)
        expected = truth_check(game, action)
        assert verdict != UNSURE, "with nothing in flight the known cards decide every move"
        assert verdict == expected
        if verdict is not None:
            continue
        seq = board.propose(action)
        answer = server_answer(game, action)
        assert isinstance(answer, dict)
        assert board.accept(seq, **answer)
        assert_same(board.confirmed, game)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10**6), rules=st.sampled_from(RULE_SETS), data=st.data())
def test_optimistic_moves_show_the_right_board_before_the_server_answers(
    seed: int, rules: Rules, data: st.DataObject
) -> None:
    game, board = fresh(str(seed), rules)
    for _ in range(60):
        burst = data.draw(st.integers(1, 4))
        sent: list[tuple[int, Action]] = []
        for _ in range(burst):
            shown = board.shown
            options: list[Action] = [*shown.playable(), DRAW, UNDO]
            action = data.draw(st.sampled_from(options))
            if board.check(action) is not None:
                continue
            sent.append((board.propose(action), action))
        for seq, action in sent:
            answer = server_answer(game, action)
            if isinstance(answer, Reason):
                assert board.reject(seq) == action
            else:
                assert board.accept(seq, **answer)
        assert not board.pending
        assert_same(board.shown, game)
        if game.status is not Status.PLAYING:
            break


def test_a_play_of_a_known_card_is_shown_at_once_and_its_uncovered_cards_come_later() -> None:
    game, board = fresh("7", Rules())
    while not board.shown.playable():
        seq = board.propose(DRAW)
        answer = server_answer(game, DRAW)
        assert isinstance(answer, dict)
        board.accept(seq, **answer)
    position = board.shown.playable()[0]
    card = board.shown.peaks[position]
    seq = board.propose(position)
    assert board.shown.removed[position]
    assert board.shown.waste_top == card
    assert not board.confirmed.removed[position]
    answer = server_answer(game, position)
    assert isinstance(answer, dict)
    board.accept(seq, **answer)
    for q, code in answer["uncovered"].items():
        assert board.shown.visible(q) == parse_card(code)


def test_a_rejected_move_rolls_the_screen_back() -> None:
    game, board = fresh("11", Rules())
    before = view_codes(board.shown), board.shown.waste_top, board.shown.stock_left
    seq = board.propose(DRAW)
    assert board.shown.stock_left == game.stock_left - 1
    assert board.shown.waste_top == UNKNOWN  # the drawn card is the server's to tell
    assert board.reject(seq) == DRAW
    assert (view_codes(board.shown), board.shown.waste_top, board.shown.stock_left) == before


def test_an_unknown_draw_makes_the_next_play_unsure_until_the_server_answers() -> None:
    _game, board = fresh("3", Rules())
    board.propose(DRAW)
    assert board.check(BOTTOM_ROW[0]) == UNSURE


def test_a_draw_after_undoing_a_draw_shows_the_card_already_seen() -> None:
    game, board = fresh("5", Rules())
    seq = board.propose(DRAW)
    answer = server_answer(game, DRAW)
    assert isinstance(answer, dict)
    board.accept(seq, **answer)
    drawn = board.confirmed.waste_top
    seq = board.propose(UNDO)
    board.accept(seq, **server_answer(game, UNDO))  # type: ignore[arg-type]
    board.propose(DRAW)
    assert board.shown.waste_top == drawn


def test_the_model_never_holds_a_card_the_player_was_not_shown() -> None:
    game, board = fresh("99", Rules())
    shown = {parse_card(c) for c in game.view().board if c not in (None, "??")}
    assert game.waste_top is not None
    shown.add(game.waste_top)
    known = {c for c in board.confirmed.peaks if c != UNKNOWN} | set(board.confirmed.waste)
    assert known == shown


@pytest.mark.parametrize(
    ("action", "reason"),
    [(0, Reason.COVERED), (28, Reason.NO_SUCH_POSITION), (UNDO, Reason.NOTHING_TO_UNDO)],
)
def test_sure_illegal_moves_are_refused_with_the_engines_reason(
    action: Action, reason: Reason
) -> None:
    _, board = fresh("1", Rules())
    assert board.check(action) == reason


def test_undo_is_refused_locally_when_the_room_forbids_it() -> None:
    known = start_knowledge(Rules(), ["AS"] * 10, "2H", undo_allowed=False)
    assert Board(known).check(UNDO) == Reason.UNDO_NOT_ALLOWED


def test_after_a_resync_an_undo_is_left_to_the_server() -> None:
    board = ["??"] * 18 + [None, "5H", *["KC"] * 8]
    known = Knowledge.from_view(Rules(), board, "4C", 20, history_complete=False)
    assert Board(known).check(UNDO) == UNSURE


def test_resync_keeps_later_pending_moves_and_cards_already_seen() -> None:
    game, board = fresh("21", Rules())
    first = board.propose(DRAW)
    second = board.propose(DRAW)
    answer = server_answer(game, DRAW)
    assert isinstance(answer, dict)
    view = game.view()
    fresh_known = Knowledge.from_view(
        Rules(), view.board, view.waste_top, view.stock_left, moves=1, draws=1,
        history_complete=False,
    )
    board.resync(fresh_known, last_seq=first)
    assert [item.seq for item in board.pending] == [second]
    assert board.next_seq == second + 1
    assert board.confirmed.peaks[BOTTOM_ROW[0]] != UNKNOWN


def test_a_board_of_the_wrong_size_is_refused() -> None:
    with pytest.raises(ValueError, match="28 positions"):
        Knowledge.from_view(Rules(), ["??"] * 27, None, 24)


def test_a_whole_winning_line_typed_ahead_of_the_server_is_never_refused_locally() -> None:
    from protocol.deals.dealer import deal_for_seed

    dealt = deal_for_seed("typed-ahead", Rules())
    game = Game(dealt.deal)
    view = game.view()
    board = Board(start_knowledge(Rules(), view.board[18:], view.waste_top))  # type: ignore[arg-type]
    sent = []
    for step in dealt.solution:
        assert not isinstance(board.check(step), Reason)
        sent.append((board.propose(step), step))
    for seq, step in sent:
        answer = server_answer(game, step)
        assert isinstance(answer, dict)
        assert board.accept(seq, **answer)
    assert board.shown.status is Status.WON


def test_a_spectator_board_with_hidden_faces_and_waste_top_is_drawn_with_backs() -> None:
    board = ("??",) * 18 + ("??", "5S", None) + ("??",) * 7
    view = m.BoardView(board, "??", 20, 4, 3, 0, Status.PLAYING)
    known = Knowledge.from_view(Rules(), view.board, view.waste_top, view.stock_left)
    assert known.waste_top == UNKNOWN and known.cleared == 1
    assert known.peaks[19] == parse_card("5S") and known.peaks[18] == UNKNOWN
    panel = watch_panel(Opponent("p1", "ann", board=view), Rules()).plain
    assert "ann" in panel and "waste" in panel
