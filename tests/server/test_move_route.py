"""A connection's moves go where its player is now, though the fast path keeps its route.

``server.hub.MoveRoute`` keeps, between a connection's moves, the session and the
room's handle they went to; each must be checked again before a move goes through
it.  Real servers, real sockets.
"""

from __future__ import annotations

from pathlib import Path

from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode
from server import hub_rooms
from server.hub import MoveRoute
from tests.serverutil import open_room, running_server


async def test_a_players_moves_follow_them_to_their_next_room(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (ann, bob), first = await open_room(server.ws_url, ["ann", "bob"])
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        moved = await ann.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        assert moved.accepted
        await ann.request(m.Leave(), m.Left)
        second = await ann.request(m.CreateRoom(m.RoomOptions(countdown_s=0)), m.RoomState)
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        again = await ann.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        assert again.accepted and again.seq == 1
        races = {code: server.hub.handles[code].room.race for code in (first.code, second.code)}
        old, new = races[first.code], races[second.code]
        assert old is not None and new is not None
        assert new.racers[ann.player_id].game.moves == 1
        assert old.racers[ann.player_id].game.moves == 1  # the first move only
        await bob.close()


async def test_a_move_for_a_room_the_hub_let_go_is_not_answered_by_it(tmp_path: Path) -> None:
    """A room handed to another node (cluster mode) or closed: its handle is forgotten, and
    a route that kept it looks the room up again (and finds none)."""
    async with running_server(tmp_path) as server:
        (ann,), state = await open_room(server.ws_url, ["ann"], practice_seed="42")
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        assert (await ann.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)).accepted
        handle = server.hub.handles[state.code]
        race = handle.room.race
        assert race is not None
        hub_rooms.forget(server.hub, handle)
        assert handle.gone and state.code not in server.hub.handles
        error = await ann.request(m.MoveRequest(2, m.MoveAction.DRAW), m.Error)
        assert error.code == ErrorCode.NOT_IN_ROOM
        assert race.racers[ann.player_id].game.moves == 1


async def test_a_kept_route_is_checked_before_it_is_trusted(tmp_path: Path) -> None:
    """The hub's fast path, given the route another player's connection kept, answers for
    the connection's own player, in that player's room."""
    async with running_server(tmp_path) as server:
        (ann,), ann_room = await open_room(server.ws_url, ["ann"], practice_seed="42")
        (cy,), cy_room = await open_room(server.ws_url, ["cy"], practice_seed="42")
        for client in (ann, cy):
            await client.send(m.Start())
            await client.expect(m.RaceStart)
        hub = server.hub
        cy_conn = next(
            conn for conn, session in hub.lobby.by_conn.items()
            if session.identity.player_id == cy.player_id
        )
        ann_session = next(
            session for session in hub.lobby.by_conn.values()
            if session.identity.player_id == ann.player_id
        )
        route = MoveRoute()
        route.session, route.handle = ann_session, hub.handles[ann_room.code]
        frame = codec.encode(m.MoveRequest(1, m.MoveAction.DRAW), codec.Encoding.MSGPACK)
        assert isinstance(frame, bytes)
        assert hub.fast_move(cy_conn, frame, hub.now_ms(), route)
        assert route.session is not ann_session and route.handle is hub.handles[cy_room.code]
        races = [hub.handles[code].room.race for code in (ann_room.code, cy_room.code)]
        assert [race.racers[pid].game.moves if race else None
                for race, pid in zip(races, (ann.player_id, cy.player_id), strict=True)] == [0, 1]
        answer = await cy.expect(m.MoveResult)
        assert answer.accepted and answer.seq == 1
