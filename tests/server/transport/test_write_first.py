"""The outputs of a commit go out in one write batch, and the sockets of the answers in it
are written before the batch's other sockets (a spectator's boards, a racer's progress
frame with no answer), each socket once, with its frames in the order they were sent.

Connections are real sockets (socket pairs): the test reads each far end.  A recorder
between each connection and its transport notes the order of the writes."""

from __future__ import annotations

import asyncio
import contextlib
import socket

from aiohttp import web

from protocol.wire.codec import Encoding
from protocol.wire.messages import MoveAction
from server.recovery.journal import Journal
from server.storage.inputlog import SqlInputLog
from server.storage.store import RaceStore
from server.transport.connection import Connection, Transport
from server.transport.direct import DirectResponse
from server.transport.framing import OP_BINARY, WriteBatch, frame_header


class _Quiet(asyncio.Protocol):
    """The server side's protocol: it never reads (the test reads the far end)."""


class Recorded:
    """A real transport, noting in ``order`` which socket each write went to."""

    def __init__(self, name: str, real: asyncio.Transport, order: list[str]) -> None:
        self.name, self.real, self.order = name, real, order

    def write(self, data: bytes) -> None:
        self.order.append(self.name)
        self.real.write(data)

    def is_closing(self) -> bool:
        return self.real.is_closing()

    def get_write_buffer_size(self) -> int:
        return self.real.get_write_buffer_size()

    def close(self) -> None:
        self.real.close()

    def abort(self) -> None:
        self.real.abort()

    def pause_reading(self) -> None:
        self.real.pause_reading()


async def _conn(
    name: str, batch: WriteBatch, order: list[str], ws: web.WebSocketResponse | None = None
) -> tuple[Connection, socket.socket]:
    near, far = socket.socketpair()
    far.setblocking(False)
    transport, _ = await asyncio.get_running_loop().connect_accepted_socket(_Quiet, near)
    recorded: Transport = Recorded(name, transport, order)
    conn = Connection(ws or web.WebSocketResponse(), Encoding.MSGPACK, "127.0.0.1", len(order),
                      batch, recorded)
    return conn, far


def _framed(*frames: bytes) -> bytes:
    return b"".join(frame_header(OP_BINARY, len(frame)) + frame for frame in frames)


async def _read(far: socket.socket, size: int) -> bytes:
    got = b""
    async with asyncio.timeout(5):
        while len(got) < size:
            try:
                got += far.recv(65536)
            except BlockingIOError:
                await asyncio.sleep(0.001)
    await asyncio.sleep(0.01)
    with contextlib.suppress(BlockingIOError):
        got += far.recv(65536)  # nothing more may come
    return got


async def test_a_commits_answers_go_out_before_its_other_frames_each_socket_once(
    file_store: RaceStore,
) -> None:
    batch, order = WriteBatch(), list[str]()
    names = ("spectator", "ann", "bob", "cy")
    members = {name: await _conn(name, batch, order) for name in names}
    log = SqlInputLog(file_store)
    journal = Journal(log, 1, batch=lambda: batch)
    journal.write_first = batch.write_now
    journal.start()
    try:
        journal.open("R")
        spectator, ann, bob, cy = (members[name][0] for name in names)
        # A flush held before the moves (every member's progress, the spectator's
        # boards), then two answers, then a later flush: as a busy room does.
        journal.record_move("R", "ann", 1, MoveAction.DRAW, None, 1)
        for conn in (spectator, ann, bob, cy):
            journal.hold_send(conn, b"progress-1")
        journal.record_move("R", "cy", 1, MoveAction.DRAW, None, 2)
        journal.hold_answer(cy, b"answer-cy")
        journal.record_move("R", "bob", 1, MoveAction.DRAW, None, 3)
        journal.hold_answer(bob, b"answer-bob")
        for conn in (spectator, ann):
            journal.hold_send(conn, b"progress-2")
        await journal.flush()
    finally:
        await journal.close()
        await log.close()
    assert order[:2] == ["cy", "bob"]  # the answers' sockets, in the order answered
    assert sorted(order) == sorted(names)  # every socket written once
    expected = {
        "spectator": _framed(b"progress-1", b"progress-2"),
        "ann": _framed(b"progress-1", b"progress-2"),
        "bob": _framed(b"progress-1", b"answer-bob"),
        "cy": _framed(b"progress-1", b"answer-cy"),
    }
    for name, (_member, far) in members.items():
        assert await _read(far, len(expected[name])) == expected[name]
        far.close()


async def test_a_socket_written_first_is_not_written_again_at_the_end_of_the_batch() -> None:
    batch, order = WriteBatch(), list[str]()
    first, far_first = await _conn("first", batch, order)
    other, far_other = await _conn("other", batch, order)
    with batch:
        other.send(b"one")
        first.send(b"two")
        batch.write_now([first])
        assert order == ["first"]
    assert order == ["first", "other"]
    assert await _read(far_first, len(_framed(b"two"))) == _framed(b"two")
    assert await _read(far_other, len(_framed(b"one"))) == _framed(b"one")
    for far in (far_first, far_other):
        far.close()


async def test_a_batch_writes_nothing_to_a_socket_whose_close_began_before_it_ended() -> None:
    """Whether a socket is still open is asked when the batch writes, not when a frame is
    staged: a close begun in between (aiohttp's, or the transport's) drops what the batch
    held for that socket, and only for it.  The server's own response (a DirectResponse)
    tells its connection of aiohttp's close; a plain one is asked."""
    batch, order = WriteBatch(), list[str]()
    closing_ws, far_ws = await _conn("closing_ws", batch, order)
    closing_direct, far_direct = await _conn("closing_direct", batch, order, DirectResponse())
    closing_transport, far_transport = await _conn("closing_transport", batch, order)
    open_, far_open = await _conn("open", batch, order, DirectResponse())
    assert closing_direct.ws_tells and not closing_direct.ws_closed
    with batch:
        for conn in (closing_ws, closing_direct, closing_transport, open_):
            conn.send(b"one")
            conn.send(b"two")
        closing_ws.ws._closed = True  # what aiohttp sets at the start of its close
        closing_direct.ws._set_closed()  # where aiohttp sets it
        assert closing_transport.transport is not None
        closing_transport.transport.close()
        assert order == []
    assert closing_direct.ws_closed and closing_direct.ws.closed
    assert order == ["open"]
    assert await _read(far_open, len(_framed(b"one", b"two"))) == _framed(b"one", b"two")
    assert await _read(far_ws, 0) == b""
    assert await _read(far_direct, 0) == b""
    assert await _read(far_transport, 0) == b""
    for far in (far_ws, far_direct, far_transport, far_open):
        far.close()


async def test_a_socket_whose_close_began_is_not_written_outside_a_batch() -> None:
    """The same for a frame written at once (no batch): after aiohttp's close began,
    nothing goes out, whether the response tells its connection or is asked."""
    order = list[str]()
    for ws in (web.WebSocketResponse(), DirectResponse()):
        conn, far = await _conn("alone", WriteBatch(), order, ws)
        ws._set_closed()
        conn.send(b"late")
        assert order == []
        assert await _read(far, 0) == b""
        far.close()
