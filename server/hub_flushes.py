"""When the rooms' progress flushes run: one event-loop timer per slot of time, not one
per room.

A room asks for its next flush with :class:`~server.race.outputs.FlushDue`
(its first change after a flush, at most ``progress_hz`` times a second).  The
hub files the room under the slot of :data:`SLOT_MS` that the time falls in,
rounded up, and the slot's one timer calls :meth:`Room.flush_progress` on every
room filed there, in one write batch.  So a flush is at most a slot late (while
its slot has space, below), and a thousand racing rooms cost a hundred timers a
second rather than thousands.

A slot takes at most its share of the rooms filed (:meth:`FlushSlots.cap`: the
rooms waiting over the slots of one flush interval, and a quarter more); a room
due in a full slot goes to the next one with space, at most :data:`LATE_SLOTS`
slots on.  Without it the rooms' flushes clump: a room's next flush is due one
interval after the time it was flushed, and every room of a slot is flushed at
the same time, so rooms that once shared a slot share every later one, and
slots that drift together never part again.  At 6,000 racing players the
4-a-second flushes had gathered into eight or nine slots of 110 to 250 rooms
each, and each such slot held the event loop for 6 to 16 ms (moves waited
behind it) where an even spread is about 60 rooms to a slot.  A room passed on
is flushed at the later slot's time, so its next flushes stay apart too.

A turn of the event loop reads every socket that is ready before it runs any
timer, and under a large crowd one turn can read thousands of frames: the hub
also calls :meth:`FlushSlots.poll` after each move it answers, which runs the
slots due by then at once (their timers cancelled).

A flush only sends: the hub does not log it (:class:`FlushDue` says why), so a
flush costs no input-log row either.  A room filed twice (its race ended with
a flush of its own and the next one asked again) is flushed once: the room
ignores a flush that is not due.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Final, Generic, TypeVar

#: The width of a slot, in ms: how late a flush may run when its slot has space.
SLOT_MS: Final = 10
#: How many slots later than its own a room may be flushed when slots are full.
LATE_SLOTS: Final = 4
#: No slot: later than any.
NEVER: Final = 1 << 62
#: A slot always takes this many rooms (a quiet server never passes rooms on).
MIN_PER_SLOT: Final = 16

R = TypeVar("R")


class FlushSlots(Generic[R]):
    """The rooms whose flush is due, by slot; see the module docstring.

    ``loop_time`` turns a server time in ms into the event loop's time;
    ``flush(slot_ms, rooms)`` runs the flushes of one slot; ``interval_ms`` is the
    least time between two flushes of a room (``1000 / progress_hz``), over which the
    rooms are spread.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        loop_time: Callable[[int], float],
        flush: Callable[[int, list[R]], None],
        interval_ms: float = SLOT_MS,
    ) -> None:
        self._loop = loop
        self._loop_time = loop_time
        self._flush = flush
        self._spread = max(1.0, interval_ms / SLOT_MS)
        self._slots: dict[int, list[R]] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._waiting = 0
        #: The earliest slot filed (:data:`NEVER` when none is).
        self._first = NEVER

    def add(self, room: R, at_ms: int) -> None:
        """File ``room`` for a flush at ``at_ms``: run at the end of its slot, or of the
        next slot with space (at most :data:`LATE_SLOTS` on)."""
        slot = -(-at_ms // SLOT_MS) * SLOT_MS
        rooms = self._slots.get(slot)
        if rooms is not None and len(rooms) >= MIN_PER_SLOT:
            cap, last = self.cap, slot + LATE_SLOTS * SLOT_MS
            while rooms is not None and len(rooms) >= cap and slot < last:
                slot += SLOT_MS
                rooms = self._slots.get(slot)
        if rooms is None:
            rooms = self._slots[slot] = []
            self._timers[slot] = self._loop.call_at(self._loop_time(slot), self._fire, slot)
            if slot < self._first:
                self._first = slot
        rooms.append(room)
        self._waiting += 1

    @property
    def cap(self) -> int:
        """How many rooms a slot takes before it passes rooms on: the rooms waiting over
        the slots of one interval, and a quarter more (at least :data:`MIN_PER_SLOT`)."""
        return max(MIN_PER_SLOT, math.ceil(1.25 * self._waiting / self._spread))

    def _fire(self, slot: int) -> None:
        del self._timers[slot]
        rooms = self._slots.pop(slot)
        self._waiting -= len(rooms)
        if slot == self._first:
            self._first = min(self._slots, default=NEVER)
        self._flush(slot, rooms)

    def poll(self, now_ms: int) -> None:
        """Run the slots due by ``now_ms`` now, without waiting for their timers (the
        loop runs timers only between its turns' reads)."""
        while self._first <= now_ms:
            slot = self._first
            self._timers[slot].cancel()
            self._fire(slot)

    @property
    def waiting(self) -> int:
        """Rooms filed and not flushed yet (a room filed twice counts twice)."""
        return self._waiting

    def take(self) -> list[tuple[int, list[R]]]:
        """Every slot filed, in time order, unfiled (their timers cancelled): for a caller
        that runs them itself (``bench.hotpath --fanout``, which cannot wait)."""
        taken = sorted(self._slots.items())
        self.close()
        return taken

    def close(self) -> None:
        """Nothing filed will run."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._slots.clear()
        self._waiting = 0
        self._first = NEVER
