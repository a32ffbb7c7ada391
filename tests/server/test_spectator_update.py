"""spectator_update on a real server: a spectator that asks in hello gets one frame per
moment with exactly what the old frames carry; a spectator that does not ask still gets
the old frames."""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import messages as m
from server.race.spectate import pack_updates
from tests.serverutil import TestClient, connect, move_request, open_room, running_server

SEED = "42"
LINE = deal_for_seed(SEED, Rules(), with_par=False).solution


async def watcher(
    ws_url: str, code: str, *, updates: bool, encoding: str = "msgpack"
) -> TestClient:
    """A spectator of room ``code``, asking for spectator_update or not."""
    client = await connect(ws_url, "watcher", hello=False, encoding=encoding)
    hello = m.Hello("watcher", m.PROTOCOL_VERSION, spectator_update=updates)
    client.welcome = await client.request(hello, m.Welcome)
    await client.request(m.Join(code, m.Role.SPECTATOR), m.RoomState)
    return client


async def frames_until_over(client: TestClient) -> list[m.ServerMessage]:
    """Every race frame up to and including race_over (room states left out)."""
    await client.expect(m.RaceOver)
    return [f for f in client.frames if not isinstance(f, m.RoomState | m.Welcome)]


def unpacked(frames: list[m.ServerMessage]) -> list[m.ServerMessage]:
    """The frames with each spectator_update replaced by the frames it carries."""
    out: list[m.ServerMessage] = []
    for frame in frames:
        if isinstance(frame, m.SpectatorUpdate):
            out += [frame.progress] if frame.progress is not None else []
            out += frame.boards
        else:
            out.append(frame)
    return out


async def race(players: list[TestClient], moves: int) -> None:
    """Start, then let both players play ``moves`` steps of the line, spread over a few
    progress flushes, then resign."""
    await players[0].send(m.Start())
    for player in players:
        await player.expect(m.RaceStart)
    for seq, step in enumerate(LINE[:moves], 1):
        for player in players:
            result = await player.request(move_request(seq, step), m.MoveResult)
            assert result.accepted
        await asyncio.sleep(0.03)
    for player in players:
        await player.send(m.Resign())


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
async def test_a_spectator_that_asks_gets_one_frame_per_moment_with_what_the_old_frames_carry(
    tmp_path: Path, encoding: str
) -> None:
    async with running_server(tmp_path, progress_hz=20) as server:
        players, state = await open_room(server.ws_url, ["ann", "bob"], practice_seed=SEED)
        old = await watcher(server.ws_url, state.code, updates=False, encoding=encoding)
        new = await watcher(server.ws_url, state.code, updates=True, encoding=encoding)
        await race(players, 12)
        old_frames = await frames_until_over(old)
        new_frames = await frames_until_over(new)
    assert not any(isinstance(f, m.Progress | m.SpectatorBoard) for f in new_frames)
    updates = [f for f in new_frames if isinstance(f, m.SpectatorUpdate)]
    assert len(updates) >= 3
    # Every board of the old stream arrives in an update with its moment's progress.
    assert any(u.progress is not None and len(u.boards) == 2 for u in updates)
    assert unpacked(new_frames) == old_frames
    assert len(new_frames) < len(old_frames)
    assert not any(isinstance(f, m.SpectatorUpdate) for f in old_frames)


async def test_a_late_spectator_that_asks_gets_its_catch_up_packed_too(tmp_path: Path) -> None:
    async with running_server(tmp_path, progress_hz=20) as server:
        players, state = await open_room(server.ws_url, ["ann", "bob"], practice_seed=SEED)
        await players[0].send(m.Start())
        for player in players:
            await player.expect(m.RaceStart)
        for seq, step in enumerate(LINE[:3], 1):
            for player in players:
                await player.request(move_request(seq, step), m.MoveResult)
        await asyncio.sleep(0.2)
        old = await watcher(server.ws_url, state.code, updates=False)
        new = await watcher(server.ws_url, state.code, updates=True)
        while sum(isinstance(f, m.SpectatorBoard) for f in old.frames) < 2:
            await old.recv()
        update = await new.expect(m.SpectatorUpdate)
    catch_up = [f for f in old.frames if isinstance(f, m.Progress | m.SpectatorBoard)]
    # Without a spectator delay a catch-up's progress and boards are made when it is
    # sent: the two watchers' differ in their race time only.
    assert update.progress is not None and isinstance(catch_up[0], m.Progress)
    assert _untimed(update.progress) == _untimed(catch_up[0])
    assert [replace(b, elapsed_ms=0) for b in update.boards] == [
        replace(b, elapsed_ms=0) for b in catch_up[1:3]
    ]
    assert {b.player_id for b in update.boards} == {p.player_id for p in players}


def _untimed(progress: m.Progress) -> m.Progress:
    lines = tuple(replace(line, elapsed_ms=0) for line in progress.players)
    return m.Progress(0, lines)


async def test_delayed_frames_are_packed_when_the_delay_releases_them(tmp_path: Path) -> None:
    async with running_server(tmp_path, progress_hz=20) as server:
        players, state = await open_room(
            server.ws_url, ["ann", "bob"], practice_seed=SEED, spectator_delay_s=1
        )
        old = await watcher(server.ws_url, state.code, updates=False)
        new = await watcher(server.ws_url, state.code, updates=True)
        await race(players, 6)
        old_frames = await frames_until_over(old)
        new_frames = await frames_until_over(new)
    assert any(isinstance(f, m.SpectatorUpdate) and f.boards for f in new_frames)
    assert new_frames == pack_updates(old_frames)  # released together: one moment each


@pytest.mark.parametrize("updates", [True, False])
async def test_a_spectator_sees_no_move_before_the_log_holds_it(
    tmp_path: Path, updates: bool
) -> None:
    async with running_server(tmp_path) as server:
        (ann, bob), state = await open_room(server.ws_url, ["ann", "bob"], practice_seed=SEED)
        sam = await watcher(server.ws_url, state.code, updates=updates)
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        await sam.expect(m.RaceStart)
        # Another writer holds the database's write lock: the log's commits wait for it.
        blocker = sqlite3.connect(tmp_path / "races.db", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            await ann.send(move_request(1, LINE[0]))
            for client in (sam, bob, ann):  # a dozen flush intervals, every frame read
                with pytest.raises(TimeoutError):
                    await client.expect(m.RaceOver, timeout=0.4)
            shown = [f for f in [*unpacked(sam.frames), *bob.frames] if isinstance(f, m.Progress)]
            assert not any(p.moves for f in shown for p in f.players), "told before logged"
            assert not any(isinstance(f, m.MoveResult) for f in ann.frames)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert (await ann.expect(m.MoveResult)).accepted
        while True:  # once logged, the move shows
            progress = await sam.expect(
                m.SpectatorUpdate if updates else m.Progress  # type: ignore[arg-type]
            )
            lines = progress.progress if isinstance(progress, m.SpectatorUpdate) else progress
            if lines is not None and any(p.moves == 1 for p in lines.players):
                break


@pytest.mark.parametrize("updates", [True, False])
async def test_without_a_delay_a_late_spectator_catches_up_on_the_race_as_it_stands(
    tmp_path: Path, updates: bool
) -> None:
    """The room keeps only marks of its progress and boards (no delay): a spectator who
    joins after moves that no flush has shown yet still sees them in the catch-up."""
    async with running_server(tmp_path, progress_hz=0.01) as server:  # one flush only
        players, state = await open_room(server.ws_url, ["ann", "bob"], practice_seed=SEED)
        first = await watcher(server.ws_url, state.code, updates=updates)
        await players[0].send(m.Start())
        starts = [await player.expect(m.RaceStart) for player in players]
        await players[0].request(move_request(1, LINE[0]), m.MoveResult)
        if updates:  # the flush of the first move; the next is 100 s away
            flushed = (await first.expect(m.SpectatorUpdate)).progress
        else:
            flushed = await first.expect(m.Progress)
        for seq, step in enumerate(LINE[1:4], 2):
            await players[0].request(move_request(seq, step), m.MoveResult)
        late = await watcher(server.ws_url, state.code, updates=updates)
        if updates:
            update = await late.expect(m.SpectatorUpdate)
            progress, boards = update.progress, list(update.boards)
        else:
            progress = await late.expect(m.Progress)
            boards = [await late.expect(m.SpectatorBoard)]
    # The only flush showed the first move ...
    assert flushed is not None
    assert {line.player_id: line.moves for line in flushed.players}[players[0].player_id] == 1
    # ... and the late spectator sees the four.
    assert progress is not None
    lines = {line.player_id: line for line in progress.players}
    assert lines[players[0].player_id].moves == 4
    assert lines[players[1].player_id].moves == 0
    ann = next(b for b in boards if b.player_id == players[0].player_id)
    assert ann.view.moves == 4
    # Only cards both racers have seen show: bob has not moved, so every face on ann's
    # board is one bob's untouched board shows too.
    bob = starts[1].view.board
    assert all(entry in (None, "??", bob[p]) for p, entry in enumerate(ann.view.board))
    assert any(entry is None for entry in ann.view.board)  # her plays show
