"""The SQL input log on a SQLite file: appends on the appender's own thread and
connection, durable when they return, clear when refused, readable after a restart."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from server.recovery.log import Run
from server.storage.inputlog import SqlInputLog
from server.storage.sqlite_inputlog import ROWS_PER_STATEMENT
from server.storage.store import RaceStore, StorageError


@pytest.fixture
async def file_store(tmp_path: Path) -> AsyncIterator[RaceStore]:
    store = await RaceStore.connect(f"sqlite:///{tmp_path / 'races.db'}")
    try:
        yield store
    finally:
        await store.close()


@contextmanager
def write_locked(path: Path) -> Iterator[None]:
    """Another writer (another process, as SQLite sees it) holds the database's write lock."""
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


def stored_rows(path: Path) -> list[tuple[str, int, int, str]]:
    """``room_inputs`` as a fresh connection of another process reads it."""
    conn = sqlite3.connect(path)
    try:
        query = "SELECT room_code, idx, epoch, input_json FROM room_inputs ORDER BY room_code, idx"
        return [tuple(row) for row in conn.execute(query)]
    finally:
        conn.close()


def appender_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "input-log-appender"]


async def test_an_append_is_committed_for_every_other_connection_when_it_returns(
    file_store: RaceStore,
) -> None:
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store)
    try:
        await log.append([Run("A", 0, 3, ['{"n":0}', '{"n":1}']), Run("B", 5, 3, ['{"b":5}'])])
        assert stored_rows(path) == [("A", 0, 3, '{"n":0}\n{"n":1}'), ("B", 5, 3, '{"b":5}')]
        assert await log.read("B") == [(5, 3, '{"b":5}')]  # the store's own connections too
    finally:
        await log.close()


async def test_the_appends_run_on_one_thread_that_close_ends_and_reads_go_on_after(
    file_store: RaceStore,
) -> None:
    log = SqlInputLog(file_store)
    assert appender_threads() == []  # none until the first append
    for index in range(3):
        await log.append([Run("A", index, 1, [f'{{"n":{index}}}'])])
    assert len(appender_threads()) == 1
    await log.close()
    await log.close()  # closing twice does nothing more
    assert appender_threads() == []
    with pytest.raises(StorageError, match="closed"):
        await log.append([Run("A", 3, 1, ["{}"])])
    assert [index for index, _epoch, _data in await log.read("A")] == [0, 1, 2]
    await log.drop(["A"])
    assert await log.rooms() == []


async def test_a_restarted_store_reads_back_what_the_appender_wrote(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'races.db'}"
    store = await RaceStore.connect(url)
    log = SqlInputLog(store)
    await log.append([Run("A", 0, 7, ['{"n":0}', '{"n":1}'])])
    await log.close()
    await store.close()
    again = await RaceStore.connect(url)
    try:
        log = SqlInputLog(again)
        assert await log.rooms() == ["A"] and await log.max_epoch() == 7
        assert await log.read("A") == [(0, 7, '{"n":0}'), (1, 7, '{"n":1}')]
    finally:
        await again.close()


async def test_an_append_waits_for_another_writer_then_says_why_it_failed_and_writes_nothing(
    file_store: RaceStore,
) -> None:
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store, busy_timeout_s=0.2)
    try:
        refused = r"input log of sqlite:///.*database is locked"
        with write_locked(path), pytest.raises(StorageError, match=refused):
            await log.append([Run("A", 0, 1, ['{"lost":0}'])])
        assert stored_rows(path) == []
        await log.append([Run("A", 0, 1, ['{"n":0}'])])  # the same connection goes on
        assert stored_rows(path) == [("A", 0, 1, '{"n":0}')]
    finally:
        await log.close()


async def test_an_append_waits_for_a_writer_that_lets_go_within_the_busy_timeout(
    file_store: RaceStore,
) -> None:
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store, busy_timeout_s=10)
    try:
        with write_locked(path):
            append = asyncio.create_task(log.append([Run("A", 0, 1, ['{"n":0}'])]))
            await asyncio.sleep(0.2)
            assert not append.done()  # waiting for the lock, the event loop free
        await asyncio.wait_for(append, 10)
        assert stored_rows(path) == [("A", 0, 1, '{"n":0}')]
    finally:
        await log.close()


async def test_an_append_of_an_entry_already_logged_is_refused_whole(
    file_store: RaceStore,
) -> None:
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store)
    try:
        await log.append([Run("A", 0, 1, ['{"n":0}'])])
        with pytest.raises(StorageError, match="UNIQUE"):
            await log.append([Run("B", 0, 1, ['{"b":0}']), Run("A", 0, 1, ['{"again":0}'])])
        assert stored_rows(path) == [("A", 0, 1, '{"n":0}')]  # B's row went with it
    finally:
        await log.close()


async def test_the_appender_writes_with_full_sync_in_wal_mode(file_store: RaceStore) -> None:
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store)
    try:
        await log.append([Run("A", 0, 1, ["{}"])])
        appender = log._appender
        assert appender is not None
        conn = appender._open()  # the connection the thread opened is set up the same way
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert conn.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
        finally:
            conn.close()
    finally:
        await log.close()


async def test_an_in_memory_database_keeps_its_log_through_the_store(tmp_path: Path) -> None:
    store = await RaceStore.connect("sqlite:///:memory:")
    log = SqlInputLog(store)
    try:
        await log.append([Run("A", 0, 1, ['{"n":0}'])])
        assert await log.read("A") == [(0, 1, '{"n":0}')]
        assert appender_threads() == []
    finally:
        await log.close()
        await store.close()


async def test_an_append_keeps_every_character_of_its_entries(file_store: RaceStore) -> None:
    """Quotes, escapes, newlines and any character come back byte for byte, and large
    numbers stay numbers."""
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store)
    awkward = [
        '{"name":"Zoë \\"the\\" ace","x":"tab\\there"}',
        "plain text, not JSON at all: ' \" \\ é 🂡 \u2028 ?",
    ]
    try:
        await log.append([Run("Q'1", 2**40, 2**53, awkward), Run("B", 0, 1, ["{}"])])
        assert stored_rows(path) == [
            ("B", 0, 1, "{}"), ("Q'1", 2**40, 2**53, "\n".join(awkward)),
        ]
    finally:
        await log.close()


@pytest.mark.parametrize(
    ("rooms", "statements"),
    [(1, 1), (ROWS_PER_STATEMENT, 1), (ROWS_PER_STATEMENT + 1, 4), (200, 6)],
)
async def test_an_append_runs_one_statement_per_64_rooms(
    file_store: RaceStore, rooms: int, statements: int
) -> None:
    """Each statement costs the appender's thread a wait for the GIL behind a busy
    event loop: a commit of up to 64 rooms is one statement, more are inserted 64 at a
    time between BEGIN and COMMIT."""
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store)
    ran: list[str] = []
    try:
        await log.append([Run("A", 0, 1, ["{}"])])  # opens the appender's connection
        appender = log._appender
        assert appender is not None
        appender.prepare = lambda conn: conn.set_trace_callback(ran.append)
        await log.append([Run(f"R{i:03d}", 0, 1, [f'{{"n":{i}}}']) for i in range(rooms)])
        assert len(ran) == statements, ran
        assert all(text.startswith(("INSERT", "BEGIN", "COMMIT")) for text in ran), ran
        assert stored_rows(path)[1:] == [(f"R{i:03d}", 0, 1, f'{{"n":{i}}}') for i in range(rooms)]
    finally:
        await log.close()
