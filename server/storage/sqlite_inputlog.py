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

Appends go to a tail, not to ``room_inputs`` itself.  ``room_inputs`` is keyed by
room: a commit of 120 rooms' rows lands on about as many of its pages, all over
the index, and WAL mode writes every page a commit changed again, so the log's
thread took a fifth of a busy server's core (performance-log.md, "tenth part").
A tail (:data:`TAILS`, no key of its own) takes rows in the order they come, on
its last page or two.  While one tail takes the appends, the other is folded into
``room_inputs`` (:class:`Fold`): at least :data:`FOLD_EVERY_S` after the last fold
began, the tails change places and the one given up is sorted by key into a
table of the fold's own connection, then copied into ``room_inputs``
:data:`FOLD_ROWS` rows a statement, in key order, so each page of the index is
written about once per fold, not once per commit; then it is emptied.  After each
commit the fold copies twice what was appended since it began (:data:`FOLD_CATCH_UP`),
so it keeps ahead of the appends however busy the server is.  The fold
runs on a thread and a connection of its own, so an append never waits for a
fold's Python, only for SQLite's write lock while one copy (a statement of about
a millisecond) runs; the fold waits at most :data:`FOLD_LOCK_WAIT_S` for the
appends' lock and otherwise tries again a moment later.  The tails change places
under a lock the appends hold while they insert: no append is left in a tail being
folded.  The fold's connection does not sync (``synchronous=NORMAL``): what it
writes is a copy of rows that stay in the tail until it is emptied, and WAL frames are
kept in order, so an emptied tail comes back after a power cut unless every
copy came back before it.  A row may so stand both in the tail and in
``room_inputs``; the copy skips keys already there, and
:class:`~server.storage.inputlog.SqlInputLog` reads each entry once.

The folding thread runs at the lowest priority (nice :data:`FOLD_NICE`, Linux): it is
background work on the event loop's core.  At the loop's priority a fold step (some
take over 10 ms) took the core from the loop mid-turn, and the answers waiting in that
turn waited for it; niced, a fold takes the loop's idle moments, and a small share of
the core when it has none.  At 10,000 players the round trip's p99 was under 50 ms in
10 of 12 windows, against 1 of 6 (performance-log.md, twenty-eighth part).  The
appends' thread keeps the loop's priority: every answer waits for its commit.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import os
import queue
import sqlite3
import sys
import threading
import time
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
#: The two tails (Alembic revision ``0007``): one takes the appends, the other is folded.
TAILS: Final = ("room_inputs_tail_a", "room_inputs_tail_b")
#: Seconds from the start of one fold to the next: each page of ``room_inputs`` a fold
#: touches is written once for every commit of that long.
FOLD_EVERY_S: Final = 1.0
#: Rows a fold copies into ``room_inputs`` in one statement, which holds the database's
#: write lock (an append waits for it) for about a millisecond.
FOLD_ROWS: Final = 256
#: A fold is owed this many rows for each row appended while it runs: after each commit
#: it copies what it is owed, at least :data:`FOLD_ROWS` and at most :data:`FOLD_ROUND_ROWS`, a
#: statement of :data:`FOLD_ROWS` at a time, stopping early when an append is waiting.
#: So it outruns the appends whether the commits come 10 or 20 ms apart and whether or
#: not its niced thread had the core after every commit (one statement a commit
#: copied 12,800 rows a second at 20 ms, where 10,000 players append 20,000).
FOLD_CATCH_UP: Final = 2
FOLD_ROUND_ROWS: Final = 8 * FOLD_ROWS
#: How long a fold step waits for another writer's lock (an append's) before giving up,
#: and how long it then pauses before it is tried again.
FOLD_LOCK_WAIT_S: Final = 0.02
FOLD_BUSY_PAUSE_S: Final = 0.05
#: How long a fold's write waits for a commit to follow (it goes just after one).
FOLD_GAP_WAIT_S: Final = 0.05
#: The folding thread's nice value (module docstring): the lowest.
FOLD_NICE: Final = 19
_COLUMNS: Final = "room_code, idx, epoch, input_json"


@functools.cache
def insert_sql(rows: int, table: str = "room_inputs") -> str:
    """The statement inserting ``rows`` rows (``Row`` values, ``?`` parameters)."""
    values = ", ".join(["(?, ?, ?, ?)"] * rows)
    return f"INSERT INTO {table} ({_COLUMNS}) VALUES {values}"


#: Called on the event loop once an append is on disk (``None``) or refused (the error).
Done = Callable[[BaseException | None], object]
#: What the thread is handed: rows and whom to tell, or ``None`` and whom to tell it stopped.
_Job = tuple[Sequence[Row] | None, asyncio.AbstractEventLoop, Done]


class Fold:
    """One tail's copy into ``room_inputs``, a statement per :meth:`step`: the tail's rows
    sorted by key into a table of the fold's connection's own (``temp.fold_rows``: no
    lock on the database, only reads), then copied :data:`FOLD_ROWS` at a time, in key
    order, then the tail emptied.  A connection lost part way (a failed step) loses the
    sorted copy: the fold sorts again, and what was copied already is skipped."""

    __slots__ = ("copied", "rows", "sorted", "tail")

    def __init__(self, tail: str):
        self.tail = tail
        #: Whether the fold's connection holds the sorted rows; how many, and how many of
        #: them are copied.
        self.sorted = False
        self.rows = 0
        self.copied = 0

    @property
    def writes_next(self) -> bool:
        """Whether the next step takes the database's write lock (sorting does not)."""
        return self.sorted

    @property
    def copying(self) -> bool:
        """Whether the next step copies rows into ``room_inputs``."""
        return self.sorted and self.copied < self.rows

    def step(self, conn: sqlite3.Connection, limit: int = FOLD_ROWS) -> bool:
        """Run the next statement of the fold on ``conn`` (a copy of at most ``limit``
        rows); True once the tail is empty.

        Raises :class:`sqlite3.OperationalError` when another writer holds the lock (the
        step is not taken, and may be tried again)."""
        if not self.sorted:
            conn.execute("DROP TABLE IF EXISTS temp.fold_rows")
            conn.execute(
                f"CREATE TEMP TABLE fold_rows AS SELECT {_COLUMNS} FROM {self.tail}"
                " ORDER BY room_code, idx"
            )
            # fetchall: a statement left unfinished would hold its snapshot open.
            ((rows,),) = conn.execute("SELECT count(*) FROM temp.fold_rows").fetchall()
            self.sorted, self.rows, self.copied = True, int(rows), 0
            return False
        if self.copied < self.rows:
            # Rowids follow the sort (the copy was made in that order), from 1.
            last = min(self.rows, self.copied + max(1, limit))
            conn.execute(
                f"INSERT OR IGNORE INTO room_inputs ({_COLUMNS}) SELECT {_COLUMNS}"
                " FROM temp.fold_rows WHERE rowid > ? AND rowid <= ? ORDER BY rowid",
                (self.copied, last),
            )
            self.copied = last
            return False
        conn.execute(f"DELETE FROM {self.tail}")
        conn.execute("DROP TABLE temp.fold_rows")
        return True


class SqliteAppender:
    """Appends rows to the input log of the SQLite file ``path``, one transaction per
    :meth:`append`, on a thread started by the first append and stopped by :meth:`close`;
    a second thread folds the tails into ``room_inputs`` (module docstring).

    ``url`` names the database in error messages.  ``fold_every_s``: seconds from the
    start of one fold to the next (tests make it short).
    """

    def __init__(
        self,
        path: Path,
        url: str,
        busy_timeout_s: float = SQLITE_BUSY_TIMEOUT_S,
        fold_every_s: float = FOLD_EVERY_S,
    ) -> None:
        self.path = path
        self.url = url
        self.busy_timeout_s = busy_timeout_s
        self.fold_every_s = fold_every_s
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        #: Appends that ended, with their ``done`` not called yet (:meth:`take_ended`).
        self.ended: collections.deque[tuple[Done, BaseException | None]] = collections.deque()
        self._taking = False
        self._thread: threading.Thread | None = None
        self._folder: threading.Thread | None = None
        self._closed = False
        #: Called on the appender's thread with its connection before each transaction
        #: (tests cap the database's size with it, as a full disk would).
        self.prepare: Callable[[sqlite3.Connection], object] | None = None
        #: Called on the folding thread with the fold's connection when it opens.
        self.prepare_fold: Callable[[sqlite3.Connection], object] | None = None
        #: Held by the appender's thread while it inserts, and by the folding thread while
        #: it takes the tail away from the appends: no append is left in a tail being folded.
        self._tail_lock = threading.Lock()
        #: The tail taking the appends, and whether it has rows not folded yet (both under
        #: the lock).
        self.tail = TAILS[0]
        self._unfolded = False
        #: Rows appended so far, and whether an append is under way (the appender's
        #: thread sets both); how many of the rows the fold had counted, and the rows it is
        #: owed (:data:`FOLD_CATCH_UP`; the folding thread's).
        self.appended = 0
        self.appending = False
        self._appended_seen = 0
        self._owed = 0
        #: Set to wake the folding thread (an append, or the close).
        self._wake = threading.Event()
        #: Set after each commit: the fold's writes go in the gap before the next one.
        self._committed = threading.Event()
        #: Rooms being dropped (:meth:`forget`), each with whether its rows are deleted
        #: yet, and those already taken out of the fold's sorted copy: a fold must not copy
        #: their rows back.  Under the fold lock, which each step of a fold holds.
        self._fold_lock = threading.Lock()
        self._dropped: dict[str, bool] = {}
        self._filtered: set[str] = set()
        self._stopping = False
        # ---- the folding thread's own (read elsewhere only by tests and the metrics) ----
        #: The fold under way, if any; when the last one began (monotonic clock).
        self._fold: Fold | None = None
        self._fold_began = time.monotonic()
        #: Whether the tail not taking appends was looked at for rows a crash left.
        self._looked = False
        #: A failed fold step is not tried again before this (monotonic clock).
        self._pause_until = 0.0
        #: Folds finished, rounds of copies taken (a round follows a commit), and steps
        #: refused for another writer's lock.
        self.folds = 0
        self.copy_rounds = 0
        self.folds_busy = 0
        #: Why the last fold step failed otherwise (it is tried again), if it did.
        self.fold_problem: str | None = None
        #: Called on the folding thread with the seconds each fold step took: the metrics.
        self.on_fold_step: Callable[[float], object] | None = None
        #: The folding thread's id in the system (its priority is its own), once it runs.
        self.folder_id: int | None = None

    async def append(self, rows: Sequence[Row]) -> None:
        """Insert ``rows`` in one transaction; they are on disk when this returns.

        Raises :class:`~server.storage.store.StorageError` (nothing written) when SQLite
        refuses them or the appender is closed.
        """
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.submit(rows, functools.partial(_resolve, done))
        await done

    def submit(self, rows: Sequence[Row], done: Done) -> None:
        """:meth:`append` without waiting: ``done`` is called on the running event loop
        with ``None`` once the rows are on disk, or with the error that refused them
        (a :class:`~server.storage.store.StorageError`).  The journal's commits come this
        way: the loop turn that learns of a commit also sends what it held."""
        loop = asyncio.get_running_loop()
        if self._closed:
            loop.call_soon(done, StorageError(f"the input log of {self.url} is closed"))
            return
        self._jobs.put((rows, loop, done))
        if self._thread is None:
            # Daemons: a server that never closes its log still exits (what is not
            # committed was never acknowledged; a fold cut short is taken up again).
            self._thread = threading.Thread(
                target=self._serve, name="input-log-appender", daemon=True
            )
            self._folder = threading.Thread(
                target=self._fold_all, name="input-log-folder", daemon=True
            )
            self._thread.start()
            self._folder.start()

    def _finish(
        self, loop: asyncio.AbstractEventLoop, done: Done, error: BaseException | None
    ) -> None:
        """On the appender's thread: an append ended; its ``done`` runs on the loop."""
        self.ended.append((done, error))
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(self.take_ended)

    def take_ended(self) -> None:
        """Call, on the event loop, the ``done`` of every append that has ended, in order:
        at the loop's next turn, or sooner when the journal asks
        (:meth:`~server.recovery.journal.Journal.poll`)."""
        if self._taking:  # a done that led back here: the loop below goes on
            return
        self._taking = True
        try:
            ended = self.ended
            while ended:
                done, error = ended.popleft()
                done(error)
        finally:
            self._taking = False

    async def close(self) -> None:
        """Finish the appends handed over so far, close the connections, end the threads.

        A fold under way stops after its step: the next appender goes on with it."""
        self._closed = True
        thread, self._thread = self._thread, None
        folder, self._folder = self._folder, None
        loop = asyncio.get_running_loop()
        if thread is not None and thread.is_alive():
            done: asyncio.Future[None] = loop.create_future()
            self._jobs.put((None, loop, functools.partial(_resolve, done)))
            await done
            thread.join()  # it has nothing left to do but return
        if folder is not None:
            self._stopping = True
            self._wake.set()
            await loop.run_in_executor(None, folder.join)  # after the step under way

    def forget(self, rooms: Sequence[str], *, deleted: bool = False) -> None:
        """These rooms are being dropped: once this returns (it waits for a fold step under
        way), no fold copies their rows into ``room_inputs`` until a fold sorts the tail
        after they were deleted.  Call it before deleting their rows, and again with
        ``deleted`` once they are.  Blocks: call it off the event loop.

        (A new room given the same code in between, a chance of one in millions a
        second, would lose what the fold holds of its first second.)"""
        with self._fold_lock:
            for room in rooms:
                if deleted:
                    if room in self._dropped:
                        self._dropped[room] = True
                else:
                    self._dropped[room] = False

    def unforget(self, rooms: Sequence[str]) -> None:
        """Their rows were not deleted after all (the drop failed): a fold folds them
        again, sorting its tail anew if it had taken them out of its sorted copy."""
        with self._fold_lock:
            for room in rooms:
                self._dropped.pop(room, None)
                if room in self._filtered and self._fold is not None:
                    self._fold.sorted = False
            self._filtered.difference_update(rooms)

    # ---- on the appender's thread ------------------------------------------------
    def _serve(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                rows, loop, done = self._jobs.get()
                if rows is None:
                    _settle(loop, done, None)
                    return
                self.appending = True
                conn, error = self._append(conn, rows)
                self.appending = False
                self._finish(loop, done, error)
        finally:
            if conn is not None:
                conn.close()

    def _append(
        self, conn: sqlite3.Connection | None, rows: Sequence[Row]
    ) -> tuple[sqlite3.Connection | None, StorageError | None]:
        """Insert ``rows`` in one transaction: the connection to go on with, and the error."""
        try:
            conn = conn or self._open()
            if self.prepare is not None:
                self.prepare(conn)
            with self._tail_lock:
                _insert(conn, rows, self.tail)
                self.appended += len(rows)
                if not self._unfolded:
                    self._unfolded = True
                    self._wake.set()
            self._committed.set()
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

    # ---- on the folding thread ---------------------------------------------------
    def _fold_all(self) -> None:
        conn: sqlite3.Connection | None = None
        self.folder_id = threading.get_native_id()
        _lower_priority(self.folder_id)
        try:
            while not self._stopping:
                wait = self._fold_wait()
                if wait is None or wait > 0:
                    self._wake.wait(wait)
                    self._wake.clear()
                    continue
                conn = self._fold_step(conn)
        finally:
            if conn is not None:
                conn.close()

    def _fold_wait(self) -> float | None:
        """Seconds until the fold may take a step (``None``: until an append wakes it): at
        once while a fold is under way (or before the tails were looked at for one a crash
        left), else once the next one is due."""
        now = time.monotonic()
        if self._fold is not None or not self._looked:
            return max(0.0, self._pause_until - now)
        if not self._unfolded:
            return None
        return max(0.0, max(self._fold_began + self.fold_every_s, self._pause_until) - now)

    def _open_folding(self) -> sqlite3.Connection:
        """The fold's connection: no sync of its own (module docstring), and a short wait
        for the appends' lock."""
        conn = sqlite3.connect(self.path, timeout=FOLD_LOCK_WAIT_S, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA temp_store=MEMORY")  # the sorted copy of a tail
            if self.prepare_fold is not None:
                self.prepare_fold(conn)
            # Rows a crash left in the tail taking appends now are folded with it later;
            # the other tail, if it has any, is folded at once.
            if not self._looked:
                # fetchall: a statement left unfinished would hold its snapshot open, and a
                # write from an old snapshot is refused as locked, whatever the wait.
                other = _other(self.tail)
                if conn.execute(f"SELECT EXISTS (SELECT 1 FROM {other})").fetchall() == [(1,)]:
                    self._fold = self._begin(other)
                self._looked = True
        except BaseException:
            conn.close()
            raise
        return conn

    def _fold_step(self, conn: sqlite3.Connection | None) -> sqlite3.Connection | None:
        """One step of the fold under way, or of one that is due (the tail taking appends
        is given up to it); the fold's connection to go on with.  A step refused for
        another writer's lock is tried again after :data:`FOLD_BUSY_PAUSE_S`; any other
        failure is kept in :attr:`fold_problem` and tried again a second later, on a new
        connection.  Appends go on meanwhile."""
        try:
            conn = conn or self._open_folding()
            if self._fold is None:
                if self._fold_wait() != 0:
                    return conn
                with self._tail_lock:  # no append is under way in the tail given up
                    given_up, self.tail = self.tail, _other(self.tail)
                    self._unfolded = False
                self._fold = self._begin(given_up)
            fold = self._fold
            if fold.writes_next:
                # Right after a commit: the next comes at least the journal's gap later,
                # so a copy of a millisecond or two rarely holds one up.  Without commits
                # (a quiet server) it goes on after a short wait.
                self._committed.clear()
                self._committed.wait(FOLD_GAP_WAIT_S)
            budget = FOLD_ROWS
            if fold.copying:
                budget = self._round_rows()
                self.copy_rounds += 1
            while True:  # a round of copies (FOLD_CATCH_UP), or the one statement due
                started = time.perf_counter()
                with self._fold_lock:
                    self._filter(conn, fold)
                    copying = fold.copying
                    before = fold.copied
                    if fold.step(conn, min(FOLD_ROWS, budget)):
                        self._fold = None
                        self.folds += 1
                self.fold_problem = None
                if self.on_fold_step is not None:
                    self.on_fold_step(time.perf_counter() - started)
                if not copying:
                    break
                copied = fold.copied - before
                self._owed = max(0, self._owed - copied)
                budget -= copied
                if budget <= 0 or not fold.copying or self._stopping or self._append_waits():
                    break
        except Exception as exc:  # whatever it is, the fold is tried again
            pause = FOLD_BUSY_PAUSE_S
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                self.folds_busy += 1
            else:
                self.fold_problem = f"cannot fold the input log of {self.url}: {exc}"
                pause = 1.0
            if conn is not None:  # a new connection next time: nothing of this one is left
                conn.close()
                conn = None
                if self._fold is not None:
                    self._fold.sorted = False  # its sorted rows went with the connection
            self._pause_until = time.monotonic() + pause
        return conn

    def _round_rows(self) -> int:
        """Rows to copy in the round that follows a commit (:data:`FOLD_CATCH_UP`)."""
        appended = self.appended
        self._owed += FOLD_CATCH_UP * (appended - self._appended_seen)
        self._appended_seen = appended
        return min(FOLD_ROUND_ROWS, max(FOLD_ROWS, self._owed))

    def _append_waits(self) -> bool:
        """Whether an append is under way or handed over: the round stops for it."""
        return self.appending or not self._jobs.empty()

    def _filter(self, conn: sqlite3.Connection, fold: Fold) -> None:
        """Under the fold lock: keep the rows of rooms being dropped out of ``fold``'s
        sorted copy (rooms deleted before it sorts are not in it)."""
        if not fold.sorted:
            for room in [room for room, done in self._dropped.items() if done]:
                del self._dropped[room]
            self._filtered.clear()
        elif self._dropped.keys() - self._filtered:
            rooms = sorted(self._dropped.keys() - self._filtered)
            marks = ", ".join("?" * len(rooms))
            conn.execute(f"DELETE FROM temp.fold_rows WHERE room_code IN ({marks})", rooms)
            self._filtered.update(rooms)

    def _begin(self, tail: str) -> Fold:
        """A fold of ``tail``: it is owed what is appended from now on."""
        self._fold_began = time.monotonic()
        self._appended_seen, self._owed = self.appended, 0
        return Fold(tail)


def _lower_priority(thread_id: int) -> None:
    """Give the thread ``thread_id`` nice :data:`FOLD_NICE` (module docstring).  On Linux a
    thread's priority is its own; elsewhere the call would lower the whole process, so
    nothing is done.  Raising a nice value needs no privilege; a refusal changes nothing."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, thread_id, FOLD_NICE)


def _other(tail: str) -> str:
    return TAILS[1] if tail == TAILS[0] else TAILS[0]


def _insert(conn: sqlite3.Connection, rows: Sequence[Row], table: str) -> None:
    step = ROWS_PER_STATEMENT
    if len(rows) <= step:
        # The connection is in autocommit: one statement is one transaction, all rows
        # or none, synced before it returns.  A lone write statement takes the write
        # lock first (waiting up to the busy timeout), as BEGIN IMMEDIATE does.
        _insert_rows(conn, rows, table)
        return
    # IMMEDIATE: take the write lock up front (waiting up to the busy timeout), as the
    # store's writers do, rather than fail on upgrading a read lock.
    conn.execute("BEGIN IMMEDIATE")
    for start in range(0, len(rows), step):
        _insert_rows(conn, rows[start : start + step], table)
    conn.execute("COMMIT")


def _insert_rows(conn: sqlite3.Connection, rows: Sequence[Row], table: str) -> None:
    """One statement inserting ``rows``."""
    conn.execute(insert_sql(len(rows), table), [value for row in rows for value in row])


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


def _settle(loop: asyncio.AbstractEventLoop, done: Done, error: BaseException | None) -> None:
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
        loop.call_soon_threadsafe(done, error)


def _resolve(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.done():  # the waiting append was cancelled
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)
