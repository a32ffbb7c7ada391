"""Stored race results: one async interface over SQLite and PostgreSQL.

:class:`RaceStore` wraps a SQLAlchemy async engine (aiosqlite for SQLite, the
default; asyncpg for PostgreSQL) and speaks only :mod:`server.race.records`.
``await RaceStore.connect(url)`` brings the schema up to date with the
Alembic revisions of ``server/storage/alembic/`` (:mod:`server.storage.migrate`),
all pending ones in one transaction; a database written by newer code is
refused rather than guessed at, and one made before Alembic is adopted as is.

Every failure the caller can act on is a :class:`StorageError` with a
message that names the database (passwords hidden)::

    StorageError                  bad record, driver failure, bad migration files
    +-- DatabaseURLError          malformed or unsupported URL
    +-- DatabaseUnavailableError  cannot connect, or the connection died
    +-- SchemaTooNewError         the database was migrated by newer code
    +-- DuplicateRaceError        another race already has this id
    +-- DatabaseNotWritableError  the database can be read but not written

The tables and the record <-> row mapping live in :mod:`server.storage.schema`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from server.race.records import MoveLogEntry, PlayerResult, RaceRecord
from server.storage import migrate
from server.storage.daily import hidden_races, record_results
from server.storage.rating import rate_races
from server.storage.schema import (
    Row,
    move_of,
    player_of,
    race_moves,
    race_of,
    race_players,
    races,
    rows_of,
    schema_version,
)
from server.storage.sqlite import SQLITE_BUSY_TIMEOUT_S, tune_sqlite

#: Largest page :meth:`RaceStore.list_races` serves in one call.
MAX_LIST_LIMIT: Final = 1000
#: Lock id for serialising migrations across PostgreSQL clients (any constant works).
_PG_MIGRATION_LOCK: Final = 0x7472_6970_6561_6B73 & 0x7FFF_FFFF_FFFF_FFFF


class StorageError(Exception):
    """The race store cannot do what was asked; the message says why."""


class DatabaseURLError(StorageError):
    """The database URL is malformed or names an unsupported back end."""


class SchemaTooNewError(StorageError):
    """The database was migrated by newer code than this one."""


class DatabaseUnavailableError(StorageError):
    """The database cannot be reached (down, restarting, or the connection died)."""


class DuplicateRaceError(StorageError):
    """A race with this id is already stored; stored races are never overwritten."""


class DatabaseNotWritableError(StorageError):
    """The database opens and reads, but refuses writes (read-only file, mount or role)."""


class _RollBack(Exception):
    """Raised inside a transaction to roll it back on purpose."""


def default_db_url() -> str:
    """The SQLite URL used when no database is configured; creates its directory.

    The directory is :func:`data_dir`.
    """
    return f"sqlite:///{data_dir() / 'tripeaks.db'}"


def data_dir() -> Path:
    """The server's data directory, created if missing: ``$TRIPEAKS_DATA_DIR``, else
    ``$XDG_DATA_HOME/tripeaks``, else ``~/.local/share/tripeaks``."""
    explicit = os.environ.get("TRIPEAKS_DATA_DIR")
    if explicit:
        directory = Path(explicit).expanduser()
    else:
        xdg = os.environ.get("XDG_DATA_HOME")
        base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
        directory = base / "tripeaks"
    directory.mkdir(parents=True, exist_ok=True)
    return directory.resolve()


def driver_url(url: str) -> URL:
    """Map a user-facing database URL to the async driver SQLAlchemy should use.

    ``sqlite:///PATH`` and ``sqlite+aiosqlite:///PATH`` go to aiosqlite;
    ``postgresql://``, ``postgres://`` and ``postgresql+asyncpg://`` go to
    asyncpg.  Anything else raises :class:`DatabaseURLError`.
    """
    if not isinstance(url, str) or not url.strip():
        raise DatabaseURLError("empty database URL: use sqlite:///PATH or postgresql://...")
    try:
        parsed = make_url(url.strip())
    except ArgumentError as exc:
        raise DatabaseURLError(
            f"malformed database URL {_hide_password(url)!r}: "
            "use sqlite:///PATH or postgresql://USER:PASSWORD@HOST:PORT/DBNAME"
        ) from exc
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "postgres":
        backend = "postgresql"
    wanted = {"sqlite": "aiosqlite", "postgresql": "asyncpg"}.get(backend)
    if wanted is None:
        raise DatabaseURLError(
            f"unsupported database {parsed.drivername!r} in "
            f"{parsed.render_as_string(hide_password=True)!r}: use sqlite:///PATH or postgresql://..."
        )
    if driver and driver != wanted:
        raise DatabaseURLError(
            f"unsupported driver {driver!r} for {backend}: this server uses {wanted} "
            f"(write {backend}://... or {backend}+{wanted}://...)"
        )
    if backend == "sqlite" and not parsed.database:
        raise DatabaseURLError(
            "a SQLite URL needs a file path: sqlite:///relative/path.db or sqlite:////absolute/path.db"
        )
    if backend == "postgresql" and not (parsed.host or parsed.query.get("host")):
        raise DatabaseURLError(
            f"a PostgreSQL URL needs a host: postgresql://USER@HOST:PORT/DBNAME, "
            f"got {parsed.render_as_string(hide_password=True)!r}"
        )
    return parsed.set(drivername=f"{backend}+{wanted}")


class RaceStore:
    """Async storage of finished races.  Create with :meth:`connect`."""

    def __init__(self, engine: AsyncEngine, display_url: str) -> None:
        self._engine = engine
        self._display_url = display_url
        self._is_sqlite = engine.dialect.name == "sqlite"
        # SQLite has one writer at a time; queueing writers here beats busy-waiting.
        self._write_lock = asyncio.Lock()
        #: Tries per save while the database is unreachable, and the first pause between.
        self.save_attempts = 4
        self.retry_delay_s = 0.25
        #: What :meth:`connect` did to the schema: (revision before, revision now).
        self.upgraded: tuple[str | None, str] = (None, "")

    @classmethod
    async def connect(
        cls, url: str | None = None, *, revisions: Sequence[Path] = (), upgrade: bool = True
    ) -> RaceStore:
        """Open the database at ``url`` (default: :func:`default_db_url`) and migrate it
        (unless ``upgrade`` is false).

        ``revisions`` are directories of further revisions after the shipped ones
        (tests use them to stage upgrades).
        """
        target = driver_url(url if url is not None else default_db_url())
        # Logged and shown in errors: the user's form of the URL, password hidden.
        display = target.set(drivername=target.get_backend_name()).render_as_string(
            hide_password=True
        )
        engine = _create_engine(target)
        store = cls(engine, display)
        try:
            if upgrade:
                store.upgraded = await store.migrate(revisions)
        except BaseException:
            await engine.dispose()
            raise
        return store

    @property
    def url(self) -> str:
        """The database URL, password hidden: fit for logs."""
        return self._display_url

    @property
    def sqlite_path(self) -> Path | None:
        """The SQLite database file (``None`` for PostgreSQL or an in-memory database)."""
        database = self._engine.url.database or ""
        if not self._is_sqlite or database in ("", ":memory:"):
            return None
        if database.startswith("file:"):
            database = database.removeprefix("file:").split("?", 1)[0]
        return Path(database).expanduser().resolve()

    @property
    def dialect(self) -> str:
        """The back end: ``sqlite`` or ``postgresql``."""
        return str(self._engine.dialect.name)

    async def migrate(self, revisions: Sequence[Path] = ()) -> tuple[str | None, str]:
        """Apply every pending revision in one transaction: (revision before, revision now).

        ``before`` is ``None`` for a new database.  Several servers starting at
        once migrate it once: the first holds the lock (SQLite's write lock, a
        PostgreSQL advisory lock) and the others find nothing left to do.
        """
        async with self._transaction(exclusive=True) as conn:
            if not self._is_sqlite:
                await conn.execute(
                    sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK}
                )
            try:
                return await conn.run_sync(migrate.upgrade, revisions)
            except migrate.UnknownRevisionError as exc:
                raise SchemaTooNewError(
                    f"database {self._display_url} is at {exc}, which this server does not "
                    "know: it was migrated by newer code; upgrade the server, or point it "
                    "at another database"
                ) from exc
            except migrate.RevisionsError as exc:
                raise StorageError(str(exc)) from exc
            except DBAPIError as exc:
                # Raising inside the transaction rolls every revision back.
                if _refuses_writes(exc):
                    raise DatabaseNotWritableError(_not_writable(self._display_url, exc)) from exc
                raise StorageError(
                    f"upgrading the schema of {self._display_url} failed: {_reason(exc)}; "
                    "it stays at the revision it had"
                ) from exc

    async def revision(self) -> str | None:
        """The schema revision recorded in the database (``None`` for an empty one)."""
        async with self._connection() as conn:
            return await conn.run_sync(migrate.current)

    async def check_writable(self) -> None:
        """Make a real write in a transaction and roll it back; raises
        :class:`DatabaseNotWritableError` when the database refuses it.

        A read-only file (permissions, ``chattr +i``, a read-only mount or a
        ``mode=ro`` URI) or a read-only PostgreSQL session opens and reads
        normally, so only a write shows that no result could ever be stored.
        """
        probe = schema_version.insert().values(version=0, name="write_probe", applied_at_ms=0)
        with contextlib.suppress(_RollBack):
            async with self._transaction(exclusive=True) as conn:
                await conn.execute(probe)
                raise _RollBack

    async def save_race(self, record: RaceRecord) -> None:
        """Store a finished race with its players and move logs, all or nothing.

        Saving the same record again changes nothing; a different record under
        a stored id raises :class:`DuplicateRaceError`.  While the database is
        unreachable the write is retried a few times (about
        :attr:`retry_delay_s` doubling) before :class:`DatabaseUnavailableError`.
        """
        await self.save_races((record,))

    async def save_races(self, records: Sequence[RaceRecord]) -> None:
        """Store several finished races in one transaction (one commit for all).

        All or nothing, retried like :meth:`save_race`.  When one of them is
        already stored, each is saved on its own instead, so records stored
        before (an earlier attempt, a replay) change nothing and the others land.
        """
        if not records:
            return
        try:
            rows = [rows_of(record) for record in records]
        except ValueError as exc:
            raise StorageError(str(exc)) from exc
        delay = self.retry_delay_s
        for attempt in range(1, self.save_attempts + 1):
            try:
                await self._insert(rows, records)
                return
            except IntegrityError as exc:
                if len(records) > 1:
                    for record in records:
                        await self.save_races((record,))
                    return
                await self._check_stored(records[0], exc)
                return
            except DatabaseUnavailableError:
                if attempt == self.save_attempts:
                    raise
                await asyncio.sleep(delay)
                delay *= 2

    async def _check_stored(self, record: RaceRecord, exc: IntegrityError) -> None:
        """After a refused insert: fine if this very record is stored, else say why."""
        stored = await self.get_race(record.race_id)
        if stored is None:
            raise StorageError(f"race {record.race_id!r} was refused: {exc.orig}") from exc
        if not _same(stored, record):
            raise DuplicateRaceError(
                f"another race with the id {record.race_id!r} is already stored"
            ) from exc

    async def _insert(
        self, rows: Sequence[tuple[Row, list[Row], list[Row]]], records: Sequence[RaceRecord]
    ) -> None:
        async with self._transaction(exclusive=True) as conn:
            await conn.execute(races.insert(), [race_row for race_row, _, _ in rows])
            player_rows = [row for _, players, _ in rows for row in players]
            if player_rows:
                await conn.execute(race_players.insert(), player_rows)
            move_rows = [row for _, _, moves in rows for row in moves]
            if move_rows:
                await conn.execute(race_moves.insert(), move_rows)
            # In the same transaction: a rated race never lands without its ratings.
            await rate_races(conn, records)
            await record_results(conn, records)

    async def get_race(self, race_id: str) -> RaceRecord | None:
        """The stored race with this id, logs included, or ``None``."""
        records = await self._load([race_id], with_logs=True)
        return records[0] if records else None

    async def list_races(
        self,
        player: str | None = None,
        limit: int = 20,
        *,
        with_logs: bool = True,
        hide_daily_from: str | None = None,
    ) -> list[RaceRecord]:
        """Recent races, newest start first, optionally only those ``player`` (a name) ran.

        With ``with_logs=False`` each player's log is left empty, which is all a
        summary (:meth:`RaceRecord.summary_json`) needs.  ``hide_daily_from``
        (a ``YYYY-MM-DD`` day) leaves out the daily attempts at that day and later.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= MAX_LIST_LIMIT:
            raise ValueError(f"limit must be an integer from 1 to {MAX_LIST_LIMIT}, got {limit!r}")
        query = sa.select(races.c.race_id)
        if player is not None:
            ran = sa.select(race_players.c.race_id).where(race_players.c.name == player)
            query = query.where(races.c.race_id.in_(ran))
        if hide_daily_from is not None:
            query = query.where(races.c.race_id.not_in(hidden_races(hide_daily_from)))
        query = query.order_by(races.c.started_at_ms.desc(), races.c.race_id.desc()).limit(limit)
        async with self._connection() as conn:
            ids = [row.race_id for row in await conn.execute(query)]
        return await self._load(ids, with_logs=with_logs)

    async def close(self) -> None:
        """Close every pooled connection; the store is unusable afterwards."""
        await self._engine.dispose()

    async def _load(self, ids: Sequence[str], *, with_logs: bool) -> list[RaceRecord]:
        if not ids:
            return []
        async with self._connection() as conn:
            race_rows = (await conn.execute(races.select().where(races.c.race_id.in_(ids)))).all()
            player_rows = (
                await conn.execute(
                    race_players.select()
                    .where(race_players.c.race_id.in_(ids))
                    .order_by(race_players.c.race_id, race_players.c.rank, race_players.c.player_id)
                )
            ).all()
            move_rows: Sequence[sa.Row[Any]] = []
            if with_logs:
                move_rows = (
                    await conn.execute(
                        race_moves.select()
                        .where(race_moves.c.race_id.in_(ids))
                        .order_by(race_moves.c.race_id, race_moves.c.player_id, race_moves.c.idx)
                    )
                ).all()
        logs: dict[tuple[str, str], list[MoveLogEntry]] = {}
        for row in move_rows:
            logs.setdefault((row.race_id, row.player_id), []).append(move_of(row))
        players: dict[str, list[PlayerResult]] = {}
        for row in player_rows:
            log = tuple(logs.get((row.race_id, row.player_id), ()))
            players.setdefault(row.race_id, []).append(player_of(row, log))
        by_id = {
            row.race_id: race_of(row, tuple(players.get(row.race_id, ()))) for row in race_rows
        }
        return [by_id[race_id] for race_id in ids if race_id in by_id]

    def _connection(self) -> _Guarded:
        return _Guarded(self, exclusive=False, transaction=False)

    def _transaction(self, *, exclusive: bool) -> _Guarded:
        return _Guarded(self, exclusive=exclusive, transaction=True)

    def reading(self) -> _Guarded:
        """``async with store.reading() as conn``: a connection for queries of other tables
        (:mod:`server.storage.daily`), with this store's error handling."""
        return self._connection()

    @property
    def writer_turn(self) -> asyncio.Lock:
        """The turn every writer of this store takes (SQLite has one writer at a time):
        held by :meth:`writing` blocks, and by writers with a connection of their own
        (the input log's appender) around each of their transactions."""
        return self._write_lock

    def writing(self) -> _Guarded:
        """``async with store.writing() as conn``: a write transaction, committed at the end
        of the block and rolled back if it raises."""
        return self._transaction(exclusive=True)


class _Guarded:
    """A connection (optionally in a transaction) whose driver errors read clearly."""

    def __init__(self, store: RaceStore, *, exclusive: bool, transaction: bool) -> None:
        self._store = store
        self._exclusive = exclusive and store._is_sqlite
        self._transaction = transaction
        self._conn: AsyncConnection | None = None
        self._locked = False

    async def __aenter__(self) -> AsyncConnection:
        if self._exclusive:
            await self._store._write_lock.acquire()
            self._locked = True
        try:
            conn = await self._store._engine.connect()
        except BaseException as exc:
            self._release()
            if isinstance(exc, DBAPIError | OSError):
                raise _open_failure(self._store, exc) from exc
            raise
        try:
            if self._exclusive:
                conn = await conn.execution_options(sqlite_begin="BEGIN IMMEDIATE")
            if self._transaction:
                await conn.begin()
        except BaseException as exc:
            await self._close(conn)
            if isinstance(exc, DBAPIError):
                raise _failure(self._store, exc) from exc
            raise
        self._conn = conn
        return conn

    async def __aexit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        conn = self._conn
        assert conn is not None
        try:
            if self._transaction and conn.in_transaction():
                if exc is None:
                    await conn.commit()
                else:
                    await conn.rollback()
        except DBAPIError as failure:
            # A failed COMMIT wrote nothing; a failed ROLLBACK (dead connection)
            # changes nothing either: report whichever error came first.
            exc = exc or failure
        finally:
            await self._close(conn)
        if isinstance(exc, DBAPIError) and not isinstance(exc, IntegrityError):
            raise _failure(self._store, exc) from exc
        if isinstance(exc, IntegrityError) and exc_type is None:
            raise exc

    async def _close(self, conn: AsyncConnection) -> None:
        try:
            await conn.close()
        finally:
            self._release()

    def _release(self) -> None:
        if self._locked:
            self._locked = False
            self._store._write_lock.release()


def _create_engine(url: URL) -> AsyncEngine:
    if url.get_backend_name() == "sqlite":
        database = url.database or ""
        if database != ":memory:" and not database.startswith("file:"):
            _prepare_sqlite_path(Path(database).expanduser(), url)
        engine = create_async_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})
        tune_sqlite(engine)
        return engine
    return create_async_engine(url, pool_pre_ping=True)


def _prepare_sqlite_path(path: Path, url: URL) -> None:
    """Create the file's directory; refuse paths SQLite could only fail on obscurely."""
    shown = url.render_as_string(hide_password=True)
    if path.exists() and not path.is_file():
        raise StorageError(f"cannot open database {shown}: {path} is not a regular file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot open database {shown}: {exc}") from exc


def _hide_password(url: str) -> str:
    return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)


def _same(stored: RaceRecord, record: RaceRecord) -> bool:
    """Whether ``record`` is the race ``stored`` holds.  A record without its par is the
    stored race with one, and with the par's line for its ``solution`` (the dealer's line
    before): a room rebuilt from its input log after a restart hands its finished races to
    storage again, and the replay never solves for par."""
    given = json.loads(json.dumps(record.to_json()))  # a tuple in the options is a list
    kept = stored.to_json()
    if record.par is None and stored.par is not None:
        kept["par"], kept["solution"] = None, given.get("solution")
    return bool(kept == given)


def _failure(store: RaceStore, exc: DBAPIError) -> StorageError:
    """A driver error in the caller's terms; a dropped connection is 'unavailable', a
    refused write 'not writable'."""
    kind: type[StorageError] = StorageError
    if exc.connection_invalidated:
        kind = DatabaseUnavailableError
    elif _refuses_writes(exc):
        return DatabaseNotWritableError(_not_writable(store.url, exc))
    return kind(f"database {store.url} failed: {_reason(exc)}")


def _not_writable(url: str, exc: BaseException, why: str = "") -> str:
    return (
        f"database {url} cannot be written ({_reason(exc)}{why}): no race result could "
        "be stored; make it writable or point the server at another database"
    )


def _open_failure(store: RaceStore, exc: BaseException) -> StorageError:
    """A connection that would not open: a read-only SQLite file or directory (SQLite
    cannot open a WAL database it may not write beside), else 'unavailable'."""
    path = store.sqlite_path
    writable = path is None or not path.is_file() or (
        os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    )
    if not writable:
        why = f"; {path} or its directory is read-only"
        return DatabaseNotWritableError(_not_writable(store.url, exc, why))
    return DatabaseUnavailableError(f"cannot open database {store.url}: {_reason(exc)}")


#: SQLSTATEs of a PostgreSQL session that may not write: read-only transaction,
#: read-only standby / insufficient privilege.
_PG_READ_ONLY: Final = frozenset({"25006", "42501"})


def _refuses_writes(exc: DBAPIError) -> bool:
    """A read-only SQLite file (SQLITE_READONLY and its variants) or PostgreSQL session."""
    orig = getattr(exc, "orig", None)
    if getattr(orig, "sqlstate", None) in _PG_READ_ONLY:
        return True
    code = getattr(orig, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF == sqlite3.SQLITE_READONLY


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc).strip() or type(exc).__name__
