"""A restarted server resumes its running races from the input log (docs/server.md,
"Restarts and recovery"): SIGTERM and kill -9 in the middle of races, on a real
``tripeaks-server`` process restarted on the same database and port."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from pathlib import Path

import aiohttp
import pytest

from client_cli.bot import BotSettings, RaceResults, run_bots
from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import CloseCode
from server.race.lobby import token_digest
from server.storage.inputlog import SqlInputLog
from server.storage.store import RaceStore, StorageError
from tests.serverutil import (
    TestClient,
    connect,
    move_request,
    open_room,
    running_server,
    spawn_server,
)

SEED = "42"
LINE = deal_for_seed(SEED, Rules()).solution


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def start(db: str, port: int, data: Path) -> asyncio.subprocess.Process:
    """``tripeaks-server`` on ``port`` with database ``db``, once it listens."""
    env = {
        **os.environ, "TRIPEAKS_PORT": str(port), "TRIPEAKS_DB": db, "XDG_DATA_HOME": str(data),
        "TRIPEAKS_DEAL_WORKERS": "1", "TRIPEAKS_DEALS_AHEAD": "0",
        "TRIPEAKS_ADDRESS_PLAYERS": "100", "TRIPEAKS_CONNECT_BURST": "1000",
    }
    proc, _started = await spawn_server(env, timeout=60)
    assert proc.stderr is not None
    asyncio.get_running_loop().create_task(_drain(proc.stderr))
    return proc


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


async def stop(proc: asyncio.subprocess.Process, how: signal.Signals) -> int:
    proc.send_signal(how)
    return await asyncio.wait_for(proc.wait(), 60)


class Acknowledged:
    """Every move_result each bot received: the moves the server acknowledged."""

    def __init__(self) -> None:
        self.moves: dict[str, list[tuple[int, bool]]] = {}

    def __call__(self, bot: str, direction: str, frame: bytes) -> None:
        if direction != "received":
            return
        message = codec.decode_server(frame, codec.Encoding.MSGPACK)
        if isinstance(message, m.MoveResult):
            self.moves.setdefault(bot, []).append((message.seq, message.accepted))

    def count(self) -> int:
        return sum(len(moves) for moves in self.moves.values())


async def race_rooms(url: str, rooms: int, seen: Acknowledged) -> list[RaceResults]:
    """``rooms`` rooms of two bots each, racing at a human pace."""
    options = m.RoomOptions(countdown_s=0, undo=m.UndoPolicy.OFF)

    async def one(index: int) -> RaceResults:
        settings = BotSettings(
            seed=index, on_frame=seen, reconnect_s=60.0, step_timeout_s=60.0,
            name_prefix=f"r{index}b",
        )
        return await run_bots(url, 2, host=True, pace=6.0, options=options, settings=settings)

    return list(await asyncio.gather(*(one(i) for i in range(rooms))))


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "kill-9"])
async def test_five_races_resume_after_a_restart_and_finish_with_every_acknowledged_move(
    tmp_path: Path, how: signal.Signals
) -> None:
    db, port = f"sqlite:///{tmp_path / 'races.db'}", free_port()
    proc = await start(db, port, tmp_path)
    seen = Acknowledged()
    try:
        races = asyncio.create_task(race_rooms(f"ws://127.0.0.1:{port}/ws", 5, seen))
        while len(seen.moves) < 10 or min(len(v) for v in seen.moves.values()) < 5:
            assert not races.done(), races.result()
            await asyncio.sleep(0.05)
        code = await stop(proc, how)
        assert code == (0 if how is signal.SIGTERM else -signal.SIGKILL)
        before = seen.count()
        await asyncio.sleep(1.0)  # the server is down a while: the bots keep trying
        proc = await start(db, port, tmp_path)
        results = await asyncio.wait_for(races, 180)
    finally:
        if proc.returncode is None:
            await stop(proc, signal.SIGTERM)
    assert seen.count() > before  # the races went on after the restart
    for result in results:
        assert result.ok, result.errors
    store = await RaceStore.connect(db)
    try:
        stored = await store.list_races(limit=100)
        assert len(stored) == 5
        assert {r.race_id for r in stored} == {r.race_over.race_id for r in results if r.race_over}
    finally:
        await store.close()
    by_player = {bot.player_id: bot.name for result in results for bot in result.bots}
    for record in stored:
        for player in record.players:
            logged = {(entry.seq, entry.accepted) for entry in player.log if entry.seq}
            acknowledged = set(seen.moves[by_player[player.player_id]])
            assert acknowledged <= logged, player.name


async def test_a_move_is_logged_before_its_answer_reaches_the_client(tmp_path: Path) -> None:
    db, port = f"sqlite:///{tmp_path / 'races.db'}", free_port()
    proc = await start(db, port, tmp_path)
    try:
        (ann,), _ = await open_room(f"ws://127.0.0.1:{port}/ws", ["ann"], practice_seed=SEED)
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        token = ann.welcome.token if ann.welcome else None
        for seq, step in enumerate(LINE[:3], 1):
            assert (await ann.request(move_request(seq, step), m.MoveResult)).accepted
        await stop(proc, signal.SIGKILL)  # at once after the third answer
        proc = await start(db, port, tmp_path)
        again = await connect(f"ws://127.0.0.1:{port}/ws", "ann", token=token)
        assert again.welcome is not None and again.welcome.resumed
        resync = await again.expect(m.Resync)
        assert resync.phase is m.Phase.RACING and resync.last_seq == 3
        assert resync.view is not None and resync.view.moves == 3
        # The race goes on where it was, under the same numbers.
        answer = await again.request(move_request(4, LINE[3]), m.MoveResult)
        assert answer.accepted and answer.seq == 4 and answer.moves == 4
    finally:
        if proc.returncode is None:
            await stop(proc, signal.SIGTERM)


async def test_a_room_whose_race_was_stored_comes_back_healthy_after_a_crash(
    tmp_path: Path,
) -> None:
    """The rebuilt room hands its finished race to storage again, without its par and with
    the dealer's line (a replay never solves): that is the race already stored with the
    par's line, not a clash."""
    db, port = f"sqlite:///{tmp_path / 'races.db'}", free_port()
    proc = await start(db, port, tmp_path)
    try:
        # Fresh deals (a practice seed's line is already a par line), ann giving up each,
        # until the dealer's line of one has more draws than its par's line.
        (ann,), _ = await open_room(f"ws://127.0.0.1:{port}/ws", ["ann"])
        await ann.send(m.Start())
        races: list[m.RaceOver] = []
        for _ in range(12):
            await ann.expect(m.RaceStart)
            await ann.send(m.Resign())
            over = await ann.expect(m.RaceOver)
            assert over.saved and over.par is not None and over.solution and over.seed
            races.append(over)
            dealer = deal_for_seed(over.seed, Rules(), with_par=False).solution
            if len(dealer) != len(over.solution):
                break
            await ann.send(m.Rematch())
        assert len(dealer) != len(over.solution), "every deal's first line was a par line"
        await stop(proc, signal.SIGKILL)
        proc = await start(db, port, tmp_path)
        url = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as http:
            for _ in range(200):  # the rebuilt room's record goes to the writer
                async with http.get(f"{url}/metrics") as resp:
                    metrics = await resp.text()
                if f"tripeaks_races_stored_total {len(races)}.0" in metrics:
                    break
                await asyncio.sleep(0.05)
            assert f"tripeaks_races_stored_total {len(races)}.0" in metrics
            assert "tripeaks_storage_errors_total 0.0" in metrics
            async with http.get(f"{url}/healthz") as resp:
                assert (await resp.json())["status"] == "ok"
            for race in races:
                async with http.get(f"{url}/api/races/{race.race_id}") as resp:
                    stored = await resp.json()
                assert (stored["par"], len(stored["solution"])) == (race.par, len(race.solution))
    finally:
        if proc.returncode is None:
            await stop(proc, signal.SIGTERM)


async def progress_showing(client: TestClient, player_id: str, moves: int) -> m.Progress:
    """The first ``progress`` whose line of ``player_id`` shows ``moves`` moves."""
    while True:
        progress = await client.expect(m.Progress)
        if any(p.player_id == player_id and p.moves == moves for p in progress.players):
            return progress


async def test_progress_flushes_are_sent_not_logged_and_a_resumed_room_flushes_again(
    tmp_path: Path,
) -> None:
    db, port = f"sqlite:///{tmp_path / 'races.db'}", free_port()
    url = f"ws://127.0.0.1:{port}/ws"
    proc = await start(db, port, tmp_path)
    try:
        (ann, bob), _ = await open_room(url, ["ann", "bob"], practice_seed=SEED)
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        for seq, step in enumerate(LINE[:3], 1):
            assert (await ann.request(move_request(seq, step), m.MoveResult)).accepted
        await progress_showing(bob, ann.player_id, 3)  # a flush went out
        await stop(proc, signal.SIGKILL)
        store = await RaceStore.connect(db)
        try:
            (room,) = await SqlInputLog(store).rooms()
            kinds = [entry[2].split('"', 4)[3] for entry in await SqlInputLog(store).read(room)]
        finally:
            await store.close()
        assert kinds.count("moved") == 3 and "timer_fired" not in kinds
        proc = await start(db, port, tmp_path)
        ann_token, bob_token = [c.welcome.token if c.welcome else None for c in (ann, bob)]
        ann = await connect(url, "ann", token=ann_token)
        bob = await connect(url, "bob", token=bob_token)
        await ann.expect(m.Resync)
        answer = await ann.request(move_request(4, LINE[3]), m.MoveResult)
        assert answer.accepted
        shown = await progress_showing(bob, ann.player_id, 4)
        assert all(p.connected for p in shown.players if p.player_id == ann.player_id)
    finally:
        if proc.returncode is None:
            await stop(proc, signal.SIGTERM)


async def test_sigterm_tells_clients_the_server_is_going_away_and_aborts_no_race(
    tmp_path: Path,
) -> None:
    db, port = f"sqlite:///{tmp_path / 'races.db'}", free_port()
    proc = await start(db, port, tmp_path)
    try:
        (ann,), _ = await open_room(f"ws://127.0.0.1:{port}/ws", ["ann"], practice_seed=SEED)
        await ann.send(m.Start())
        start_msg = await ann.expect(m.RaceStart)
        assert (await ann.request(move_request(1, LINE[0]), m.MoveResult)).accepted
        proc.send_signal(signal.SIGTERM)
        closing = await ann.expect(m.Closing, timeout=30)
        assert closing.code == CloseCode.GOING_AWAY
        assert not any(isinstance(f, m.RaceOver) for f in ann.frames)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            await stop(proc, signal.SIGKILL)
    store = await RaceStore.connect(db)
    try:
        assert await store.get_race(start_msg.race_id) is None  # not stored: not over
        (room,) = await SqlInputLog(store).rooms()
        entries = await SqlInputLog(store).read(room)
        assert '"t":"halted"' in entries[-1][2]
    finally:
        await store.close()


async def test_reconnect_tokens_are_stored_only_as_digests(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob"])
        tokens = [c.welcome.token for c in clients if c.welcome]
        assert server.hub.journal is not None
        await server.hub.journal.flush()
        path = Path(server.db_url.removeprefix("sqlite:///"))
        stored = b"".join(
            p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists()
        )
        assert len(tokens) == 2
        for token in tokens:
            assert token.encode() not in stored
            assert token_digest(token).encode() in stored
        for client in clients:
            await client.close()


async def test_the_sql_log_gives_back_every_entry_in_order_however_appends_group_them(
    db_url: str,
) -> None:
    from server.recovery.log import Run

    store = await RaceStore.connect(db_url)
    log = SqlInputLog(store)
    try:
        await log.append([Run("A", 0, 1, ['{"n":0}', '{"n":1}']), Run("B", 0, 1, ['{"n":"b"}'])])
        await log.append([Run("A", 2, 2, ['{"n":2}']), Run("A", 3, 2, ['{"n":3}'])])
        assert await log.read("A") == [
            (0, 1, '{"n":0}'), (1, 1, '{"n":1}'), (2, 2, '{"n":2}'), (3, 2, '{"n":3}')
        ]
        assert await log.rooms() == ["A", "B"] and await log.max_epoch() == 2
        with pytest.raises(StorageError, match="newline"):
            await log.append([Run("A", 4, 2, ["{}", "{}\n{}"])])
        await log.drop(["A"])
        assert await log.rooms() == ["B"] and await log.read("A") == []
    finally:
        await log.close()
        await store.close()
