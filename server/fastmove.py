"""The move fast path: a racing player's plain msgpack ``move``, from frame to answer.

Moves are nearly every frame a server reads, and the general path (full
decode into a message, the life-cycle table, the room's output list, the
schema-walking encoder) costs several times the move itself.  Here a frame
that :func:`protocol.wire.fast.parse_move` accepts, from a player seated in a
racing room, goes straight to :meth:`Room.answer_move`, whose answer
:func:`protocol.wire.fast.move_result_msgpack` writes out.  Every check still
happens: the engine checks the move, the sequence number is checked, and a frame in any other shape,
or from anyone else, goes the general way, so replies and error codes are
those of the general path (``tests/server/test_fastpath.py`` compares them).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

from protocol.wire.errors import ProtocolError
from protocol.wire.fast import REASON, move_result_msgpack, parse_move
from protocol.wire.messages import MoveRequest, Phase
from server.metrics import Metrics
from server.transport.connection import Connection

if TYPE_CHECKING:
    from server.hub import Hub

_TAG: Final = MoveRequest.TAG
_RACING: Final = Phase.RACING
_SAMPLE: Final = Metrics.MOVE_SAMPLE


def handle_move(hub: Hub, conn: Connection, frame: bytes, now_ms: int) -> bool:
    """Answer ``frame`` if it is a plain move from a racing player; False to take the general path.

    The caller has spent the frame's rate-limit credit and checked the
    connection speaks msgpack.
    """
    session = conn.session
    if session is None or session.room is None or hub.closing:
        return False
    handle = hub.rooms.get(session.room)
    if handle is None:
        return False
    room = handle.room
    pid = session.identity.player_id
    if room.phase is not _RACING or pid not in room.seats:
        return False
    move = parse_move(frame)
    if move is None:
        return False
    seq, action, position = move
    count = hub.move_count = hub.move_count + 1
    timed = not count % _SAMPLE
    started = time.perf_counter() if timed else 0.0
    try:
        outcome, outputs = room.answer_move(pid, seq, action, position, now_ms)
    except ProtocolError as exc:
        hub.error(conn, exc.code, exc.message, ref=_TAG, seq=exc.seq or seq)
        return True
    conn.send(move_result_msgpack(outcome))
    hot = hub.metrics.hot
    hot.frames_sent += 1
    reason = outcome[REASON]
    if reason is None:
        hot.moves += 1
    else:
        hot.count_move(reason)
    if outputs:
        hub.run(handle, outputs)
    if timed:
        hub.metrics.move_seconds.observe(time.perf_counter() - started)
    return True
