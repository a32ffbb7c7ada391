"""A race's start and end in the shell: counted, logged, and the finished race stored.

A room's ``SaveRace`` output comes here.  With the input log, the race is
stored only once its last input is committed (the save waits with the held
frames).  A record without its par waits for the par job of its deal
(:mod:`server.pars`), which the end of the race hurries; then
:mod:`server.storing` writes it, while the room's ``race_over`` and the
frames after it wait.
"""

from __future__ import annotations

import functools
from collections.abc import Coroutine
from typing import Any, Protocol

from server import logs
from server.hub_rooms import RoomHandle
from server.metrics import Metrics
from server.pars import ParJob, ParJobs, with_par
from server.race.outputs import RaceBegan, RaceEnded, SaveRace
from server.race.records import RaceRecord
from server.recovery.journal import Journal
from server.storing import Storing


class Shell(Protocol):
    """What this module needs of the hub."""

    journal: Journal | None
    storing: Storing[RoomHandle]
    pars: ParJobs
    metrics: Metrics
    closing: bool

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None: ...


class Races:
    """The hub's ``RaceBegan``, ``RaceEnded`` and ``SaveRace`` outputs."""

    def __init__(self, hub: Shell) -> None:
        self.hub = hub
        #: Finished races whose record waits for its par: race id -> (room, record).
        self._awaiting_par: dict[str, tuple[RoomHandle, RaceRecord]] = {}

    def began(self, handle: RoomHandle, out: RaceBegan) -> None:
        """A race started: counted and logged."""
        self.hub.metrics.races_started.inc()
        logs.event("race_started", room=handle.room.code, race_id=out.race_id, players=out.players)

    def ended(self, handle: RoomHandle, out: RaceEnded) -> None:
        """A race ended: counted and logged (its ``SaveRace`` stores it)."""
        self.hub.metrics.races_finished.inc()
        code, race_id = handle.room.code, out.race_id
        logs.event("race_ended", room=code, race_id=race_id, ended_by=out.ended_by.value)

    def save(self, handle: RoomHandle, out: SaveRace) -> None:
        """Store a finished race, once the inputs before it are logged."""
        journal = self.hub.journal
        if journal is not None and journal.holding:
            journal.hold(functools.partial(self._save_held, handle, out))
        else:
            self._save_held(handle, out)

    def _save_held(self, handle: RoomHandle, out: SaveRace) -> None:
        # A room another node took over meanwhile stores nothing: its log is the other's.
        if not handle.fenced:
            self._save_race(handle, out)

    def _save_race(self, handle: RoomHandle, out: SaveRace) -> None:
        """Store a finished race once its par is known (its frames wait meanwhile)."""
        record, job, hub = out.record, handle.par, self.hub
        if record.par is not None or job is None or not job.belongs_to(record):
            hub.storing.save(handle, record)
        elif job.future.done() or hub.closing:
            result = job.future.result() if job.future.done() else None
            hub.storing.save(handle, with_par(record, handle.held, result))
        else:
            handle.writing.setdefault(record.race_id, None)
            self._awaiting_par[record.race_id] = (handle, record)
            hub.pars.hurry(job)
            hub.spawn(self._save_with_par(record.race_id, job))

    async def _save_with_par(self, race_id: str, job: ParJob) -> None:
        result = await job.future
        waiting = self._awaiting_par.pop(race_id, None)
        if waiting is not None:  # (shutdown may have stored it already)
            handle, record = waiting
            self.hub.storing.save(handle, with_par(record, handle.held, result))

    def save_without_par(self) -> None:
        """Shutting down: races still waiting for their par are stored without it."""
        waiting, self._awaiting_par = self._awaiting_par, {}
        for handle, record in waiting.values():
            self.hub.storing.save(handle, record)
