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
from server.hub_flushes import LATE_SLOTS, MIN_PER_SLOT, SLOT_MS, FlushSlots
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


async def test_a_poll_runs_the_slots_due_at_once_and_their_timers_then_run_nothing() -> None:
    """Under a large crowd one turn of the loop reads for a long time before any timer
    runs: the hub polls the slots at each move, and a slot due is flushed then, once."""
    loop = asyncio.get_running_loop()
    origin = -int(loop.time() * 1000)  # server time now: 0
    seen = Recorder(loop, origin)
    slots: FlushSlots[str] = FlushSlots(loop, seen.loop_time, seen.flush)
    slots.add("a", 15)  # slot 20
    slots.add("b", 12)  # slot 20
    slots.add("c", 31)  # slot 40
    slots.add("d", 200)  # slot 200
    slots.poll(19)
    assert seen.runs == []  # nothing due yet
    slots.poll(45)  # a turn that ran late: both slots due, in time order
    assert [(slot, rooms) for slot, rooms, _ in seen.runs] == [(20, ["a", "b"]), (40, ["c"])]
    assert slots.waiting == 1
    await asyncio.sleep(0.08)  # their timers were cancelled: nothing runs twice
    assert len(seen.runs) == 2
    slots.add("e", 60)  # a slot earlier than the one left: polled first
    slots.poll(60)
    assert [rooms for _, rooms, _ in seen.runs[2:]] == [["e"]]
    await asyncio.wait_for(seen.done.wait(), 1)
    await asyncio.sleep(0.2)  # slot 200's own timer runs it
    assert [rooms for _, rooms, _ in seen.runs[2:]] == [["e"], ["d"]]
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

        # A seat that is not a Seat makes the room's flush raise, as a bug in it would
        # (the compiled room's and hub's methods cannot be replaced: tools/native.py).
        room = server.hub.handles[broken.code].room
        seat = room.seats[bob.player_id]
        room.seats[bob.player_id] = object()  # type: ignore[assignment]
        step = LINE[0]
        for mover in (ann, cat):  # both rooms' flushes fall due together
            assert (await mover.request(move_request(1, step), m.MoveResult)).accepted
        progress = await dan.expect(m.Progress)
        assert [p.moves for p in progress.players if p.player_id == cat.player_id] == [1]
        failed = [r for r in caplog.records if r.getMessage() == "progress_flush_failed"]
        assert failed and failed[0].__dict__["fields"] == {"room": broken.code}
        assert not any(isinstance(f, m.Progress) for f in bob.frames)
        room.seats[bob.player_id] = seat


def _spread(slots: FlushSlots[str]) -> dict[int, list[str]]:
    return dict(slots.take())


async def test_a_full_slot_passes_rooms_on_to_the_next_ones_never_more_than_late_slots() -> None:
    """300 rooms due in one slot, flushes 250 ms apart (25 slots): each slot takes its
    share and a quarter more (here the floor of 16); the rest go to the next slots, at
    most LATE_SLOTS on, the last of which takes whatever is left."""
    loop = asyncio.get_running_loop()
    seen = Recorder(loop, 0)
    slots: FlushSlots[str] = FlushSlots(loop, seen.loop_time, seen.flush, interval_ms=250)
    due = 10_000_005
    rooms = [f"r{i}" for i in range(300)]
    for room in rooms:
        slots.add(room, due)
    first = -(-due // SLOT_MS) * SLOT_MS
    filed = _spread(slots)
    assert sorted(filed) == [first + k * SLOT_MS for k in range(LATE_SLOTS + 1)]
    assert [len(filed[slot]) for slot in sorted(filed)][:-1] == [MIN_PER_SLOT] * LATE_SLOTS
    assert sorted(r for filed_rooms in filed.values() for r in filed_rooms) == sorted(rooms)
    assert filed[first] == rooms[:MIN_PER_SLOT]  # in the order filed: the first come first


async def test_clumped_rooms_drift_apart_over_a_few_intervals_and_stay_apart() -> None:
    """Rooms flushed at the same time are due again at the same time: refiled one interval
    after the slot that flushed them (as the hub does), a clump of 300 rooms spreads over
    the interval's slots within a few intervals, no slot over its share, and stays so."""
    loop = asyncio.get_running_loop()
    seen = Recorder(loop, 0)
    interval = 250
    slots: FlushSlots[str] = FlushSlots(loop, seen.loop_time, seen.flush, interval_ms=interval)
    for i in range(300):
        slots.add(f"r{i}", 20_000_000)
    largest = []
    for _round in range(12):
        filed = _spread(slots)
        largest.append(max(map(len, filed.values())))
        for slot, rooms in sorted(filed.items()):
            for room in rooms:
                slots.add(room, slot + interval)
    assert largest[0] > 200  # the clump, in the last slot it may go to
    assert largest[-4:] == [slots.cap] * 4 and slots.cap == MIN_PER_SLOT  # 300 / 25 * 1.25
    assert slots.waiting == 300


async def test_a_quiet_server_never_passes_a_room_on() -> None:
    loop = asyncio.get_running_loop()
    seen = Recorder(loop, 0)
    slots: FlushSlots[str] = FlushSlots(loop, seen.loop_time, seen.flush, interval_ms=250)
    for i in range(MIN_PER_SLOT):
        slots.add(f"r{i}", 30_000_001)
    assert [slot for slot, _rooms in slots.take()] == [30_000_010]
