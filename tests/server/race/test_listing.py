"""The public room list's summaries: made again exactly when what a room shows changes."""

from __future__ import annotations

from protocol.wire import messages as m
from server.race.listing import Summaries
from server.race.lobby import LISTED_ROOMS, Limits, Lobby, NewPlayer
from server.race.room_types import RoomTimings


def _lobby_with_rooms(count: int) -> Lobby[str]:
    lob: Lobby[str] = Lobby(Limits(5, 1000), RoomTimings())
    for n in range(count):
        conn = f"host{n}"
        lob.hello(conn, m.Hello("ann", m.PROTOCOL_VERSION), NewPlayer(f"p{n}", f"t{n}"), 0)
        lob.create_room(conn, m.RoomOptions(public=True), iter([f"ROOM{n:02}"]), n)
    return lob


def _fresh(lob: Lobby[str]) -> list[m.RoomSummary]:
    return [lob.rooms[summary.code].summary() for summary in lob.public_rooms()]


def test_an_unchanged_room_is_listed_with_the_same_summary_object() -> None:
    lob = _lobby_with_rooms(3)
    first, second = lob.public_rooms(), lob.public_rooms()
    assert all(a is b for a, b in zip(first, second, strict=True))
    assert first == _fresh(lob)


def test_a_player_or_spectator_joining_or_new_options_change_that_rooms_summary_only() -> None:
    lob = _lobby_with_rooms(3)
    before = {summary.code: summary for summary in lob.public_rooms()}
    for conn, role, code in (("c1", m.Role.PLAYER, "ROOM01"), ("c2", m.Role.SPECTATOR, "ROOM02")):
        lob.hello(conn, m.Hello("bob", m.PROTOCOL_VERSION), NewPlayer(conn, "t-" + conn), 5)
        lob.join(conn, m.Join(code, role), code, 5)
    listed = {summary.code: summary for summary in lob.public_rooms()}
    assert listed["ROOM00"] is before["ROOM00"]
    assert (listed["ROOM01"].players, listed["ROOM01"].spectators) == (2, 0)
    assert (listed["ROOM02"].players, listed["ROOM02"].spectators) == (1, 1)
    room = lob.rooms["ROOM00"]
    room.update_options("p0", m.RoomOptions(public=True, name="renamed"))
    assert {s.code: s for s in lob.public_rooms()}["ROOM00"].options.name == "renamed"
    assert lob.public_rooms() == _fresh(lob)


def test_a_room_whose_phase_changes_is_listed_in_its_new_phase() -> None:
    lob = _lobby_with_rooms(2)
    lob.public_rooms()
    lob.rooms["ROOM01"].phase = m.Phase.COUNTDOWN
    assert [s.phase for s in lob.public_rooms()] == [m.Phase.COUNTDOWN, m.Phase.LOBBY]


def test_summaries_of_rooms_no_longer_listed_are_forgotten() -> None:
    lob = _lobby_with_rooms(LISTED_ROOMS + 30)
    summaries = Summaries(keep=10)
    rooms = list(lob.rooms.values())
    for start in range(0, len(rooms) - 10, 5):
        listed = summaries.listed(rooms[start:start + 10])
        assert [s.code for s in listed] == [r.code for r in rooms[start:start + 10]]
        assert len(summaries) <= 20
