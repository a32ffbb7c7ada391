"""Rooms over real sockets: lobby, host rights, kick, options, limits, rematch, closing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp

from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode
from server.ids import ROOM_CODE_ALPHABET, ROOM_CODE_LENGTH
from tests.serverutil import connect, open_room, running_server


async def test_creating_a_room_gives_a_six_character_code_without_look_alikes(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        ann = await connect(server.ws_url, "ann")
        state = await ann.request(m.CreateRoom(), m.RoomState)
        assert len(state.code) == ROOM_CODE_LENGTH
        assert set(state.code) <= set(ROOM_CODE_ALPHABET)
        assert not set(state.code) & set("0O1IL")
        assert state.host_id == ann.player_id and state.phase is m.Phase.LOBBY


async def test_the_lobby_shows_members_and_their_ready_flags(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        clients, state = await open_room(server.ws_url, ["ann", "bob"])
        ann, bob = clients
        assert [(mb.name, mb.ready) for mb in state.members] == [("ann", False), ("bob", True)]
        await bob.send(m.Ready(False))
        state = await ann.expect(m.RoomState)
        assert [(mb.name, mb.ready) for mb in state.members] == [("ann", False), ("bob", False)]


async def test_only_the_host_may_start_kick_or_change_options(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob"])
        ann, bob = clients
        for message in (m.Start(), m.Kick(ann.player_id), m.UpdateOptions(m.RoomOptions())):
            error = await bob.request(message, m.Error)
            assert error.code == ErrorCode.NOT_HOST and error.ref == message.TAG


async def test_the_host_cannot_start_until_every_member_is_ready(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob"])
        ann, bob = clients
        await bob.send(m.Ready(False))
        await ann.expect(m.RoomState)
        error = await ann.request(m.Start(), m.Error)
        assert error.code == ErrorCode.PLAYERS_NOT_READY and "bob" in error.message


async def test_when_the_host_leaves_the_role_passes_to_the_next_member(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob", "cyd"])
        ann, bob, cyd = clients
        await ann.send(m.Leave())
        left = await ann.expect(m.Left)
        assert left.reason is m.LeftReason.LEFT
        state = await cyd.expect(m.RoomState)
        while len(state.members) != 2:
            state = await cyd.expect(m.RoomState)
        assert state.host_id == bob.player_id
        assert [mb.name for mb in state.members] == ["bob", "cyd"]
        # The new host has the host's rights.
        await cyd.send(m.Ready(True))
        await bob.send(m.Start())
        assert (await bob.expect(m.RaceStart)).race_id


async def test_the_host_can_kick_a_member_who_is_told_why(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        clients, state = await open_room(server.ws_url, ["ann", "bob"])
        ann, bob = clients
        error = await ann.request(m.Kick(ann.player_id), m.Error)
        assert error.code == ErrorCode.CANNOT_KICK_SELF
        error = await ann.request(m.Kick("p-nobody"), m.Error)
        assert error.code == ErrorCode.NO_SUCH_MEMBER
        await ann.send(m.Kick(bob.player_id))
        left = await bob.expect(m.Left)
        assert left.reason is m.LeftReason.KICKED and left.code == state.code
        state = await ann.expect(m.RoomState)
        while len(state.members) != 1:
            state = await ann.expect(m.RoomState)
        # Out of the room, bob may not take a seat again before its next race.
        barred = await bob.request(m.Join(state.code), m.Error)
        assert barred.code == ErrorCode.KICKED


async def test_the_host_can_change_the_options_in_the_lobby_and_ready_flags_reset(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob"])
        ann, _bob = clients
        options = m.RoomOptions(
            name="Friday race", wrap=False, max_players=4, undo=m.UndoPolicy.OFF
        )
        await ann.send(m.UpdateOptions(options))
        state = await ann.expect(m.RoomState)
        assert state.options == options
        assert not any(mb.ready for mb in state.members)
        too_small = m.RoomOptions(max_players=2)
        await ann.request(m.UpdateOptions(too_small), m.RoomState)  # exactly 2 members: fine


async def test_a_full_room_refuses_another_player(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        _clients, state = await open_room(server.ws_url, ["ann", "bob"], max_players=2)
        cyd = await connect(server.ws_url, "cyd")
        error = await cyd.request(m.Join(state.code), m.Error)
        assert error.code == ErrorCode.ROOM_FULL


async def test_joining_an_unknown_code_is_refused(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        ann = await connect(server.ws_url, "ann")
        error = await ann.request(m.Join("XXXXXX"), m.Error)
        assert error.code == ErrorCode.ROOM_NOT_FOUND


async def test_players_cannot_join_a_race_that_has_started(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (ann,), state = await open_room(server.ws_url, ["ann"], practice_seed="42")
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        bob = await connect(server.ws_url, "bob")
        error = await bob.request(m.Join(state.code), m.Error)
        assert error.code == ErrorCode.NOT_ALLOWED_NOW


async def test_a_private_room_without_spectators_refuses_a_spectator(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (_ann,), state = await open_room(server.ws_url, ["ann"], allow_spectators=False)
        eve = await connect(server.ws_url, "eve")
        error = await eve.request(m.Join(state.code, m.Role.SPECTATOR), m.Error)
        assert error.code == ErrorCode.SPECTATORS_NOT_ALLOWED


async def test_public_rooms_are_listed_over_http_and_websocket_private_ones_are_not(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        (_ann,), public = await open_room(server.ws_url, ["ann"], public=True, name="Open table")
        (_bob,), private = await open_room(server.ws_url, ["bob"], public=False)
        eve = await connect(server.ws_url, "eve")
        await eve.request(m.Join(public.code, m.Role.SPECTATOR), m.RoomState)
        async with aiohttp.ClientSession() as http, http.get(server.url + "/api/rooms") as resp:
            assert resp.status == 200
            rooms = (await resp.json())["rooms"]
        assert [r["code"] for r in rooms] == [public.code]
        room = rooms[0]
        assert room["players"] == 1 and room["spectators"] == 1 and room["phase"] == "lobby"
        assert room["options"]["name"] == "Open table"
        listing = await eve.request(m.ListRooms(), m.RoomList)
        assert [r.code for r in listing.rooms] == [public.code]
        assert private.code not in {r.code for r in listing.rooms}


async def test_a_rematch_keeps_the_room_and_deals_a_new_deal(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        clients, state = await open_room(server.ws_url, ["ann", "bob"])
        ann, bob = clients
        await ann.send(m.Start())
        first = await ann.expect(m.RaceStart)
        await bob.expect(m.RaceStart)
        for client in clients:
            await client.send(m.Resign())
        over = await ann.expect(m.RaceOver)
        assert over.race_id == first.race_id
        await ann.send(m.Rematch())
        waiting = await bob.expect(m.RoomState)
        while waiting.phase is not m.Phase.FINISHED or not any(mb.ready for mb in waiting.members):
            waiting = await bob.expect(m.RoomState)
        await bob.send(m.Rematch())
        second = await ann.expect(m.RaceStart)
        assert second.race_id != first.race_id
        assert second.commitment != first.commitment  # a fresh seed
        state2 = await bob.expect(m.RoomState)
        assert state2.code == state.code


async def test_an_empty_room_closes_after_the_grace_period(tmp_path: Path) -> None:
    async with running_server(tmp_path, empty_room_grace_s=0.2) as server:
        (ann,), state = await open_room(server.ws_url, ["ann"])
        await ann.request(m.Leave(), m.Left)
        assert state.code in server.hub.rooms
        await asyncio.sleep(0.5)
        assert state.code not in server.hub.rooms
        error = await ann.request(m.Join(state.code), m.Error)
        assert error.code == ErrorCode.ROOM_NOT_FOUND


async def test_a_member_who_returns_within_the_empty_grace_keeps_the_room(tmp_path: Path) -> None:
    async with running_server(tmp_path, empty_room_grace_s=0.3) as server:
        (ann,), state = await open_room(server.ws_url, ["ann"])
        await ann.request(m.Leave(), m.Left)
        await ann.request(m.Join(state.code), m.RoomState)
        await asyncio.sleep(0.5)
        assert state.code in server.hub.rooms


async def test_a_member_cannot_be_in_two_rooms_at_once(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (ann,), _ = await open_room(server.ws_url, ["ann"])
        (_bob,), other = await open_room(server.ws_url, ["bob"])
        error = await ann.request(m.Join(other.code), m.Error)
        assert error.code == ErrorCode.ALREADY_IN_ROOM
        error = await ann.request(m.CreateRoom(), m.Error)
        assert error.code == ErrorCode.ALREADY_IN_ROOM


async def test_when_a_room_closes_its_spectators_are_told(tmp_path: Path) -> None:
    async with running_server(tmp_path, empty_room_grace_s=0.2) as server:
        (ann,), state = await open_room(server.ws_url, ["ann"])
        eve = await connect(server.ws_url, "eve")
        await eve.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        await ann.request(m.Leave(), m.Left)
        left = await eve.expect(m.Left)
        assert left.reason is m.LeftReason.ROOM_CLOSED and left.code == state.code


async def test_the_host_leaving_mid_race_hands_over_and_the_race_goes_on(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob"], practice_seed="42")
        ann, bob = clients
        await ann.send(m.Start())
        await bob.expect(m.RaceStart)
        await ann.send(m.Leave())
        state = await bob.expect(m.RoomState)
        while len(state.members) != 1:
            state = await bob.expect(m.RoomState)
        assert state.host_id == bob.player_id and state.phase is m.Phase.RACING
        result = await bob.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        assert result.accepted
        await bob.send(m.Resign())
        over = await bob.expect(m.RaceOver)
        statuses = {s.player_id: s.status for s in over.standings}
        assert statuses == {
            ann.player_id: m.PlayerStatus.LEFT,
            bob.player_id: m.PlayerStatus.RESIGNED,
        }


async def test_kicking_in_the_finished_phase_lets_the_rest_rematch(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob"], practice_seed="42")
        ann, bob = clients
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        for client in clients:
            await client.send(m.Resign())
        await ann.expect(m.RaceOver)
        await ann.send(m.Kick(bob.player_id))
        assert (await bob.expect(m.Left)).reason is m.LeftReason.KICKED
        await ann.send(m.Rematch())
        again = await ann.expect(m.RaceStart)
        assert again.practice
