"""The hub's side of storing race results: nothing announced before it is stored.

A race's result is committed before anyone is told the race is over.  The
hub holds a room's ``race_over``, and every frame of the room after it, in
:attr:`RoomHandle.held <server.hub_rooms.RoomHandle.held>`; :class:`Storing` hands
the record to the :class:`~server.storage.writer.ResultWriter` and, on its
report, releases the held frames: ``race_over`` as it is once the result is
stored, with ``saved: false`` when the database refused it (the writer keeps
and retries it).  When such a result is stored later, the room, if it still
shows that race, gets the same ``race_over`` with ``saved: true``.  Logs and
metrics of storage live here too.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Final, Generic, Protocol, TypeVar

from protocol.wire import messages as m
from server import logs
from server.race.outputs import Output, ToPlayers, ToSpectators
from server.race.records import RaceRecord
from server.race.room import Room
from server.storage.spool import Spool, spool_path
from server.storage.store import RaceStore
from server.storage.writer import ResultWriter
from server.transport.framing import WriteBatch

#: Races remembered for the "stored now" note to their players.
MAX_UNSAVED_NOTES: Final = 1000


class HeldRoom(Protocol):
    """What this module needs of the hub's room handle."""

    room: Room
    #: Races of this room being written: race id -> stored? (None: not known yet).
    writing: dict[str, bool | None]
    #: The room's frames since its race_over, sent (in order) once the result is written.
    held: list[Output]


H = TypeVar("H", bound=HeldRoom)


class Storing(Generic[H]):
    """Submits finished races and carries out the writer's reports.

    ``deliver`` sends a room's frame now; ``is_open`` says whether a handle is
    still its room's; ``count(stored)`` bumps the stored or failed-write metric.
    """

    def __init__(
        self,
        store: RaceStore,
        batch: WriteBatch,
        deliver: Callable[[H, Output], None],
        is_open: Callable[[H], bool],
        count: Callable[[bool], None],
    ) -> None:
        self.writer = ResultWriter(store, fallback_spool(store), self)
        self._batch, self._deliver, self._is_open, self._count = batch, deliver, is_open, count
        #: The room of each race whose result is being written.
        self._writing: dict[str, H] = {}
        #: Races whose players were told "not saved" (newest last), for the note once it is.
        self._unsaved: dict[str, tuple[H, m.RaceOver]] = {}

    def save(self, handle: H, record: RaceRecord) -> None:
        """Write ``record``; the room's frames wait (in ``handle.held``) until it is."""
        handle.writing.setdefault(record.race_id, None)
        self._writing[record.race_id] = handle
        self.writer.submit(record)

    # ---- the writer's reports (server.storage.writer.WriterEvents) -----------------
    def stored(self, race_ids: Sequence[str], *, late: bool) -> None:
        """Committed: release the held frames, or tell that a kept result is stored now."""
        for race_id in race_ids:
            self._count(True)
            logs.event("race_saved", race_id=race_id, late=late)
            try:
                if late:
                    self._stored_late(race_id)
                else:
                    self._known(race_id, True)
            except Exception:
                logs.failure("race_release_failed", race_id=race_id)

    def not_stored(self, race_ids: Sequence[str], error: str, *, first: bool) -> None:
        """A write failed; on the first try, the frames go out with ``saved: false``."""
        self._count(False)
        logs.event(
            "race_save_failed", level=logging.ERROR, race_ids=list(race_ids), reason=error,
            retry=not first, waiting=self.writer.waiting,
        )
        if not first:
            return
        for race_id in race_ids:
            try:
                self._known(race_id, False)
            except Exception:
                logs.failure("race_release_failed", race_id=race_id)

    def lost(self, record: RaceRecord, error: str) -> None:
        """The last copy of a result: the whole of it goes into the log."""
        logs.event(
            "race_lost", level=logging.ERROR, race_id=record.race_id, reason=error,
            record=record.to_json(),
        )

    # ---- the held frames -------------------------------------------------------------
    def _known(self, race_id: str, saved: bool) -> None:
        """The writer's first word on a race: send the frames waiting behind it."""
        handle = self._writing.pop(race_id, None)
        if handle is None:
            return
        handle.writing[race_id] = saved
        if any(known is None for known in handle.writing.values()):
            return  # another race of this room is still being written
        outcomes, handle.writing = handle.writing, {}
        held, handle.held = handle.held, []
        with self._batch:
            for out in held:
                self._release(handle, out, outcomes)

    def _release(self, handle: H, out: Output, outcomes: dict[str, bool | None]) -> None:
        if isinstance(out, ToPlayers | ToSpectators) and type(out.message) is m.RaceOver:
            over = out.message
            if outcomes.get(over.race_id) is False:
                over = dataclasses.replace(over, saved=False)
                out = dataclasses.replace(out, message=over)
                self._note_unsaved(handle, over)
        self._deliver(handle, out)

    def _note_unsaved(self, handle: H, over: m.RaceOver) -> None:
        self._unsaved[over.race_id] = (handle, over)
        while len(self._unsaved) > MAX_UNSAVED_NOTES:
            del self._unsaved[next(iter(self._unsaved))]

    def _stored_late(self, race_id: str) -> None:
        """A race whose room heard "not saved" is stored now: say so, if the room still
        shows that race (a later race_over would only confuse a new race)."""
        told = self._unsaved.pop(race_id, None)
        if told is None:
            return
        handle, over = told
        room = handle.room
        if not self._is_open(handle) or room.race_id != race_id:
            return
        if room.phase is not m.Phase.FINISHED:
            return
        over = m.SavedLater.of(over)
        with self._batch:
            self._deliver(handle, ToPlayers(over))
            self._deliver(handle, ToSpectators(over, key="over"))


def fallback_spool(store: RaceStore) -> Spool | None:
    """The fallback file for results the database refuses, if its directory can exist."""
    try:
        path = spool_path(store)
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        logs.event("no_fallback_file", level=logging.WARNING, db=store.url)
        return None
    return Spool(path)
