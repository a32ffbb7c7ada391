"""Properties of the engine under random play from random seeds (hypothesis)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.deals.shuffle import candidate_deal
from protocol.rules.cards import DECK_SIZE, card_code, is_adjacent, rank_of
from protocol.rules.game import DRAW, HIDDEN, Game, Move, PlayerView, Rules, Status, replay
from protocol.rules.layout import BOTTOM_ROW, COVERED_BY, PEAK_CARDS
from protocol.rules.refusals import IllegalMoveError, Reason

UNDO = "undo"
ALL_RULES = [Rules(), Rules(wrap=False), Rules(empty_waste=True), Rules(False, True)]

seeds = st.one_of(
    st.integers(min_value=0, max_value=2**64 - 1).map(str),
    st.text(st.characters(codec="utf-8", categories=["L", "N", "P"]), min_size=1, max_size=20),
)
PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@dataclass(frozen=True)
class Snapshot:
    """Everything about a game except its counters."""

    key: object
    board: tuple[str | None, ...]
    waste_top: str | None
    stock_left: int
    status: Status
    waste: tuple[int, ...]
    history: tuple[Move, ...]


def snapshot(game: Game) -> Snapshot:
    view = game.view()
    return Snapshot(
        game.state_key(),
        view.board,
        view.waste_top,
        view.stock_left,
        view.status,
        game.waste,
        game.history,
    )


def counters(game: Game) -> tuple[int, int, int]:
    return (game.moves, game.draws, game.undos)


def random_play(data: st.DataObject, game: Game) -> Iterator[tuple[Move | str, Snapshot]]:
    """Make up to 150 random legal moves and undos; yield each with the state before it."""
    for _ in range(data.draw(st.integers(min_value=0, max_value=150), label="length")):
        options: list[Move | str] = list(game.legal_moves())
        if game.check_undo() is None:
            # Undo now and then, so undo chains get exercised without stalling play.
            options += [UNDO] * max(1, len(options) // 3)
        if not options:
            return
        move = data.draw(st.sampled_from(options), label="move")
        before = snapshot(game)
        if move == UNDO:
            game.undo()
        else:
            game.push(move)  # type: ignore[arg-type]
        yield move, before


def start(data: st.DataObject, seed: str) -> Game:
    rules = data.draw(st.sampled_from(ALL_RULES), label="rules")
    return Game(candidate_deal(seed, 0, rules))


def visible_codes(view: PlayerView) -> set[str]:
    codes = {entry for entry in view.board if entry not in (None, HIDDEN)}
    return codes | ({view.waste_top} if view.waste_top else set())


@PROPERTY_SETTINGS
@given(seed=seeds, data=st.data())
def test_random_play_keeps_the_52_cards_distinct_and_all_there(
    seed: str, data: st.DataObject
) -> None:
    game = start(data, seed)
    deal = game.deal
    for _ in random_play(data, game):
        on_board = [deal.peaks[p] for p in range(PEAK_CARDS) if not game.is_removed(p)]
        in_stock = list(deal.stock[len(deal.stock) - game.stock_left :])
        everything = [*on_board, *game.waste, *in_stock]
        assert len(everything) == DECK_SIZE
        assert sorted(everything) == list(range(DECK_SIZE))
        # The waste is the start card, then exactly the moves that stand, in order.
        drawn = iter(deal.stock)
        expected = [] if deal.waste is None else [deal.waste]
        expected += [next(drawn) if m == DRAW else deal.peaks[m] for m in game.history]
        assert list(game.waste) == expected
        assert game.cleared == len(game.history) - game.history.count(DRAW)


@PROPERTY_SETTINGS
@given(seed=seeds, data=st.data())
def test_a_card_never_uncovered_never_appears_in_a_player_view(
    seed: str, data: st.DataObject
) -> None:
    game = start(data, seed)
    deal = game.deal
    played: set[int] = set()
    seen = {card_code(deal.peaks[p]) for p in BOTTOM_ROW}
    seen |= set() if deal.waste is None else {card_code(deal.waste)}
    assert visible_codes(game.view()) <= seen
    for move, _ in random_play(data, game):
        # Our own bookkeeping of what the player saw, built from the rules, not the engine.
        if move == UNDO:
            played = {p for p in range(PEAK_CARDS) if game.is_removed(p)}
        elif move == DRAW:
            seen.add(card_code(deal.stock[len(deal.stock) - game.stock_left - 1]))
        else:
            assert isinstance(move, int)
            played.add(move)
            for q in range(PEAK_CARDS):
                if all(c in played for c in COVERED_BY[q]):
                    seen.add(card_code(deal.peaks[q]))
        view = game.view()
        assert visible_codes(view) <= seen
        face_down = [q for q in range(PEAK_CARDS) if not all(c in played for c in COVERED_BY[q])]
        assert all(view.board[q] == HIDDEN for q in face_down)
        undrawn = deal.stock[len(deal.stock) - view.stock_left :]
        assert not visible_codes(view) & {card_code(c) for c in undrawn}


@PROPERTY_SETTINGS
@given(seed=seeds, data=st.data())
def test_undo_restores_the_exact_previous_state(seed: str, data: st.DataObject) -> None:
    game = start(data, seed)
    for move, before in random_play(data, game):
        if move == UNDO:
            continue
        if game.cleared == PEAK_CARDS:
            # A won game is finished for good: the win cannot be taken back.
            assert game.check_undo() is Reason.GAME_OVER
            continue
        counts = counters(game)
        assert game.undo() == move
        assert snapshot(game) == before
        assert counters(game) == (counts[0], counts[1], counts[2] + 1)
        game.push(move)


@PROPERTY_SETTINGS
@given(seed=seeds, data=st.data())
def test_illegal_moves_never_change_the_state(seed: str, data: st.DataObject) -> None:
    game = start(data, seed)
    attempts: list[Move | str] = [*range(-1, PEAK_CARDS + 1), DRAW, UNDO]
    for _ in random_play(data, game):
        move = data.draw(st.sampled_from(attempts), label="attempt")
        reason = game.check_undo() if move == UNDO else game.check(move)  # type: ignore[arg-type]
        if reason is None:
            continue
        before, counts = snapshot(game), counters(game)
        with pytest.raises(IllegalMoveError) as raised:
            if move == UNDO:
                game.undo()
            else:
                game.push(move)  # type: ignore[arg-type]
        assert raised.value.reason is reason
        assert snapshot(game) == before and counters(game) == counts


@PROPERTY_SETTINGS
@given(seed=seeds, data=st.data())
def test_legal_moves_agree_with_check_and_with_the_status(seed: str, data: st.DataObject) -> None:
    game = start(data, seed)
    for _ in random_play(data, game):
        legal = game.legal_moves()
        for move in [*range(PEAK_CARDS), DRAW]:
            assert (game.check(move) is None) == (move in legal)
        assert (game.status is Status.PLAYING) == bool(legal)
        assert (game.outcome() is None) == bool(legal)


@PROPERTY_SETTINGS
@given(seed=seeds, data=st.data())
def test_replaying_the_history_reaches_the_same_state(seed: str, data: st.DataObject) -> None:
    game = start(data, seed)
    for _ in random_play(data, game):
        pass
    again = replay(game.deal, game.history)
    assert snapshot(again) == snapshot(game)
    assert again.moves == len(game.history) and again.undos == 0


@PROPERTY_SETTINGS
@given(seed=seeds, data=st.data())
def test_tally_and_take_back_say_what_the_view_says(seed: str, data: st.DataObject) -> None:
    """``tally()`` against the view and the rules' own words for the status (docs/rules.md:
    won with all 28 played, stuck with no stock and no free fitting card);
    ``take_back()`` against the positions the view turns face down."""
    game = start(data, seed)
    for move, _ in random_play(data, game):
        view = game.view()
        wrap, waste = game.rules.wrap, game.waste
        fits = any(
            game.is_free(p) and (
                not waste or is_adjacent(rank_of(game.deal.peaks[p]), rank_of(waste[-1]), wrap)
            )
            for p in range(PEAK_CARDS)
        )
        status = (
            Status.WON if view.cleared == PEAK_CARDS
            else Status.STUCK if not view.stock_left and not fits
            else Status.PLAYING
        )
        top = game.waste[-1] if game.waste else None
        assert top is None or card_code(top) == view.waste_top
        assert game.tally() == (
            top, view.stock_left, view.cleared, view.moves, view.draws, view.undos, status
        )
        if move != UNDO and game.check_undo() is None:
            undone, hidden = game.take_back()
            after = game.view().board
            assert undone == move
            assert hidden == tuple(
                q for q in range(PEAK_CARDS) if after[q] == HIDDEN and view.board[q] != HIDDEN
            )
            game.push(move)
