"""One WebSocket connection: its encoding, its budget, and an ordered outbox.

A frame is written to the socket at once when nothing is waiting before it
and the socket takes data (:func:`frame_header`: aiohttp's writer has no
synchronous call, and awaiting one per frame costs more than the frame).
Otherwise it is queued and written by a short-lived task that waits for the
socket, so a broadcast never waits on one slow reader and frames keep their
order.  A reader that falls :data:`MAX_OUTBOX` frames behind is disconnected.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from aiohttp import web

from protocol.wire.codec import Encoding, encode
from protocol.wire.errors import CLOSE_TEXT, CloseCode
from protocol.wire.messages import Closing
from server.race.ratelimit import CreditBucket

if TYPE_CHECKING:
    from server.hub import Session

#: Frames a connection may have waiting before it counts as dead.
MAX_OUTBOX: Final = 2000

Frame = bytes | str

_OP_TEXT: Final = 0x1
_OP_BINARY: Final = 0x2
_OP_PING: Final = 0x9
#: Frames up to this many bytes have their header ready-made (answers run 130-200 bytes).
_TABLED: Final = 1024


def _header(opcode: int, size: int) -> bytes:
    if size < 126:
        return bytes((0x80 | opcode, size))
    if size < 1 << 16:
        return struct.pack("!BBH", 0x80 | opcode, 126, size)
    return struct.pack("!BBQ", 0x80 | opcode, 127, size)


_HEADERS: Final = {
    opcode: tuple(_header(opcode, n) for n in range(_TABLED))
    for opcode in (_OP_TEXT, _OP_BINARY, _OP_PING)
}


def frame_header(opcode: int, size: int) -> bytes:
    """The header of a final, unmasked, uncompressed server frame (RFC 6455, 5.2)."""
    return _HEADERS[opcode][size] if size < _TABLED else _header(opcode, size)


class WriteBatch:
    """Inside ``with BATCH:``, frames for one socket are joined into one write at the end.

    A progress flush sends a spectator five frames at once; one system call for
    them all costs about as much as one for each.  Batches nest; the outermost
    one writes.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.staged: list[Connection] = []

    def __enter__(self) -> None:
        self.depth += 1

    def __exit__(self, *_exc: object) -> None:
        self.depth -= 1
        if not self.depth:
            staged, self.staged = self.staged, []
            for conn in staged:
                conn.write_staged()


#: The batch of the process's event loop (one thread writes frames).
BATCH: Final = WriteBatch()


class Transport(Protocol):
    """What a connection needs of its socket's asyncio transport."""

    def write(self, data: bytes) -> None: ...

    def is_closing(self) -> bool: ...

    def get_write_buffer_size(self) -> int: ...

    def close(self) -> None: ...


@dataclass(eq=False, slots=True)
class Connection:
    """A connected WebSocket and what the server knows about it."""

    ws: web.WebSocketResponse
    encoding: Encoding
    address: str
    bucket: CreditBucket
    conn_id: int
    session: Session | None = None
    bad_frames: int = 0
    rooms_created: int = 0
    closed: bool = False
    outbox: deque[Frame] = field(default_factory=deque)
    writer: asyncio.Task[Any] | None = None
    kick_pending: bool = False
    #: True while this connection's reader handles a frame; it writes what it queued.
    reading: bool = False
    #: The socket, for writing frames directly (``None``: always through aiohttp).
    transport: Transport | None = None
    #: Server time of the last frame received (any frame, pongs included), for the heartbeat.
    last_seen_ms: int = 0
    #: Server time of the heartbeat's unanswered ping, if one is out.
    pinged_ms: int | None = None
    #: Framed bytes waiting for the end of the current :data:`BATCH`.
    staged: list[bytes] = field(default_factory=list)

    def send(self, frame: Frame) -> None:
        """Send ``frame`` (encoded for this connection's encoding): now if possible, else queued."""
        if self.closed:
            return
        if not self.outbox and self.writer is None and self._write_now(frame):
            return
        if self.staged:  # keep order: what is staged goes first
            self.write_staged()
        if len(self.outbox) >= MAX_OUTBOX:
            self.closed = True
            self.outbox.clear()
            asyncio.get_running_loop().create_task(
                self.ws.close(code=CloseCode.TRY_AGAIN_LATER, message=b"too far behind")
            )
            return
        self.outbox.append(frame)
        if self.writer is None and not self.kick_pending and not self.reading:
            # Deferred: the reader usually writes its own replies inline (write_pending),
            # so most frames never need a task of their own.
            self.kick_pending = True
            asyncio.get_running_loop().call_soon(self._kick)

    def _write_now(self, frame: Frame) -> bool:
        """Write ``frame`` to the socket if it takes data right now (no backlog)."""
        transport = self.transport
        if (
            transport is None
            or self.ws.closed  # true from the start of a close: no data after the close frame
            or transport.is_closing()
            or transport.get_write_buffer_size()
        ):
            return False
        if isinstance(frame, str):
            data = frame.encode()
            opcode = _OP_TEXT
        else:
            data, opcode = frame, _OP_BINARY
        if BATCH.depth:
            if not self.staged:
                BATCH.staged.append(self)
            self.staged += (frame_header(opcode, len(data)), data)
        else:
            transport.write(frame_header(opcode, len(data)) + data)
        return True

    def write_staged(self) -> None:
        """Write what the batch held back, in one piece (dropped if the socket went)."""
        data, self.staged = b"".join(self.staged), []
        transport = self.transport
        if transport is not None and not (self.closed or self.ws.closed or transport.is_closing()):
            transport.write(data)

    def ping(self, now_ms: int) -> None:
        """Send a WebSocket ping (the heartbeat's question: are you there?)."""
        self.pinged_ms = now_ms
        transport = self.transport
        if transport is not None and not self.ws.closed and not transport.is_closing():
            transport.write(frame_header(_OP_PING, 0))  # control frames may jump the queue
        elif not self.ws.closed:
            asyncio.get_running_loop().create_task(self._ping_later())

    async def _ping_later(self) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.ws.ping()

    def drop(self) -> None:
        """Close the socket at once, without a closing handshake (the peer is gone)."""
        self.closed = True
        self.outbox.clear()
        if self.transport is not None:
            self.transport.close()
        else:
            asyncio.get_running_loop().create_task(self.ws.close())

    def _kick(self) -> None:
        self.kick_pending = False
        if self.outbox and self.writer is None and not self.closed:
            self.writer = asyncio.get_running_loop().create_task(self._drain())

    async def write_pending(self) -> None:
        """Write queued frames from the calling task (the connection's reader)."""
        if self.writer is not None or not self.outbox or self.closed:
            return
        self.writer = asyncio.current_task()
        try:
            await self._write_all()
        finally:
            self.writer = None

    async def _drain(self) -> None:
        try:
            await self._write_all()
        except asyncio.CancelledError:
            self.closed = True
            self.outbox.clear()
        finally:
            self.writer = None

    async def _write_all(self) -> None:
        try:
            while self.outbox and not self.closed:
                frame = self.outbox.popleft()
                if isinstance(frame, bytes):
                    await self.ws.send_bytes(frame)
                else:
                    await self.ws.send_str(frame)
        except (ConnectionError, RuntimeError):
            # The peer went away mid-write; the read loop notices and cleans up.
            self.closed = True
            self.outbox.clear()

    async def flush(self) -> None:
        """Wait until every queued frame has been handed to the socket."""
        while (self.outbox or self.writer is not None) and not self.closed:
            if self.writer is None:
                self._kick()
            await asyncio.sleep(0.005)

    async def close(self, code: CloseCode, reason: str = "") -> None:
        """Send a ``closing`` message, flush, and close with ``code``."""
        if self.ws.closed:
            self.closed = True
            return
        text = (reason or CLOSE_TEXT[code])[:120]
        self.send(encode(Closing(int(code), text), self.encoding))
        with contextlib.suppress(TimeoutError, ConnectionError, RuntimeError):
            await asyncio.wait_for(self.flush(), timeout=2.0)
        self.closed = True
        await self.ws.close(code=int(code), message=text.encode()[:120])
