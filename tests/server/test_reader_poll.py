"""The reader's move fast path runs what a long turn of the loop would hold back: after
each move it answers, the flushes that are due go out at once (``Hub.poll``), where a
bare ``Hub.fast_move`` leaves them to their timer."""

from __future__ import annotations

import time

from bench.hotpath import _hub, _record, _setup, _Sink
from bench.load_game import move_frame
from protocol.wire import messages as m
from server.reader import ConnectionReader
from server.storage.store import RaceStore


async def test_a_move_read_runs_the_flushes_due_before_the_loop_turns() -> None:
    store = await RaceStore.connect("sqlite:///:memory:")
    hub = _hub(store)
    try:
        seats = _setup(hub, 2)
        _record(hub, seats, 16)  # two moves a seat through Hub.fast_move alone
        assert hub.flushes.waiting == 2  # a flush filed per room, left to its timer
        time.sleep(0.03)  # past the slots, without letting the loop turn
        conn, _sink = seats[0]
        reader = ConnectionReader(hub, conn, hub.connections[conn], hub.settings)
        writes = _Sink.writes
        assert reader.on_direct(move_frame(3, m.MoveAction.DRAW, None))  # its third move
        assert hub.flushes.waiting == 0  # both rooms flushed inside the read
        # The answer, then a progress frame to each of the eight players.
        assert _Sink.writes - writes == 1 + 8
    finally:
        hub.flushes.close()
        await store.close()
