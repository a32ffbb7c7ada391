"""How every SQLite connection of the store is set up: WAL, full sync, foreign keys,
waiting for locks, and SQLAlchemy (not the driver) in charge of BEGIN."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import await_only

#: How long a SQLite writer waits for another process's lock before failing.
SQLITE_BUSY_TIMEOUT_S: Final = 30.0
#: Pauses between tries of a statement SQLite refused as locked without waiting.
_LOCKED_RETRY_S: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 1.0, 1.0, 2.0)


def _execute_when_unlocked(cursor: Any, statement: str) -> None:
    """Run ``statement``, trying again while SQLite reports the database locked.

    Switching a new file to WAL needs an exclusive lock, and SQLite answers
    "database is locked" at once, without its busy timeout, when waiting could
    deadlock with another connection (two servers opening one new database
    together).  The pause runs on the event loop, through SQLAlchemy's bridge.
    """
    for pause in (*_LOCKED_RETRY_S, None):
        try:
            cursor.execute(statement)
            return
        except sqlite3.OperationalError as exc:
            if pause is None or "locked" not in str(exc):
                raise
        await_only(asyncio.sleep(pause))


def tune_sqlite(engine: AsyncEngine) -> None:
    """WAL with full sync, foreign keys, and SQLAlchemy (not the driver) in charge of BEGIN.

    ``synchronous=FULL``: a commit is on disk before the players are told the
    race is over, so a result survives a power cut, not only a killed server.
    """

    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy emit BEGIN itself, so DDL in migrations is transactional.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in (
            "PRAGMA journal_mode=WAL",
            "PRAGMA foreign_keys=ON",
            "PRAGMA synchronous=FULL",
            f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}",
        ):
            _execute_when_unlocked(cursor, pragma)
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def on_begin(conn: sa.Connection) -> None:
        # Writers take the lock up front: a deferred BEGIN that later upgrades
        # to a write lock fails at once instead of waiting for the busy timeout.
        conn.exec_driver_sql(conn.get_execution_options().get("sqlite_begin", "BEGIN"))
