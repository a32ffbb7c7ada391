"""A raw WebSocket client over a plain socket, for frames a library would never send.

It writes frames byte by byte as RFC 6455 lays them out (masked or not, any
opcode, any size, many in one write), and reads the server's frames one at a
time, so a test sees every pong, every close code and whatever comes before
the socket ends.  ``tests/server/transport/test_hostile.py`` and
``bench/abuse.py`` use it.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import struct
from typing import Final

from protocol.wire import codec
from protocol.wire import messages as m

OP_TEXT: Final = 0x1
OP_BINARY: Final = 0x2
OP_CLOSE: Final = 0x8
OP_PING: Final = 0x9
OP_PONG: Final = 0xA


def client_frame(payload: bytes, opcode: int = OP_BINARY, *, masked: bool = True) -> bytes:
    """One final client frame of any size; ``masked=False`` breaks RFC 6455 section 5.1."""
    size = len(payload)
    if size < 126:
        head = bytes((0x80 | opcode, (0x80 if masked else 0) | size))
    elif size < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, (0x80 if masked else 0) | 126, size)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, (0x80 if masked else 0) | 127, size)
    if not masked:
        return head + payload
    key = os.urandom(4)
    mask = (key * (size // 4 + 1))[:size]
    masked_payload = (int.from_bytes(payload, "big") ^ int.from_bytes(mask, "big")).to_bytes(
        size, "big"
    )
    return head + key + masked_payload


class RawClient:
    """One raw WebSocket connection to a test server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.encoding = codec.Encoding.MSGPACK

    @classmethod
    async def open(
        cls,
        ws_url: str,
        subprotocol: str = codec.SUBPROTOCOL_MSGPACK,
        *,
        receive_buffer: int | None = None,
        forwarded_for: str | None = None,
    ) -> RawClient:
        """Connect and upgrade; ``receive_buffer`` shrinks the socket's (a client that
        stops reading then holds little in its kernel); ``forwarded_for`` is sent as
        ``X-Forwarded-For`` (believed by a server that trusts 127.0.0.1)."""
        host, port = ws_url.removeprefix("ws://").split("/")[0].rsplit(":", 1)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
        limit = receive_buffer or 2**16
        reader, writer = await asyncio.open_connection(sock=sock, limit=limit)
        key = base64.b64encode(os.urandom(16)).decode()
        extra = f"X-Forwarded-For: {forwarded_for}\r\n" if forwarded_for else ""
        writer.write(
            f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Protocol: {subprotocol}\r\n{extra}\r\n".encode()
        )
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        if not head.startswith(b"HTTP/1.1 101"):
            writer.close()
            raise ConnectionRefusedError(head.split(b"\r\n")[0].decode())
        client = cls(reader, writer)
        if subprotocol == codec.SUBPROTOCOL_JSON:
            client.encoding = codec.Encoding.JSON
        return client

    def write(self, data: bytes) -> None:
        """Put bytes on the socket as they are."""
        self.writer.write(data)

    def send(self, message: m.ClientMessage) -> None:
        """Write one protocol message as a masked frame of the connection's type."""
        data = codec.encode(message, self.encoding)
        if isinstance(data, str):
            self.write(client_frame(data.encode(), OP_TEXT))
        else:
            self.write(client_frame(data))

    async def read_frame(self, timeout: float = 10.0) -> tuple[int, bytes]:
        """The next server frame: (opcode, payload).  Raises ``IncompleteReadError`` at EOF."""
        first, second = await asyncio.wait_for(self.reader.readexactly(2), timeout)
        size = second & 0x7F
        if size == 126:
            size = struct.unpack("!H", await self.reader.readexactly(2))[0]
        elif size == 127:
            size = struct.unpack("!Q", await self.reader.readexactly(8))[0]
        return first & 0x0F, await asyncio.wait_for(self.reader.readexactly(size), timeout)

    async def read_message(self, timeout: float = 10.0) -> m.ServerMessage:
        """The next data frame, decoded (control frames skipped)."""
        while True:
            opcode, payload = await self.read_frame(timeout)
            if opcode == OP_BINARY:
                return codec.decode_server(payload, codec.Encoding.MSGPACK)
            if opcode == OP_TEXT:
                return codec.decode_server(payload.decode(), codec.Encoding.JSON)
            assert opcode != OP_CLOSE, f"closed with {payload[:2].hex()}"

    async def hello(self, name: str, token: str | None = None) -> m.Welcome:
        """Say hello and wait for ``welcome``."""
        self.send(m.Hello(name=name, version=m.PROTOCOL_VERSION, token=token))
        while True:
            message = await self.read_message()
            if isinstance(message, m.Welcome):
                return message

    async def until_closed(self, timeout: float = 10.0) -> tuple[int | None, dict[int, int]]:
        """Read until the server closes: its close code (None when the socket just ended)
        and how many frames of each opcode came before."""
        counts: dict[int, int] = {}
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            left = deadline - asyncio.get_running_loop().time()
            try:
                opcode, payload = await self.read_frame(max(0.01, left))
            except (asyncio.IncompleteReadError, ConnectionError):
                return None, counts
            if opcode == OP_CLOSE:
                return (struct.unpack("!H", payload[:2])[0] if payload else None), counts
            counts[opcode] = counts.get(opcode, 0) + 1

    def close(self) -> None:
        """Drop the socket."""
        self.writer.close()
