"""The backup and restore commands of deploy/README.md, run for real on both back ends."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from server.storage import migrate
from server.storage.store import RaceStore
from tests import pgutil
from tests.deploy.test_postgres import server_process
from tests.server.storage.test_store import make_record

README = Path(__file__).resolve().parents[2] / "deploy" / "README.md"


def test_the_readme_shows_the_backup_commands_tested_here() -> None:
    text = README.read_text()
    assert "sqlite3 /var/lib/tripeaks/tripeaks.db \".backup '" in text
    assert "pg_dump --format=custom" in text
    assert "pg_restore --no-owner --dbname=" in text


async def test_a_sqlite_backup_taken_while_the_store_is_open_restores_every_race(
    tmp_path: Path,
) -> None:
    sqlite3_cli = shutil.which("sqlite3")
    if sqlite3_cli is None:
        pytest.skip("the sqlite3 command-line shell is not installed (apt-get install sqlite3)")
    live = tmp_path / "tripeaks.db"
    store = await RaceStore.connect(f"sqlite:///{live}")
    try:
        records = [make_record(f"b{i}", started_at_ms=i) for i in range(3)]
        for record in records:
            await store.save_race(record)
        # The store stays open, as a running server's would; recent writes sit in the WAL.
        copy = tmp_path / "backup.db"
        subprocess.run([sqlite3_cli, str(live), f".backup '{copy}'"], check=True)
        check = subprocess.run(
            [sqlite3_cli, str(copy), "PRAGMA integrity_check"],
            check=True,
            capture_output=True,
            text=True,
        )
        assert check.stdout.strip() == "ok"
    finally:
        await store.close()
    restored = await RaceStore.connect(f"sqlite:///{copy}")
    try:
        assert await restored.list_races() == list(reversed(records))
    finally:
        await restored.close()


async def test_a_pg_dump_restores_into_an_empty_database_with_every_race(
    postgres_cluster: pgutil.PostgresCluster,
    tmp_path: Path,
) -> None:
    source = postgres_cluster.create_database("dump_src")
    store = await RaceStore.connect(source)
    records = [make_record(f"p{i}", started_at_ms=i) for i in range(3)]
    try:
        for record in records:
            await store.save_race(record)
    finally:
        await store.close()
    bindir = pgutil.find_bindir()
    assert bindir is not None
    dump = tmp_path / "tripeaks.dump"
    subprocess.run(
        [str(bindir / "pg_dump"), "--format=custom", f"--file={dump}", source],
        check=True,
        capture_output=True,
    )
    target = postgres_cluster.create_database("dump_dst")
    subprocess.run(
        [str(bindir / "pg_restore"), "--no-owner", f"--dbname={target}", str(dump)],
        check=True,
        capture_output=True,
    )
    restored = await RaceStore.connect(target)
    try:
        assert await restored.revision() == migrate.head()
        assert await restored.list_races() == list(reversed(records))
    finally:
        await restored.close()


async def test_with_no_database_setting_the_server_keeps_sqlite_in_the_data_dir(
    tmp_path: Path,
) -> None:
    data = tmp_path / "state" / "tripeaks"
    async with server_process([], env={"TRIPEAKS_DATA_DIR": str(data), "TRIPEAKS_DB": ""}) as srv:
        ready = [entry for entry in srv.log if entry.get("event") == "storage_ready"]
        assert ready and str(data / "tripeaks.db") in str(ready[0]["db"])
    assert (data / "tripeaks.db").is_file()
