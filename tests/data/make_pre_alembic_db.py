"""Writes tests/data/pre_alembic.db: a database made by the store from before Alembic.

It was run once at commit a712edc (the last one whose store applied the SQL files of
server/storage/migrations/), so the file is what a server of that time left on disk:
schema_version 1 and three races (tests/server/storage/test_migrations.py reads them back).
The store it needs is gone; the script stays to say how the file was made.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import sys
from pathlib import Path

from server.race.records import RaceRecord
from server.storage.store import RaceStore
from tests.server.storage.test_store import make_record

OUT = Path(__file__).with_name("pre_alembic.db")


def records() -> list[RaceRecord]:
    """The three races the fixture holds (the upgrade test rebuilds the same ones)."""
    first = make_record("0000000000000001", started_at_ms=1_790_000_000_000, log_length=40)
    second = make_record("0000000000000002", started_at_ms=1_790_000_100_000, names=("Ann",))
    third = dataclasses.replace(
        make_record("0000000000000003", started_at_ms=1_790_000_200_000, log_length=0),
        practice=True,
        par=None,
    )
    return [first, second, third]


async def main() -> None:
    OUT.unlink(missing_ok=True)
    store = await RaceStore.connect(f"sqlite:///{OUT}")
    try:
        for record in records():
            await store.save_race(record)
    finally:
        await store.close()
    with sqlite3.connect(OUT) as conn:  # fold the write-ahead log into the file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
