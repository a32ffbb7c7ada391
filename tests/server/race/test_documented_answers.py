"""What docs/protocol.md and docs/rules.md promise of a room's answers: the race clock's
zero, what an undo names, undo after a win, and the error codes the server never sends."""

from __future__ import annotations

import json

import pytest

from protocol.rules.game import DRAW
from protocol.rules.refusals import Reason
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from server.race.outputs import SetTimer
from server.race.room_timers import COUNTDOWN_TIMER
from server.race.room_types import Identity
from tests.server.race.roomdriver import DEALT, UNDO, Driver, racing


def test_the_race_clock_counts_from_when_the_countdown_timer_fired_not_the_planned_start() -> (
    None
):
    driver = Driver(players=2, countdown_s=3)
    outputs = driver.start(now_ms=10_000)
    (countdown,) = driver.sent(m.Countdown)
    assert isinstance(countdown, m.Countdown)
    assert countdown.start_at_ms == 13_000
    assert SetTimer(COUNTDOWN_TIMER, 13_000) in outputs
    driver.feed(driver.room.on_timer(COUNTDOWN_TIMER, 13_002))  # the timer fires a bit late
    (start,) = driver.sent(m.RaceStart)
    assert isinstance(start, m.RaceStart)
    assert start.started_at_ms == 13_002 != countdown.start_at_ms
    assert driver.move("p0", DRAW, 14_002).elapsed_ms == 1_000
    resync = driver.room.resync("p0", 15_002)
    assert resync.started_at_ms == start.started_at_ms and resync.elapsed_ms == 2_000


def test_an_accepted_undo_names_a_play_or_a_draw_on_the_wire() -> None:
    race = racing(players=2, undo=m.UndoPolicy.FREE)
    first_play = DEALT.solution[0]
    assert first_play != DRAW
    assert race.move("p0", first_play, 100).accepted
    assert race.move("p0", DRAW, 200).accepted
    answers = [race.move("p0", UNDO, 300), race.move("p0", UNDO, 400)]
    assert [a.undone for a in answers] == [m.MoveAction.DRAW, m.MoveAction.PLAY]
    wire = [json.loads(codec.encode_json(a))["undone"] for a in answers]
    assert wire == ["draw", "play"]
    refused = race.move("p0", UNDO, 500)
    assert (refused.accepted, refused.reason, refused.undone) == (
        False, Reason.NOTHING_TO_UNDO, None,
    )


@pytest.mark.parametrize("undo", list(m.UndoPolicy))
def test_an_undo_after_a_win_is_refused_as_game_over(undo: m.UndoPolicy) -> None:
    race = racing(players=2, undo=undo)
    for n, move in enumerate(DEALT.solution, start=1):
        race.move("p0", move, 100 * n)
    refused = race.move("p0", UNDO, 100_000)
    assert (refused.accepted, refused.reason) == (False, Reason.GAME_OVER)
    assert refused.status.value == "won" and refused.cleared == 28


def test_a_host_alone_may_start_a_solo_race() -> None:
    solo = racing(players=1)
    assert list(solo.room.race.racers) == ["p0"]  # type: ignore[union-attr]


def test_a_seated_racer_who_asks_to_watch_is_told_they_are_in_the_room() -> None:
    race = racing(players=2)
    with pytest.raises(ProtocolError) as refused:
        race.room.join(Identity("p1", "player1"), m.Role.SPECTATOR, 1_000)
    assert refused.value.code is ErrorCode.ALREADY_IN_ROOM


def test_a_player_who_leaves_a_running_race_may_watch_it_at_once() -> None:
    race = racing(players=3)
    race.feed(race.room.leave("p1", 1_000))
    assert race.room.phase is m.Phase.RACING
    race.feed(race.room.join(Identity("p1", "player1"), m.Role.SPECTATOR, 1_000))
    assert race.room.role_of("p1") is m.Role.SPECTATOR
