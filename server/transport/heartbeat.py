"""The heartbeat: find dead peers with one sweep over all connections.

aiohttp's own heartbeat re-arms a timer for every chunk a connection
receives, which on a busy server costs about as much as the rest of reading
a frame.  Here every frame only stamps its connection (``last_seen_ms``, set
by the reader), and each connection is looked at every quarter of
``heartbeat_s``: one silent for ``heartbeat_s`` is pinged, one that has not
answered its ping (with any frame, the pong included) within half of
``heartbeat_s`` is dropped, closing the socket without a handshake, as aiohttp
does.  A connection the server already gave up on (marked closed) whose close
has not ended by then either, a peer that stopped reading holding it, is cut
too.

The sweeps come :data:`PHASES` times as often and each looks at one share of
the connections (by connection number): connections that fell silent together
(the spectators of rooms made at the same moment) are pinged in four rounds,
not one.  At 6,000 players, 1,500 spectators pinged in one sweep made a stall
that doubled that second's worst round trip (30 ms more).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Final

from server import logs
from server.transport.connection import Connection

#: Sweeps per quarter of ``heartbeat_s``, each over its share of the connections.
PHASES: Final = 4


def sweep(connections: Iterable[Connection], now_ms: int, interval_ms: int, phase: int) -> None:
    """One round at ``now_ms`` among the connections whose number is ``phase`` modulo
    :data:`PHASES`: ping the silent, drop those a ping did not wake."""
    for conn in list(connections):
        if conn.conn_id % PHASES != phase:
            continue
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
    """Sweep one share of ``connections()`` every ``interval_s / 4 / PHASES`` seconds
    (each connection every ``interval_s / 4``), until cancelled."""
    interval_ms = max(1, int(interval_s * 1000))
    phase = 0
    while True:
        await asyncio.sleep(interval_s / 4 / PHASES)
        try:
            sweep(connections(), clock(), interval_ms, phase)
        except Exception:
            logs.failure("heartbeat_failed")
        phase = (phase + 1) % PHASES
