"""TurnSlots: a burst of room starts is spread over turns of the event loop, a few per
turn, in order; a lone start goes on at once."""

from __future__ import annotations

import asyncio
from collections import Counter

from server.turns import TurnSlots


class Turns:
    """Counts the turns of the running loop (a callback that re-schedules itself)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop, self.now, self.running = loop, 0, True
        loop.call_soon(self._tick)

    def _tick(self) -> None:
        self.now += 1
        if self.running:
            self.loop.call_soon(self._tick)


async def test_a_burst_gets_at_most_four_slots_a_turn_in_the_order_it_came() -> None:
    loop = asyncio.get_running_loop()
    slots, turns = TurnSlots(loop, 4), Turns(loop)
    order: list[int] = []
    at: list[int] = []

    async def start(index: int) -> None:
        await slots.take()
        order.append(index)
        at.append(turns.now)

    await asyncio.gather(*(start(i) for i in range(10)))
    turns.running = False
    assert order == list(range(10))
    per_turn = Counter(at)
    assert max(per_turn.values()) <= 4
    assert len(per_turn) >= 3


async def test_a_lone_start_takes_its_slot_without_waiting_for_a_turn() -> None:
    loop = asyncio.get_running_loop()
    slots, turns = TurnSlots(loop, 4), Turns(loop)
    before = turns.now
    await slots.take()
    assert turns.now == before
    turns.running = False
