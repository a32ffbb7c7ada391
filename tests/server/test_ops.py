"""Operations: health, metrics, the race API, results across restarts, SIGTERM, settings."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import sys
from pathlib import Path

import aiohttp
import pytest
from websockets.exceptions import ConnectionClosed

from protocol.deals.commitment import commitment
from protocol.deals.dealer import Difficulty, deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import messages as m
from protocol.wire.errors import CloseCode
from server.config import SettingsError, from_env, parse
from server.storage.store import RaceStore
from tests.serverutil import TestClient, move_request, open_room, running_server, spawn_server

SEED = "42"
LINE = deal_for_seed(SEED, Rules()).solution


async def race_to_the_end(clients: list[TestClient], *, started: bool = False) -> m.RaceOver:
    """The host wins on the dealt line, everyone else resigns."""
    host = clients[0]
    if not started:
        await host.send(m.Start())
        await host.expect(m.RaceStart)
    for seq, step in enumerate(LINE, 1):
        assert (await host.request(move_request(seq, step), m.MoveResult)).accepted
    for client in clients[1:]:
        await client.send(m.Resign())
    return await host.expect(m.RaceOver)


async def get_json(url: str) -> tuple[int, dict[str, object]]:
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        return resp.status, await resp.json()


async def wait_stored(store: RaceStore, race_id: str) -> None:
    for _ in range(100):
        if await store.get_race(race_id) is not None:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"race {race_id} was never stored")


async def test_healthz_answers_ok(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        status, body = await get_json(server.url + "/healthz")
        assert status == 200 and body["status"] == "ok"


async def test_the_input_logs_fold_is_timed_and_a_failing_one_shows_in_healthz(
    tmp_path: Path,
) -> None:
    """A fold that cannot write ``room_inputs`` is tried again: /healthz names it while it
    fails, the races and their commits go on, and it clears once the fold succeeds."""
    async with running_server(tmp_path) as server:
        db = sqlite3.connect(tmp_path / "races.db", isolation_level=None)
        try:
            db.execute("ALTER TABLE room_inputs RENAME TO room_inputs_away")
            clients, _state = await open_room(server.ws_url, ["ann"], practice_seed=SEED)
            await clients[0].send(m.Start())
            await clients[0].expect(m.RaceStart)
            body: dict[str, object] = {}
            for _ in range(300):  # the first fold is due a second after the log began
                _, body = await get_json(server.url + "/healthz")
                if "input_log" in body:
                    break
                await asyncio.sleep(0.02)
            assert body["status"] == "ok"  # races go on: the tails take the commits
            assert "room_inputs" in body["input_log"]["fold"]  # type: ignore[index]
            answer = await clients[0].request(move_request(1, LINE[0]), m.MoveResult)
            assert answer.accepted
            db.execute("ALTER TABLE room_inputs_away RENAME TO room_inputs")
            for _ in range(300):
                _, body = await get_json(server.url + "/healthz")
                if "input_log" not in body:
                    break
                await asyncio.sleep(0.02)
            assert "input_log" not in body
            async with aiohttp.ClientSession() as http, http.get(server.url + "/metrics") as r:
                metrics = await r.text()
            steps = re.search(r"^tripeaks_log_fold_step_seconds_count (\S+)$", metrics, re.M)
            assert steps is not None and float(steps.group(1)) >= 2  # a slice and an emptying
        finally:
            db.close()


async def test_metrics_count_races_moves_refusals_errors_and_time_deals(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob"], practice_seed=SEED)
        await clients[1].send(m.MoveRequest(1, m.MoveAction.DRAW))  # not racing yet: error 102
        await clients[1].expect(m.Error)
        await clients[0].send(m.Start())
        await clients[0].expect(m.RaceStart)
        refused = await clients[1].request(m.MoveRequest(1, m.MoveAction.PLAY, 0), m.MoveResult)
        assert not refused.accepted
        over = await race_to_the_end(clients, started=True)
        assert over.standings
        async with aiohttp.ClientSession() as http, http.get(server.url + "/metrics") as resp:
            assert resp.status == 200 and resp.content_type == "text/plain"
            text = await resp.text()
        lines = {
            line.rsplit(" ", 1)[0]: line.rsplit(" ", 1)[1]
            for line in text.splitlines()
            if line and not line.startswith("#")
        }
        assert float(lines["tripeaks_races_started_total"]) == 1
        assert float(lines["tripeaks_races_finished_total"]) == 1
        assert float(lines["tripeaks_moves_total"]) == len(LINE)
        assert float(lines['tripeaks_rejected_moves_total{reason="covered"}']) == 1
        assert float(lines['tripeaks_protocol_errors_total{code="102"}']) >= 1
        assert float(lines["tripeaks_connections"]) == 2
        assert float(lines['tripeaks_rooms{state="finished"}']) == 1
        assert float(lines["tripeaks_deal_seconds_count"]) == 1
        # Move handling is timed on a sample: one move in 16.
        assert float(lines["tripeaks_move_seconds_count"]) == (len(LINE) + 1) // 16
        # Every commit of the input log is timed: the answers it held waited that long.
        commits = float(lines["tripeaks_log_commit_seconds_count"])
        journal = server.hub.journal
        assert journal is not None and 1 <= commits <= journal.commits
        assert float(lines["tripeaks_log_commit_seconds_sum"]) > 0
        assert float(lines['tripeaks_log_commit_seconds_bucket{le="+Inf"}']) == commits


async def test_the_race_api_serves_stored_races_with_logs_and_lists_by_player(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob"], practice_seed=SEED)
        over = await race_to_the_end(clients)
        await wait_stored(server.store, over.race_id)
        status, race = await get_json(f"{server.url}/api/races/{over.race_id}")
        assert status == 200 and race["race_id"] == over.race_id and race["seed"] == SEED
        players = race["players"]
        assert isinstance(players, list) and players[0]["name"] == "ann"
        assert len(players[0]["log"]) == len(LINE)
        assert race["solution"] == list(LINE)
        status, listing = await get_json(f"{server.url}/api/races?player=ann&limit=5")
        assert status == 200
        races = listing["races"]
        assert isinstance(races, list) and [r["race_id"] for r in races] == [over.race_id]
        assert "log" not in races[0]["players"][0]
        status, listing = await get_json(f"{server.url}/api/races?player=nobody")
        assert listing["races"] == []


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/races/0123456789abcdef", 404),
        ("/api/races/bad%20id", 400),
        ("/api/races?limit=0", 400),
        ("/api/races?limit=many", 400),
        ("/api/races?limit=101", 400),
    ],
)
async def test_bad_race_api_requests_get_a_clear_json_error(
    tmp_path: Path, path: str, status: int
) -> None:
    async with running_server(tmp_path) as server:
        got, body = await get_json(server.url + path)
        assert got == status and isinstance(body["error"], str) and body["error"]


async def test_results_are_still_readable_after_a_server_restart(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(server.ws_url, ["ann"], practice_seed=SEED)
        over = await race_to_the_end(clients)
        db = server.db_url
    async with running_server(tmp_path, db=db) as again:
        status, race = await get_json(f"{again.url}/api/races/{over.race_id}")
        assert status == 200
        assert race["players"][0]["finish_ms"] == over.standings[0].time_ms  # type: ignore[index]


async def _start_subprocess(
    tmp_path: Path, *, own_group: bool = False
) -> tuple[asyncio.subprocess.Process, dict[str, object], str]:
    """``tripeaks-server`` on a free port, once its ``server_started`` line is out.

    ``own_group`` starts it in a process group of its own, as a terminal does.
    """
    db = f"sqlite:///{tmp_path / 'term.db'}"
    env = {
        **os.environ,
        "TRIPEAKS_PORT": "0",
        "TRIPEAKS_DB": db,
        "TRIPEAKS_DEAL_WORKERS": "1",
        "TRIPEAKS_DEALS_AHEAD": "0",
    }
    proc, event = await spawn_server(env, own_group=own_group)
    return proc, event, db


async def test_sigterm_during_a_race_tells_clients_keeps_the_race_and_exits_cleanly(
    tmp_path: Path,
) -> None:
    proc, started, db = await _start_subprocess(tmp_path)
    port = started["port"]
    try:
        clients, _ = await open_room(
            f"ws://127.0.0.1:{port}/ws", ["ann", "bob"], practice_seed=SEED
        )
        ann, bob = clients
        await ann.send(m.Start())
        start = await ann.expect(m.RaceStart)
        for seq, step in enumerate(LINE[:5], 1):
            assert (await ann.request(move_request(seq, step), m.MoveResult)).accepted
        proc.send_signal(signal.SIGTERM)
        for client in clients:
            closing = await client.expect(m.Closing)
            assert closing.code == CloseCode.GOING_AWAY
            # The race is not over: the next start resumes it (tests/server/test_recovery.py).
            assert not any(isinstance(frame, m.RaceOver) for frame in client.frames)
            client.drop_unread()
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    await client.recv(5)
            assert closed.value.rcvd is not None
            assert closed.value.rcvd.code == CloseCode.GOING_AWAY
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        assert bob.player_id
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    store = await RaceStore.connect(db)
    try:
        assert await store.get_race(start.race_id) is None
    finally:
        await store.close()


async def test_server_started_names_the_http_address_of_the_site(tmp_path: Path) -> None:
    proc, started, _ = await _start_subprocess(tmp_path)
    try:
        assert started["http"] == f"http://127.0.0.1:{started['port']}/"
        assert started["url"] == f"ws://127.0.0.1:{started['port']}/ws"
        async with aiohttp.ClientSession() as http, http.get(str(started["http"])) as resp:
            assert resp.status == 200 and resp.content_type == "text/html"
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 30) == 0


async def test_ctrl_c_on_the_whole_process_group_stops_cleanly_with_json_lines_only(
    tmp_path: Path,
) -> None:
    proc, started, _ = await _start_subprocess(tmp_path, own_group=True)
    assert proc.stderr is not None
    try:
        # A practice race is dealt by the pool, so a deal worker is alive for the Ctrl-C.
        clients, _ = await open_room(
            f"ws://127.0.0.1:{started['port']}/ws", ["ann"], practice_seed=SEED
        )
        await clients[0].send(m.Start())
        await clients[0].expect(m.RaceStart)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C
        rest = await asyncio.wait_for(proc.stderr.read(), 30)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = rest.decode()
    assert "Traceback" not in text
    events = [json.loads(line) for line in text.splitlines()]
    assert [e["event"] for e in events][-1] == "server_stopped"


def test_settings_come_from_flags_then_environment_then_defaults() -> None:
    env = {"TRIPEAKS_PORT": "9000", "TRIPEAKS_HOST": "0.0.0.0", "TRIPEAKS_RECONNECT_GRACE_S": "5"}
    settings = parse(["--port", "9100", "--db", "sqlite:///x.db"], env)
    assert settings.port == 9100 and settings.host == "0.0.0.0"
    assert settings.db == "sqlite:///x.db" and settings.reconnect_grace_s == 5.0
    assert from_env({}).port == 8765 and from_env({}).host == "127.0.0.1"


@pytest.mark.parametrize(
    "env",
    [
        {"TRIPEAKS_PORT": "eighty"},
        {"TRIPEAKS_PORT": "70000"},
        {"TRIPEAKS_LOG_LEVEL": "LOUD"},
        {"TRIPEAKS_TRUSTED_PROXIES": "not-a-network"},
        {"TRIPEAKS_PLAYER_RATE": "-1"},
    ],
)
def test_bad_settings_are_refused_with_a_message_naming_them(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError) as error:
        from_env(env)
    name = next(iter(env)).removeprefix("TRIPEAKS_").lower()
    assert name in str(error.value).lower().replace("-", "_") or "TRIPEAKS" in str(error.value)


async def test_tripeaks_server_reports_a_bad_flag_and_exits_2() -> None:
    exe = Path(sys.executable).with_name("tripeaks-server")
    proc = await asyncio.create_subprocess_exec(
        str(exe), "--port", "eighty", stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    assert proc.returncode == 2 and b"--port" in err


async def test_deals_prepared_ahead_start_races_and_are_refilled(tmp_path: Path) -> None:
    async with running_server(tmp_path, deals_ahead=1) as server:
        key = (Rules(), Difficulty.ANY)
        for _ in range(200):
            if server.hub.dealing.prepared.get(key):
                break
            await asyncio.sleep(0.05)
        prepared = server.hub.dealing.prepared[key][0]
        (ann,), _ = await open_room(server.ws_url, ["ann"])
        await ann.send(m.Start())
        start = await ann.expect(m.RaceStart)
        assert start.commitment == commitment(prepared.seed, prepared.rules)
        assert not start.practice
        for _ in range(200):
            if server.hub.dealing.prepared.get(key):
                break
            await asyncio.sleep(0.05)
        assert server.hub.dealing.prepared[key][0].seed != prepared.seed


async def test_tripeaks_server_reports_an_unusable_database_and_exits_1(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("tripeaks-server")
    env = {**os.environ, "TRIPEAKS_PORT": "0", "TRIPEAKS_DEALS_AHEAD": "0"}
    proc = await asyncio.create_subprocess_exec(
        str(exe), "--db", "mysql://nowhere/db", stderr=asyncio.subprocess.PIPE, env=env
    )
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1
    events = [json.loads(line) for line in err.decode().splitlines() if line.startswith("{")]
    failed = [e for e in events if e["event"] == "server_failed"]
    assert failed and "mysql" in failed[0]["reason"]


async def test_a_commit_gap_raised_past_the_busy_one_is_the_gap_whatever_the_load(
    tmp_path: Path,
) -> None:
    """A deployment that raised ``log_commit_gap_s`` over the busy gap's default still
    starts, and its commits never come closer together than it asked."""
    async with running_server(tmp_path, log_commit_gap_s=0.05) as server:
        journal = server.hub.journal
        assert journal is not None
        assert (journal.commit_gap_s, journal.busy_gap_s, journal.gap_s) == (0.05, 0.05, 0.05)
    async with running_server(tmp_path) as server:
        journal = server.hub.journal
        assert journal is not None
        assert (journal.commit_gap_s, journal.busy_gap_s) == (0.01, 0.02)
