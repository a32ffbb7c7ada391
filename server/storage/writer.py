"""Writing finished races: together when they end together, and none lost when the
database refuses them.

:class:`ResultWriter` takes each finished race (:meth:`ResultWriter.submit`)
and writes it in the background; every race submitted while a write is under
way goes into the next transaction (group commit).  It tells its
:class:`WriterEvents` what became of each race:

* ``stored(ids, late=False)`` once the transaction holding them committed;
* ``not_stored(ids, error, first=True)`` when the database refused them.  They
  are then appended to the fallback file (:mod:`server.storage.spool`) when it
  can be written, kept in memory (at most ``max_waiting``; beyond that only the
  file holds them), and retried with a doubling pause (``retry_s`` up to
  ``max_retry_s``) until stored: ``stored(ids, late=True)``.  A failed retry is
  ``not_stored(..., first=False)``;
* ``lost(record, error)`` for a race neither memory nor the file could keep.

At start-up :meth:`ResultWriter.replay` writes what an earlier run left in the
fallback file; saving is idempotent by race id, so a race stored before the
crash and still listed there changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Final, Protocol

from server.race.records import RaceRecord
from server.storage.spool import Spool
from server.storage.store import RaceStore, StorageError

#: Most races written in one transaction.
MAX_GROUP: Final = 64


class WriterEvents(Protocol):
    """What :class:`ResultWriter` reports (called on the event loop)."""

    def stored(self, race_ids: Sequence[str], *, late: bool) -> None:
        """These races are committed (``late``: on a retry or a replay)."""

    def not_stored(self, race_ids: Sequence[str], error: str, *, first: bool) -> None:
        """A write of these races failed (``first``: their first try); they are kept."""

    def lost(self, record: RaceRecord, error: str) -> None:
        """Neither memory nor the fallback file could keep this race."""


class ResultWriter:
    """Writes finished races to ``store``; keeps and retries the ones it refuses."""

    def __init__(
        self,
        store: RaceStore,
        spool: Spool | None,
        events: WriterEvents,
        *,
        max_waiting: int = 1000,
        retry_s: float = 0.5,
        max_retry_s: float = 30.0,
    ) -> None:
        self.store = store
        self.spool = spool
        self.events = events
        self.max_waiting = max_waiting
        self.retry_s = retry_s
        self.max_retry_s = max_retry_s
        self._fresh: list[RaceRecord] = []
        self._waiting: dict[str, RaceRecord] = {}
        self._overflow = 0  # races only the fallback file holds
        self._unspooled: set[str] = set()  # waiting races the fallback file lacks
        self._error: str | None = None
        self._delay = retry_s
        self._retry_at = 0.0
        self._busy = False
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None

    # ---- what the server asks ----------------------------------------------------
    def start(self) -> None:
        """Start the background writer."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def submit(self, record: RaceRecord) -> None:
        """Write ``record`` soon (with whatever else is submitted meanwhile)."""
        self._fresh.append(record)
        self._idle.clear()
        self._wake.set()

    @property
    def waiting(self) -> int:
        """Races refused by the database and not stored yet."""
        return len(self._waiting) + self._overflow

    @property
    def problem(self) -> str | None:
        """Why races are waiting (the last storage error), or ``None`` when none are."""
        return self._error if self.waiting else None

    @property
    def fallback_file(self) -> Path | None:
        """The fallback file, when there is one."""
        return self.spool.path if self.spool is not None else None

    async def replay(self) -> tuple[int, int]:
        """Write the races an earlier run left in the fallback file: (found, unreadable).

        Those the database still refuses stay waiting and are retried.
        """
        if self.spool is None:
            return 0, 0
        try:
            records, bad = await asyncio.to_thread(self.spool.load)
        except OSError as exc:
            self._error = f"cannot read the fallback file {self.spool.path}: {exc}"
            return 0, 0
        self._hold(records)
        while self.waiting:
            if not await self._retry():
                break
        return len(records), bad

    async def drain(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until every submitted race has been tried once."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout)
        return self._idle.is_set()

    async def close(self, timeout: float) -> None:
        """Stop after trying what was submitted; what is still untried goes to the file
        (and what the file cannot take is reported ``lost``)."""
        await self.drain(timeout)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        untried, self._fresh = self._fresh, []
        if untried:
            await self._keep(untried, "the server stopped before the write finished")
        self._idle.set()
        only_here = [r for r in self._waiting.values() if r.race_id in self._unspooled]
        if only_here and not await self._append(only_here):
            for record in only_here:
                self.events.lost(record, self._error or "not stored")

    # ---- the background task -------------------------------------------------------
    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if self._fresh:
                await self._write_fresh()
            elif self._waiting or self._overflow:
                pause = self._retry_at - loop.time()
                if pause <= 0:
                    await self._retry()
                else:
                    await self._sleep(pause)
            else:
                self._idle.set()
                await self._sleep(None)

    async def _sleep(self, pause: float | None) -> None:
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), pause)

    async def _write_fresh(self) -> None:
        group, self._fresh = self._fresh[:MAX_GROUP], self._fresh[MAX_GROUP:]
        failed, error = await self._write(group)
        stored = _ids_not_in(group, failed)
        if stored:
            self.events.stored(stored, late=False)
            if self.waiting:
                # The database takes writes again: retry the waiting races now.
                self._retry_at, self._delay = 0.0, self.retry_s
        if failed:
            await self._keep(failed, error)
        if not self._fresh:
            self._idle.set()

    async def _retry(self) -> bool:
        """One retry of the oldest waiting races; True when all of them were stored."""
        if not self._waiting and self._overflow and not await self._reload():
            self._retry_later()
            return False
        group = list(self._waiting.values())[:MAX_GROUP]
        failed, error = await self._write(group)
        stored = _ids_not_in(group, failed)
        for race_id in stored:
            del self._waiting[race_id]
            self._unspooled.discard(race_id)
        if stored:
            await self._forget(stored)
            self.events.stored(stored, late=True)
        if failed:
            self._error = error
            self._retry_later()
            self.events.not_stored([r.race_id for r in failed], error, first=False)
            return False
        self._delay = self.retry_s
        return True

    # ---- the parts -----------------------------------------------------------------
    async def _write(self, group: list[RaceRecord]) -> tuple[list[RaceRecord], str]:
        """Store ``group`` in one transaction, else each on its own: the ones refused."""
        if not group:
            return [], ""
        try:
            await self.store.save_races(group)
            return [], ""
        except Exception as exc:  # any failure keeps the races for a retry
            error = _describe(exc)
        if len(group) == 1:
            return group, error
        failed = []
        for record in group:
            try:
                await self.store.save_races((record,))
            except Exception as exc:
                failed.append(record)
                error = _describe(exc)
        return failed, error

    async def _keep(self, records: list[RaceRecord], error: str) -> None:
        """Refused on their first try: into the file and memory, then tell."""
        spooled = await self._append(records)
        for record in records:
            if len(self._waiting) < self.max_waiting:
                self._waiting[record.race_id] = record
                if not spooled:
                    self._unspooled.add(record.race_id)
            elif spooled:
                self._overflow += 1
            else:
                self.events.lost(record, error)
        self._error = error
        if self._retry_at <= asyncio.get_running_loop().time():
            self._retry_later()
        self.events.not_stored([record.race_id for record in records], error, first=True)

    def _hold(self, records: list[RaceRecord]) -> None:
        """Races read from the fallback file: in memory as far as room allows."""
        room = max(0, self.max_waiting - len(self._waiting))
        for record in records[:room]:
            self._waiting.setdefault(record.race_id, record)
        self._overflow = max(0, len(records) - room)

    async def _reload(self) -> bool:
        assert self.spool is not None  # only the file can hold an overflow
        try:
            records, _ = await asyncio.to_thread(self.spool.load)
        except OSError as exc:
            self._error = f"cannot read the fallback file {self.spool.path}: {exc}"
            return False
        self._hold(records)
        return True

    async def _append(self, records: list[RaceRecord]) -> bool:
        if self.spool is None:
            return False
        try:
            await asyncio.to_thread(self.spool.append, records)
        except OSError:
            return False
        return True

    async def _forget(self, race_ids: list[str]) -> None:
        if self.spool is not None:
            # A line left behind is harmless: replaying a stored race changes nothing.
            with contextlib.suppress(OSError):
                await asyncio.to_thread(self.spool.forget, race_ids)

    def _retry_later(self) -> None:
        self._retry_at = asyncio.get_running_loop().time() + self._delay
        self._delay = min(self._delay * 2, self.max_retry_s)


def _ids_not_in(group: list[RaceRecord], failed: list[RaceRecord]) -> list[str]:
    refused = {record.race_id for record in failed}
    return [record.race_id for record in group if record.race_id not in refused]


def _describe(exc: Exception) -> str:
    if isinstance(exc, StorageError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
