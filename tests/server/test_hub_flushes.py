"""The progress flushes' slots (server/hub_flushes.py) on a real event loop: one timer per
slot of 10 ms, every room filed there flushed together, never before its due time; and
on a real server, a room whose flush fails does not stop the others."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import messages as m
from server import logs
from server.hub_flushes import SLOT_MS, FlushSlots
from server.race.outputs import Output
from tests.serverutil import move_request, open_room, running_server

LINE = deal_for_seed("42", Rules()).solution


class Recorder:
    """The flushes a :class:`FlushSlots` ran: (slot, rooms, loop time when run)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, origin_ms: int) -> None:
        self.loop = loop
        self.origin_ms = origin_ms  # server time at loop time 0
        self.runs: list[tuple[int, list[str], float]] = []
        self.done = asyncio.Event()

    def loop_time(self, at_ms: int) -> float:
        return (at_ms - self.origin_ms) / 1000

    def flush(self, slot_ms: int, rooms: list[str]) -> None:
        self.runs.append((slot_ms, list(rooms), self.loop.time()))
        self.done.set()


async def test_rooms_due_in_one_slot_are_flushed_together_at_its_end_never_early() -> None:
    loop = asyncio.get_running_loop()
    origin = 1_000_000 - int(loop.time() * 1000)  # server time now: 1,000,000 ms
    seen = Recorder(loop, origin)
    slots: FlushSlots[str] = FlushSlots(loop, seen.loop_time, seen.flush)
    now = 1_000_000
    base = (now // SLOT_MS + 3) * SLOT_MS  # a slot boundary 20-30 ms ahead
    slots.add("a", base + 1)
    slots.add("b", base + SLOT_MS)  # the same slot: its due time is the slot's end
    slots.add("c", base + SLOT_MS + 1)  # the next slot
    slots.add("a", base + 5)  # filed twice: the room decides (it ignores a flush not due)
    assert slots.waiting == 4
    await asyncio.sleep((base + 2 * SLOT_MS - now) / 1000 + 0.05)
    assert [(slot, rooms) for slot, rooms, _ in seen.runs] == [
        (base + SLOT_MS, ["a", "b", "a"]),
        (base + 2 * SLOT_MS, ["c"]),
    ]
    for slot, _, ran_at in seen.runs:
        assert ran_at * 1000 + origin >= slot - 1  # the loop's clock is read to the ms
    assert slots.waiting == 0


async def test_closed_or_taken_slots_run_nothing_filed() -> None:
    loop = asyncio.get_running_loop()
    origin = -int(loop.time() * 1000)  # server time now: 0
    seen = Recorder(loop, origin)
    slots: FlushSlots[str] = FlushSlots(loop, seen.loop_time, seen.flush)
    slots.add("a", 5)
    slots.add("b", 25)
    slots.close()
    assert slots.waiting == 0
    await asyncio.sleep(0.06)
    assert seen.runs == []
    slots.add("d", 31)
    slots.add("e", 12)
    slots.add("f", 20)
    assert slots.take() == [(20, ["e", "f"]), (40, ["d"])]  # unfiled, for the caller to run
    assert slots.waiting == 0
    slots.add("c", 0)  # filing again after a close runs again (a fresh slot)
    await asyncio.wait_for(seen.done.wait(), 1)
    assert [rooms for _, rooms, _ in seen.runs] == [["c"]]


async def test_a_room_whose_flush_fails_is_logged_and_the_rooms_beside_it_still_flush(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger=logs.LOGGER.name)
    async with running_server(tmp_path) as server:
        url = f"ws://127.0.0.1:{server.port}/ws"
        (ann, bob), broken = await open_room(url, ["ann", "bob"], practice_seed="42")
        (cat, dan), _ = await open_room(url, ["cat", "dan"], practice_seed="42")
        for host in (ann, cat):
            await host.send(m.Start())
            await host.expect(m.RaceStart)

        def fail(now_ms: int) -> list[Output]:
            raise RuntimeError("a flush that fails")

        room = server.hub.rooms[broken.code]
        room.flush_progress = fail  # type: ignore[method-assign]
        step = LINE[0]
        for mover in (ann, cat):  # both rooms' flushes fall due together
            assert (await mover.request(move_request(1, step), m.MoveResult)).accepted
        progress = await dan.expect(m.Progress)
        assert [p.moves for p in progress.players if p.player_id == cat.player_id] == [1]
        failed = [r for r in caplog.records if r.getMessage() == "progress_flush_failed"]
        assert failed and failed[0].__dict__["fields"] == {"room": broken.code}
        assert not any(isinstance(f, m.Progress) for f in bob.frames)
