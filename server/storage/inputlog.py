"""The input log (:mod:`server.recovery.log`) in the server's own database.

``room_inputs`` (Alembic revision ``0004``) holds, per row, a run of one
room's consecutive entries, one per line, keyed by room code and the index of
the run's first entry: one row per room per group commit, however many inputs.
An append is one transaction, committed before :meth:`SqlInputLog.append`
returns.  On a SQLite file it is written by
:class:`~server.storage.sqlite_inputlog.SqliteAppender` (one thread,
``synchronous=FULL``: entries survive a power cut), queued behind the store's
own writers, into one of two tails (revision ``0007``) that the same thread
folds into ``room_inputs`` about once a second; on PostgreSQL (and an
in-memory SQLite database) it goes straight into ``room_inputs`` through
:class:`~server.storage.store.RaceStore`'s connections like every other query,
and the tails stay empty.  Reads and drops always go through the store, and
see all three tables: a row a fold has copied but not yet removed from its
tail is read once.  One node owns the database, so epochs are kept but not
fenced.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence, Sized
from typing import Final, Protocol

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from server.storage.sqlite import SQLITE_BUSY_TIMEOUT_S
from server.storage.sqlite_inputlog import (
    FOLD_EVERY_S,
    TAILS,
    Done,
    Row,
    SqliteAppender,
    insert_sql,
)
from server.storage.store import RaceStore, StorageError

metadata: Final = sa.MetaData()


def _log_table(name: str, *, keyed: bool) -> sa.Table:
    """A table of the log's rows, keyed by room and index or (a tail) not keyed at all."""
    return sa.Table(
        name,
        metadata,
        sa.Column("room_code", sa.Text, primary_key=keyed, nullable=False),
        sa.Column("idx", sa.Integer, primary_key=keyed, nullable=False),
        sa.Column("epoch", sa.BigInteger, nullable=False),
        sa.Column("input_json", sa.Text, nullable=False),
    )


room_inputs: Final = _log_table("room_inputs", keyed=True)
#: Where a SQLite file's appends go first, in the order they come (no key: appending
#: touches a page or two); :mod:`server.storage.sqlite_inputlog` folds them into
#: ``room_inputs``.
room_input_tails: Final = tuple(_log_table(name, keyed=False) for name in TAILS)
_TABLES: Final = (room_inputs, *room_input_tails)


_INSERT_SQLITE: Final = insert_sql(1)
_KEYS: Final = ("room_code", "idx", "epoch", "input_json")


class LogRun(Protocol):
    """A run of entries as this module reads it (:class:`server.recovery.log.Run` is one)."""

    @property
    def room(self) -> str: ...

    @property
    def first(self) -> int: ...

    @property
    def epoch(self) -> int: ...

    @property
    def data(self) -> Sequence[str]: ...


def _rows(runs: Sequence[LogRun]) -> list[Row]:
    """Each run as one row ``(room, first index, epoch, its entries one per line)``: a row
    costs the database far more than its bytes."""
    rows = []
    for run in runs:
        data = run.data
        # The usual run (a room rarely moves twice within a commit) needs no join.
        text = data[0] if len(data) == 1 else "\n".join(data)
        if text.count("\n") != len(data) - 1:
            raise StorageError("an input log entry may not hold a newline")
        rows.append((run.room, run.first, run.epoch, text))
    return rows


class SqlInputLog:
    """Rooms' input logs in ``store``'s database.

    On a SQLite file the appends run on a thread of their own: :meth:`close` ends it
    (reads and drops go on working).  ``busy_timeout_s`` is how long an append waits
    for another process's write lock.
    """

    def __init__(
        self,
        store: RaceStore,
        busy_timeout_s: float = SQLITE_BUSY_TIMEOUT_S,
        fold_every_s: float = FOLD_EVERY_S,
    ) -> None:
        self.store = store
        path = store.sqlite_path
        self._appender = (
            SqliteAppender(path, store.url, busy_timeout_s, fold_every_s)
            if path is not None
            else None
        )

    async def append(self, runs: Sequence[LogRun]) -> None:
        """Insert every run in one transaction: one row each, holding the run's entries one
        per line (entries are JSON, which has no raw newline)."""
        if not runs:
            return
        rows = _rows(runs)
        if self._appender is not None:
            # Behind the store's own writers, not racing them for SQLite's lock.
            async with self.store.writer_turn:
                await self._appender.append(rows)
            return
        try:
            async with self.store.writing() as conn:
                if self.store.dialect == "sqlite":
                    # The driver's own executemany: SQLAlchemy's per-row work costs more.
                    await conn.exec_driver_sql(_INSERT_SQLITE, rows)
                else:
                    named = [dict(zip(_KEYS, row, strict=True)) for row in rows]
                    await conn.execute(room_inputs.insert(), named)
        except (DBAPIError, OSError) as exc:
            reason = getattr(exc, "orig", None) or exc
            raise StorageError(
                f"cannot append to the input log of {self.store.url}: {reason}"
            ) from exc

    def submit(self, runs: Sequence[LogRun], done: Done) -> bool:
        """:meth:`append` without awaiting it (:class:`~server.recovery.log.Submitting`):
        ``done`` is called on the event loop with ``None`` once the runs are on disk, or
        with the error that refused them.  False, and nothing done, where it cannot: not
        a SQLite file, or one of the store's own writers has its turn (:meth:`append`
        waits behind it).  A writer that takes its turn while such an append is under way
        meets SQLite's lock instead, and waits its busy timeout."""
        if self._appender is None or self.store.writer_turn.locked():
            return False
        try:
            rows = _rows(runs)
        except StorageError as exc:
            asyncio.get_running_loop().call_soon(done, exc)
            return True
        self._appender.submit(rows, done)
        return True

    @property
    def ended(self) -> Sized:
        """The submitted appends that ended, their ``done`` not called yet
        (:class:`~server.recovery.log.Submitting`)."""
        return self._appender.ended if self._appender is not None else ()

    def take_ended(self) -> None:
        """Call now the ``done`` of every submitted append that has ended
        (:class:`~server.recovery.log.Submitting`)."""
        if self._appender is not None:
            self._appender.take_ended()

    @property
    def fold_problem(self) -> str | None:
        """Why folding the tails into ``room_inputs`` fails (it is tried again each second;
        appends and reads are not affected, the tails grow meanwhile), if it does."""
        return self._appender.fold_problem if self._appender is not None else None

    def on_fold_step(self, callback: Callable[[float], object]) -> None:
        """Have ``callback`` called with the seconds each fold step takes (on the appender's
        thread; only on a SQLite file)."""
        if self._appender is not None:
            self._appender.on_fold_step = callback

    async def close(self) -> None:
        """End the appender's thread once the appends under way are done (idempotent)."""
        if self._appender is not None:
            await self._appender.close()

    async def read(self, room: str) -> list[tuple[int, int, str]]:
        """Room ``room``'s entries as ``(index, epoch, data)``, in index order, each once
        (a row may stand in a tail and in ``room_inputs`` while a fold copies it)."""
        return (await self._read(room)).get(room, [])

    async def read_all(self) -> dict[str, list[tuple[int, int, str]]]:
        """Every room's entries, as :meth:`read` gives them, by room in code order: one
        query, which reads each table once (the tails have no key: reading them room by
        room would read all of them for each room)."""
        return await self._read(None)

    async def _read(self, room: str | None) -> dict[str, list[tuple[int, int, str]]]:
        """The entries of room ``room`` (``None``: of every room), by room."""
        parts = []
        for order, table in enumerate(_TABLES):
            part = sa.select(
                table.c.room_code, table.c.idx, table.c.epoch, table.c.input_json,
                sa.literal(order).label("src"),
            )
            parts.append(part if room is None else part.where(table.c.room_code == room))
        query = sa.union_all(*parts).order_by("room_code", "idx", "src")
        async with self.store.reading() as conn:
            rows = (await conn.execute(query)).all()
        logs: dict[str, list[tuple[int, int, str]]] = {}
        entries: list[tuple[int, int, str]] = []
        after = -1  # the highest index of the room read so far
        for row in rows:
            code = str(row.room_code)
            if code not in logs:
                entries = logs[code] = []
                after = -1
            for offset, data in enumerate(str(row.input_json).split("\n")):
                index = int(row.idx) + offset
                if index > after:
                    entries.append((index, int(row.epoch), data))
                    after = index
        return logs

    async def rooms(self) -> list[str]:
        """Every room with a log, in code order."""
        query = sa.union(*(sa.select(table.c.room_code) for table in _TABLES))
        async with self.store.reading() as conn:
            return sorted(str(row.room_code) for row in await conn.execute(query))

    async def max_epoch(self) -> int:
        """The highest epoch any entry has (0 for an empty log)."""
        highest = 0
        async with self.store.reading() as conn:
            for table in _TABLES:
                value = (await conn.execute(sa.select(sa.func.max(table.c.epoch)))).scalar()
                highest = max(highest, int(value) if value is not None else 0)
        return highest

    async def drop(self, rooms: Sequence[str]) -> None:
        """Delete these rooms' entries in one transaction."""
        if not rooms:
            return
        appender, loop = self._appender, asyncio.get_running_loop()
        if appender is not None:
            # A fold holding a sorted copy of their rows must not copy them back.
            await loop.run_in_executor(None, appender.forget, list(rooms))
        try:
            async with self.store.writing() as conn:
                for table in _TABLES:
                    await conn.execute(
                        table.delete().where(table.c.room_code.in_(list(rooms)))
                    )
        except BaseException:
            if appender is not None:
                await loop.run_in_executor(None, appender.unforget, list(rooms))
            raise
        if appender is not None:
            await loop.run_in_executor(
                None, functools.partial(appender.forget, list(rooms), deleted=True)
            )
