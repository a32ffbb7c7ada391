"""A hub's stop: rooms wound up, everything committed and stored, everyone told.

With the input log, each room logs a ``Halted`` input and the log commits
it, so that the next start resumes every room where it stood (the members
keep their seats through the restart).  Without one, running races end
(aborted) and are stored.  Races still waiting for their par are stored
without it.  Then every connection is closed with 1001 and the background
tasks are cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from typing import Protocol

from protocol.wire.errors import CloseCode
from server import logs
from server.config import Settings
from server.hub_flushes import FlushSlots
from server.hub_races import Races
from server.hub_rooms import RoomHandle
from server.race import inputs
from server.race.outputs import Output
from server.race.ratelimit import CreditBucket
from server.recovery.journal import Journal
from server.storage.writer import ResultWriter
from server.transport.connection import Connection


class Shell(Protocol):
    """What this module needs of the hub."""

    settings: Settings
    journal: Journal | None
    handles: dict[str, RoomHandle]
    connections: dict[Connection, CreditBucket]
    races: Races
    tasks: set[asyncio.Task[None]]
    closing: bool
    flushes: FlushSlots[RoomHandle]

    @property
    def writer(self) -> ResultWriter: ...

    @property
    def rooms(self) -> Mapping[str, object]: ...

    def now_ms(self) -> int: ...

    def run(self, handle: RoomHandle, outputs: Iterable[Output]) -> None: ...

    def enter(self, handle: RoomHandle, given: inputs.Input) -> list[Output]: ...


async def shut_down(hub: Shell) -> None:
    """Stop: with a journal, log the stop and commit everything, so that the next
    start resumes every room; without one, end running races and store them.  Then
    tell everyone and close.  Once is enough: a start-up that fails after the hub
    started stops it, and the app's shutdown then finds it stopped."""
    if hub.closing:
        return
    hub.closing = True
    hub.flushes.close()
    _wind_up(hub, hub.now_ms())
    hub.races.save_without_par()
    if hub.journal is not None:
        await hub.journal.close()
    # The aborted races' race_over frames wait for their write, so write first.
    await hub.writer.close(hub.settings.shutdown_timeout_s)
    closers = [
        conn.close(CloseCode.GOING_AWAY, "server shutting down") for conn in list(hub.connections)
    ]
    if closers:
        await asyncio.gather(*closers, return_exceptions=True)
    for task in list(hub.tasks):
        task.cancel()
    with contextlib.suppress(Exception):
        await asyncio.gather(*hub.tasks, return_exceptions=True)
    logs.event("hub_stopped", rooms=len(hub.rooms))


def _wind_up(hub: Shell, now: int) -> None:
    """Each room halted (logged) or its race aborted, and its timers cancelled."""
    for handle in list(hub.handles.values()):
        try:
            if hub.journal is None:
                hub.run(handle, handle.room.abort(now))
            else:
                hub.enter(handle, inputs.Halted(now))
        except Exception:
            logs.failure("abort_failed", room=handle.room.code)
        for timer in handle.timers.values():
            timer.cancel()
        handle.timers.clear()
