"""Data frames handed to the server as aiohttp parses them, without a task wake-up per frame.

aiohttp's WebSocket reader parses frames inside the socket's ``data_received``
and puts each message on a queue; a task awaiting ``receive()`` is then woken
to take it.  For a move, that wake-up and the coroutines around it cost more
than the move's own rules.  :class:`DirectResponse` is aiohttp's
``WebSocketResponse`` with the queue swapped for a :class:`DirectQueue`, which
offers each data message to a callback first, right where the parser hands it
over.  The callback takes only what it can finish synchronously (the move fast
path) and only while the connection's read loop is parked in ``receive()``
with nothing queued, so messages are still handled in the order they came.
Everything else, control frames included, goes on aiohttp's queue as before.

Once the WebSocket is open, a :class:`~server.transport.splitter.FrameSplitter`
takes the socket's reads before aiohttp's request handler does: it offers a
move to the same callback before aiohttp parses it, and hands aiohttp every
other frame whole.  The queue's own offer stays for a connection the splitter
cannot take over (aiohttp's heartbeat, a transport without ``set_protocol``).

Parsing, unmasking, UTF-8 checks, size limits and the closing handshake stay
aiohttp's, but its parser (which also serves clients, whose frames come
unmasked) is wrapped in a :class:`MaskedReader` that follows the frame
headers and closes with 1002 at a client frame without a mask (RFC 6455, 5.1).
The swap touches private attributes of aiohttp's response and request handler
(checked by ``tests/server/transport/test_direct.py``); when they are not there,
the response is a plain ``WebSocketResponse``, every frame takes the queue and
masks go unchecked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp._websocket.reader import WebSocketDataQueue, WebSocketReader
from aiohttp.helpers import set_exception
from aiohttp.http_websocket import WebSocketError

from server.transport.framing import frame_extent
from server.transport.splitter import FrameSplitter

#: The splitter's largest frame when aiohttp has no limit (larger ones go through whole).
DEFAULT_LIMIT = 1 << 20

#: Takes a data frame's payload; True if it handled the frame, False to queue it.
FrameHook = Callable[[bytes | str], bool]


class DirectQueue(WebSocketDataQueue):
    """aiohttp's message queue, with data frames offered to :attr:`hook` first."""

    _hook: FrameHook | None = None
    #: Frames the hook took from the queue (for the tests and for curiosity); those it
    #: took from the splitter are counted there (``FrameSplitter.taken``).
    taken: int = 0
    #: False once a :class:`~server.transport.splitter.FrameSplitter` offers the frames.
    offers: bool = True
    #: That splitter, which keeps the hook too.
    splitter: FrameSplitter | None = None

    @property
    def hook(self) -> FrameHook | None:
        """Set by the read loop while it waits in ``receive()``; None otherwise."""
        return self._hook

    @hook.setter
    def hook(self, hook: FrameHook | None) -> None:
        self._hook = hook
        if self.splitter is not None:
            self.splitter.hook = hook

    def feed_data(self, data: Any, size: int) -> None:
        hook = self._hook
        if (
            hook is not None
            and self.offers
            and not self._buffer  # something is queued: this frame must wait its turn
            and (data.type is WSMsgType.BINARY or data.type is WSMsgType.TEXT)
            and hook(data.data)
        ):
            self.taken += 1
            return
        super().feed_data(data, size)


class MaskedReader(WebSocketReader):
    """aiohttp's frame parser, refusing client frames without a mask (close 1002).

    It reads only the frame headers, to find each frame's mask bit: two bytes,
    then the extended length, then skips the mask key and the payload.
    """

    def __init__(self, queue: DirectQueue, *args: Any) -> None:
        super().__init__(queue, *args)
        self.messages = queue  # aiohttp's own reference is not visible from Python
        #: Payload bytes of the current frame still to come, and a header cut short.
        self.left = 0
        self.head = b""
        #: The splitter that offers this socket's frames: halted once this reader stops
        #: or refuses.
        self.splitter: FrameSplitter | None = None
        self._refused = False
        self._stopped = False

    @property
    def refused(self) -> bool:
        """Set at a client frame without a mask: nothing more is parsed."""
        return self._refused

    @refused.setter
    def refused(self, value: bool) -> None:
        self._refused = value
        self._halt()

    @property
    def stopped(self) -> bool:
        """Set when the server gave up on the connection: whatever comes is dropped."""
        return self._stopped

    @stopped.setter
    def stopped(self, value: bool) -> None:
        self._stopped = value
        self._halt()

    def _halt(self) -> None:
        if self.splitter is not None and (self._refused or self._stopped):
            self.splitter.halted = True

    def feed_data(self, data: Any) -> tuple[bool, bytes]:
        if self._stopped:
            return False, b""
        if type(data) is not bytes:
            data = bytes(data)
        if self._refused:
            return True, b""
        if not self._all_masked(data):
            self.refused = True
            error = WebSocketError(WSCloseCode.PROTOCOL_ERROR, "client frames must be masked")
            set_exception(self.messages, error)
            return True, b""
        result: tuple[bool, bytes] = super().feed_data(data)
        return result

    def _all_masked(self, data: bytes) -> bool:
        """Follow the frames through ``data``; False at one without the mask bit."""
        if self.head:
            data, self.head = self.head + data, b""
        pos, end = self.left, len(data)
        while end - pos >= 2:
            if not data[pos + 1] & 0x80:
                return False
            header, size = frame_extent(data, pos, end)
            if not header:
                break
            pos += header + size  # the header and mask key, then the payload
        if pos < end:  # a header cut short: keep it for the next read
            self.head, self.left = data[pos:], 0
        else:
            self.left = pos - end
        return True


class DirectResponse(web.WebSocketResponse):
    """A ``WebSocketResponse`` whose parser feeds a :class:`DirectQueue` (see the module)."""

    direct: DirectQueue | None = None
    masked: MaskedReader | None = None
    splitter: FrameSplitter | None = None
    #: Called when aiohttp's close begins (it sets ``_closed``), so that a connection's
    #: writes keep that flag themselves rather than read this object for every frame.
    on_closed: Callable[[], object] | None = None
    _closed_now: bool = False

    @property
    def _closed(self) -> bool:
        """aiohttp's flag, set at the start of its close: no data may follow the close
        frame.  Whoever sets it (aiohttp sets it in one place today) also tells
        :attr:`on_closed`."""
        return self._closed_now

    @_closed.setter
    def _closed(self, value: bool) -> None:
        self._closed_now = value
        if value and self.on_closed is not None:
            self.on_closed()

    def stop_reading(self) -> None:
        """Parse nothing more: the server gave up on this peer (a flood must not be read
        on while aiohttp's close waits for the peer's close frame)."""
        if self.masked is not None:
            self.masked.stopped = True

    def _post_start(self, request: web.BaseRequest, protocol: str | None, writer: Any) -> None:
        handler: Any = request.protocol
        # Bytes that came with the upgrade request must reach the new parser, not the old.
        tail = getattr(handler, "_message_tail", None)
        if tail is not None:
            handler._message_tail = b""
        super()._post_start(request, protocol, writer)
        reader, loop = self._reader, self._loop
        try:
            if reader is None or loop is None:
                raise TypeError("the response did not set up its reader")
            queue = DirectQueue(handler, reader._limit // 2, loop=loop)
            parser = MaskedReader(
                queue, self._max_msg_size, bool(self._compress), self._decode_text
            )
            callback = handler._data_received_cb
            set_parser = handler.set_parser
        except (AttributeError, TypeError):  # another aiohttp: keep its own queue
            if tail:
                handler._payload_parser.feed_data(tail)
            return
        transport = handler.transport
        splitter = None
        if callback is None and transport is not None and hasattr(transport, "set_protocol"):
            # Whole frames from here on: the tail too goes through the splitter.
            limit = self._max_msg_size or DEFAULT_LIMIT
            splitter = FrameSplitter(handler, queue, limit)
        handler._payload_parser = None
        handler._message_tail = b"" if splitter is not None else tail or b""
        set_parser(parser, callback)
        self._reader, self._parser = queue, parser
        self.direct, self.masked = queue, parser
        if splitter is not None:
            queue.offers = False  # the splitter offers the frames, before aiohttp parses
            queue.splitter = parser.splitter = splitter
            transport.set_protocol(splitter)
            self.splitter = splitter
            if tail:
                splitter.data_received(tail)
