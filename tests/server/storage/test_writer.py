"""The result writer and its fallback file: group commits, kept results, retries, replay."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from server.race.records import RaceRecord
from server.storage.spool import Spool, spool_path
from server.storage.store import RaceStore
from server.storage.writer import ResultWriter
from tests.server.storage.diskfull import ROOMY, fill, limit_pages
from tests.server.storage.test_store import make_record


class Events:
    """What the writer reported, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.changed = asyncio.Event()

    def stored(self, race_ids: Sequence[str], *, late: bool) -> None:
        self._add("late" if late else "stored", tuple(race_ids))

    def not_stored(self, race_ids: Sequence[str], error: str, *, first: bool) -> None:
        self._add("kept" if first else "retry_failed", tuple(race_ids))

    def lost(self, record: RaceRecord, error: str) -> None:
        self._add("lost", record.race_id)

    def _add(self, kind: str, what: Any) -> None:
        self.seen.append((kind, what))
        self.changed.set()

    def of(self, kind: str) -> list[Any]:
        return [what for seen, what in self.seen if seen == kind]

    async def until(self, kind: str, count: int = 1, timeout: float = 20.0) -> None:
        async def wait() -> None:
            while len(self.of(kind)) < count:
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(wait(), timeout)


@pytest.fixture
async def full_store(tmp_path: Path) -> Any:
    store = await RaceStore.connect(f"sqlite:///{tmp_path / 'races.db'}")
    limit = {"pages": 1}
    limit_pages(store, limit)
    await fill(store)
    try:
        yield store, limit
    finally:
        await store.close()


def test_the_fallback_file_sits_next_to_a_sqlite_database(tmp_path: Path) -> None:
    async def path() -> Path:
        store = await RaceStore.connect(f"sqlite:///{tmp_path / 'races.db'}")
        await store.close()
        return spool_path(store)

    assert asyncio.run(path()) == tmp_path / "races.db.unsaved.jsonl"


def test_the_fallback_file_keeps_other_lines_dedupes_and_sets_torn_lines_aside(
    tmp_path: Path,
) -> None:
    spool = Spool(tmp_path / "unsaved.jsonl")
    assert spool.load() == ([], 0)
    spool.append([make_record("a"), make_record("b")])
    with spool.path.open("ab") as file:
        file.write(b'{"race_id": "c", "room_co')  # a crash in the middle of an append
    spool.append([make_record("a"), make_record("d")])  # a second copy, then one more
    records, unreadable = spool.load()
    assert [r.race_id for r in records] == ["a", "b", "d"] and unreadable == 1
    assert records[0] == make_record("a")
    aside = spool.path.with_name("unsaved.jsonl.unreadable").read_bytes()
    assert aside.startswith(b'{"race_id": "c"')
    assert spool.load() == (records, 0)  # set aside once, not again
    assert spool.forget(["a"]) == 2
    assert [r.race_id for r in spool.load()[0]] == ["b", "d"]
    assert spool.forget(["b", "d"]) == 0
    assert not spool.path.exists()


async def test_races_submitted_together_are_stored_in_one_transaction(tmp_path: Path) -> None:
    store = await RaceStore.connect(f"sqlite:///{tmp_path / 'races.db'}")
    commits = []
    event.listen(store._engine.sync_engine, "commit", lambda conn: commits.append(1))
    events = Events()
    writer = ResultWriter(store, Spool(tmp_path / "spool.jsonl"), events)
    try:
        for i in range(10):
            writer.submit(make_record(f"r{i}"))
        writer.start()
        await events.until("stored")
        assert events.of("stored") == [tuple(f"r{i}" for i in range(10))]
        assert len(commits) == 1
        for i in range(10):
            assert await store.get_race(f"r{i}") == make_record(f"r{i}")
    finally:
        await writer.close(5)
        await store.close()


async def test_a_refused_race_is_kept_in_the_file_and_stored_once_there_is_room(
    full_store: Any, tmp_path: Path
) -> None:
    store, limit = full_store
    spool = Spool(tmp_path / "spool.jsonl")
    events = Events()
    writer = ResultWriter(store, spool, events, retry_s=0.05, max_retry_s=0.2)
    writer.start()
    try:
        writer.submit(make_record("big", log_length=200))
        await events.until("kept")
        assert events.of("kept") == [("big",)]
        assert writer.waiting == 1 and writer.problem and "full" in writer.problem
        assert [r.race_id for r in spool.load()[0]] == ["big"]
        await events.until("retry_failed")  # retried with backoff while still full
        limit["pages"] = ROOMY
        await events.until("late")
        assert events.of("late") == [("big",)]
        assert await store.get_race("big") == make_record("big", log_length=200)
        assert writer.waiting == 0 and writer.problem is None
        assert not spool.path.exists()
    finally:
        await writer.close(5)


async def test_past_the_memory_bound_refused_races_wait_in_the_file_only(
    full_store: Any, tmp_path: Path
) -> None:
    store, limit = full_store
    spool = Spool(tmp_path / "spool.jsonl")
    events = Events()
    writer = ResultWriter(store, spool, events, max_waiting=1, retry_s=0.05, max_retry_s=0.1)
    writer.start()
    try:
        for name in ("one", "two", "three"):
            writer.submit(make_record(name, log_length=200))
            await asyncio.sleep(0)
        await events.until("kept", 1)
        await writer.drain(10)
        assert writer.waiting == 3 and len(writer._waiting) == 1
        limit["pages"] = ROOMY
        for _ in range(200):
            if writer.waiting == 0:
                break
            await asyncio.sleep(0.05)
        for name in ("one", "two", "three"):
            assert await store.get_race(name) is not None
        assert not spool.path.exists() and not events.of("lost")
    finally:
        await writer.close(5)


async def test_a_refused_race_no_file_can_take_is_reported_lost_at_close(
    full_store: Any,
) -> None:
    store, _ = full_store
    events = Events()
    writer = ResultWriter(store, None, events, retry_s=10)
    writer.start()
    writer.submit(make_record("nowhere", log_length=200))
    await events.until("kept")
    assert writer.waiting == 1
    await writer.close(5)
    assert events.of("lost") == ["nowhere"]


async def test_a_replay_stores_each_race_once_even_if_already_stored(tmp_path: Path) -> None:
    store = await RaceStore.connect(f"sqlite:///{tmp_path / 'races.db'}")
    spool = Spool(tmp_path / "spool.jsonl")
    try:
        await store.save_race(make_record("already"))
        spool.append([make_record("already"), make_record("new"), make_record("new")])
        events = Events()
        writer = ResultWriter(store, spool, events)
        assert await writer.replay() == (2, 0)
        assert await store.get_race("new") == make_record("new")
        assert await store.get_race("already") == make_record("already")
        assert events.of("late") == [("already", "new")]
        assert not spool.path.exists() and writer.waiting == 0
    finally:
        await store.close()
