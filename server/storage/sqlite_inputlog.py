"""The input log's appends to a SQLite file, on a thread of their own.

The input log commits several times a second per busy server, more than any
other write.  Through the store's async engine each commit is several hops
between the event loop and the driver's thread (connect, begin, insert,
commit, close), each with SQLAlchemy's Python work under the GIL.  Here one
thread owns one connection of the standard library's driver: an append hands
its rows over in one queue put, the thread runs the insert and the commit
(SQLite releases the GIL while it works and while it syncs the file) and
wakes the loop once.  The connection keeps the store's settings: WAL,
``synchronous=FULL`` (a commit is on disk when :meth:`SqliteAppender.append`
returns) and a busy timeout for writers of other processes.

An append of up to :data:`ROWS_PER_STATEMENT` rows is one statement (one row per
room), which is its own transaction.  Each statement the driver runs gives the
GIL up and takes it back, and taking it back while the event loop is busy waits
up to the interpreter's switch interval (5 ms): with a statement per row a
40-row commit took 0.5 s behind a busy thread, against 40 ms as one statement
(``python -m bench.log_convoy``, performance-log.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from server.storage.sqlite import SQLITE_BUSY_TIMEOUT_S
from server.storage.store import StorageError

#: One row per room per group commit: (room, index of the run's first entry, epoch, run).
Row = tuple[str, int, int, str]

#: Rows inserted by one statement: a commit of at most this many rooms is one
#: statement.  Each count has its statement text, which the driver keeps prepared
#: (its cache holds 128 statements; this leaves room for the rest).
ROWS_PER_STATEMENT: Final = 64


@functools.cache
def insert_sql(rows: int) -> str:
    """The statement inserting ``rows`` rows (``Row`` values, ``?`` parameters)."""
    values = ", ".join(["(?, ?, ?, ?)"] * rows)
    return f"INSERT INTO room_inputs (room_code, idx, epoch, input_json) VALUES {values}"


#: What the thread is handed: rows and whom to tell, or ``None`` and whom to tell it stopped.
_Job = tuple[Sequence[Row] | None, asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class SqliteAppender:
    """Inserts rows into ``room_inputs`` of the SQLite file ``path``, one transaction per
    :meth:`append`, on a thread started by the first append and stopped by :meth:`close`.

    ``url`` names the database in error messages.
    """

    def __init__(
        self, path: Path, url: str, busy_timeout_s: float = SQLITE_BUSY_TIMEOUT_S
    ) -> None:
        self.path = path
        self.url = url
        self.busy_timeout_s = busy_timeout_s
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False
        #: Called on the appender's thread with its connection before each transaction
        #: (tests cap the database's size with it, as a full disk would).
        self.prepare: Callable[[sqlite3.Connection], object] | None = None

    async def append(self, rows: Sequence[Row]) -> None:
        """Insert ``rows`` in one transaction; they are on disk when this returns.

        Raises :class:`~server.storage.store.StorageError` (nothing written) when SQLite
        refuses them or the appender is closed.
        """
        if self._closed:
            raise StorageError(f"the input log of {self.url} is closed")
        if self._thread is None:
            # A daemon: a server that never closes its log still exits (what is not
            # committed was never acknowledged).
            thread = threading.Thread(target=self._serve, name="input-log-appender", daemon=True)
            thread.start()
            self._thread = thread
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._jobs.put((rows, loop, done))
        await done

    async def close(self) -> None:
        """Finish the appends handed over so far, close the connection, end the thread."""
        self._closed = True
        thread, self._thread = self._thread, None
        if thread is None or not thread.is_alive():
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._jobs.put((None, loop, done))
        await done
        thread.join()  # it has nothing left to do but return

    # ---- on the appender's thread ------------------------------------------------
    def _serve(self) -> None:
        conn: sqlite3.Connection | None = None
        while True:
            rows, loop, done = self._jobs.get()
            if rows is None:
                if conn is not None:
                    conn.close()
                _settle(loop, done, None)
                return
            conn, error = self._append(conn, rows)
            _settle(loop, done, error)

    def _append(
        self, conn: sqlite3.Connection | None, rows: Sequence[Row]
    ) -> tuple[sqlite3.Connection | None, StorageError | None]:
        """Insert ``rows`` in one transaction: the connection to go on with, and the error."""
        try:
            conn = conn or self._open()
            if self.prepare is not None:
                self.prepare(conn)
            _insert(conn, rows)
        except Exception as exc:  # whatever it is, the waiting append gets it
            error = StorageError(f"cannot append to the input log of {self.url}: {exc}")
            error.__cause__ = exc
            return _after_failure(conn), error
        return conn, None

    def _open(self) -> sqlite3.Connection:
        """A connection set up as the store's are (WAL, full sync), autocommit: BEGIN is ours."""
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None)
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()
            if mode is None or str(mode[0]).lower() != "wal":
                raise sqlite3.OperationalError(f"the database is not in WAL mode ({mode})")
            conn.execute("PRAGMA synchronous=FULL")
        except BaseException:
            conn.close()
            raise
        return conn


def _insert(conn: sqlite3.Connection, rows: Sequence[Row]) -> None:
    step = ROWS_PER_STATEMENT
    if len(rows) <= step:
        # The connection is in autocommit: one statement is one transaction, all rows
        # or none, synced before it returns.  A lone write statement takes the write
        # lock first (waiting up to the busy timeout), as BEGIN IMMEDIATE does.
        _insert_rows(conn, rows)
        return
    # IMMEDIATE: take the write lock up front (waiting up to the busy timeout), as the
    # store's writers do, rather than fail on upgrading a read lock.
    conn.execute("BEGIN IMMEDIATE")
    for start in range(0, len(rows), step):
        _insert_rows(conn, rows[start : start + step])
    conn.execute("COMMIT")


def _insert_rows(conn: sqlite3.Connection, rows: Sequence[Row]) -> None:
    """One statement inserting ``rows``."""
    conn.execute(insert_sql(len(rows)), [value for row in rows for value in row])


def _after_failure(conn: sqlite3.Connection | None) -> sqlite3.Connection | None:
    """The connection after a failed append: rolled back, or closed (``None``: open a new
    one next time) when even that fails."""
    if conn is None or not conn.in_transaction:
        return conn
    try:
        conn.rollback()
    except sqlite3.Error:
        conn.close()
        return None
    return conn


def _settle(
    loop: asyncio.AbstractEventLoop, done: asyncio.Future[None], error: BaseException | None
) -> None:
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
        loop.call_soon_threadsafe(_resolve, done, error)


def _resolve(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.done():  # the waiting append was cancelled
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)
