"""Nothing finished is lost: results are stored before race_over, kept when the database
refuses them, and a database that takes no writes is refused at start-up."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from protocol.wire import messages as m
from server.storage.store import RaceStore
from tests import pgutil
from tests.server.storage.diskfull import ROOMY, fill, limit_log_pages, limit_pages
from tests.server.test_ops import LINE, SEED, get_json
from tests.serverutil import TestClient, move_request, open_room, running_server, spawn_server

#: Races ended at once before the server is killed.
RACES = 10


def database(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'races.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@contextlib.asynccontextmanager
async def server_process(
    db: str, data_dir: Path
) -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    """``tripeaks-server`` on a free port (killed at the end if still running)."""
    env = {
        **os.environ,
        "TRIPEAKS_DATA_DIR": str(data_dir),
        "TRIPEAKS_PORT": "0",
        "TRIPEAKS_DB": db,
        "TRIPEAKS_DEAL_WORKERS": "1",
        "TRIPEAKS_DEALS_AHEAD": "0",
        "TRIPEAKS_CONNECT_BURST": "1000",
    }
    proc, started = await spawn_server(env)
    assert proc.stderr is not None
    try:
        # Keep reading, so a full pipe never stalls the server.
        drain = asyncio.create_task(proc.stderr.read())
        yield proc, int(started["port"])
        drain.cancel()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def race_to_the_last_move(ws_url: str, name: str) -> tuple[TestClient, str]:
    """A one-player practice race played up to its winning move."""
    (host,), _ = await open_room(ws_url, [name], practice_seed=SEED)
    await host.send(m.Start())
    start = await host.expect(m.RaceStart)
    for seq, step in enumerate(LINE[:-1], 1):
        assert (await host.request(move_request(seq, step), m.MoveResult)).accepted
    return host, start.race_id


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_every_result_announced_before_a_sigkill_is_stored_with_its_moves(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    db = database(backend, tmp_path, request)
    async with server_process(db, tmp_path) as (proc, port):
        ws_url = f"ws://127.0.0.1:{port}/ws"
        races = [await race_to_the_last_move(ws_url, f"p{i}") for i in range(RACES)]
        last = move_request(len(LINE), LINE[-1])
        await asyncio.gather(*(host.send(last) for host, _ in races))
        overs = await asyncio.gather(*(host.expect(m.RaceOver) for host, _ in races))
        proc.kill()  # SIGKILL the moment every race_over has arrived
        await proc.wait()
    assert [over.race_id for over in overs] == [race_id for _, race_id in races]
    store = await RaceStore.connect(db)
    try:
        records = [await store.get_race(race_id) for _, race_id in races]
    finally:
        await store.close()
    stored = [record for record in records if record is not None]
    assert len(stored) == RACES, f"only {len(stored)} of {RACES} announced races were stored"
    for record in stored:
        (player,) = record.players
        assert player.status == "finished" and len(player.log) == len(LINE)
    assert all(over.saved for over in overs)


async def health(url: str) -> dict[str, Any]:
    status, body = await get_json(url + "/healthz")
    assert status == 200
    return body


async def test_a_full_database_keeps_the_result_says_so_and_stores_it_once_there_is_room(
    tmp_path: Path,
) -> None:
    """The disk is made full with SQLite's own limit: ``PRAGMA max_page_count`` caps the
    server's database at its size (set on every pooled connection), then raised again."""
    async with running_server(tmp_path) as server:
        limit = {"pages": 1}
        limit_pages(server.store, limit)
        assert server.hub.journal is not None
        limit_log_pages(server.hub.journal.log, limit)  # full for the input log too
        await fill(server.store)
        host, race_id = await race_to_the_last_move(server.ws_url, "ann")
        await host.send(move_request(len(LINE), LINE[-1]))
        over = await host.expect(m.RaceOver)
        assert over.race_id == race_id and over.saved is False
        body = await health(server.url)
        assert body["status"] == "degraded"
        assert body["storage"]["waiting"] == 1 and "full" in body["storage"]["reason"]
        fallback = Path(body["storage"]["fallback_file"])
        assert fallback == tmp_path / "races.db.unsaved.jsonl"
        assert race_id in fallback.read_text()
        status, _ = await get_json(f"{server.url}/api/races/{race_id}")
        assert status == 404
        async with aiohttp.ClientSession() as http, http.get(server.url + "/metrics") as resp:
            metrics = await resp.text()
        assert "tripeaks_storage_errors_total 0.0" not in metrics
        assert "tripeaks_races_waiting 1.0" in metrics
        limit["pages"] = ROOMY
        again = await host.expect(m.RaceOver, timeout=60)  # the note: stored now
        assert again.race_id == race_id and again.saved is True
        assert again.standings == over.standings
        assert (await health(server.url))["status"] == "ok"
        status, stored = await get_json(f"{server.url}/api/races/{race_id}")
        assert status == 200 and len(stored["players"][0]["log"]) == len(LINE)  # type: ignore[index]
        assert not fallback.exists()


async def test_results_left_in_the_fallback_file_are_stored_at_the_next_start(
    tmp_path: Path,
) -> None:
    """The disk is made full with ``PRAGMA max_page_count`` (see above); the server stops
    while still full, and the next one, with room, stores what the file holds."""
    async with running_server(tmp_path) as server:
        limit_pages(server.store, {"pages": 1})
        assert server.hub.journal is not None
        limit_log_pages(server.hub.journal.log, {"pages": 1})  # the disk is full for it too
        await fill(server.store)
        host, race_id = await race_to_the_last_move(server.ws_url, "ann")
        await host.send(move_request(len(LINE), LINE[-1]))
        assert (await host.expect(m.RaceOver)).saved is False
        db = server.db_url
    fallback = tmp_path / "races.db.unsaved.jsonl"
    line = fallback.read_bytes()
    with fallback.open("ab") as file:
        file.write(line + line[: len(line) // 2])  # a second copy and a torn line
    async with running_server(tmp_path, db=db) as again:
        status, stored = await get_json(f"{again.url}/api/races/{race_id}")
        assert status == 200 and stored["race_id"] == race_id
        body = await health(again.url)
        assert body["status"] == "ok", body
    assert not fallback.exists()
    assert (tmp_path / "races.db.unsaved.jsonl.unreadable").exists()


# ---- a database that takes no writes -------------------------------------------------
async def refused_start(db: str, data_dir: Path) -> dict[str, Any]:
    """Run ``tripeaks-server`` on ``db``; it must exit 2 with a JSON ``server_failed`` line."""
    exe = Path(sys.executable).with_name("tripeaks-server")
    env = {
        **os.environ, "TRIPEAKS_PORT": "0", "TRIPEAKS_DEALS_AHEAD": "0", "TRIPEAKS_DB": db,
        "TRIPEAKS_DATA_DIR": str(data_dir),
    }
    proc = await asyncio.create_subprocess_exec(
        str(exe), stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL, env=env
    )
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    events = [json.loads(line) for line in err.decode().splitlines()]
    assert proc.returncode == 2, events
    assert "server_started" not in [e["event"] for e in events]
    (failed,) = [e for e in events if e["event"] == "server_failed"]
    assert "cannot be written" in failed["reason"]
    return failed


async def migrated_sqlite(tmp_path: Path) -> Path:
    path = tmp_path / "ro" / "races.db"
    store = await RaceStore.connect(f"sqlite:///{path}")
    await store.close()
    return path


async def test_a_sqlite_database_opened_read_only_is_refused_at_start_up(tmp_path: Path) -> None:
    path = await migrated_sqlite(tmp_path)
    await refused_start(f"sqlite:///file:{path}?mode=ro&uri=true", tmp_path)


@pytest.mark.parametrize("with_directory", [False, True], ids=["file", "file_and_directory"])
async def test_an_immutable_sqlite_file_is_refused_at_start_up(
    tmp_path: Path, with_directory: bool
) -> None:
    """``chattr +i`` stops root's writes too, unlike file permissions."""
    path = await migrated_sqlite(tmp_path)
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    targets = [str(path), str(path.parent)] if with_directory else [str(path)]
    made = subprocess.run(["chattr", "+i", *targets], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot set the immutable flag here: {made.stderr.decode().strip()}")
    try:
        await refused_start(f"sqlite:///{path}", tmp_path)
    finally:
        subprocess.run(["chattr", "-i", *targets], check=True)


async def test_a_read_only_sqlite_file_in_a_read_only_directory_is_refused_at_start_up(
    tmp_path: Path,
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes through file permissions (the mode=ro and chattr tests cover it)")
    path = await migrated_sqlite(tmp_path)
    path.chmod(0o444)
    path.parent.chmod(0o555)
    try:
        await refused_start(f"sqlite:///{path}", tmp_path)
    finally:
        path.parent.chmod(0o755)
        path.chmod(0o644)


async def test_a_read_only_postgresql_database_is_refused_at_start_up(
    postgres_url: str, postgres_cluster: Any, tmp_path: Path
) -> None:
    store = await RaceStore.connect(postgres_url)
    await store.close()
    name = postgres_url.rsplit("/", 1)[1]
    postgres_cluster.psql(
        "postgres", f"ALTER DATABASE {name} SET default_transaction_read_only = on"
    )
    failed = await refused_start(postgres_url, tmp_path)
    assert "read-only" in failed["reason"]


async def test_a_postgresql_outage_at_the_end_of_a_race_keeps_the_result_until_it_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIPEAKS_DATA_DIR", str(tmp_path))  # where the fallback file goes
    # A cluster of its own: stopping the shared one would disturb other tests.
    cluster = pgutil.start_cluster_for_test()
    try:
        async with running_server(db=cluster.create_database()) as server:
            host, race_id = await race_to_the_last_move(server.ws_url, "ann")
            await asyncio.to_thread(cluster.pause)
            await host.send(move_request(len(LINE), LINE[-1]))
            over = await host.expect(m.RaceOver)
            assert over.race_id == race_id and over.saved is False
            body = await health(server.url)
            assert body["status"] == "degraded" and body["storage"]["waiting"] == 1
            assert Path(body["storage"]["fallback_file"]).parent == tmp_path
            await asyncio.to_thread(cluster.resume)
            again = await host.expect(m.RaceOver, timeout=60)
            assert again.race_id == race_id and again.saved is True
            record = await server.store.get_race(race_id)
            assert record is not None and len(record.players[0].log) == len(LINE)
            assert (await health(server.url))["status"] == "ok"
    finally:
        cluster.stop()
