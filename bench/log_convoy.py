"""The input log's commit time behind a busy interpreter: one statement per 64 rows
against one statement per row.

``python -m bench.log_convoy`` appends commits of 5, 40 and 120 rows through the
server's :class:`~server.storage.sqlite_inputlog.SqliteAppender` into a fresh
SQLite file, with and without a thread that keeps the GIL busy (as a loaded event
loop does), once with the appender's own insert (a statement per 64 rows) and once with a
statement per row (``executemany`` in a transaction, the insert before 2026-12-02).
Each statement gives the GIL up and takes it back, and taking it back behind a busy
thread waits up to the switch interval.  Prints the median and the 95th percentile
of each, and the ratio of the medians.  Timed on wall clocks on a shared machine:
read ratios, not times.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import sqlalchemy as sa

import server.storage.sqlite_inputlog as sqlite_inputlog
from bench.load_variants import insert_per_row as per_row
from server.storage import inputlog
from server.storage.sqlite_inputlog import Row, SqliteAppender

_ENTRY = '{"t":"moved","player_id":"p6fd7ea84205a","seq":5,"action":"play","position":12}'


async def commits(path: Path, rows: int, count: int) -> list[float]:
    """Seconds each of ``count`` appends of ``rows`` rows took."""
    appender = SqliteAppender(path, "bench")
    took = []
    try:
        for index in range(count):
            batch = [(f"R{room:04d}", index, 1, _ENTRY) for room in range(rows)]
            started = time.perf_counter()
            await appender.append(batch)
            took.append(time.perf_counter() - started)
            await asyncio.sleep(0.002)
    finally:
        await appender.close()
    return took


def fresh_log(where: Path, name: str) -> Path:
    """A new SQLite file in WAL mode holding the server's ``room_inputs`` table."""
    path = where / f"{name}.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        inputlog.metadata.create_all(engine)
    finally:
        engine.dispose()
    return path


def measure(insert: Callable[[sqlite3.Connection, Sequence[Row], str], None], rows: int,
            busy: bool, count: int, where: Path, name: str) -> list[float]:
    sqlite_inputlog._insert = insert  # type: ignore[assignment]
    spinning = [busy]

    def spin() -> None:
        while spinning[0]:
            sum(range(100))

    thread = threading.Thread(target=spin, daemon=True)
    if busy:
        thread.start()
    try:
        return asyncio.run(commits(fresh_log(where, name), rows, count))
    finally:
        spinning[0] = False
        if busy:
            thread.join()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--commits", type=int, default=30, help="appends per case")
    args = parser.parse_args(argv)
    one = sqlite_inputlog._insert
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        for busy in (False, True):
            for rows in (5, 40, 120):
                medians = {}
                for label, insert in (("per row", per_row), ("per 64 rows", one)):
                    took = sorted(measure(insert, rows, busy, args.commits, where,
                                          f"{label}-{rows}-{busy}".replace(" ", "_")))
                    medians[label] = statistics.median(took)
                    p95 = took[min(len(took) - 1, int(0.95 * len(took)))]
                    print(f"{'busy' if busy else 'idle'} interpreter, {rows:3d} rows, "
                          f"{label:11s}: median {medians[label] * 1000:7.2f} ms, "
                          f"p95 {p95 * 1000:7.2f} ms", flush=True)
                ratio = medians["per row"] / medians["per 64 rows"]
                print(f"  per row / per 64 rows: {ratio:.1f}x", flush=True)
    sqlite_inputlog._insert = one
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
