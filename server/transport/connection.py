"""One WebSocket connection: its encoding, an ordered outbox, and its read loop.

A frame is written to the socket at once when nothing is waiting before it
and the socket takes data (hand-framed, :mod:`server.transport.framing`).
Otherwise it is queued and written by a short-lived task that waits for the
socket, so a broadcast never waits on one slow reader and frames keep their
order.  A reader that falls :data:`MAX_OUTBOX` frames behind is given up on:
the close frame is written after what its socket holds, and the socket is
cut if that has not gone out within :data:`ABORT_AFTER_S` (a peer that never
reads would otherwise hold it for good).

The connection knows nothing of players or rooms: :meth:`Connection.serve`
hands each data frame to a :class:`Reader` (the server's side of the
connection) and carries out what it answers.  Everything of aiohttp's that
the server uses for a WebSocket is touched here and in the other modules of
:mod:`server.transport`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from aiohttp import WSMessage, WSMsgType, web

from protocol.wire.codec import Encoding, encode
from protocol.wire.errors import CLOSE_TEXT, CloseCode
from protocol.wire.messages import Closing
from server import logs
from server.transport.direct import DirectResponse, FrameHook
from server.transport.framing import (
    BINARY_HEADERS,
    OP_BINARY,
    OP_PING,
    OP_TEXT,
    TABLED,
    WriteBatch,
    close_frame,
    frame_header,
)

#: Frames a connection may have waiting before it counts as dead.
MAX_OUTBOX: Final = 2000
#: Seconds a connection given up on may take to flush before its socket is cut.
ABORT_AFTER_S: Final = 2.0
#: Seconds an abusive peer has to read its close frame; nothing it sends is read.
ABUSE_LINGER_S: Final = 1.0

Frame = bytes | str


class Transport(Protocol):
    """What a connection needs of its socket's asyncio transport."""

    def write(self, data: bytes) -> None: ...

    def is_closing(self) -> bool: ...

    def get_write_buffer_size(self) -> int: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...

    def pause_reading(self) -> None: ...


class Reader(Protocol):
    """The server's side of a connection: what each received frame means."""

    def deadline(self) -> tuple[float, CloseCode] | None:
        """How long to wait for the next frame, and the close code when none comes."""
        ...

    def on_frame(self, frame: Frame) -> CloseCode | None:
        """Handle one data frame; the close code when the connection must go."""
        ...

    def on_direct(self, frame: Frame) -> bool:
        """Handle a frame straight from the parser if it can be done at once (True)."""
        ...

    def on_control(self) -> bool | CloseCode:
        """A WebSocket ping or pong came: True to answer, False to ignore, or the close."""
        ...


@dataclass(eq=False, slots=True)
class Connection:
    """A connected WebSocket, as the transport sees it."""

    ws: web.WebSocketResponse
    encoding: Encoding
    address: str
    conn_id: int
    #: The batch this connection's direct writes join (one per event loop, the hub's).
    batch: WriteBatch
    #: The socket, for writing frames directly (``None``: always through aiohttp).
    transport: Transport | None = None
    closed: bool = False
    outbox: deque[Frame] = field(default_factory=deque)
    writer: asyncio.Task[Any] | None = None
    kick_pending: bool = False
    #: True while this connection's reader handles a frame; it writes what it queued.
    reading: bool = False
    #: Server time of the last frame received (any frame, pongs included), for the heartbeat.
    last_seen_ms: int = 0
    #: Server time of the heartbeat's unanswered ping, if one is out.
    pinged_ms: int | None = None
    #: Server time the heartbeat first saw this connection closed and still open.
    closed_seen_ms: int | None = None
    #: Framed bytes waiting for the end of the current batch, in one piece: bytes, not
    #: a list of them, so a write touches one object less (a list per connection was
    #: two more lines of memory out of the cache at 10,000 players), and the garbage
    #: collector does not track them.
    staged: bytes = b""
    #: Whether aiohttp's close began (its ``ws._closed``), as a
    #: :class:`~server.transport.direct.DirectResponse` (every socket of the server's)
    #: tells it (``ws_tells``); the writes read this instead of ``ws``, an object out of
    #: the cache at 10,000 players.  Read from ``ws`` when it does not tell.
    ws_closed: bool = False
    ws_tells: bool = False

    def __post_init__(self) -> None:
        ws = self.ws
        if isinstance(ws, DirectResponse):
            ws.on_closed = self._ws_closing
            self.ws_tells = True
            self.ws_closed = ws._closed

    def _ws_closing(self) -> None:
        self.ws_closed = True

    def _ws_close_began(self) -> bool:
        """Whether aiohttp's close began: no data may follow the close frame.  Kept here
        (``ws_closed``), or read from aiohttp's attribute, not its property (a Python call
        per frame otherwise)."""
        return self.ws_closed if self.ws_tells else self.ws._closed

    def send(self, frame: Frame) -> None:
        """Send ``frame`` (encoded for this connection's encoding): now if possible, else queued."""
        if self.closed:
            return
        if not self.outbox and self.writer is None and self._write_now(frame):
            return
        if self.staged:  # keep order: what is staged goes first
            self.write_staged()
        if len(self.outbox) >= MAX_OUTBOX:
            self.give_up(CloseCode.TRY_AGAIN_LATER, "too far behind")
            return
        self.outbox.append(frame)
        if self.writer is None and not self.kick_pending and not self.reading:
            # Deferred: the reader usually writes its own replies inline (write_pending),
            # so most frames never need a task of their own.
            self.kick_pending = True
            asyncio.get_running_loop().call_soon(self._kick)

    def _write_now(self, frame: Frame) -> bool:
        """Write ``frame`` to the socket if it takes data right now (no backlog)."""
        staged = self.staged
        if staged and isinstance(frame, bytes):
            # The batch holds frames of this socket: it took data when the first was
            # staged, and nothing was written since.
            size = len(frame)
            header = BINARY_HEADERS[size] if size < TABLED else frame_header(OP_BINARY, size)
            self.staged = b"".join((staged, header, frame))
            return True
        transport = self.transport
        if transport is None or transport.get_write_buffer_size():
            return False
        if isinstance(frame, str):
            data = frame.encode()
            header = frame_header(OP_TEXT, len(data))
        else:
            size = len(frame)
            header = BINARY_HEADERS[size] if size < TABLED else frame_header(OP_BINARY, size)
            data = frame
        batch = self.batch
        if batch.depth:
            # Whether the socket is still open is asked once, when the batch writes
            # (write_staged), not for each frame it holds.
            if staged:
                self.staged = b"".join((staged, header, data))
            else:
                batch.staged.append(self)
                self.staged = header + data
            return True
        if self._ws_close_began() or transport.is_closing():
            return False
        transport.write(header + data)
        return True

    def write_staged(self) -> None:
        """Write what the batch held back, in one piece (dropped if the socket went)."""
        data = self.staged
        if not data:  # written already (WriteBatch.write_now), or nothing held back
            return
        self.staged = b""
        transport = self.transport
        if not (transport is None or self.closed or self._ws_close_began()
                or transport.is_closing()):
            transport.write(data)

    def ping(self, now_ms: int) -> None:
        """Send a WebSocket ping (the heartbeat's question: are you there?)."""
        self.pinged_ms = now_ms
        transport = self.transport
        if transport is not None and not self.ws.closed and not transport.is_closing():
            transport.write(frame_header(OP_PING, 0))  # control frames may jump the queue
        elif not self.ws.closed:
            asyncio.get_running_loop().create_task(self._ping_later())

    async def _ping_later(self) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.ws.ping()

    def drop(self) -> None:
        """Cut the socket at once, without a closing handshake (the peer is gone).

        Whatever the socket still held is discarded: a peer that stopped reading
        would keep a socket that waits to flush open for good."""
        self.closed = True
        self.outbox.clear()
        self.staged = b""
        if self.transport is not None:
            self.transport.abort()
        else:
            asyncio.get_running_loop().create_task(self.ws.close())

    def give_up(self, code: CloseCode, reason: str = "", *, linger_s: float = 0.0) -> None:
        """Close with ``code`` without waiting for the peer, reading nothing more from it.

        ``closing`` and the close frame follow what the socket holds; the socket
        closes ``linger_s`` later (time for the peer to read them: closing with unread
        bytes resets it) and is cut if it has not flushed within :data:`ABORT_AFTER_S`.
        Queued frames are dropped.
        """
        transport = self.transport
        if transport is None or transport.is_closing() or self.ws.closed:
            self.drop()
            return
        self.closed = True
        self.outbox.clear()
        self.staged = b""
        text = (reason or CLOSE_TEXT[code])[:120]
        closing = encode(Closing(int(code), text), self.encoding)
        data, opcode = (closing.encode(), OP_TEXT) if isinstance(closing, str) else (
            closing, OP_BINARY
        )
        transport.write(frame_header(opcode, len(data)) + data)
        transport.write(close_frame(int(code), text.encode()[:120]))
        transport.pause_reading()
        if isinstance(self.ws, DirectResponse):
            self.ws.stop_reading()
        loop = asyncio.get_running_loop()
        loop.call_later(linger_s, transport.close)  # flushes what it holds, then closes
        loop.call_later(linger_s + ABORT_AFTER_S, transport.abort)

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
        try:
            # aiohttp's close waits for the socket to take the close frame and for the
            # peer's answer: a peer that stopped reading must not hold it for good.
            await asyncio.wait_for(
                self.ws.close(code=int(code), message=text.encode()[:120]), ABORT_AFTER_S * 2
            )
        except TimeoutError:
            self.drop()

    @property
    def close_code(self) -> int | None:
        """The WebSocket close code, once the socket is closed."""
        return self.ws.close_code

    async def serve(self, reader: Reader, clock: Callable[[], int]) -> None:
        """Read frames until the socket closes, each handed to ``reader``; then closed."""
        try:
            await self._serve(reader, clock)
        finally:
            self.closed = True

    async def _serve(self, reader: Reader, clock: Callable[[], int]) -> None:
        ws = self.ws
        direct = ws.direct if isinstance(ws, DirectResponse) else None
        hook: FrameHook = reader.on_direct
        while not ws.closed and not self.closed:
            deadline = reader.deadline()
            # Frames may skip the queue only while nothing can time out: the reader's
            # direct frames never change the deadline, so the wait below stays right.
            if direct is not None and deadline is None:
                direct.hook = hook
            try:
                msg = await ws.receive(timeout=(deadline[0] or None) if deadline else None)
            except TimeoutError:
                await self.close(deadline[1] if deadline else CloseCode.IDLE_TIMEOUT)
                return
            finally:
                if direct is not None:
                    direct.hook = None
            if not await self._received(msg, reader, clock):
                return

    async def _received(self, msg: WSMessage, reader: Reader, clock: Callable[[], int]) -> bool:
        """Carry out one received message; False when the read loop must end."""
        if msg.type is WSMsgType.BINARY or msg.type is WSMsgType.TEXT:
            self.reading = True
            try:
                # What one message makes the server send (a start: room_state, then
                # race_start to every player) leaves as one write per socket.
                with self.batch:
                    close_code = reader.on_frame(msg.data)
            finally:
                self.reading = False
            if self.outbox:
                await self.write_pending()
            if close_code is CloseCode.POLICY_VIOLATION:  # abuse: read nothing more
                self.give_up(close_code, linger_s=ABUSE_LINGER_S)
                return False
            if close_code is not None:
                await self.close(close_code)
        elif msg.type is WSMsgType.PING or msg.type is WSMsgType.PONG:
            # Control frames cost credit like any frame: a ping flood is refused and closed.
            allowed = reader.on_control()
            if isinstance(allowed, CloseCode):
                self.give_up(allowed, linger_s=ABUSE_LINGER_S)
                return False
            if allowed and msg.type is WSMsgType.PING:
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await self.ws.pong(msg.data)
        elif msg.type == WSMsgType.ERROR:
            logs.event("socket_error", conn=self.conn_id, error=str(self.ws.exception()))
            return False
        else:  # CLOSE, CLOSING, CLOSED
            return False
        return True
