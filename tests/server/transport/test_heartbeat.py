"""The heartbeat's sweeps (server/transport/heartbeat.py) on real sockets: connections that
fell silent together are pinged in PHASES rounds, each once; one that does not answer
is dropped half an interval after its ping; one that answered is left alone."""

from __future__ import annotations

import asyncio
import socket

from aiohttp import web

from protocol.wire.codec import Encoding
from server.transport.connection import Connection
from server.transport.framing import OP_PING, WriteBatch, frame_header
from server.transport.heartbeat import PHASES, sweep

INTERVAL_MS = 20_000
PING = frame_header(OP_PING, 0)


class _Quiet(asyncio.Protocol):
    """The server side's protocol: it never reads (the test reads the far end)."""


async def _connections(count: int) -> list[tuple[Connection, socket.socket]]:
    made = []
    for conn_id in range(count):
        near, far = socket.socketpair()
        far.setblocking(False)
        transport, _ = await asyncio.get_running_loop().connect_accepted_socket(_Quiet, near)
        conn = Connection(web.WebSocketResponse(), Encoding.MSGPACK, "127.0.0.1", conn_id,
                          WriteBatch(), transport)
        made.append((conn, far))
    return made


def _pings(far: socket.socket) -> int:
    try:
        data = far.recv(1024)
    except BlockingIOError:
        return 0
    assert data == PING * (len(data) // len(PING))
    return len(data) // len(PING)


async def test_connections_silent_together_are_pinged_in_phases_each_once() -> None:
    pairs = await _connections(4 * PHASES)
    conns = [conn for conn, _far in pairs]
    now = 1_000_000 + INTERVAL_MS  # every connection silent since 1,000,000
    for conn in conns:
        conn.last_seen_ms = 1_000_000
    pinged_by_phase = []
    for phase in range(PHASES):
        sweep(conns, now, INTERVAL_MS, phase)
        await asyncio.sleep(0.01)
        pinged_by_phase.append(sorted(c.conn_id for c, far in pairs if _pings(far)))
    assert pinged_by_phase == [
        [i for i in range(4 * PHASES) if i % PHASES == phase] for phase in range(PHASES)
    ]
    assert all(conn.pinged_ms == now for conn in conns)
    # The next round of every phase: nobody is pinged twice; the one that answered
    # is cleared, the rest are dropped half an interval after their ping.
    conns[0].last_seen_ms = now + 1
    later = now + INTERVAL_MS // 2
    for phase in range(PHASES):
        sweep(conns, later, INTERVAL_MS, phase)
    await asyncio.sleep(0.01)
    assert conns[0].pinged_ms is None and not conns[0].closed
    assert all(conn.transport is not None and conn.transport.is_closing()
               for conn in conns[1:])
    for _conn, far in pairs:
        far.close()

