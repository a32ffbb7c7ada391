"""What a room's race_over says of each player, as docs/protocol.md documents `Standing`."""

from __future__ import annotations

from protocol.rules.game import DRAW
from protocol.wire import messages as m
from tests.server.race.roomdriver import DEALT, UNDO, racing


def test_a_player_who_resigns_with_nothing_cleared_has_time_zero() -> None:
    race = racing(players=2)
    race.feed(race.room.resign("p1", 1_300))
    race.feed(race.room.resign("p0", 2_000))
    standing = race.standings()["p1"]
    assert standing.status is m.PlayerStatus.RESIGNED
    assert (standing.cleared, standing.time_ms) == (0, 0)


def test_a_non_finishers_time_is_the_race_time_of_their_last_clear() -> None:
    race = racing(players=2)
    at, last_play, plays = 0, 0, 0
    for move in DEALT.solution:
        at += 700
        assert race.move("p0", move, at).accepted
        if move != DRAW:
            last_play, plays = at, plays + 1
            if plays == 5:
                break
    assert race.move("p0", DRAW, at + 4_000).accepted  # a later draw leaves the time alone
    race.feed(race.room.resign("p0", at + 9_000))
    race.feed(race.room.resign("p1", at + 9_500))
    standing = race.standings()["p0"]
    assert standing.status is m.PlayerStatus.RESIGNED and standing.cleared == 5
    assert standing.time_ms == last_play


def test_an_accepted_undo_sets_a_non_finishers_time_too() -> None:
    race = racing(players=2, undo=m.UndoPolicy.FREE)
    line = DEALT.solution[: [i for i, move in enumerate(DEALT.solution) if move != DRAW][1] + 1]
    for n, move in enumerate(line, start=1):
        assert race.move("p0", move, 1_000 * n).accepted
    assert race.move("p0", UNDO, 9_500).undone is m.MoveAction.PLAY
    race.feed(race.room.resign("p0", 12_000))
    race.feed(race.room.resign("p1", 12_000))
    standing = race.standings()["p0"]
    assert (standing.cleared, standing.time_ms) == (1, 9_500)


def test_an_undone_draw_leaves_a_non_finishers_time_alone() -> None:
    race = racing(players=2, undo=m.UndoPolicy.FREE)
    first_play = next(i for i, move in enumerate(DEALT.solution) if move != DRAW)
    for n, move in enumerate(DEALT.solution[: first_play + 1], start=1):
        assert race.move("p0", move, 1_000 * n).accepted
    played_at = 1_000 * (first_play + 1)
    assert race.move("p0", DRAW, played_at + 2_000).accepted
    assert race.move("p0", UNDO, played_at + 3_000).undone is m.MoveAction.DRAW
    race.feed(race.room.resign("p0", played_at + 9_000))
    race.feed(race.room.resign("p1", played_at + 9_000))
    standing = race.standings()["p0"]
    assert (standing.cleared, standing.time_ms) == (1, played_at)


def test_a_finishers_time_is_the_race_time_of_the_winning_move_plus_penalties() -> None:
    race = racing(players=2, undo=m.UndoPolicy.PENALTY)
    race.move("p0", DRAW, 500)
    race.move("p0", UNDO, 600)
    at = 600
    for move in DEALT.solution:
        at += 300
        race.move("p0", move, at)
    race.feed(race.room.resign("p1", at + 1_000))
    standing = race.standings()["p0"]
    assert standing.status is m.PlayerStatus.FINISHED
    assert standing.time_ms == at + 5_000 and standing.penalty_ms == 5_000
