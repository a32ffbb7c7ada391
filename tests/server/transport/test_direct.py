"""Moves taken straight from aiohttp's parser (``server.transport.direct``) keep the queue's order.

A racing player's plain moves skip aiohttp's message queue; everything else
still takes it.  These tests check that the skip really happens on a real
server, that frames keep their order when one of them must queue, that a
frame without credit is refused and counted once, and that bytes sent along
with the upgrade request are not lost when the queue is swapped.  Whatever takes a
move before aiohttp's queue must leave a frame cut short across reads, a
message in fragments and a frame aiohttp refuses to aiohttp, in order.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgpack

from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode
from server.hub import Hub
from server.transport.connection import Connection
from server.transport.direct import DirectQueue, DirectResponse
from server.transport.splitter import FrameSplitter
from tests.serverutil import RunningServer, TestClient, open_room, running_server

_OP_TEXT, _OP_BINARY, _OP_PING = 0x1, 0x2, 0x9


def client_frame(
    payload: bytes, opcode: int = _OP_BINARY, *, first: int | None = None, key: bytes = b""
) -> bytes:
    """One masked client frame; final unless ``first`` says, a random key unless ``key`` does."""
    key = key or os.urandom(4)
    masked = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    head = 0x80 | opcode if first is None else first
    if len(payload) < 126:
        return bytes((head, 0x80 | len(payload))) + key + masked
    return bytes((head, 0x80 | 126)) + len(payload).to_bytes(2, "big") + key + masked


def move(seq: int, action: str = "draw") -> bytes:
    return client_frame(codec.encode_msgpack(m.MoveRequest(seq, m.MoveAction(action))))


def server_side(hub: Hub, client: TestClient) -> Connection:
    (conn,) = [
        c for c in hub.connections
        if (session := hub.lobby.session_of(c)) is not None
        and session.identity.player_id == client.player_id
    ]
    return conn


def direct_queue(conn: Connection) -> DirectQueue:
    assert isinstance(conn.ws, DirectResponse)
    queue = conn.ws.direct
    assert isinstance(queue, DirectQueue), "aiohttp's queue was not swapped"
    assert isinstance(conn.ws.splitter, FrameSplitter), "the socket's reads are not split"
    return queue


def taken(conn: Connection) -> int:
    """Frames of ``conn`` the read loop's hook took: from aiohttp's queue, and from the
    socket's splitter before them."""
    queue = direct_queue(conn)
    assert isinstance(conn.ws, DirectResponse) and conn.ws.splitter is not None
    return queue.taken + conn.ws.splitter.taken


def write_raw(client: TestClient, data: bytes) -> None:
    """Put bytes on the client's socket as they are (several frames in one write)."""
    transport: Any = client.ws.transport
    transport.write(data)


async def frames_until(client: TestClient, kind: type[m.ServerMessage], count: int) -> list[Any]:
    """Every move answer and error until ``count`` frames of ``kind`` came, in arrival order."""
    seen: list[Any] = []
    while sum(isinstance(f, kind) for f in seen) < count:
        frame = await client.recv()
        if isinstance(frame, m.MoveResult | m.Error):
            seen.append(frame)
    return seen


@contextlib.asynccontextmanager
async def racing(
    tmp_path: Path, **settings: Any
) -> AsyncIterator[tuple[RunningServer, TestClient]]:
    """A server with a race of two under way; yields it and its host, ann."""
    async with running_server(tmp_path, **settings) as server:
        (ann, _bob), _ = await open_room(server.ws_url, ["ann", "bob"])
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        yield server, ann


async def test_a_racing_players_moves_skip_the_queue_and_are_answered(tmp_path: Path) -> None:
    async with racing(tmp_path) as (server, ann):
        conn = server_side(server.hub, ann)
        before = taken(conn)
        for seq in range(1, 6):
            result = await ann.request(m.MoveRequest(seq, m.MoveAction.DRAW), m.MoveResult)
            assert result.accepted and result.seq == seq
        assert taken(conn) - before == 5


async def test_moves_written_together_are_answered_in_order(tmp_path: Path) -> None:
    async with racing(tmp_path) as (_server, ann):
        write_raw(ann, b"".join(move(seq) for seq in range(1, 9)))
        answers = await frames_until(ann, m.MoveResult, 8)
        assert [a.seq for a in answers] == list(range(1, 9))
        assert all(a.accepted for a in answers)


async def test_a_move_behind_a_queued_frame_waits_its_turn(tmp_path: Path) -> None:
    async with racing(tmp_path) as (_server, ann):
        # An extra key keeps this move off the fast path: the general path refuses it.
        odd = client_frame(msgpack.packb({"t": "move", "seq": 1, "action": "draw", "x": 0}))
        ping = client_frame(b"", _OP_PING)
        write_raw(ann, odd + ping + move(1) + move(2))
        answers = await frames_until(ann, m.MoveResult, 2)
        assert isinstance(answers[0], m.Error), answers
        assert [(type(a), a.seq) for a in answers[1:]] == [(m.MoveResult, 1), (m.MoveResult, 2)]


async def test_a_move_without_credit_is_refused_and_counted_once(tmp_path: Path) -> None:
    settings = {"player_rate": 0.01, "player_burst": 12, "abuse_strikes": 100}
    async with racing(tmp_path, **settings) as (server, ann):
        bucket = server.hub.connections[server_side(server.hub, ann)]
        credit = int(bucket.credits)
        assert 0 < credit < 12
        write_raw(ann, b"".join(move(seq) for seq in range(1, credit + 4)))
        answers = await frames_until(ann, m.Error, 3)
        results = [a for a in answers if isinstance(a, m.MoveResult)]
        refused = [a for a in answers if isinstance(a, m.Error)]
        assert [r.seq for r in results] == list(range(1, credit + 1))
        assert [e.code for e in refused] == [ErrorCode.RATE_LIMITED] * 3
        assert bucket.refused == 3


async def test_bytes_sent_with_the_upgrade_request_reach_the_server(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        host, port = server.ws_url.removeprefix("ws://").split("/")[0].rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Protocol: {codec.SUBPROTOCOL_MSGPACK}\r\n\r\n"
        ).encode()
        hello = codec.encode_msgpack(m.Hello(name="eager", version=m.PROTOCOL_VERSION))
        writer.write(request + client_frame(hello))
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert head.startswith(b"HTTP/1.1 101")
        first, size = await asyncio.wait_for(reader.readexactly(2), 10)
        assert first == 0x80 | _OP_BINARY and size <= 126
        if size == 126:
            size = int.from_bytes(await reader.readexactly(2), "big")
        welcome = codec.decode_server(await reader.readexactly(size), codec.Encoding.MSGPACK)
        assert isinstance(welcome, m.Welcome)
        writer.close()


async def test_a_move_cut_across_reads_and_the_moves_after_it_skip_the_queue(
    tmp_path: Path,
) -> None:
    async with racing(tmp_path) as (server, ann):
        conn = server_side(server.hub, ann)
        first = move(1)
        for piece in (first[:1], first[1:4], first[4:9], first[9:]):
            write_raw(ann, piece)
            await asyncio.sleep(0.05)
        write_raw(ann, move(2) + move(3))
        answers = await frames_until(ann, m.MoveResult, 3)
        assert [(type(a), a.seq) for a in answers] == [(m.MoveResult, n) for n in (1, 2, 3)]
        assert all(a.accepted for a in answers)
        assert taken(conn) == 3  # all three skipped the queue


async def test_a_move_in_fragments_with_a_ping_between_is_answered_in_order(
    tmp_path: Path,
) -> None:
    async with racing(tmp_path) as (_server, ann):
        payload = codec.encode_msgpack(m.MoveRequest(1, m.MoveAction.DRAW))
        start = client_frame(payload[:5], first=_OP_BINARY)  # no FIN: more to come
        end = client_frame(payload[5:], first=0x80)  # FIN, continuation
        write_raw(ann, start + client_frame(b"", _OP_PING))
        await asyncio.sleep(0.05)
        write_raw(ann, end)
        await asyncio.sleep(0.05)
        write_raw(ann, move(2))
        answers = await frames_until(ann, m.MoveResult, 2)
        assert [(type(a), a.seq) for a in answers] == [(m.MoveResult, 1), (m.MoveResult, 2)]
        assert all(a.accepted for a in answers)


async def test_a_frame_with_an_extension_bit_after_a_move_closes_with_1002(
    tmp_path: Path,
) -> None:
    async with racing(tmp_path) as (server, ann):
        conn = server_side(server.hub, ann)
        before = taken(conn)
        odd = client_frame(codec.encode_msgpack(m.Ping(1)), first=0xC0 | _OP_BINARY)  # RSV1
        write_raw(ann, move(1) + odd)
        # The move's answer waits for its log commit; the close need not.
        with contextlib.suppress(Exception):
            while True:
                await ann.recv(timeout=5)
        assert ann.ws.close_code == CloseCode.PROTOCOL_ERROR
        assert taken(conn) - before == 1


async def test_a_frame_inside_a_frame_cut_short_is_not_taken_for_a_move(tmp_path: Path) -> None:
    async with racing(tmp_path) as (_server, ann):
        # A ping whose payload, sent unmasked (key 0), holds a whole move frame: the read
        # that starts with it is the rest of the ping, not a move of its own.  (The
        # ping's extra field earns it error 11, which marks its place among the answers.)
        decoy = move(99)
        ping = msgpack.packb({"t": "ping", "client_time_ms": 7, "pad": decoy + b"x" * 150})
        frame = client_frame(ping, key=b"\0\0\0\0")
        cut = frame.index(decoy)
        write_raw(ann, frame[:cut])
        await asyncio.sleep(0.05)
        write_raw(ann, frame[cut:])
        await asyncio.sleep(0.05)
        write_raw(ann, move(1))
        answers = await frames_until(ann, m.MoveResult, 1)
        assert [(type(a), a.seq) for a in answers] == [(m.Error, None), (m.MoveResult, 1)]
        assert isinstance(answers[0], m.Error) and answers[0].ref == "ping"


async def test_the_writes_read_aiohttps_closed_flag_as_its_property_says(tmp_path: Path) -> None:
    """A connection's writes keep aiohttp's ``ws._closed`` (told by the response), not
    the ``closed`` property, to write nothing after a close frame: all say the same from
    the open to the close."""
    async with racing(tmp_path) as (server, ann):
        conn = server_side(server.hub, ann)
        ws = conn.ws
        assert conn.ws_tells
        assert conn.ws_closed is ws._closed is ws.closed is False
        await ann.ws.close()
        for _ in range(100):
            if ws.closed:
                break
            await asyncio.sleep(0.02)
        assert conn.ws_closed is ws._closed is ws.closed is True


async def test_the_splitter_holds_the_read_loops_hook_and_halts_with_the_parser(
    tmp_path: Path,
) -> None:
    """The splitter keeps the hook and the parser's stop itself (it reads neither from
    the queue nor the parser per frame): both must follow what those objects say."""
    async with racing(tmp_path) as (server, ann):
        conn = server_side(server.hub, ann)
        queue = direct_queue(conn)
        splitter = conn.ws.splitter
        assert splitter is not None and conn.ws.masked is not None
        assert splitter.hook is queue.hook is not None  # the read loop waits in receive()
        # A frame that takes the queue wakes the read loop (hook None), which then waits
        # again with the hook set on both.
        ping = await ann.request(m.Ping(5), m.Pong)
        assert ping.client_time_ms == 5
        assert splitter.hook is queue.hook is not None
        assert not splitter.halted
        before = taken(conn)
        # Stopped: a move that comes later is not taken (nor answered).
        conn.ws.stop_reading()
        assert splitter.halted
        write_raw(ann, move(1))
        await asyncio.sleep(0.3)
        assert taken(conn) == before


async def test_a_move_after_a_frame_without_a_mask_is_not_taken(tmp_path: Path) -> None:
    async with racing(tmp_path) as (server, ann):
        conn = server_side(server.hub, ann)
        splitter = conn.ws.splitter
        assert splitter is not None and not splitter.halted
        before = taken(conn)
        payload = codec.encode_msgpack(m.Ping(1))
        bare = bytes((0x80 | _OP_BINARY, len(payload))) + payload  # no mask bit
        write_raw(ann, bare + move(1))
        with contextlib.suppress(Exception):
            while True:
                await ann.recv(timeout=5)
        assert ann.ws.close_code == CloseCode.PROTOCOL_ERROR
        assert splitter.halted
        assert taken(conn) == before
