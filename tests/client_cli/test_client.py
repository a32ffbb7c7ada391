"""The client core without a screen: recovery from refused frames and dropped sockets."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from client_cli.client import GameClient
from client_cli.connection import Connection
from client_cli.net import ClientError, normalise_url
from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import DRAW, Rules
from protocol.wire import messages as m
from protocol.wire.session import ClientSession
from tests.serverutil import TestClient, connect, move_request, running_server

SEED = "session-seed"


async def until(condition: Callable[[], object], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def racing_pair(url: str) -> tuple[GameClient, asyncio.Task[None], TestClient]:
    """A GameClient hosting a practice race against a raw rival, started."""
    client = GameClient(url, "core")
    await client.connect()
    loop = asyncio.create_task(client.run())
    await client.create_room(m.RoomOptions(countdown_s=0, practice_seed=SEED))
    await until(lambda: client.state.room is not None)
    assert client.state.room is not None
    rival = await connect(url, "rival")
    await rival.request(m.Join(client.state.room.code), m.RoomState)
    await rival.send(m.Ready(True))
    await until(lambda: len(client.state.room.members) == 2 and all(  # type: ignore[union-attr]
        x.ready for x in client.state.room.members if x.name == "rival"))  # type: ignore[union-attr]
    await client.start()
    await until(lambda: client.state.board is not None)
    return client, loop, rival


async def test_a_move_refused_unhandled_is_resent_after_a_sync(tmp_path: Path) -> None:
    line = deal_for_seed(SEED, Rules()).solution
    async with running_server(tmp_path) as server:
        client, loop, rival = await racing_pair(server.ws_url)
        board = client.state.board
        assert board is not None
        errors: list[str] = []

        def keep_errors(event: str, detail: object) -> None:
            if event == "error":
                errors.append(str(detail))

        client.listener = keep_errors
        client.session.next_seq += 3  # as if three frames had been lost: the server wants 1
        for step in line[:5]:
            assert (await client.move(step)).sent
        await until(lambda: any("seq" in error.lower() for error in errors))
        await until(lambda: not board.pending and board.confirmed.moves == 5)
        assert board.next_seq == 6
        assert client.state.last_error == ""  # the moves that followed went through
        await client.close()
        loop.cancel()
        await rival.close()


async def test_opponents_take_their_final_counts_from_race_over(tmp_path: Path) -> None:
    line = deal_for_seed(SEED, Rules()).solution
    # One progress frame in the whole race: the rival's moves reach the client only in
    # race_over's standings (the end of a race keeps the progress bound).
    async with running_server(tmp_path, progress_hz=0.01) as server:
        client, loop, rival = await racing_pair(server.ws_url)
        rival_id = next(p.player_id for p in client.state.room.members  # type: ignore[union-attr]
                        if p.name == "rival")
        for seq, step in enumerate(line[:4], start=1):
            assert (await rival.request(move_request(seq, step), m.MoveResult)).accepted
        await rival.send(m.Resign())
        await client.resign()
        await until(lambda: client.state.race_over is not None)
        assert client.state.race_over is not None
        final = next(s for s in client.state.race_over.standings if s.player_id == rival_id)
        shown = client.state.players[rival_id]
        assert (shown.cleared, shown.moves, shown.undos) == (final.cleared, 4, final.undos)
        assert shown.status == "resigned"
        await client.close()
        loop.cancel()
        await rival.close()


async def test_a_dropped_socket_is_reconnected_and_no_move_is_lost(tmp_path: Path) -> None:
    line = deal_for_seed(SEED, Rules()).solution
    events: list[str] = []
    async with running_server(tmp_path) as server:
        client, loop, rival = await racing_pair(server.ws_url)
        client.listener = lambda event, _: events.append(event)
        for step in line[:6]:
            await client.move(step)
        client.drop_connection()  # moves may still be in flight: they must count once
        for step in line[6:10]:
            await client.move(step)
        await until(lambda: "resync" in events)
        board = client.state.board
        assert board is not None
        await until(lambda: not board.pending)
        assert board.confirmed.moves == 10
        assert client.session.in_flight == () and client.session.next_seq == 11
        assert board.confirmed.draws == sum(1 for s in line[:10] if s == DRAW)
        await client.close()
        loop.cancel()
        await rival.close()


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("127.0.0.1:8765", "ws://127.0.0.1:8765/ws"),
        ("http://example.org:80", "ws://example.org:80/ws"),
        ("https://example.org/", "wss://example.org/ws"),
        ("ws://h:1/custom", "ws://h:1/custom"),
    ],
)
def test_server_addresses_are_normalised(text: str, url: str) -> None:
    assert normalise_url(text) == url


def test_a_server_address_that_is_not_one_is_refused_in_words() -> None:
    with pytest.raises(ClientError, match="not a server address"):
        normalise_url("ftp://x")


async def test_a_web_server_that_is_not_tripeaks_is_reported(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        link = Connection(server.url + "/api/rooms", ClientSession("x"))
        with pytest.raises(ClientError, match="not a TriPeaks server"):
            await link.open()


async def test_a_socket_the_server_drops_is_reconnected_with_the_token(tmp_path: Path) -> None:
    line = deal_for_seed(SEED, Rules()).solution
    events: list[str] = []
    async with running_server(tmp_path) as server:
        client, loop, rival = await racing_pair(server.ws_url)
        client.listener = lambda event, _: events.append(event)
        for step in line[:4]:
            await client.move(step)
        board = client.state.board
        assert board is not None
        await until(lambda: not board.pending)
        token = client.session.token
        assert token is not None
        conn = server.hub.sessions[token].conn
        assert conn is not None
        conn.ws._req.transport.abort()  # type: ignore[union-attr]  # the network fails
        await until(lambda: "reconnecting" in events)
        await until(lambda: "resync" in events and client.state.connection == "online")
        for step in line[4:8]:
            await client.move(step)
        await until(lambda: not board.pending and client.state.board is not None)
        assert client.state.board is not None
        assert client.state.board.confirmed.moves == 8
        await client.close()
        loop.cancel()
        await rival.close()


def test_a_progress_line_notes_when_a_players_count_changed_and_only_then() -> None:
    client = GameClient("ws://127.0.0.1:9/ws", "ann")

    def progress(at_ms: int, cleared: int, moves: int) -> m.Progress:
        line = m.PlayerProgress("p1", cleared, 20, moves, 0, m.PlayerStatus.RACING, at_ms, True)
        return m.Progress(at_ms, (line,))

    client.handle(progress(1_000, 3, 5))
    client.handle(progress(2_000, 3, 6))  # a draw: the count stays, and so does its time
    assert client.state.players["p1"].cleared_at_ms == 1_000
    client.handle(progress(3_500, 4, 7))
    assert client.state.players["p1"].cleared_at_ms == 3_500
