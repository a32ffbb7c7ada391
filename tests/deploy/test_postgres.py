"""The real ``tripeaks-server`` on a real PostgreSQL: race, read back, restart, read again.

The server runs as its own process, exactly as a deployment starts it
(``tripeaks-server --db postgresql://...``, or ``TRIPEAKS_DB`` as compose
sets it), and stops on SIGTERM.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from client_cli.bot import BotSettings, run_bots
from protocol.wire import messages as m
from server.storage import migrate
from tests.pgutil import PostgresCluster

SERVER = Path(sys.executable).parent / "tripeaks-server"


@dataclass
class ServerProcess:
    process: asyncio.subprocess.Process
    port: int
    log: list[dict[str, object]]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"


@asynccontextmanager
async def server_process(
    args: list[str], env: Mapping[str, str] | None = None
) -> AsyncIterator[ServerProcess]:
    """Start tripeaks-server on an ephemeral port; SIGTERM it at the end and expect exit 0."""
    full_env = {**os.environ, "TRIPEAKS_LOG_LEVEL": "INFO", **(env or {})}
    process = await asyncio.create_subprocess_exec(
        str(SERVER),
        "--host=127.0.0.1",
        "--port=0",
        "--deal-workers=1",
        "--deals-ahead=0",
        # Bots at full speed outrun the default move budget; moves are not the subject here.
        "--player-rate=1000",
        "--player-burst=1000",
        *args,
        stderr=subprocess.PIPE,
        env=full_env,
    )
    assert process.stderr is not None
    log: list[dict[str, object]] = []
    port = await asyncio.wait_for(_started_port(process.stderr, log), timeout=60)
    server = ServerProcess(process, port, log)
    try:
        yield server
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), timeout=60)
        rest = (await process.stderr.read()).decode(errors="replace")
        log.extend(json.loads(line) for line in rest.splitlines() if line.startswith("{"))
    assert code == 0, f"server exited with {code}: {log[-5:]}"


async def _started_port(stream: asyncio.StreamReader, log: list[dict[str, object]]) -> int:
    while True:
        line = await stream.readline()
        if not line:
            raise AssertionError(f"the server exited before listening: {log}")
        text = line.decode(errors="replace").strip()
        if not text.startswith("{"):
            continue
        entry = json.loads(text)
        log.append(entry)
        if entry.get("event") == "server_started":
            return int(str(entry["port"]))


async def get_json(url: str) -> tuple[int, object]:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        return response.status, await response.json()


async def stored_race(base: str, race_id: str) -> dict[str, object]:
    """GET /api/races/{id}, waiting briefly: the write follows race_over."""
    for _ in range(100):
        status, body = await get_json(f"{base}/api/races/{race_id}")
        if status == 200:
            assert isinstance(body, dict)
            return body
        await asyncio.sleep(0.05)
    raise AssertionError(f"race {race_id} was never stored")


async def test_a_race_is_stored_in_postgresql_and_survives_a_server_restart(
    postgres_cluster: PostgresCluster,
) -> None:
    db = postgres_cluster.create_database("deploy")
    async with server_process([f"--db={db}"]) as server:
        assert any(e.get("event") == "storage_ready" for e in server.log)
        results = await run_bots(
            server.ws_url,
            2,
            host=True,
            options=m.RoomOptions(countdown_s=0, name="on postgres"),
            settings=BotSettings(name_prefix="pg", step_timeout_s=30),
        )
        assert results.ok, results.errors
        assert results.race_over is not None
        race_id = results.race_over.race_id
        before = await stored_race(server.url, race_id)
    assert before["room_name"] == "on postgres"
    assert before["seed"] == results.race_over.seed
    players = before["players"]
    assert isinstance(players, list) and len(players) == 2
    assert all(player["log"] for player in players)

    # The tables really are in PostgreSQL, migrated to the newest revision.
    dbname = db.rsplit("/", 1)[1]
    assert postgres_cluster.psql(dbname, "SELECT count(*) FROM races").strip() == "1"
    revision = postgres_cluster.psql(dbname, "SELECT version_num FROM alembic_version")
    assert revision.strip() == migrate.head()

    # Restarted, configured through the environment as compose does.
    async with server_process([], env={"TRIPEAKS_DB": db}) as again:
        assert await stored_race(again.url, race_id) == before
        status, listing = await get_json(f"{again.url}/api/races?player=pg1&limit=5")
        assert status == 200 and isinstance(listing, dict)
        assert [race["race_id"] for race in listing["races"]] == [race_id]


async def test_a_server_pointed_at_an_unreachable_database_exits_with_a_clear_error(
    tmp_path: Path,
) -> None:
    process = await asyncio.create_subprocess_exec(
        str(SERVER),
        "--port=0",
        "--db=postgresql://tripeaks:hunter2@127.0.0.1:1/tripeaks",
        stderr=subprocess.PIPE,
        env={**os.environ, "TRIPEAKS_DATA_DIR": str(tmp_path)},
    )
    _, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    text = stderr.decode(errors="replace")
    assert process.returncode != 0
    assert "cannot open database" in text
    assert "hunter2" not in text
