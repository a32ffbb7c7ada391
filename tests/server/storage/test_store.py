"""RaceStore against both back ends: a SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import subprocess
from pathlib import Path

import pytest

from server.race.records import MoveLogEntry, PlayerResult, RaceRecord, RecordError
from server.storage import migrate
from server.storage.store import (
    DatabaseUnavailableError,
    DatabaseURLError,
    DuplicateRaceError,
    RaceStore,
    StorageError,
    default_db_url,
    driver_url,
)
from tests import pgutil

CARDS = [f"{rank}{suit}" for suit in "CDHS" for rank in "A23456789TJQK"]


def make_record(
    race_id: str = "00ff00ff00ff00ff",
    *,
    started_at_ms: int = 1_790_000_000_000,
    names: tuple[str, ...] = ("Ann", "Bob"),
    log_length: int = 5,
) -> RaceRecord:
    """A full record: several players, every action kind, rejected moves, None fields."""
    players = []
    for rank, name in enumerate(names, start=1):
        log = (
            *(
                MoveLogEntry(
                    seq=i + 1,
                    at_ms=3_000_000_000 + 250 * i,  # past 2**31: needs BIGINT
                    action=("play", "draw", "undo", "play")[i % 4],
                    position=(i % 28) if i % 4 in (0, 3) else None,
                    accepted=i % 4 != 3,
                    reason=2 if i % 4 == 3 else None,
                    card=CARDS[i % 52] if i % 4 in (0, 1) else None,
                )
                for i in range(log_length)
            ),
            MoveLogEntry(0, 3_100_000_000, "timeout", None, True, None, None),
        )
        players.append(
            PlayerResult(
                player_id=f"p{rank}-{race_id}",
                name=name,
                is_bot=rank % 2 == 0,
                rank=rank,
                status="finished" if rank == 1 else "stuck",
                finish_ms=61_234 if rank == 1 else None,
                cleared=28 if rank == 1 else 11,
                moves=40 + rank,
                draws=12,
                undos=rank - 1,
                penalty_ms=5_000 * (rank - 1),
                log=log,
            )
        )
    return RaceRecord(
        race_id=race_id,
        room_code="K7QX2M",
        room_name="Friday night ♠ race",
        options={"max_players": 4, "undo": {"policy": "penalty", "ms": 5000}, "public": True},
        practice=False,
        seed="a seed with spaces & ünïcode",
        commitment="ab" * 32,
        wrap=True,
        empty_waste=False,
        candidate=3,
        peaks=tuple(CARDS[:28]),
        waste=CARDS[28],
        stock=tuple(CARDS[29:]),
        solution=(27, "draw", 18, 19),
        par=42,
        started_at_ms=started_at_ms,
        ended_at_ms=started_at_ms + 90_000,
        players=tuple(players),
    )


async def test_a_full_record_with_logs_reads_back_identical(store: RaceStore) -> None:
    record = make_record(log_length=40)
    await store.save_race(record)
    assert await store.get_race(record.race_id) == record


async def test_an_empty_waste_race_without_par_reads_back_identical(store: RaceStore) -> None:
    record = dataclasses.replace(
        make_record(log_length=0),
        empty_waste=True,
        waste=None,
        stock=tuple(CARDS[28:]),
        par=None,
        practice=True,
        options={},
    )
    await store.save_race(record)
    assert await store.get_race(record.race_id) == record


async def test_a_missing_race_id_gives_none(store: RaceStore) -> None:
    await store.save_race(make_record("aaaa"))
    assert await store.get_race("bbbb") is None


async def test_races_list_newest_first_filtered_by_player_and_limited(store: RaceStore) -> None:
    for i in range(6):
        names = ("Ann", "Bob") if i % 2 == 0 else ("Cy",)
        await store.save_race(make_record(f"race{i}", started_at_ms=1_000 + i, names=names))
    everyone = await store.list_races()
    assert [r.race_id for r in everyone] == [f"race{i}" for i in (5, 4, 3, 2, 1, 0)]
    bob = await store.list_races(player="Bob", limit=2)
    assert [r.race_id for r in bob] == ["race4", "race2"]
    assert [r.race_id for r in await store.list_races(player="Cy", limit=20)] == [
        "race5",
        "race3",
        "race1",
    ]
    assert await store.list_races(player="nobody") == []
    assert await store.list_races(player="bob") == []  # names match exactly


async def test_listing_returns_full_records_or_summaries_without_logs(store: RaceStore) -> None:
    record = make_record()
    await store.save_race(record)
    assert await store.list_races() == [record]
    (summary,) = await store.list_races(with_logs=False)
    assert all(player.log == () for player in summary.players)
    assert summary.summary_json() == record.summary_json()


@pytest.mark.parametrize("limit", [0, -1, 1001, True, "5"])
async def test_a_bad_list_limit_is_refused(store: RaceStore, limit: object) -> None:
    with pytest.raises(ValueError, match="limit"):
        await store.list_races(limit=limit)  # type: ignore[arg-type]


async def test_a_duplicate_race_id_is_refused_and_the_first_race_kept(store: RaceStore) -> None:
    first = make_record("same")
    await store.save_race(first)
    with pytest.raises(DuplicateRaceError, match="same"):
        await store.save_race(make_record("same", names=("Mallory",)))
    assert await store.get_race("same") == first
    assert await store.list_races(player="Mallory") == []


async def test_saving_the_same_record_twice_changes_nothing(store: RaceStore) -> None:
    record = dataclasses.replace(make_record("again"), options={"pair": (1, 2)})
    await store.save_race(record)
    await store.save_race(record)
    (stored,) = await store.list_races()
    assert stored.options == {"pair": [1, 2]}  # JSON has no tuples


async def test_a_race_stored_with_its_par_is_the_same_as_its_record_without_par(
    store: RaceStore,
) -> None:
    """A room rebuilt from its input log hands its finished races to storage again, without
    the par (a replay never solves): the stored race, par and all, stays as it is."""
    record = make_record("replayed")
    assert record.solution
    with_par = dataclasses.replace(record, par=17, solution=tuple(reversed(record.solution)))
    await store.save_race(with_par)
    await store.save_race(dataclasses.replace(record, par=None))  # the dealer's line
    assert await store.get_race("replayed") == with_par
    with pytest.raises(DuplicateRaceError):  # a different par is another race
        await store.save_race(dataclasses.replace(record, par=16))
    with pytest.raises(DuplicateRaceError):  # and so is anything else that differs
        await store.save_race(dataclasses.replace(record, par=None, room_name="other"))


async def test_a_record_that_breaks_midway_stores_nothing(store: RaceStore) -> None:
    record = make_record("twins")
    # Two players with one id violate the key after the race row went in.
    broken = dataclasses.replace(record, players=(record.players[0], record.players[0]))
    with pytest.raises(StorageError):
        await store.save_race(broken)
    assert await store.get_race("twins") is None
    await store.save_race(record)
    assert await store.get_race("twins") == record


async def test_options_that_are_not_json_are_refused_before_writing(store: RaceStore) -> None:
    record = dataclasses.replace(make_record("odd"), options={"when": object()})
    with pytest.raises(StorageError, match="options"):
        await store.save_race(record)
    assert await store.get_race("odd") is None


async def test_races_survive_closing_and_reopening_the_store(db_url: str) -> None:
    first = await RaceStore.connect(db_url)
    await first.save_race(make_record("keep"))
    await first.close()
    second = await RaceStore.connect(db_url)
    try:
        assert await second.get_race("keep") == make_record("keep")
        assert await second.revision() == migrate.head()
    finally:
        await second.close()


async def test_concurrent_saves_all_land(store: RaceStore) -> None:
    records = [make_record(f"c{i:02}", started_at_ms=i) for i in range(24)]
    await asyncio.gather(*(store.save_race(r) for r in records))
    listed = await store.list_races(limit=100)
    assert [r.race_id for r in listed] == [r.race_id for r in reversed(records)]


async def test_two_stores_on_one_database_save_concurrently(db_url: str) -> None:
    # Two engines stand in for two server processes sharing the database.
    left, right = await asyncio.gather(RaceStore.connect(db_url), RaceStore.connect(db_url))
    try:
        await asyncio.gather(
            *(left.save_race(make_record(f"l{i}", started_at_ms=i)) for i in range(10)),
            *(right.save_race(make_record(f"r{i}", started_at_ms=i)) for i in range(10)),
        )
        assert len(await left.list_races(limit=50)) == 20
    finally:
        await left.close()
        await right.close()


async def test_servers_opening_one_new_sqlite_file_together_all_get_it(tmp_path: Path) -> None:
    # Switching a new file to WAL can be refused as "locked" at once, without the busy
    # timeout: before the store retried, about 1 pair in 70 failed here.
    async def pair(n: int) -> None:
        url = f"sqlite:///{tmp_path / f'races-{n}.db'}"
        left, right = await asyncio.gather(RaceStore.connect(url), RaceStore.connect(url))
        await left.close()
        await right.close()

    for n in range(150):
        await pair(n)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "empty database URL"),
        ("   ", "empty database URL"),
        ("not a url", "malformed database URL"),
        ("mysql://root:hunter2@localhost/db", "unsupported database 'mysql'"),
        ("postgresql+psycopg2://u@localhost/db", "unsupported driver 'psycopg2'"),
        ("sqlite+pysqlite:///x.db", "unsupported driver 'pysqlite'"),
        ("sqlite://", "needs a file path"),
        ("postgresql:///db", "needs a host"),
    ],
)
async def test_a_bad_url_gives_a_clear_error(url: str, message: str) -> None:
    with pytest.raises(DatabaseURLError, match=message) as caught:
        await RaceStore.connect(url)
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "driver"),
    [
        ("sqlite:///x.db", "sqlite+aiosqlite"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite"),
        ("postgresql://u@h/db", "postgresql+asyncpg"),
        ("postgres://u@h/db", "postgresql+asyncpg"),
        ("postgresql+asyncpg://u@h/db", "postgresql+asyncpg"),
    ],
)
def test_user_facing_urls_map_to_the_async_drivers(url: str, driver: str) -> None:
    assert driver_url(url).drivername == driver


async def test_an_unreachable_postgresql_server_gives_a_clear_error() -> None:
    # Port 1 on loopback: nothing listens there, so the connection is refused at once.
    with pytest.raises(StorageError, match="cannot open database") as caught:
        await RaceStore.connect("postgresql://someone:hunter2@127.0.0.1:1/races")
    assert "hunter2" not in str(caught.value)


async def test_a_sqlite_path_that_is_a_directory_gives_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="cannot open database"):
        await RaceStore.connect(f"sqlite:///{tmp_path}")


async def test_sqlite_files_use_write_ahead_logging(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    store = await RaceStore.connect(f"sqlite:///{path}")
    await store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_sqlite_enforces_foreign_keys(tmp_path: Path) -> None:
    store = await RaceStore.connect(f"sqlite:///{tmp_path / 'fk.db'}")
    try:
        async with store._transaction(exclusive=True) as conn:
            result = await conn.exec_driver_sql("PRAGMA foreign_keys")
            assert result.scalar() == 1
    finally:
        await store.close()


def test_the_default_database_lives_in_the_data_dir_which_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIPEAKS_DATA_DIR", str(tmp_path / "explicit" / "dir"))
    assert default_db_url() == f"sqlite:///{tmp_path / 'explicit' / 'dir' / 'tripeaks.db'}"
    assert (tmp_path / "explicit" / "dir").is_dir()
    monkeypatch.delenv("TRIPEAKS_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_url() == f"sqlite:///{tmp_path / 'xdg' / 'tripeaks' / 'tripeaks.db'}"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    expected = tmp_path / "home" / ".local" / "share" / "tripeaks" / "tripeaks.db"
    assert default_db_url() == f"sqlite:///{expected}"
    assert expected.parent.is_dir()


async def test_a_store_opened_without_a_url_uses_the_default_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIPEAKS_DATA_DIR", str(tmp_path / "data"))
    store = await RaceStore.connect()
    try:
        await store.save_race(make_record("default"))
    finally:
        await store.close()
    assert (tmp_path / "data" / "tripeaks.db").is_file()


def test_a_record_survives_its_json_form() -> None:
    record = make_record(log_length=9)
    assert RaceRecord.from_json(record.to_json()) == record


def test_a_summary_leaves_out_the_deal_and_the_logs() -> None:
    summary = make_record().summary_json()
    assert "peaks" not in summary and "solution" not in summary
    assert all("log" not in player for player in summary["players"])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda doc: doc.pop("seed"), "missing field 'seed'"),
        (lambda doc: doc.update(candidate="3"), "'candidate' must be an integer"),
        (lambda doc: doc.update(candidate=True), "'candidate' must be an integer"),
        (lambda doc: doc.update(wrap=1), "'wrap' must be true or false"),
        (lambda doc: doc.update(peaks="AH"), "'peaks' must be a list of strings"),
        (lambda doc: doc.update(solution=[1, "jump"]), "bad move 'jump'"),
        (lambda doc: doc.update(options=[]), "'options' must be an object"),
        (lambda doc: doc.update(players={}), "'players' must be a list"),
        (lambda doc: doc["players"][0].update(status="winning"), "unknown status"),
        (lambda doc: doc["players"][0]["log"][0].update(action="fly"), "unknown action"),
        (lambda doc: doc["players"][0].update(log="x"), "'log' must be a list"),
    ],
)
def test_a_malformed_race_document_is_refused_with_the_field_named(
    mutate: object, message: str
) -> None:
    doc = make_record().to_json()
    mutate(doc)  # type: ignore[operator]
    with pytest.raises(RecordError, match=message):
        RaceRecord.from_json(doc)


def test_a_race_document_must_be_an_object() -> None:
    with pytest.raises(RecordError, match="JSON object"):
        RaceRecord.from_json(["not", "a", "race"])


def count_rows(db_url: str, table: str) -> int:
    return int(raw_sql(db_url, f"SELECT count(*) FROM {table}"))


def table_exists(db_url: str, table: str) -> bool:
    if db_url.startswith("sqlite"):
        query = f"SELECT count(*) FROM sqlite_master WHERE name = '{table}'"
    else:
        query = f"SELECT count(*) FROM information_schema.tables WHERE table_name = '{table}'"
    return raw_sql(db_url, query) != "0"


def raw_sql(db_url: str, query: str) -> str:
    """One scalar through a client outside RaceStore: sqlite3, or psql for PostgreSQL."""
    if db_url.startswith("sqlite"):
        with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
            return str(conn.execute(query).fetchone()[0])
    bindir = pgutil.find_bindir()
    assert bindir is not None
    out = subprocess.run(
        [str(bindir / "psql"), "-X", "-A", "-t", "-d", db_url, "-c", query],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


async def test_a_sqlite_file_under_a_plain_file_gives_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(StorageError, match="cannot open database"):
        await RaceStore.connect(f"sqlite:///{tmp_path / 'file' / 'races.db'}")


async def test_a_file_that_is_not_a_database_is_refused_and_left_untouched(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my precious notes\n")
    with pytest.raises(StorageError, match="cannot open database"):
        await RaceStore.connect(f"sqlite:///{path}")
    assert path.read_text() == "my precious notes\n"


async def test_a_missing_postgresql_database_gives_a_clear_error(
    postgres_cluster: pgutil.PostgresCluster,
) -> None:
    with pytest.raises(StorageError, match=r"cannot open database postgresql://.*no_such_db"):
        await RaceStore.connect(postgres_cluster.url("no_such_db"))


async def test_a_save_during_a_database_restart_waits_and_lands_but_not_forever() -> None:
    # A cluster of its own: stopping the shared one would disturb other tests.
    cluster = pgutil.start_cluster_for_test()
    try:
        store = await RaceStore.connect(cluster.create_database())
        try:
            await store.save_race(make_record("before"))
            store.save_attempts, store.retry_delay_s = 8, 0.2
            await asyncio.to_thread(cluster.pause)
            saving = asyncio.create_task(store.save_race(make_record("during")))
            await asyncio.sleep(0.5)
            assert not saving.done()
            await asyncio.to_thread(cluster.resume)
            await saving
            assert await store.get_race("during") == make_record("during")
            assert await store.get_race("before") == make_record("before")
            # A database that stays down: a clear error once the retries run out.
            store.save_attempts, store.retry_delay_s = 3, 0.05
            await asyncio.to_thread(cluster.pause)
            with pytest.raises(DatabaseUnavailableError, match="cannot open database"):
                await store.save_race(make_record("lost"))
        finally:
            await store.close()
    finally:
        cluster.stop()
