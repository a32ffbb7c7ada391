"""A few room starts per turn of the event loop, so that a burst of starts never holds
the moves of the rooms already racing.

A start costs the loop a few hundred microseconds (the race is set up, and
``room_state`` and ``race_start`` go to every member); fifty rooms started at
once would take the loop for more than ten milliseconds in one go.  With
:class:`TurnSlots` each start takes a slot first: at most ``per_turn`` slots
are given out per turn of the loop, and the next turn, which reads the
sockets first, gives out the next ones.
"""

from __future__ import annotations

import asyncio
from typing import Final

#: Starts carried out per turn of the event loop.
STARTS_PER_TURN: Final = 4


class TurnSlots:
    """At most ``per_turn`` callers of :meth:`take` go on per turn of the event loop,
    in the order they came."""

    def __init__(self, loop: asyncio.AbstractEventLoop, per_turn: int = STARTS_PER_TURN) -> None:
        self._loop, self._per_turn = loop, max(1, per_turn)
        self._taken = 0
        self._waiting = 0

    async def take(self) -> None:
        """Return once this turn of the loop has a slot left (at once if it has)."""
        if self._waiting or self._taken >= self._per_turn:
            self._waiting += 1
            try:
                await asyncio.sleep(0)  # behind those already waiting
                while self._taken >= self._per_turn:
                    await asyncio.sleep(0)
            finally:
                self._waiting -= 1
        if not self._taken:
            self._loop.call_soon(self._next_turn)
        self._taken += 1

    def _next_turn(self) -> None:
        self._taken = 0
