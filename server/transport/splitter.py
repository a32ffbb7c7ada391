"""A socket's reads cut into whole client frames, before aiohttp parses them.

Once a WebSocket is open, :class:`FrameSplitter` is the socket's protocol in place
of aiohttp's request handler.  It follows the frame headers through each read,
keeps a frame cut short until the rest comes, and hands the handler only whole
frames, so aiohttp's parser never holds part of one.  A frame the read loop can
take straight away (:class:`~server.transport.direct.DirectQueue`'s ``hook``: a
final binary frame with a mask and no extension bit, outside a message in
fragments, while aiohttp's queue is empty) is unmasked here and
offered to the hook; when the hook takes it, aiohttp never sees it.  Everything
else, and a frame the hook declines, goes to the handler as the bytes that came,
in order: control frames, text, fragments, frames without a mask, frames with an
extension bit.  aiohttp then does what it always did with them (answer, queue,
refuse, close).

For a move this skips aiohttp's request handler, its frame parser, its queue and
the mask check of :class:`~server.transport.direct.MaskedReader`: four calls, two
of them Python, per frame (performance.md).  A frame of aiohttp's limit or longer
turns the splitter into a pipe for good: aiohttp closes the connection with 1009.

Pure (no sockets, no clock): the caller gives it the handler and the queue whose
``_buffer`` says whether a frame must wait its turn, and sets :attr:`FrameSplitter.hook`
(the read loop's, while it waits) and :attr:`FrameSplitter.halted` (the parser stopped
or refused: nothing may be taken any more).  They are kept here, not read from the
queue and the parser per frame: at 10,000 players those objects are out of the cache,
and their six reads were 2.4% of the server's time (performance-log.md).
"""

from __future__ import annotations

from typing import Any, Final

from server.transport.framing import frame_extent

#: A final binary frame without extension bits: the only kind offered to the hook.
_FINAL_BINARY: Final = 0x82
_MASKED: Final = 0x80
_OP_TEXT: Final = 0x1
_OP_BINARY: Final = 0x2
_OP_CONTINUATION: Final = 0x0


def unmask(data: bytes, key_at: int, size: int) -> bytes:
    """The ``size`` payload bytes after the 4-byte mask key at ``data[key_at]``, unmasked
    (RFC 6455, 5.3)."""
    if not size:
        return b""
    start = key_at + 4
    words = (size + 3) >> 2
    mask = int.from_bytes(data[key_at:start] * words, "big") >> ((words * 4 - size) * 8)
    payload = int.from_bytes(data[start : start + size], "big")
    return (payload ^ mask).to_bytes(size, "big")


class FrameSplitter:
    """The protocol of an open WebSocket's socket: whole frames to aiohttp's handler
    (``inner``), moves to the read loop's hook (the module says which)."""

    def __init__(self, inner: Any, queue: Any, limit: int) -> None:
        #: aiohttp's request handler, which everything not taken goes to.
        self.inner = inner
        self.inner_data: Any = inner.data_received
        #: aiohttp's queue (a DirectQueue, whose ``_buffer`` holds what is queued).
        self.queue = queue
        #: The read loop's hook while it waits in ``receive()`` (the DirectQueue sets it
        #: with its own); None otherwise.
        self.hook: Any = None
        #: Set for good once aiohttp's parser (a MaskedReader) stopped or refused.
        self.halted = False
        #: Frames the hook took from here (the queue counts those it offered itself):
        #: a native attribute, where the queue's is a Python object's, read and written.
        self.taken = 0
        #: aiohttp's limit: a frame of that size or more is piped through (aiohttp closes).
        self.limit = limit
        #: A frame cut short, kept until the rest comes.
        self.head = b""
        #: Inside a message in fragments: frames go to aiohttp until its last fragment.
        self.fragmented = False
        #: Set by a frame of the limit or longer: from then on every byte goes to aiohttp.
        self.piped = False

    # ---- the socket's protocol ----------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self.head:
            data = self.head + data
            self.head = b""
        if self.piped:
            self.inner_data(data)
            return
        end = len(data)
        pos = passed = 0  # the next frame; the first byte not handed on yet
        while True:
            header, size = frame_extent(data, pos, end)
            if not header:
                break
            first, second = data[pos], data[pos + 1]
            if size >= self.limit:
                self.piped = True
                break
            stop = pos + header + size
            if stop > end:
                break
            if first == _FINAL_BINARY and second & _MASKED and not self.fragmented:
                if passed < pos:  # what came before goes first, and may fill the queue
                    self.inner_data(data[passed:pos])
                    passed = pos
                if self._offer(data, pos + header - 4, size):
                    passed = stop
            else:
                opcode = first & 0x0F
                if opcode in (_OP_TEXT, _OP_BINARY):
                    self.fragmented = not first & 0x80
                elif opcode == _OP_CONTINUATION and first & 0x80:
                    self.fragmented = False
            pos = stop
        if self.piped:
            self.inner_data(data[passed:])
            return
        if passed < pos:
            self.inner_data(data[passed:pos])
        if pos < end:
            self.head = data[pos:]

    def _offer(self, data: bytes, key_at: int, size: int) -> bool:
        """Offer a final binary frame to the read loop's hook; True if it was taken."""
        hook = self.hook
        if hook is None or self.halted:
            return False
        inner = self.inner
        if (
            self.queue._buffer  # something is queued: this frame must wait its turn
            or inner._force_close
            or inner._close
        ):
            return False
        if not hook(unmask(data, key_at, size)):
            return False
        self.taken += 1
        return True

    def eof_received(self) -> bool | None:
        result: bool | None = self.inner.eof_received()
        return result

    def connection_lost(self, exc: BaseException | None) -> None:
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_made(self, transport: Any) -> None:
        """Never called: the splitter takes over a socket that is open already."""
