"""The room's rematch when a hold-out leaves, and equal names told apart."""

from __future__ import annotations

from protocol.wire import messages as m
from server.race.outputs import DealRequest
from server.race.room import Room
from server.race.room_types import Fresh, Identity, RoomTimings
from tests.server.race.roomdriver import racing


def finished(players: int) -> Room:
    driver = racing(players)
    for n in range(players):
        driver.feed(driver.room.resign(f"p{n}", 10))
    assert driver.room.phase is m.Phase.FINISHED
    return driver.room


def test_the_rematch_starts_when_the_last_member_who_had_not_asked_leaves() -> None:
    room = finished(3)
    room.rematch("p0", 20, Fresh("s2", "race-2"))
    room.rematch("p1", 21, Fresh("s3", "race-3"))
    assert room.phase is m.Phase.FINISHED
    outputs = room.leave("p2", 22)
    assert room.phase is m.Phase.COUNTDOWN
    assert len([out for out in outputs if isinstance(out, DealRequest)]) == 1


def test_a_leave_before_anyone_asked_for_a_rematch_starts_nothing() -> None:
    room = finished(3)
    outputs = room.leave("p2", 22)
    assert room.phase is m.Phase.FINISHED
    assert not [out for out in outputs if isinstance(out, DealRequest)]


def test_a_second_player_with_a_taken_name_is_told_apart_by_a_number() -> None:
    room = Room("ABCDEF", m.RoomOptions(), Identity("p0", "root"), 0, RoomTimings())
    room.join(Identity("p1", "root"), m.Role.PLAYER, 0)
    room.join(Identity("p2", "root"), m.Role.PLAYER, 0)
    long = "x" * m.MAX_NAME_LENGTH
    room.join(Identity("p3", long), m.Role.PLAYER, 0)
    room.join(Identity("p4", long), m.Role.PLAYER, 0)
    names = [member.name for member in room.state(m.Role.PLAYER).members]
    assert names == ["root", "root (2)", "root (3)", long, "x" * 20 + " (2)"]
    assert all(len(name) <= m.MAX_NAME_LENGTH for name in names)
