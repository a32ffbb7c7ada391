"""The SQL input log on a SQLite file: appends on the appender's own thread and
connection, durable when they return, clear when refused, readable after a restart."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from server.recovery.log import Run
from server.storage.inputlog import SqlInputLog
from server.storage.sqlite_inputlog import (
    FOLD_NICE,
    FOLD_ROWS,
    ROWS_PER_STATEMENT,
    TAILS,
    SqliteAppender,
)
from server.storage.store import RaceStore, StorageError

LOG_TABLES = ("room_inputs", *TAILS)


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


def stored_rows(path: Path, tables: Sequence[str] = LOG_TABLES) -> list[tuple[str, int, int, str]]:
    """The rows of ``tables`` (the input log's three by default; a row in two of them once)
    as a fresh connection of another process reads them."""
    conn = sqlite3.connect(path)
    try:
        query = " UNION ".join(
            f"SELECT room_code, idx, epoch, input_json FROM {table}" for table in tables
        )
        return [tuple(row) for row in conn.execute(f"{query} ORDER BY room_code, idx")]
    finally:
        conn.close()


def left_in(path: Path, table: str, rows: Sequence[tuple[str, int, int, str]]) -> None:
    """``rows`` written into ``table`` by another process, as a crash would leave them."""
    db = sqlite3.connect(path)
    with db:
        db.executemany(
            f"INSERT INTO {table} (room_code, idx, epoch, input_json) VALUES (?, ?, ?, ?)", rows
        )
    db.close()


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


@pytest.mark.parametrize("data", [['{"n":"a\nb"}'], ['{"n":0}', '{"n":"a\nb"}']])
async def test_an_entry_holding_a_newline_is_refused_and_nothing_of_its_append_written(
    file_store: RaceStore, data: list[str]
) -> None:
    """A row holds a run's entries one per line: an entry with a newline in it would read
    back as two, so the whole append is refused, awaited or submitted, a run of one entry
    as much as a longer one."""
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store)
    try:
        with pytest.raises(StorageError, match="may not hold a newline"):
            await log.append([Run("B", 0, 1, ['{"b":0}']), Run("A", 0, 1, data)])
        refused: asyncio.Future[BaseException | None] = (
            asyncio.get_running_loop().create_future()
        )
        assert log.submit([Run("A", 0, 1, data)], refused.set_result)
        assert isinstance(await refused, StorageError)
        assert stored_rows(path) == []
        await log.append([Run("A", 0, 1, ['{"n":0}'])])  # the log goes on
        assert await log.read("A") == [(0, 1, '{"n":0}')]
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


async def eventually(check: Callable[[], bool], seconds: float = 20.0) -> None:
    """Wait until ``check()`` holds (the appender's thread works on its own time)."""
    for _ in range(int(seconds / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    assert check()


def appender_of(log: SqlInputLog) -> SqliteAppender:
    appender = log._appender
    assert appender is not None
    return appender


async def test_appends_go_to_a_tail_that_a_fold_moves_into_room_inputs(
    file_store: RaceStore,
) -> None:
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store, fold_every_s=3600)
    try:
        await log.append([Run("B", 0, 1, ['{"b":0}'])])
        assert stored_rows(path, [TAILS[0]]) == [("B", 0, 1, '{"b":0}')]
        assert stored_rows(path, ["room_inputs", TAILS[1]]) == []
        appender = appender_of(log)
        appender.fold_every_s = 0
        appender._wake.set()  # the folding thread reads it again, and folds from now on
        await log.append([Run("A", 0, 1, ['{"a":0}', '{"a":1}']), Run("B", 1, 1, ['{"b":1}'])])
        await eventually(lambda: stored_rows(path, TAILS) == [] and appender._fold is None)
        assert appender.folds >= 1
        folded = [("A", 0, 1, '{"a":0}\n{"a":1}'), ("B", 0, 1, '{"b":0}'), ("B", 1, 1, '{"b":1}')]
        assert stored_rows(path, ["room_inputs"]) == folded
        folds = appender.folds
        await log.append([Run("A", 2, 1, ['{"a":2}'])])  # to the tail now taking appends
        await eventually(lambda: appender.folds == folds + 1)
        await eventually(lambda: stored_rows(path, TAILS) == [])
        assert stored_rows(path, ["room_inputs"]) == sorted([*folded, ("A", 2, 1, '{"a":2}')])
        assert await log.read("A") == [(0, 1, '{"a":0}'), (1, 1, '{"a":1}'), (2, 1, '{"a":2}')]
        assert appender.fold_problem is None
    finally:
        await log.close()


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own priority is Linux's")
async def test_the_fold_runs_at_the_lowest_priority_and_the_appends_at_the_loops(
    file_store: RaceStore,
) -> None:
    """The folding thread is niced (it takes the event loop's idle moments); the appends'
    thread, which every answer waits for, and the loop's are not."""
    log = SqlInputLog(file_store, fold_every_s=0)
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    try:
        await log.append([Run("A", 0, 1, ['{"a":0}'])])
        appender = appender_of(log)
        await eventually(lambda: appender.folder_id is not None and appender.folds >= 1)
        assert appender.folder_id is not None
        assert os.getpriority(os.PRIO_PROCESS, appender.folder_id) == FOLD_NICE
        appends = appender._thread
        assert appends is not None and appends.native_id is not None
        assert os.getpriority(os.PRIO_PROCESS, appends.native_id) == own
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == own
        assert await log.read("A") == [(0, 1, '{"a":0}')]
    finally:
        await log.close()


async def test_rows_a_crash_left_in_a_tail_and_in_room_inputs_are_read_once_then_folded(
    file_store: RaceStore,
) -> None:
    """A crash during a fold leaves rows copied into ``room_inputs`` and still in their
    tail, and rows in both tails; each entry is read once, and the next appender folds
    them all."""
    path = file_store.sqlite_path
    assert path is not None
    left_in(path, "room_inputs", [("A", 0, 1, "a0\na1")])
    left_in(path, TAILS[1], [("A", 0, 1, "a0\na1"), ("A", 2, 1, "a2")])
    left_in(path, TAILS[0], [("B", 0, 2, "b0"), ("A", 3, 2, "a3")])
    log = SqlInputLog(file_store, fold_every_s=0)
    try:
        expected = [(0, 1, "a0"), (1, 1, "a1"), (2, 1, "a2"), (3, 2, "a3")]
        assert await log.read("A") == expected
        assert await log.read("B") == [(0, 2, "b0")]
        assert await log.read_all() == {"A": expected, "B": [(0, 2, "b0")]}
        assert await log.rooms() == ["A", "B"]
        assert await log.max_epoch() == 2
        await log.append([Run("B", 1, 3, ["b1"])])  # into the first tail, behind the crash's
        appender = appender_of(log)
        await eventually(lambda: appender.folds == 2)  # the second tail first, then the first
        assert stored_rows(path, TAILS) == []
        assert stored_rows(path, ["room_inputs"]) == [
            ("A", 0, 1, "a0\na1"), ("A", 2, 1, "a2"), ("A", 3, 2, "a3"),
            ("B", 0, 2, "b0"), ("B", 1, 3, "b1"),
        ]
        assert await log.read("A") == expected
        assert await log.read_all() == {"A": expected, "B": [(0, 2, "b0"), (1, 3, "b1")]}
        assert await log.max_epoch() == 3
        await log.drop(["A"])
        assert await log.rooms() == ["B"]
    finally:
        await log.close()


async def test_every_room_s_log_is_read_at_once_as_each_is_read_alone(
    file_store: RaceStore,
) -> None:
    """A restart reads every room's log in one query: the same entries, each once and in
    order, as reading the rooms one by one, wherever their rows stand."""
    path = file_store.sqlite_path
    assert path is not None
    rows = [(f"R{n % 7}", n // 7 * 2, 1, f"e{n}a\ne{n}b") for n in range(70)]
    left_in(path, "room_inputs", rows[:40])
    left_in(path, TAILS[1], rows[30:55])  # ten of them copied already, as a crash leaves
    left_in(path, TAILS[0], rows[55:])
    log = SqlInputLog(file_store, fold_every_s=3600)
    try:
        every = await log.read_all()
        assert list(every) == await log.rooms() == [f"R{n}" for n in range(7)]
        for room, entries in every.items():
            assert entries == await log.read(room)
            assert [index for index, _e, _d in entries] == list(range(20))
    finally:
        await log.close()


async def test_a_drop_forgets_a_room_in_every_table(file_store: RaceStore) -> None:
    path = file_store.sqlite_path
    assert path is not None
    db = sqlite3.connect(path)
    with db:
        for table in ("room_inputs", *TAILS):
            db.execute(
                f"INSERT INTO {table} (room_code, idx, epoch, input_json) VALUES (?, ?, 1, ?)",
                ("A", len(table), table),
            )
        db.execute(f"INSERT INTO {TAILS[0]} VALUES ('B', 0, 1, 'b')")
    db.close()
    log = SqlInputLog(file_store)
    await log.drop(["A", "unknown"])
    assert stored_rows(path) == [("B", 0, 1, "b")]


async def test_a_fold_copies_a_few_hundred_rows_at_a_time_and_appends_do_not_wait_for_it(
    file_store: RaceStore,
) -> None:
    """A fold sorts the tail on its own connection, then copies :data:`FOLD_ROWS` rows per
    statement in key order, on a thread of its own: an append made while a copy is stopped
    in the middle is committed."""
    path = file_store.sqlite_path
    assert path is not None
    rows = [(f"R{n % 97:02d}", n // 97, 1, f"x{n}") for n in range(2 * FOLD_ROWS + 10)]
    left_in(path, TAILS[1], rows)  # a tail a crash left: folded as soon as the log starts
    ran: list[str] = []
    copying = threading.Event()
    go_on = threading.Event()

    def trace(statement: str) -> None:
        ran.append(statement.split(" (")[0])
        if statement.startswith("INSERT OR IGNORE") and not copying.is_set():
            copying.set()
            go_on.wait(10)  # the first copy waits until the append below is committed

    log = SqlInputLog(file_store, fold_every_s=3600)
    appender = appender_of(log)
    appender.prepare_fold = lambda conn: conn.set_trace_callback(trace)
    try:
        await log.append([Run("first", 0, 1, ["f"])])
        await eventually(copying.is_set)
        await asyncio.wait_for(log.append([Run("second", 0, 1, ["s"])]), 5)
        assert appender.folds == 0 and not go_on.is_set()
        go_on.set()
        await eventually(lambda: appender.folds == 1)
        copies = [text for text in ran if text.startswith("INSERT OR IGNORE")]
        assert len(copies) == 3, ran
        assert ran[-2:] == [f"DELETE FROM {TAILS[1]}", "DROP TABLE temp.fold_rows"]
        assert stored_rows(path, ["room_inputs"]) == sorted(rows)
        assert stored_rows(path, [TAILS[0]]) == [("first", 0, 1, "f"), ("second", 0, 1, "s")]
    finally:
        go_on.set()
        await log.close()


def owed_fold(
    path: Path, log: SqlInputLog, trace: Callable[[str], object]
) -> tuple[list[tuple[str, int, int, str]], threading.Event, threading.Event]:
    """A tail a crash left with six statements' worth of rows, folded as soon as the log
    starts; the fold's connection traced with ``trace`` and stopped before it sorts until
    the second event is set (the first says it is there)."""
    rows = [(f"R{n % 97:02d}", n // 97, 1, f"x{n}") for n in range(6 * FOLD_ROWS)]
    left_in(path, TAILS[1], rows)
    sorting, sort = threading.Event(), threading.Event()

    def traced(statement: str) -> None:
        if statement.startswith("CREATE TEMP TABLE") and not sorting.is_set():
            sorting.set()
            sort.wait(10)
        trace(statement)

    appender_of(log).prepare_fold = lambda conn: conn.set_trace_callback(traced)
    return rows, sorting, sort


def many_rooms(count: int) -> list[Run]:
    """One entry for each of ``count`` rooms: ``count`` rows appended."""
    return [Run(f"new{n:04d}", 0, 1, ["n"]) for n in range(count)]


async def test_a_fold_copies_twice_what_is_appended_while_it_runs_after_one_commit(
    file_store: RaceStore,
) -> None:
    """One statement per commit would fall behind appends of more than FOLD_ROWS rows a
    commit: the fold is owed two rows for each row appended since it began, and copies
    what it owes after a commit, a statement of FOLD_ROWS rows at a time."""
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store, fold_every_s=3600)
    appender = appender_of(log)
    copies: list[str] = []
    rows, sorting, sort = owed_fold(
        path, log, lambda text: copies.append(text) if text.startswith("INSERT OR") else None
    )
    try:
        await log.append([Run("first", 0, 1, ["f"])])
        await eventually(sorting.is_set)  # the fold began: what comes now is owed to it
        await log.append(many_rooms(3 * FOLD_ROWS))  # owed: 6 * FOLD_ROWS, the whole tail
        sort.set()
        await eventually(lambda: appender.folds == 1)
        assert len(copies) == 6
        assert appender.copy_rounds == 1
        assert stored_rows(path, ["room_inputs"]) == sorted(rows)
    finally:
        sort.set()
        await log.close()


async def test_a_round_of_copies_stops_for_an_append_that_waits(file_store: RaceStore) -> None:
    """Each copy holds the database's write lock: the fold's round stops after the copy
    during which an append came, and the next round follows a commit."""
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store, fold_every_s=3600)
    appender = appender_of(log)
    copies: list[int] = []  # the round each copy was taken in
    second_copy, third_copy, go_on, late = (threading.Event() for _ in range(4))

    def fold_trace(statement: str) -> None:
        if statement.startswith("INSERT OR"):
            copies.append(appender.copy_rounds)
            if len(copies) == 2:
                second_copy.set()
                go_on.wait(10)  # until the late append below is under way
            if len(copies) == 3:
                third_copy.set()

    def prepare(conn: sqlite3.Connection) -> None:
        if late.is_set() and not go_on.is_set():
            go_on.set()  # the second copy runs while this append is under way
            third_copy.wait(10)  # and the append goes on once the third copy began

    _, sorting, sort = owed_fold(path, log, fold_trace)
    appender.prepare = prepare
    try:
        await log.append([Run("first", 0, 1, ["f"])])
        await eventually(sorting.is_set)
        await log.append(many_rooms(3 * FOLD_ROWS))  # owed: the whole tail in one round
        sort.set()
        await eventually(second_copy.is_set)
        late.set()
        await asyncio.wait_for(log.append([Run("late", 0, 1, ["l"])]), 10)
        await eventually(lambda: appender.folds == 1)
        assert len(copies) == 6
        assert copies[:3] == [1, 1, 2]  # the round stopped after the second copy
        assert ("late", 0, 1, "l") in stored_rows(path, [TAILS[0]])
    finally:
        go_on.set()
        sort.set()
        await log.close()


async def test_a_room_dropped_while_a_fold_holds_its_sorted_rows_is_not_copied_back(
    file_store: RaceStore,
) -> None:
    """Without care the fold would copy a closed room's rows back into ``room_inputs``
    after its drop, and a restart would resume the room from a log missing its end."""
    path = file_store.sqlite_path
    assert path is not None
    rows = [(room, n, 1, f"{room}{n}") for room in ("A", "B") for n in range(FOLD_ROWS + 50)]
    left_in(path, TAILS[1], rows)  # a tail a crash left: folded as soon as the log starts
    copying = threading.Event()
    go_on = threading.Event()

    def trace(statement: str) -> None:
        if statement.startswith("INSERT OR IGNORE") and not copying.is_set():
            copying.set()
            go_on.wait(10)  # the first copy (A's rows) waits until the drop below began

    log = SqlInputLog(file_store, fold_every_s=3600)
    appender = appender_of(log)
    appender.prepare_fold = lambda conn: conn.set_trace_callback(trace)
    try:
        await log.append([Run("C", 0, 1, ["c"])])
        await eventually(copying.is_set)
        drop = asyncio.ensure_future(log.drop(["B"]))
        await asyncio.sleep(0.2)
        assert not drop.done()  # it waits for the step under way
        go_on.set()
        await asyncio.wait_for(drop, 10)
        await eventually(lambda: appender.folds == 1)
        assert stored_rows(path, ["room_inputs"]) == [r for r in rows if r[0] == "A"]
        assert await log.read("B") == []
        assert await log.rooms() == ["A", "C"]
    finally:
        go_on.set()
        await log.close()


async def test_a_fold_whose_connection_is_lost_part_way_sorts_again_and_loses_nothing(
    file_store: RaceStore,
) -> None:
    path = file_store.sqlite_path
    assert path is not None
    rows = [(f"R{n % 31:02d}", n // 31, 1, f"x{n}") for n in range(3 * FOLD_ROWS)]
    left_in(path, TAILS[1], rows)
    ran: list[str] = []
    failed: list[str] = []

    def prepare(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(ran.append)

        def interrupt() -> int:  # the second copy of the first connection breaks part way
            copies = sum(text.startswith("INSERT OR IGNORE") for text in ran)
            if copies == 2 and not failed:
                failed.append(ran[-1])
                return 1
            return 0

        conn.set_progress_handler(interrupt, 100)

    log = SqlInputLog(file_store, fold_every_s=3600)
    appender = appender_of(log)
    appender.prepare_fold = prepare
    try:
        await log.append([Run("first", 0, 1, ["f"])])
        await eventually(lambda: appender.folds == 1)
        assert failed and failed[0].startswith("INSERT OR IGNORE")
        assert sum(text.startswith("CREATE TEMP TABLE") for text in ran) == 2  # sorted again
        assert stored_rows(path, ["room_inputs"]) == sorted(rows)
        assert stored_rows(path, [TAILS[1]]) == []
        assert appender.fold_problem is None
    finally:
        await log.close()


async def test_a_fold_that_meets_another_writer_tries_again_once_it_lets_go(
    file_store: RaceStore,
) -> None:
    """The fold never waits for a lock (an append may be waiting for its thread): refused,
    it tries again a moment later, and appends go on meanwhile."""
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store, fold_every_s=2)
    try:
        await log.append([Run("A", 0, 1, ["a"])])
        appender = appender_of(log)
        with write_locked(path):  # before the fold is due, two seconds after the log began
            await eventually(lambda: appender.folds_busy >= 2)
            assert stored_rows(path, [TAILS[0]]) == [("A", 0, 1, "a")]
        await eventually(lambda: appender.folds == 1)
        await log.append([Run("A", 1, 1, ["b"])])
        assert stored_rows(path, ["room_inputs"]) == [("A", 0, 1, "a")]
        assert stored_rows(path, [TAILS[1]]) == [("A", 1, 1, "b")]
        assert appender.fold_problem is None
    finally:
        await log.close()


async def test_a_fold_that_fails_is_said_and_tried_again_while_appends_go_on(
    file_store: RaceStore,
) -> None:
    path = file_store.sqlite_path
    assert path is not None
    log = SqlInputLog(file_store, fold_every_s=0)
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("ALTER TABLE room_inputs RENAME TO room_inputs_away")
        await log.append([Run("A", 0, 1, ["a"])])
        appender = appender_of(log)
        await eventually(lambda: appender.fold_problem is not None)
        assert "room_inputs" in (appender.fold_problem or "")
        await log.append([Run("A", 1, 1, ["b"])])  # appends go on into the tail
        db.execute("ALTER TABLE room_inputs_away RENAME TO room_inputs")
        await eventually(lambda: appender.folds >= 1 and appender.fold_problem is None)
        await eventually(lambda: stored_rows(path, TAILS) == [])
        assert stored_rows(path, ["room_inputs"]) == [("A", 0, 1, "a"), ("A", 1, 1, "b")]
    finally:
        db.close()
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
