"""A kicked player cannot take a seat again until the room's next race has started.

The bar matches the player id (a resumed session keeps it) and the name,
ignoring case; it does not stop anyone watching, and it lifts when the next
race starts.  Refusals are error 118 ``KICKED``.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from server.race.outputs import DealRequest
from server.race.room import Room
from server.race.room_types import Fresh, Identity, RoomTimings
from tests.server.race.test_core import DEALT
from tests.serverutil import connect, open_room, running_server


def lobby(*names: str) -> Room:
    room = Room("ABCDEF", m.RoomOptions(countdown_s=0, practice_seed="42"),
                Identity("p0", "ann"), 0, RoomTimings())
    for n, name in enumerate(names, 1):
        room.join(Identity(f"p{n}", name), m.Role.PLAYER, 0)
    return room


def refused(room: Room, who: Identity, role: m.Role = m.Role.PLAYER) -> ErrorCode | None:
    try:
        room.join(who, role, 0)
    except ProtocolError as exc:
        return exc.code
    return None


def test_a_kicked_player_is_barred_by_id_and_by_name_but_may_watch() -> None:
    room = lobby("Bob")
    room.kick("p0", "p1", 0)
    assert refused(room, Identity("p1", "Bob")) is ErrorCode.KICKED
    assert refused(room, Identity("p9", "bOB")) is ErrorCode.KICKED  # a new session, same name
    assert refused(room, Identity("p1", "robert")) is ErrorCode.KICKED  # same id, new name
    assert refused(room, Identity("p2", "cyd")) is None
    assert refused(room, Identity("p1", "Bob"), m.Role.SPECTATOR) is None


def test_the_bar_lifts_when_the_next_race_starts() -> None:
    room = lobby("bob", "cyd")
    room.kick("p0", "p1", 0)
    room.set_ready("p2", True)
    outputs = room.start("p0", 0, Fresh("unused", "race1"))
    ticket = next(o.ticket for o in outputs if isinstance(o, DealRequest))
    room.deal_ready(ticket, DEALT, 0)
    assert room.phase is m.Phase.RACING
    room.resign("p0", 10)
    room.resign("p2", 10)
    assert room.race_over
    assert refused(room, Identity("p1", "bob")) is None


async def test_on_a_real_server_a_kicked_player_rejoining_gets_118(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (ann, bob), state = await open_room(server.ws_url, ["ann", "bob"], practice_seed="42")
        await ann.send(m.Kick(bob.player_id))
        assert (await bob.expect(m.Left)).reason is m.LeftReason.KICKED
        error = await bob.request(m.Join(state.code), m.Error)
        assert error.code == ErrorCode.KICKED and "next race" in error.message
        assert bob.welcome is not None  # a resumed session is the same player
        await bob.close()
        again = await connect(server.ws_url, "bob", token=bob.welcome.token)
        assert (await again.request(m.Join(state.code), m.Error)).code == ErrorCode.KICKED
        other = await connect(server.ws_url, "BOB")  # a new session with the same name
        assert (await other.request(m.Join(state.code), m.Error)).code == ErrorCode.KICKED
        watching = await other.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        assert watching.code == state.code
        await ann.send(m.Start())  # alone: a solo race lifts the bar
        await ann.expect(m.RaceStart)
        await ann.send(m.Resign())
        await ann.expect(m.RaceOver)
        seated = await again.request(m.Join(state.code), m.RoomState)
        assert again.player_id in {mb.player_id for mb in seated.members}


@pytest.mark.parametrize("limit", ["%205", "+5", "1_0", "\u0665", "5%20", "-1", "0x5", "\uff15"])
async def test_the_race_list_limit_takes_ascii_digits_only(tmp_path: Path, limit: str) -> None:
    async with running_server(tmp_path) as server, aiohttp.ClientSession(server.url) as http:
        async with http.get(f"/api/races?limit={limit}") as response:
            assert response.status == 400
            assert "limit" in (await response.json())["error"]
        async with http.get("/api/races?limit=5") as response:
            assert response.status == 200
