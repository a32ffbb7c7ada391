"""Reconnecting: the seat is kept for a grace period, the clock runs, a resent move counts once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from websockets.exceptions import ConnectionClosed

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode
from tests.serverutil import connect, move_request, open_room, running_server

SEED = "42"


async def test_reconnecting_mid_race_restores_the_seat_and_a_resent_move_counts_once(
    tmp_path: Path,
) -> None:
    line = deal_for_seed(SEED, Rules()).solution
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob"], practice_seed=SEED)
        ann, bob = clients
        assert ann.welcome is not None
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        for seq in (1, 2, 3):
            await ann.request(move_request(seq, line[seq - 1]), m.MoveResult)
        # Move 4 goes out and the connection drops before its answer is read.
        await ann.send(move_request(4, line[3]))
        await ann.close()
        drop = await bob.expect(m.RoomState)
        while next(mb for mb in drop.members if mb.name == "ann").connected:
            drop = await bob.expect(m.RoomState)

        again = await connect(server.ws_url, "ann", token=ann.welcome.token)
        assert again.welcome is not None and again.welcome.resumed
        assert again.player_id == ann.player_id
        state = await again.expect(m.RoomState)
        assert all(mb.connected for mb in state.members)
        resync = await again.expect(m.Resync)
        assert resync.phase is m.Phase.RACING and resync.last_seq == 4
        assert resync.view is not None and resync.view.moves == 4
        assert resync.elapsed_ms > 0
        # The client does not know move 4 arrived, so it resends it: same answer, applied once.
        result = await again.request(move_request(4, line[3]), m.MoveResult)
        assert result.accepted and result.moves == 4
        for seq in range(5, len(line) + 1):
            result = await again.request(move_request(seq, line[seq - 1]), m.MoveResult)
            assert result.accepted
        await bob.send(m.Resign())
        over = await again.expect(m.RaceOver)
        winner = over.standings[0]
        assert winner.player_id == ann.player_id and winner.status is m.PlayerStatus.FINISHED
        assert winner.moves == len(line)


async def test_a_seat_is_lost_when_the_grace_period_runs_out(tmp_path: Path) -> None:
    async with running_server(tmp_path, reconnect_grace_s=0.3) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob"], practice_seed=SEED)
        ann, bob = clients
        assert ann.welcome is not None
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        await bob.expect(m.RaceStart)
        await ann.close()
        progress = await bob.expect(m.Progress)
        while next(p for p in progress.players if p.player_id == ann.player_id).status is not (
            m.PlayerStatus.LEFT
        ):
            progress = await bob.expect(m.Progress)
        # The token died with the seat: a reconnect is a newcomer outside the room.
        again = await connect(server.ws_url, "ann", token=ann.welcome.token)
        assert again.welcome is not None and not again.welcome.resumed
        assert again.player_id != ann.player_id
        error = await again.request(m.Sync(), m.Error)
        assert error.code == ErrorCode.NOT_IN_ROOM


async def test_the_race_clock_keeps_running_while_a_player_is_away(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed=SEED)
        assert ann.welcome is not None
        await ann.send(m.Start())
        start = await ann.expect(m.RaceStart)
        await ann.close()
        await asyncio.sleep(0.4)
        again = await connect(server.ws_url, "ann", token=ann.welcome.token)
        resync = await again.expect(m.Resync)
        assert resync.started_at_ms == start.started_at_ms
        assert resync.elapsed_ms >= 400


async def test_a_second_connection_with_the_token_replaces_the_first(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        first = await connect(server.ws_url, "ann")
        assert first.welcome is not None
        second = await connect(server.ws_url, "ann", token=first.welcome.token)
        assert second.player_id == first.player_id
        closing = await first.expect(m.Closing)
        assert closing.code == CloseCode.REPLACED
        try:
            await first.recv(timeout=2)
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == CloseCode.REPLACED


async def test_an_unknown_token_gets_a_fresh_identity(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        client = await connect(server.ws_url, "ann", token="no-such-token")
        assert client.welcome is not None and not client.welcome.resumed
        assert client.welcome.token != "no-such-token"
