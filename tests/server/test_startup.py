"""A start-up that fails part way closes what it had opened: the database's files, the
input log's thread, the deal workers and the hub's tasks.  A server embedded in a
longer-lived process (the tests, a supervisor) would otherwise keep them for good."""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
from pathlib import Path
from typing import Any

import psutil
import pytest
from aiohttp import web

from server.app import create_app
from server.config import from_env
from server.storage.sqlite_inputlog import TAILS
from server.storage.store import RaceStore
from tests.serverutil import TEST_DEFAULTS, open_room, start_server


def open_files_under(folder: Path) -> list[str]:
    """This process's open file descriptors on files in ``folder``."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed between the listing and the look
        if target.startswith(str(folder)):
            found.append(target)
    return found


def children() -> set[int]:
    """This process's children but multiprocessing's resource tracker, which the first
    pool of workers starts and which stays for the life of the process."""
    found = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if "resource_tracker" not in " ".join(child.cmdline()):
                found.add(child.pid)
        except psutil.NoSuchProcess:
            continue
    return found


async def failed_start(db_dir: Path, **overrides: Any) -> BaseException:
    """Start a server with its own store and deal workers on ``db_dir/races.db``, which
    must fail; then clean up as ``web.run_app`` does.  The error raised is returned."""
    db = f"sqlite:///{db_dir / 'races.db'}"
    settings = from_env({}, **{**TEST_DEFAULTS, "db": db, **overrides})
    runner = web.AppRunner(create_app(settings), handle_signals=False, access_log=None)
    with pytest.raises(Exception) as failed:
        await runner.setup()
    await runner.cleanup()
    return failed.value


async def left_over(db_dir: Path, before: set[int]) -> None:
    """Nothing of the failed server is left: no file open on its database, no task, no
    deal worker (they are killed, so they go within a second or two).

    A connection a cancelled task was opening, or the failed read's, can be left in a
    cycle with its traceback (frame, cursor, connection): unreachable, but its file stays
    open until the collector runs, and on a loaded machine the check came first (1 run in
    9).  One collection first, so that only what is still reachable counts."""
    gc.collect()
    assert open_files_under(db_dir) == []
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert tasks == []
    for _ in range(50):
        if children() <= before:
            break
        await asyncio.sleep(0.1)
    assert children() <= before, "deal workers outlived the failed start"


async def test_a_start_up_that_fails_before_the_hub_closes_the_database(
    tmp_path: Path,
) -> None:
    store = await RaceStore.connect(f"sqlite:///{tmp_path / 'races.db'}")
    await store.close()
    db = sqlite3.connect(tmp_path / "races.db")
    with db:
        db.execute("DROP TABLE room_inputs")  # the input log cannot be read
    db.close()
    before = children()
    error = await failed_start(tmp_path)
    assert "room_inputs" in str(error)
    await left_over(tmp_path, before)


async def test_a_start_up_that_fails_resuming_rooms_stops_the_hub_and_its_workers(
    tmp_path: Path,
) -> None:
    """The hub has started (its timers, its deal workers filling the pool) when a room of
    the input log cannot be read."""
    first = tmp_path / "first"
    server = await start_server(first)
    try:
        clients, _state = await open_room(server.ws_url, ["ann"])  # logged: resumed next
        for client in clients:
            await client.close()
    finally:
        await server.stop()
    db = sqlite3.connect(first / "races.db")
    with db:
        tables = ("room_inputs", *TAILS)  # the log's rows may be in any of them
        assert sum(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables) > 0
        # The rooms and the epoch are still found; a room's entries are not.
        for table in tables:
            db.execute(f"ALTER TABLE {table} RENAME COLUMN input_json TO gone")
    db.close()
    before = children()
    error = await failed_start(first, deals_ahead=2)  # the pool fills at start
    assert "input_json" in str(error)
    await left_over(first, before)
