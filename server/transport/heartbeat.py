"""The heartbeat: find dead peers with one sweep over all connections.

aiohttp's own heartbeat re-arms a timer for every chunk a connection
receives, which on a busy server costs about as much as the rest of reading
a frame.  Here every frame only stamps its connection (``last_seen_ms``, set
by the reader), and a sweep every quarter of ``heartbeat_s`` pings each
connection that has been silent for ``heartbeat_s`` and drops one that has
not answered its ping (with any frame, the pong included) within half of
``heartbeat_s``, closing the socket without a handshake, as aiohttp does.
A connection the server already gave up on (marked closed) whose close has
not ended by then either, a peer that stopped reading holding it, is cut too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from server import logs
from server.transport.connection import Connection


def sweep(connections: Iterable[Connection], now_ms: int, interval_ms: int) -> None:
    """One round at ``now_ms``: ping the silent, drop those a ping did not wake."""
    for conn in list(connections):
        if conn.closed:
            if conn.closed_seen_ms is None:
                conn.closed_seen_ms = now_ms
            elif now_ms - conn.closed_seen_ms >= interval_ms // 2:
                conn.drop()
            continue
        pinged = conn.pinged_ms
        if pinged is not None:
            if conn.last_seen_ms >= pinged:
                conn.pinged_ms = None  # it answered
            elif now_ms - pinged >= interval_ms // 2:
                conn.drop()
                continue
        if conn.pinged_ms is None and now_ms - conn.last_seen_ms >= interval_ms:
            conn.ping(now_ms)


async def keep_alive(
    connections: Callable[[], Iterable[Connection]], clock: Callable[[], int], interval_s: float
) -> None:
    """Sweep ``connections()`` every ``interval_s / 4`` seconds, until cancelled."""
    interval_ms = max(1, int(interval_s * 1000))
    while True:
        await asyncio.sleep(interval_s / 4)
        try:
            sweep(connections(), clock(), interval_ms)
        except Exception:
            logs.failure("heartbeat_failed")
