"""Plain mode for a new user and a screen reader: hints, status, quiet progress, exit codes."""

from __future__ import annotations

import io
from pathlib import Path

from client_cli.client import GameClient
from client_cli.plain import PROGRESS_EVERY_S, PlainUI
from protocol.wire import messages as m
from tests.client_cli.test_plain import PlainProcess
from tests.serverutil import connect, running_server

SEED = "plain-lines-1"


def progress(cleared: int, status: m.PlayerStatus = m.PlayerStatus.RACING) -> m.Progress:
    line = m.PlayerProgress("p2", cleared, 20, cleared, 0, status, 1000, True)
    return m.Progress(1000, (line,))


def test_opponent_progress_is_coalesced_and_a_status_change_is_said_at_once() -> None:
    out = io.StringIO()
    ui = PlainUI(GameClient("ws://127.0.0.1:9/ws", "me"), out)
    for cleared in range(1, 11):
        ui.on_event("progress", progress(cleared))
    assert out.getvalue().count("progress:") == 1
    ui.on_event("progress", progress(10, m.PlayerStatus.RESIGNED))
    assert out.getvalue().count("progress:") == 2 and "resigned" in out.getvalue()
    ui._progress_said_at -= PROGRESS_EVERY_S
    ui.on_event("progress", progress(12, m.PlayerStatus.RESIGNED))
    assert out.getvalue().count("progress:") == 3


async def test_plain_mode_hints_at_help_and_status_gives_the_clock_and_standings(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        plain = await PlainProcess.start("--server", server.ws_url, "--name", "sally")
        hello = await plain.wait_for("connected as sally")
        assert "type help" in hello
        await plain.send(f"host seed={SEED} countdown=0")
        code = (await plain.wait_for("room ")).split()[1]
        rival = await connect(server.ws_url, "rival")
        await rival.request(m.Join(code), m.RoomState)
        await rival.send(m.Ready(True))
        await plain.wait_for("rival (ready, guest)")
        await plain.send("start")
        await plain.wait_for("race started")
        await plain.send("status")
        await plain.wait_for("race clock")
        await plain.wait_for("rival: 0/28")
        await rival.close()
        assert await plain.finish() == 0


async def test_joining_an_unknown_code_in_plain_mode_exits_non_zero(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        plain = await PlainProcess.start("QQQQQQ", "--server", server.ws_url, command=("join",))
        await plain.wait_for("could not enter the room")
        assert await plain.finish() == 1


async def test_watching_a_finished_room_in_plain_mode_says_the_race_is_over(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        host = await connect(server.ws_url, "hana")
        options = m.RoomOptions(countdown_s=0, practice_seed=SEED)
        room = await host.request(m.CreateRoom(options), m.RoomState)
        await host.send(m.Start())
        await host.expect(m.RaceStart)
        await host.send(m.Resign())
        await host.expect(m.RaceOver)
        plain = await PlainProcess.start(room.code, "--server", server.ws_url,
                                         command=("watch",))
        await plain.wait_for("the last race here is over")
        assert await plain.finish() == 0
        await host.close()
