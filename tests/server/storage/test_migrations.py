"""Schema upgrades through Alembic, on both back ends: revisions dropped in a directory,
one transaction for all, newer databases refused, and databases from before Alembic."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from server.race.records import RaceRecord
from server.storage import inputlog, migrate
from server.storage import schema as storage_schema
from server.storage.store import RaceStore, SchemaTooNewError, StorageError, driver_url
from tests.data.make_pre_alembic_db import records as fixture_records
from tests.server.storage.test_store import count_rows, make_record, raw_sql, table_exists
from tests.serverutil import running_server

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"


@pytest.fixture
def extra(tmp_path: Path) -> Iterator[Path]:
    """A directory for revisions after the shipped ones."""
    directory = tmp_path / "more_revisions"
    directory.mkdir()
    yield directory


def write_revision(directory: Path, revision: str, down: str, *statements: str) -> None:
    """A revision file that runs ``statements`` as SQL."""
    body = "\n".join(f"    op.execute({statement!r})" for statement in statements)
    (directory / f"{revision}_test.py").write_text(
        textwrap.dedent(
            f"""\
            from alembic import op

            revision = {revision!r}
            down_revision = {down!r}
            branch_labels = None
            depends_on = None


            def upgrade() -> None:
            """
        )
        + body
        + "\n"
    )


async def test_migrating_twice_changes_nothing(db_url: str) -> None:
    store = await RaceStore.connect(db_url)
    try:
        assert store.upgraded == (None, migrate.head())
        await store.save_race(make_record("m"))
        assert await store.migrate() == (migrate.head(), migrate.head())
        assert await store.revision() == migrate.head()
        assert await store.get_race("m") == make_record("m")
    finally:
        await store.close()
    again = await RaceStore.connect(db_url)
    try:
        assert again.upgraded == (migrate.head(), migrate.head())
    finally:
        await again.close()


async def test_a_revision_dropped_in_a_directory_is_applied_once_in_order(
    db_url: str, extra: Path
) -> None:
    head = migrate.head()
    store = await RaceStore.connect(db_url)
    await store.save_race(make_record("old"))
    await store.close()
    write_revision(extra, "t001", head, "CREATE TABLE notes (race_id TEXT, body TEXT)")
    write_revision(extra, "t002", "t001", "INSERT INTO notes VALUES ('x', 'from t002')")
    upgraded = await RaceStore.connect(db_url, revisions=[extra])
    try:
        assert upgraded.upgraded == (head, "t002")
        assert await upgraded.revision() == "t002"
        await upgraded.migrate([extra])  # nothing pending: the note is not inserted twice
        assert await upgraded.get_race("old") == make_record("old")
    finally:
        await upgraded.close()
    assert count_rows(db_url, "notes") == 1


async def test_a_failing_revision_rolls_back_every_pending_one(db_url: str, extra: Path) -> None:
    head = migrate.head()
    store = await RaceStore.connect(db_url)
    await store.save_race(make_record("safe"))
    await store.close()
    write_revision(extra, "t001", head, "CREATE TABLE half (x INTEGER)")
    write_revision(extra, "t002", "t001", "THIS IS NOT SQL")
    failed = r"upgrading the schema .* failed.*stays at the revision"
    with pytest.raises(StorageError, match=failed):
        await RaceStore.connect(db_url, revisions=[extra])
    store = await RaceStore.connect(db_url)
    try:
        assert await store.revision() == head
        assert await store.get_race("safe") == make_record("safe")
    finally:
        await store.close()
    assert not table_exists(db_url, "half")


async def test_a_database_from_newer_code_is_refused(db_url: str, extra: Path) -> None:
    write_revision(extra, "future1", migrate.head(), "CREATE TABLE future (x INTEGER)")
    store = await RaceStore.connect(db_url, revisions=[extra])
    await store.save_race(make_record("future"))
    await store.close()
    with pytest.raises(SchemaTooNewError, match=r"revision 'future1'.*newer code"):
        await RaceStore.connect(db_url)


async def test_two_revisions_after_the_same_one_are_refused(tmp_path: Path, extra: Path) -> None:
    write_revision(extra, "left", migrate.head(), "CREATE TABLE l (x INTEGER)")
    write_revision(extra, "right", migrate.head(), "CREATE TABLE r (x INTEGER)")
    with pytest.raises(StorageError, match="2 heads"):
        await RaceStore.connect(f"sqlite:///{tmp_path / 'x.db'}", revisions=[extra])


async def test_servers_starting_at_once_on_a_new_database_migrate_it_once(db_url: str) -> None:
    stores = await asyncio.gather(*(RaceStore.connect(db_url) for _ in range(4)))
    try:
        assert [await s.revision() for s in stores] == [migrate.head()] * 4
        assert sorted(s.upgraded[0] or "" for s in stores) == ["", *[migrate.head()] * 3]
    finally:
        for store in stores:
            await store.close()
    assert count_rows(db_url, "alembic_version") == 1
    assert count_rows(db_url, "schema_version") == 1


async def test_the_declared_tables_match_the_migrated_schema(db_url: str) -> None:
    store = await RaceStore.connect(db_url)

    declared = [*storage_schema.metadata.tables.values(), *inputlog.metadata.tables.values()]

    def columns(sync_conn: sa.Connection) -> dict[str, set[str]]:
        inspector = sa.inspect(sync_conn)
        return {
            table.name: {col["name"] for col in inspector.get_columns(table.name)}
            for table in declared
        }

    try:
        async with store._connection() as conn:
            found = await conn.run_sync(columns)
    finally:
        await store.close()
    for table in declared:
        assert found[table.name] == {column.name for column in table.columns}, table.name


# ---- databases made before Alembic ---------------------------------------------------


async def test_the_sqlite_file_of_the_store_before_alembic_upgrades_with_every_race(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    shutil.copy(DATA / "pre_alembic.db", path)
    url = f"sqlite:///{path}"
    assert raw_sql(url, "SELECT max(version) FROM schema_version") == "1"
    store = await RaceStore.connect(url)
    try:
        assert store.upgraded == (migrate.LEGACY_REVISION, migrate.head())
        expected = fixture_records()
        for record in expected:
            assert await store.get_race(record.race_id) == record
        assert len(await store.list_races(limit=100)) == len(expected)
        await store.save_race(make_record("after-the-upgrade"))
    finally:
        await store.close()
    assert count_rows(url, "race_moves") == sum(
        len(player.log) for record in fixture_records() for player in record.players
    ) + len(make_record("after-the-upgrade").players) * 6


async def test_a_database_made_by_the_old_sql_upgrades_in_place_on_both_back_ends(
    db_url: str,
) -> None:
    kept = [make_record(f"old{i}", started_at_ms=i, log_length=i * 7) for i in range(4)]
    await make_legacy_database(db_url, kept)
    store = await RaceStore.connect(db_url)
    try:
        assert store.upgraded == (migrate.LEGACY_REVISION, migrate.head())
        assert await store.list_races(limit=10) == kept[::-1]
    finally:
        await store.close()
    # A server from before Alembic reads max(version) and refuses anything above 1.
    assert raw_sql(db_url, "SELECT max(version) FROM schema_version") == "1000"


async def test_a_database_from_before_alembic_at_an_unknown_version_is_refused(
    db_url: str,
) -> None:
    await make_legacy_database(db_url, [], version=2)
    with pytest.raises(SchemaTooNewError, match="schema version 2 from before Alembic"):
        await RaceStore.connect(db_url)


async def make_legacy_database(db_url: str, kept: list[RaceRecord], version: int = 1) -> None:
    """What the store from before Alembic left: its SQL file, ``schema_version``, races."""
    script = (DATA / "pre_alembic_schema.sql").read_text()
    statements = [line.split("--")[0] for line in script.splitlines()]
    sql = [part.strip() for part in "\n".join(statements).split(";") if part.strip()]
    engine = create_async_engine(driver_url(db_url))
    try:
        async with engine.begin() as conn:
            for statement in sql:
                await conn.execute(sa.text(statement))
            await conn.execute(
                sa.text(
                    "CREATE TABLE schema_version (version INTEGER PRIMARY KEY,"
                    " name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)"
                )
            )
            await conn.execute(
                sa.text(f"INSERT INTO schema_version VALUES ({version}, 'initial', 0)")
            )
            for record in kept:
                await insert_legacy_rows(conn, record)
    finally:
        await engine.dispose()


async def insert_legacy_rows(conn: AsyncConnection, record: RaceRecord) -> None:
    """The record's rows, only the columns the old tables had."""
    race_row, player_rows, move_rows = storage_schema.rows_of(record)
    legacy = legacy_columns()
    for table, rows in (("races", [race_row]), ("race_players", player_rows),
                        ("race_moves", move_rows)):
        if rows:
            cut = [{k: v for k, v in row.items() if k in legacy[table]} for row in rows]
            await conn.execute(storage_schema.metadata.tables[table].insert(), cut)


def legacy_columns() -> dict[str, set[str]]:
    """The columns of each table in the SQL file from before Alembic."""
    script = (DATA / "pre_alembic_schema.sql").read_text()
    found: dict[str, set[str]] = {}
    table = None
    for line in script.splitlines():
        words = line.split()
        if line.startswith("CREATE TABLE"):
            table = words[2]
            found[table] = set()
        elif table and words and words[0].islower() and line.startswith("    "):
            found[table].add(words[0])
        elif line.startswith(")"):
            table = None
    return found


# ---- the operator's side ---------------------------------------------------------------


def db_command(*args: str) -> subprocess.CompletedProcess[str]:
    """``tripeaks-server db ...`` as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "server", "db", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_the_db_command_reports_then_upgrades_a_database_from_before_alembic(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    shutil.copy(DATA / "pre_alembic.db", path)
    url = f"sqlite:///{path}"
    current = db_command("current", "--db", url)
    assert current.returncode == 0, current.stderr
    assert "revision none (empty, or from before Alembic: upgrade pending" in current.stdout
    assert raw_sql(url, "SELECT max(version) FROM schema_version") == "1"  # only looked
    upgraded = db_command("upgrade", "--db", url)
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"upgraded from revision 0001 to {migrate.head()}" in upgraded.stdout
    assert f"already at revision {migrate.head()}" in db_command("upgrade", "--db", url).stdout
    assert "(up to date)" in db_command("current", "--db", url).stdout
    assert count_rows(url, "races") == len(fixture_records())


def test_the_db_command_refuses_a_bad_url_with_status_2() -> None:
    done = db_command("upgrade", "--db", "mysql://nobody@localhost/x")
    assert done.returncode == 2
    assert "unsupported database 'mysql'" in done.stderr


async def test_the_server_upgrades_the_database_when_it_starts_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tripeaks.server")
    path = tmp_path / "old.db"
    shutil.copy(DATA / "pre_alembic.db", path)
    async with running_server(tmp_path, db=f"sqlite:///{path}") as server:
        assert await server.store.revision() == migrate.head()
        assert len(await server.store.list_races(limit=100)) == len(fixture_records())
    lines = [r for r in caplog.records if r.getMessage() == "schema_upgraded"]
    assert [getattr(r, "fields", {}) for r in lines] == [
        {"database": f"sqlite:///{path}", "before": "0001", "after": migrate.head()}
    ]


async def test_going_back_before_the_tails_folds_what_they_hold_into_room_inputs(
    db_url: str,
) -> None:
    """Revision 0007's downgrade keeps every entry: the tails' rows join ``room_inputs``
    (a row already there, copied by a fold, once)."""
    store = await RaceStore.connect(db_url)
    await store.close()
    for query in (
        "INSERT INTO room_inputs VALUES ('A', 0, 1, 'a0')",
        "INSERT INTO room_inputs_tail_a VALUES ('A', 0, 1, 'a0')",
        "INSERT INTO room_inputs_tail_a VALUES ('A', 1, 1, 'a1')",
        "INSERT INTO room_inputs_tail_b VALUES ('B', 0, 2, 'b0')",
    ):
        raw_sql(db_url, f"{query} RETURNING 1")
    engine = create_async_engine(driver_url(db_url))
    try:
        async with engine.begin() as conn:
            await conn.run_sync(
                lambda sync: command.downgrade(migrate.config(sync), "0006")
            )
    finally:
        await engine.dispose()
    assert not table_exists(db_url, "room_inputs_tail_a")
    assert not table_exists(db_url, "room_inputs_tail_b")
    assert raw_sql(
        db_url, "SELECT string_agg(room_code || idx || input_json, ' ' ORDER BY room_code, idx)"
        " FROM room_inputs" if not db_url.startswith("sqlite") else
        "SELECT group_concat(room_code || idx || input_json, ' ')"
        " FROM (SELECT * FROM room_inputs ORDER BY room_code, idx)"
    ) == "A0a0 A1a1 B0b0"
