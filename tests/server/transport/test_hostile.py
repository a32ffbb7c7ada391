"""Hostile WebSocket clients on a real server: control-frame floods, broken frames, and a
peer that stops reading.  Frames are written by hand (:mod:`tests.server.transport.rawws`)
where a library would refuse to send them."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import Any

import msgpack
import pytest

from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode
from server.hub import Hub
from server.transport.connection import Connection
from tests.server.transport.rawws import OP_BINARY, OP_PING, OP_PONG, RawClient, client_frame
from tests.serverutil import connect, running_server


def connection_of(hub: Hub, name: str) -> Connection:
    """The server's side of the one connection whose player is called ``name``."""
    (conn,) = [
        c
        for c in hub.connections
        if (session := hub.lobby.session_of(c)) is not None and session.identity.name == name
    ]
    return conn


async def gone(hub: Hub, timeout: float = 10.0) -> None:
    """Wait until the server has let go of every connection."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while hub.connections and loop.time() < deadline:
        await asyncio.sleep(0.02)
    assert not hub.connections


async def test_a_flood_of_websocket_pings_spends_credit_and_is_closed_with_1008(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path, player_burst=20, player_rate=5) as server:
        raw = await RawClient.open(server.ws_url)
        await raw.hello("pinger")
        raw.write(client_frame(b"ping", OP_PING) * 5000)
        code, counts = await raw.until_closed(timeout=10)
        assert code == CloseCode.POLICY_VIOLATION
        # 19 credits were left after hello; a few more trickle in while the flood is read.
        assert counts.get(OP_PONG, 0) <= 25
        await gone(server.hub)


async def test_unsolicited_pongs_spend_credit_too(tmp_path: Path) -> None:
    async with running_server(tmp_path, player_burst=10, player_rate=1) as server:
        raw = await RawClient.open(server.ws_url)
        await raw.hello("ponger")
        raw.write(client_frame(b"", OP_PONG) * 2000)
        code, _counts = await raw.until_closed(timeout=10)
        assert code == CloseCode.POLICY_VIOLATION


async def test_pings_within_the_credit_are_answered(tmp_path: Path) -> None:
    async with running_server(tmp_path, player_burst=20, player_rate=5) as server:
        raw = await RawClient.open(server.ws_url)
        await raw.hello("polite")
        for n in range(5):
            raw.write(client_frame(b"n%d" % n, OP_PING))
            assert await raw.read_frame() == (OP_PONG, b"n%d" % n)
        raw.close()


async def test_an_unmasked_client_frame_closes_the_connection_with_1002(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        raw = await RawClient.open(server.ws_url)
        await raw.hello("bare")
        ping = codec.encode_msgpack(m.Ping(1))
        raw.write(client_frame(ping, OP_BINARY, masked=False))
        code, counts = await raw.until_closed(timeout=10)
        assert code == CloseCode.PROTOCOL_ERROR and not counts


async def test_an_unmasked_frame_after_masked_ones_in_the_same_write_closes_with_1002(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        raw = await RawClient.open(server.ws_url)
        await raw.hello("sly")
        ping = codec.encode_msgpack(m.Ping(1))
        big = client_frame(b"\x00" * 300)  # a 16-bit length, to walk past
        raw.write(client_frame(ping) + big + client_frame(ping, masked=False))
        code, _counts = await raw.until_closed(timeout=10)
        assert code == CloseCode.PROTOCOL_ERROR


async def test_masked_frames_split_anywhere_across_writes_are_read_whole(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        raw = await RawClient.open(server.ws_url)
        await raw.hello("slow")
        frames = b"".join(client_frame(codec.encode_msgpack(m.Ping(n))) for n in range(1, 40))
        frames += client_frame(msgpack.packb({"t": "ping", "client_time_ms": 40, "x": "y" * 200}))
        for start in range(0, len(frames), 3):
            raw.write(frames[start : start + 3])
            await raw.writer.drain()
        answers = [await raw.read_message() for _ in range(40)]
        assert [a.client_time_ms for a in answers[:39] if isinstance(a, m.Pong)] == list(
            range(1, 40)
        )
        assert isinstance(answers[39], m.Error) and answers[39].code == ErrorCode.EXTRA_FIELD
        raw.close()


async def test_a_text_frame_that_is_not_utf8_closes_with_1007(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        raw = await RawClient.open(server.ws_url, codec.SUBPROTOCOL_JSON)
        await raw.hello("garbled")
        raw.write(client_frame(b'{"t": "ping", "client_time_ms": 1, "x": "\xff\xfe"}', 0x1))
        code, _counts = await raw.until_closed(timeout=10)
        assert code == CloseCode.INVALID_PAYLOAD == 1007


@pytest.mark.parametrize(("extra", "closes"), [(0, False), (1, True)])
async def test_frames_up_to_max_frame_bytes_are_read_and_a_byte_more_closes_with_1009(
    tmp_path: Path, extra: int, closes: bool
) -> None:
    async with running_server(tmp_path) as server:
        size = server.settings.max_frame_bytes + extra
        assert server.settings.max_frame_bytes == 65536  # the documented default
        raw = await RawClient.open(server.ws_url)
        await raw.hello("large")
        frame = client_frame(b"\x00" * size)
        if closes:
            # The header alone: the server decides on the declared length (and a socket
            # closed with unread bytes in it would be reset before the close frame is read).
            raw.write(frame[:14])
            code, _counts = await raw.until_closed(timeout=10)
            assert code == CloseCode.MESSAGE_TOO_BIG
            return
        raw.write(frame)
        error = await raw.read_message()
        assert isinstance(error, m.Error) and error.code == ErrorCode.FRAME_TOO_LARGE
        raw.send(m.Ping(7))
        pong = await raw.read_message()
        assert isinstance(pong, m.Pong) and pong.client_time_ms == 7
        raw.close()


async def _toggle_ready(bob: Any, until: Any, limit: int) -> int:
    """Toggle ``bob``'s ready flag (each toggle broadcasts ``room_state``) until ``until()``."""
    toggles = 0
    while toggles < limit and not until():
        for _ in range(100):
            toggles += 1
            await bob.send(m.Ready(toggles % 2 == 1))
        for _ in range(100):
            await bob.expect(m.RoomState)
        bob.drop_unread()
    return toggles


async def test_a_member_who_stops_reading_is_cut_off_and_the_room_is_told(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tripeaks.server")
    unlimited = {"player_rate": 1e6, "player_burst": 1e6, "reconnect_grace_s": 60.0}
    async with running_server(tmp_path, **unlimited) as server:
        host = await connect(server.ws_url, "host")
        state = await host.request(m.CreateRoom(), m.RoomState)
        silent = await RawClient.open(server.ws_url, receive_buffer=4096)
        silent_id = (await silent.hello("silent")).player_id
        silent.send(m.Join(state.code))
        assert isinstance(await silent.read_message(), m.RoomState)
        conn = connection_of(server.hub, "silent")
        # The server's kernel buffer small too, so the outbox fills in seconds, not minutes.
        sock: Any = conn.transport.get_extra_info("socket")  # type: ignore[union-attr]
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        bob = await connect(server.ws_url, "bob")
        await bob.request(m.Join(state.code), m.RoomState)
        # From here on the silent member reads nothing.
        toggles = await _toggle_ready(bob, lambda: conn.closed, limit=20_000)
        assert conn.closed, f"still not given up on after {toggles} broadcasts"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while conn in server.hub.connections and loop.time() < deadline:
            await asyncio.sleep(0.05)
        assert conn not in server.hub.connections, "the socket was never cut"
        seen = await bob.expect(m.RoomState)
        while next(mb for mb in seen.members if mb.player_id == silent_id).connected:
            seen = await bob.expect(m.RoomState, timeout=10)
        assert silent_id in server.hub.rooms[state.code].seats  # the seat waits out the grace
        lines = [r for r in caplog.records if r.getMessage() == "disconnected"]
        assert any(getattr(r, "fields", {}).get("conn") == conn.conn_id for r in lines)
        silent.close()
