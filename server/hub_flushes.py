"""When the rooms' progress flushes run: one event-loop timer per slot of time, not one
per room.

A room asks for its next flush with :class:`~server.race.outputs.FlushDue`
(its first change after a flush, at most ``progress_hz`` times a second).  The
hub files the room under the slot of :data:`SLOT_MS` that the time falls in,
rounded up, and the slot's one timer calls :meth:`Room.flush_progress` on every
room filed there, in one write batch.  So a flush is at most a slot late, and a
thousand racing rooms cost a hundred timers a second rather than thousands.

A flush only sends: the hub does not log it (:class:`FlushDue` says why), so a
flush costs no input-log row either.  A room filed twice (its race ended with
a flush of its own and the next one asked again) is flushed once: the room
ignores a flush that is not due.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final, Generic, TypeVar

#: The width of a slot, in ms: how late a flush may run.
SLOT_MS: Final = 10

R = TypeVar("R")


class FlushSlots(Generic[R]):
    """The rooms whose flush is due, by slot; see the module docstring.

    ``loop_time`` turns a server time in ms into the event loop's time;
    ``flush(slot_ms, rooms)`` runs the flushes of one slot.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        loop_time: Callable[[int], float],
        flush: Callable[[int, list[R]], None],
    ) -> None:
        self._loop = loop
        self._loop_time = loop_time
        self._flush = flush
        self._slots: dict[int, list[R]] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}

    def add(self, room: R, at_ms: int) -> None:
        """File ``room`` for a flush at ``at_ms`` (run at the end of its slot)."""
        slot = -(-at_ms // SLOT_MS) * SLOT_MS
        rooms = self._slots.get(slot)
        if rooms is None:
            rooms = self._slots[slot] = []
            self._timers[slot] = self._loop.call_at(self._loop_time(slot), self._fire, slot)
        rooms.append(room)

    def _fire(self, slot: int) -> None:
        del self._timers[slot]
        self._flush(slot, self._slots.pop(slot))

    @property
    def waiting(self) -> int:
        """Rooms filed and not flushed yet (a room filed twice counts twice)."""
        return sum(map(len, self._slots.values()))

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
