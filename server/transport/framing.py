"""Server WebSocket frames written by hand, and the batch that joins them into one write.

aiohttp's writer has no synchronous call, and awaiting one per frame costs
more than the frame, so a connection whose socket takes data writes its
frames itself: :func:`frame_header` plus the payload (RFC 6455, 5.2: final,
unmasked, uncompressed).  Inside a :class:`WriteBatch`, the frames for one
socket are held back and written in one piece when the batch ends.
"""

from __future__ import annotations

import struct
from typing import Final, Protocol

OP_TEXT: Final = 0x1
OP_BINARY: Final = 0x2
OP_CLOSE: Final = 0x8
OP_PING: Final = 0x9
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
    for opcode in (OP_TEXT, OP_BINARY, OP_PING)
}


#: :func:`frame_header` of a binary frame of each size below :data:`TABLED`, by size.
BINARY_HEADERS: Final = _HEADERS[OP_BINARY]
TABLED: Final = _TABLED


def frame_header(opcode: int, size: int) -> bytes:
    """The header of a final, unmasked, uncompressed server frame (RFC 6455, 5.2)."""
    return _HEADERS[opcode][size] if size < _TABLED else _header(opcode, size)


def frame_extent(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The frame whose header starts at ``data[pos]`` (RFC 6455, 5.2), of either side:
    the length of its header, mask key included, and of its payload; ``(0, 0)`` while
    its length is cut short (the bytes at hand stop at ``end``).  Whether the mask key
    and the payload are at hand is the caller's to check."""
    if end - pos < 2:
        return 0, 0
    second = data[pos + 1]
    size = second & 0x7F
    header = 2
    if size == 126:
        if end - pos < 4:
            return 0, 0
        size, header = data[pos + 2] << 8 | data[pos + 3], 4
    elif size == 127:
        if end - pos < 10:
            return 0, 0
        size, header = int.from_bytes(data[pos + 2 : pos + 10], "big"), 10
    if second & 0x80:
        header += 4
    return header, size


def close_frame(code: int, reason: bytes = b"") -> bytes:
    """A whole server close frame: ``code`` and at most 123 bytes of ``reason`` (5.5.1)."""
    payload = struct.pack("!H", code) + reason[:123]
    return _header(OP_CLOSE, len(payload)) + payload


class Staged(Protocol):
    """A connection with frames held back by a batch."""

    def write_staged(self) -> None: ...


class WriteBatch:
    """Inside ``with batch:``, frames for one socket are joined into one write at the end.

    A progress flush sends a spectator five frames at once; one system call for
    them all costs about as much as one for each.  Batches nest; the outermost
    one writes.  One batch serves all the connections of one event loop (the
    hub holds it; every connection it accepts writes through it).
    """

    __slots__ = ("depth", "staged")

    def __init__(self) -> None:
        self.depth = 0
        self.staged: list[Staged] = []

    def __enter__(self) -> None:
        self.depth += 1

    def write_now(self, conns: list[Staged]) -> None:
        """Write what ``conns`` hold back now, before the batch's other sockets (those
        that wait for an answer in it); the batch's end then skips them."""
        for conn in conns:
            conn.write_staged()

    def __exit__(self, *_exc: object) -> None:
        self.depth -= 1
        if not self.depth:
            staged, self.staged = self.staged, []
            for conn in staged:
                conn.write_staged()
