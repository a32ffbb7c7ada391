"""A full disk without root: SQLite's own ``PRAGMA max_page_count`` caps a store's
database at its current size, on every connection the store checks out (and on the
input log's own connection, :func:`limit_log_pages`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event

from server.storage.inputlog import SqlInputLog
from server.storage.store import RaceStore
from tests.server.storage.test_store import make_record

#: A page count no test database reaches: "the disk has room again".
ROOMY = 1 << 30


def limit_pages(store: RaceStore, limit: dict[str, int]) -> None:
    """Cap the database at its current size (SQLite's own ``PRAGMA max_page_count``)
    while ``limit["pages"]`` is 1; set it to :data:`ROOMY` to give the space back."""

    @event.listens_for(store._engine.sync_engine, "checkout")
    def cap(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA max_page_count={limit['pages']}")
        cursor.close()


def limit_log_pages(log: object, limit: dict[str, int]) -> None:
    """:func:`limit_pages` for the connections of a SQL input log on a SQLite file: a full
    disk refuses its appends and its folds too (the fold's connection is capped when it
    opens: call this before the log's first append)."""
    assert isinstance(log, SqlInputLog)
    appender = log._appender
    assert appender is not None
    appender.prepare = lambda conn: conn.execute(f"PRAGMA max_page_count={limit['pages']}")
    # The fold's connection too: emptying a tail frees pages for the store, which a fold
    # that cannot grow room_inputs never gets to.
    appender.prepare_fold = appender.prepare


async def fill(store: RaceStore) -> None:
    """Write small races until the capped database is full."""
    for i in range(500):
        try:
            await store.save_race(make_record(f"fill{i}", names=("F",), log_length=1))
        except Exception:
            return
    raise AssertionError("the database never filled up")


