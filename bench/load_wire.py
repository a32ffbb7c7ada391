"""A minimal WebSocket client (RFC 6455) as an asyncio protocol, for the load generator only.

Why not a library client: the generator has one core to drive thousands of
connections and must stay well below the server's cost per frame, or the
benchmark measures itself.  aiohttp's and websockets' clients hand every
frame to a coroutine (a future, a task wake-up, a queue); here a frame is a
plain callback straight from ``data_received``, and a move is written to the
transport from a timer or from the previous answer, with no task at all.  It is
compiled with the server's hot path (``tools/native.py``), as is the game's
generator (:mod:`bench.load_game`).

It speaks just what the benchmark needs: the opening handshake with one
subprotocol, masked binary frames out, unfragmented binary frames in, ping
answered with pong, and the closing handshake.  It is not a general client.

Two shortcuts keep a frame cheap, for the echo baseline and the game players
alike (both use this client, so the comparison between them stays fair):

- **The mask key is always zero.**  RFC 6455 requires every client frame to be
  masked and lets the key be any 32-bit value; a key of four zero bytes is a
  valid frame that every server unmasks as usual (the server's work does not
  change: aiohttp XORs with whatever key it gets).  The RFC asks for
  unpredictable keys so that a hostile page cannot steer the bytes an
  intermediary proxy sees; here a benchmark talks to its own server over
  loopback, with no proxy and no page, so that reason does not apply.  With a
  zero key the masked payload is the payload, so a frame is its header plus
  the payload, and frames that never change (the echo payload, the game's
  moves) can be built ahead (:func:`frame`, :meth:`WireClient.write`).
- **One whole frame per read is dispatched straight from the read.**  Nearly
  every read holds exactly one small server frame; ``data_received`` hands its
  payload over without copying it through the buffer.  Anything else (part of
  a frame, several frames, control frames, a long frame) takes the buffered
  parser.

Closed-loop (saturation) generators also pace their event loop with a
:class:`Pacer`, again the echo baseline and the game players alike.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import struct
import time
from collections.abc import Callable
from typing import Final, cast

from mypy_extensions import mypyc_attr

from server.transport.framing import frame_extent

_GUID: Final = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONTINUATION, OP_TEXT, OP_BINARY = 0x0, 0x1, 0x2
OP_CLOSE, OP_PING, OP_PONG = 0x8, 0x9, 0xA
MAX_FRAME: Final = 1 << 20


@mypyc_attr(native_class=False)  # compiled, a builtin exception is not subclassed
class WireError(ConnectionError):
    """The handshake failed or the server sent something this client does not speak."""


#: The pacing cycle of closed-loop (saturation) generators, game and echo alike: see :class:`Pacer`.
SATURATION_CYCLE_S: Final = 100e-6
#: The scheme of a URL naming a Unix socket: ``ws+unix://SOCKET:/path``.
UNIX_SCHEME: Final = "ws+unix://"
#: The mask key of every frame this client sends (see the module docstring).
ZERO_KEY: Final = b"\x00\x00\x00\x00"


def frame(opcode: int, payload: bytes) -> bytes:
    """One final client frame, masked with the zero key (so the payload goes as it is)."""
    n = len(payload)
    if n < 126:
        header = bytes((0x80 | opcode, 0x80 | n))
    elif n < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return header + ZERO_KEY + payload


class WireClient(asyncio.Protocol):
    """One WebSocket connection; ``on_message(bytes)`` runs for every binary frame."""

    def __init__(self, host: str, port: int, path: str, subprotocol: str) -> None:
        self.on_message: Callable[[bytes], None] = lambda _data: None
        self.on_close: Callable[[], None] = lambda: None
        self.transport: asyncio.Transport | None = None
        self.open = asyncio.get_running_loop().create_future()
        self.closed = False
        self._key = base64.b64encode(os.urandom(16))
        self._subprotocol = subprotocol
        self._request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {self._key.decode()}\r\n"
            f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {subprotocol}\r\n\r\n"
        ).encode()
        self._buffer = bytearray()
        self._handshaken = False

    # ---- asyncio.Protocol ---------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but behave as one.
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(self._request)

    def data_received(self, data: bytes) -> None:
        if self._handshaken and not self._buffer:
            # The usual read: one whole, final, unmasked binary frame, short (its
            # length in the second byte) or up to 64 KiB (a 16-bit length).
            size = len(data)
            if size >= 2 and data[0] == 0x82:
                length = data[1]
                if length < 126:
                    if size == length + 2:
                        self.on_message(data[2:])
                        return
                elif length == 126 and size >= 4 and size == ((data[2] << 8) | data[3]) + 4:
                    self.on_message(data[4:])
                    return
        self._buffer += data
        if not self._handshaken and not self._read_handshake():
            return
        self._read_frames()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.open.done():
            self.open.set_exception(WireError(f"connection lost during the handshake: {exc}"))
        self.on_close()

    # ---- sending ------------------------------------------------------------
    def send(self, payload: bytes) -> None:
        """Write one binary frame now (dropped silently once the socket is closed)."""
        if self.transport is not None and not self.closed:
            self.transport.write(frame(OP_BINARY, payload))

    def write(self, framed: bytes) -> None:
        """Write a frame already built by :func:`frame` (dropped once the socket is closed)."""
        if self.transport is not None and not self.closed:
            self.transport.write(framed)

    def close(self) -> None:
        """Start the closing handshake (1000) and drop the connection shortly after."""
        if self.transport is None or self.closed:
            return
        self.closed = True
        self.transport.write(frame(OP_CLOSE, struct.pack("!H", 1000)))
        asyncio.get_running_loop().call_later(1.0, self.transport.close)

    # ---- parsing --------------------------------------------------------------
    def _read_handshake(self) -> bool:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > 16384:
                self._fail("handshake response too long")
            return False
        head = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
        del self._buffer[: end + 4]
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        accept = base64.b64encode(hashlib.sha1(self._key + _GUID).digest()).decode()
        if not head[0].startswith("HTTP/1.1 101"):
            self._fail(f"server answered {head[0]!r}")
            return False
        if headers.get("sec-websocket-accept") != accept:
            self._fail("bad Sec-WebSocket-Accept")
            return False
        if headers.get("sec-websocket-protocol") != self._subprotocol:
            self._fail(f"server chose subprotocol {headers.get('sec-websocket-protocol')!r}")
            return False
        self._handshaken = True
        self.open.set_result(None)
        return True

    def _read_frames(self) -> None:
        buf = self._buffer
        data = bytes(buf)  # the frames at hand, each payload sliced from it as bytes
        pos = 0
        size = len(data)
        while True:
            head, length = frame_extent(data, pos, size)
            if not head:
                break
            first, second = data[pos], data[pos + 1]
            if second & 0x80 or length > MAX_FRAME or not first & 0x80:
                self._fail("masked, oversized or fragmented frame from the server")
                return
            if size - pos < head + length:
                break
            payload = data[pos + head : pos + head + length]
            pos += head + length
            self._on_frame(first & 0x0F, payload)
        if pos:
            del buf[:pos]

    def _on_frame(self, opcode: int, payload: bytes) -> None:
        if opcode == OP_BINARY:
            self.on_message(payload)
        elif opcode == OP_PING:
            self.send_control(OP_PONG, payload)
        elif opcode == OP_CLOSE:
            if not self.closed:
                self.send_control(OP_CLOSE, payload[:2])
                self.closed = True
            if self.transport is not None:
                self.transport.close()

    def send_control(self, opcode: int, payload: bytes) -> None:
        if self.transport is not None and not self.closed:
            self.transport.write(frame(opcode, payload))

    def _fail(self, why: str) -> None:
        if not self.open.done():
            self.open.set_exception(WireError(why))
        if self.transport is not None:
            self.transport.abort()


class Pacer:
    """Gives each turn of the event loop at least ``cycle_s``, by sleeping, while ``running()``.

    A closed-loop generator that answers every frame at once hands the server
    its next frame a few at a time: both processes then go to sleep and wake
    up (a system call and a context switch, dear on a virtual machine) for
    every few frames, and the server loses the batching it would have under a
    real crowd of clients (it reads several sockets per turn of its loop).  On
    this machine that made a cheaper generator *lower* the server's
    throughput.  Sleeping for what is left of a short cycle lets the answers
    pile up, so that each turn handles a batch and writes a batch.  A turn
    that already took longer than the cycle does not sleep, so a busy
    generator loses nothing.  The price: an answer may wait up to about one
    cycle (plus the kernel's timer slack, 50 µs by default) before it is
    timed, so round trips may read that much long.  The sleep blocks the
    loop on purpose: a saturation run has nothing else to do meanwhile.
    """

    #: Sleeps shorter than this cost more in timer slack than they save.
    MIN_SLEEP_S: Final = 20e-6

    def __init__(self, cycle_s: float) -> None:
        self.cycle_s = cycle_s
        self.started = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running: Callable[[], bool] = lambda: False
        self._turn_began = 0.0

    def start(self, loop: asyncio.AbstractEventLoop, running: Callable[[], bool]) -> None:
        """Pace ``loop`` from now until ``running()`` is false (once; later calls do nothing)."""
        if self.started or self.cycle_s <= 0:
            return
        self.started = True
        self._loop, self._running = loop, running
        self._turn_began = time.perf_counter()
        loop.call_soon(self._turn)

    def _turn(self) -> None:
        if not self._running() or self._loop is None:
            return
        rest = self.cycle_s - (time.perf_counter() - self._turn_began)
        if rest > self.MIN_SLEEP_S:
            time.sleep(rest)
        self._turn_began = time.perf_counter()
        self._loop.call_soon(self._turn)


def pace_from_env(default_s: float) -> float:
    """The pacing cycle in seconds: ``BENCH_LOAD_PACE_US`` when set (0 turns pacing off)."""
    value = os.environ.get("BENCH_LOAD_PACE_US")
    return default_s if value is None else float(value) / 1e6


async def connect(url: str, subprotocol: str, timeout: float = 30.0) -> WireClient:
    """Open ``ws://host:port/path``, or ``ws+unix://SOCKET:/path`` (a Unix socket), and
    finish the handshake."""
    loop = asyncio.get_running_loop()
    if url.startswith(UNIX_SCHEME):
        where, _, path = url[len(UNIX_SCHEME) :].rpartition(":")
        if not where or not path.startswith("/"):
            raise WireError(f"a Unix socket URL is ws+unix://SOCKET:/path, not {url!r}")
        _, client = await asyncio.wait_for(
            loop.create_unix_connection(
                lambda: WireClient("localhost", 80, path, subprotocol), where
            ),
            timeout,
        )
        await asyncio.wait_for(client.open, timeout)
        return client
    if not url.startswith("ws://"):
        raise WireError(f"only ws:// and ws+unix:// URLs are supported, not {url!r}")
    hostport, _, path = url[len("ws://") :].partition("/")
    host, _, port = hostport.rpartition(":")
    _, client = await asyncio.wait_for(
        loop.create_connection(
            lambda: WireClient(host, int(port), "/" + path, subprotocol), host, int(port)
        ),
        timeout,
    )
    await asyncio.wait_for(client.open, timeout)
    return client
