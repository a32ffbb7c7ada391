"""A progress flush goes to the connections the room's members speak through now.

The hub keeps each room's connections between flushes (``Hub._members``) until the
room's version (every change of its members) or the lobby's epoch (every change of a
player's connection) moves.  On a real server, mid-race, after each way a member's
connection can change without the room's members changing (a racer's and a
spectator's second connection taking over with the token) and after one that
changes them (a spectator joining), the next move's flush reaches the member on the
connection they have now: a ``progress`` frame showing that move.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import messages as m
from tests.serverutil import TestClient, connect, move_request, open_room, running_server

SEED = "flush-members"


async def progress_showing(client: TestClient, player_id: str, moves: int) -> m.Progress:
    """The first ``progress`` frame in which ``player_id`` has made ``moves`` moves."""
    while True:
        progress = await client.expect(m.Progress, timeout=5)
        line = next(p for p in progress.players if p.player_id == player_id)
        if line.moves >= moves:
            assert line.moves == moves
            return progress


async def settled(client: TestClient) -> None:
    """Let what a new connection is sent first (room state, resync, catch-up) arrive, and
    forget it: a ``progress`` read after this came from a flush."""
    await asyncio.sleep(0.3)
    while True:
        try:
            await client.recv(timeout=0.1)
        except TimeoutError:
            break
    client.drop_unread()


async def test_flushes_follow_each_members_connection_as_it_changes(tmp_path: Path) -> None:
    line = deal_for_seed(SEED, Rules()).solution
    async with running_server(tmp_path) as server:
        (ann, bob), state = await open_room(server.ws_url, ["ann", "bob"], practice_seed=SEED)
        sue = await connect(server.ws_url, "sue")
        await sue.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        tom = await connect(server.ws_url, "tom")  # joins later: only the room changes then
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        seq = 0

        async def move() -> int:
            nonlocal seq
            seq += 1
            result = await ann.request(move_request(seq, line[seq - 1]), m.MoveResult)
            assert result.accepted
            return seq

        # The room's connections are noted at the first flush.
        moves = await move()
        await progress_showing(bob, ann.player_id, moves)
        await progress_showing(sue, ann.player_id, moves)

        # bob's second connection takes over: the room's members are the same.
        assert bob.welcome is not None
        bob2 = await connect(server.ws_url, "bob", token=bob.welcome.token)
        await settled(bob2)
        moves = await move()
        await progress_showing(bob2, ann.player_id, moves)

        # So does sue's, a spectator's.
        assert sue.welcome is not None
        sue2 = await connect(server.ws_url, "sue", token=sue.welcome.token)
        await settled(sue2)
        moves = await move()
        await progress_showing(sue2, ann.player_id, moves)
        await progress_showing(bob2, ann.player_id, moves)

        # A spectator joins: the room's members change, no player's connection does.
        await tom.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        await settled(tom)
        moves = await move()
        for watcher in (tom, sue2, bob2):
            await progress_showing(watcher, ann.player_id, moves)
