"""Rooms and races as a new user meets them: joining between races, seats kept across
processes, rematches, errors on the status line, resigning, starting alone."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

from textual.css.query import NoMatches

from client_cli.seats import SeatFiles
from client_cli.tui.app import TriPeaksApp
from client_cli.tui.home import HomeScreen
from client_cli.tui.lobby import LobbyScreen
from client_cli.tui.race import RaceScreen
from client_cli.tui.results import ResultsScreen
from protocol.wire import messages as m
from tests.client_cli.tui.test_app import (
    SEED,
    SIZE,
    create_practice_room,
    join_and_ready,
    member_count,
    press_line,
    racing,
    start_race,
    text_of,
    until,
    winning_line,
)
from tests.serverutil import TestClient, connect, running_server, start_server


async def finished_room(url: str) -> tuple[TestClient, TestClient, str]:
    """A room whose two players raced and resigned: the room is between races."""
    host = await connect(url, "alice")
    options = m.RoomOptions(countdown_s=0, practice_seed=SEED)
    room = await host.request(m.CreateRoom(options), m.RoomState)
    partner = await join_and_ready(url, room.code, "pat")
    await host.expect(m.RoomState)
    await asyncio.sleep(0.2)
    await host.send(m.Start())
    for player in (host, partner):
        await player.expect(m.RaceStart)
        await player.send(m.Resign())
    await host.expect(m.RaceOver)
    return host, partner, room.code


async def test_a_player_who_joins_between_races_gets_the_results_screen_and_a_rematch_key(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        host, partner, code = await finished_room(server.ws_url)
        await host.send(m.Rematch())
        app = TriPeaksApp(server.ws_url, "bob", start="join", code=code)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, ResultsScreen))
            await until(pilot, lambda: "rematch asked by alice (1/3)" in text_of(app, "#summary"))
            assert "ended before you joined" in text_of(app, "#summary")
            await pilot.press("m")
            await until(pilot, lambda: "(2/3)" in text_of(app, "#summary"))
            await partner.send(m.Rematch())
            await until(pilot, lambda: racing(app))
        await host.close()
        await partner.close()


async def test_a_player_who_quit_mid_race_gets_the_seat_back_with_tripeaks_join(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "carol")
        async with app.run_test(size=SIZE) as pilot:
            rival = await start_race(pilot, app, server.ws_url)
            await press_line(pilot, winning_line()[:6])
            board = app.client.state.board
            assert board is not None
            await until(pilot, lambda: not board.pending)
            moves, code = board.confirmed.moves, app.client.state.room.code  # type: ignore[union-attr]
            await pilot.press("ctrl+q")
        seat_dir = SeatFiles(server.ws_url).dir
        (saved,) = seat_dir.glob("*.json")
        assert stat.S_IMODE(os.stat(saved).st_mode) == 0o600
        again = TriPeaksApp(server.ws_url, "carol", start="join", code=code)
        async with again.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: racing(again))
            board = again.client.state.board
            assert board is not None and board.confirmed.moves == moves
            assert again.client.state.last_error == ""
            await until(pilot, lambda: "race clock" in shown_text(again, "#clock"))
            await press_line(pilot, winning_line()[6:])
            await until(pilot, lambda: again.client.state.my_finish_ms is not None)
        await rival.close()


async def test_a_seat_held_by_a_running_client_is_not_taken_by_a_second_one(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        first = TriPeaksApp(server.ws_url, "dora")
        async with first.run_test(size=SIZE) as pilot:
            code = await create_practice_room(pilot, first)
            second = TriPeaksApp(server.ws_url, "dora", start="join", code=code)
            async with second.run_test(size=SIZE) as other:
                await until(other, lambda: second.client.state.room is not None)
                assert not second.client.resumed
                await until(pilot, lambda: member_count(first) == 2)
                names = [x.name for x in second.client.state.room.members]  # type: ignore[union-attr]
                assert names == ["dora", "dora (2)"]
                # The status line is redrawn after the room_state: wait for it.
                await until(other, lambda: "dora (2)" in text_of(second, "#connection"))


async def test_a_stopped_server_leaves_no_python_exception_and_the_race_goes_on_after_it(
    tmp_path: Path,
) -> None:
    # A stopped server keeps its races (docs/server.md, "Restarts and recovery"): the
    # client says it is reconnecting, never shows an exception, and races on once the
    # server is back on the same port and database.
    server = await start_server(tmp_path)
    app = TriPeaksApp(server.ws_url, "erin")
    async with app.run_test(size=SIZE) as pilot:
        rival = await start_race(pilot, app, server.ws_url)
        await server.stop()
        await until(pilot, lambda: app.client.state.connection == "reconnecting")
        await pilot.pause(0.5)
        status = text_of(app, "#connection")
        assert "Error(" not in status and "display error" not in status
        assert "could not be redrawn" not in app.client.state.last_error
        assert isinstance(app.screen, RaceScreen)
        server = await start_server(tmp_path, port=server.port)
        try:
            await until(pilot, lambda: app.client.state.connection == "online", timeout=60)
            board = app.client.state.board
            assert board is not None and isinstance(app.screen, RaceScreen)
            stock = board.confirmed.stock_left
            await pilot.press("space")
            await until(pilot, lambda: board.confirmed.stock_left == stock - 1)
            assert "Error(" not in text_of(app, "#connection")
            await app.client.close()
        finally:
            await server.stop()
    await rival.close()


async def test_a_refusal_leaves_the_status_line_once_the_room_moves_on(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "fay")
        async with app.run_test(size=SIZE) as pilot:
            code = await create_practice_room(pilot, app)
            rival = await connect(server.ws_url, "slow")
            await rival.request(m.Join(code), m.RoomState)
            await until(pilot, lambda: member_count(app) == 2)
            await pilot.press("s")
            await until(pilot, lambda: "Not ready: slow" in text_of(app, "#connection"))
            await rival.send(m.Ready(True))
            await until(pilot, lambda: "Not ready" not in text_of(app, "#connection"))
            await rival.close()


def test_an_error_fades_from_the_status_line_after_a_while() -> None:
    from client_cli.state import ERROR_SHOWN_S, ClientState

    state = ClientState()
    state.set_error("Not ready: bob.")
    assert state.current_error() == "Not ready: bob."
    assert state.current_error(state.error_at + ERROR_SHOWN_S + 1) == ""


async def test_after_resigning_the_header_says_so_and_the_clock_stops(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "gus")
        async with app.run_test(size=SIZE) as pilot:
            rival = await start_race(pilot, app, server.ws_url)
            await pilot.press("r", "r")
            await until(pilot, lambda: "you resigned" in text_of(app, "#clock"))
            assert "stuck" not in text_of(app, "#clock")
            before = text_of(app, "#clock")
            await pilot.pause(1.3)
            assert text_of(app, "#clock") == before
            await rival.close()


async def test_starting_alone_asks_for_a_second_press(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "hal")
        async with app.run_test(size=SIZE) as pilot:
            await create_practice_room(pilot, app)
            await pilot.press("s")
            await pilot.pause(0.5)
            assert isinstance(app.screen, LobbyScreen)
            assert "press s again" in text_of(app, "#lobby-message")
            await pilot.press("s")
            await until(pilot, lambda: racing(app))


async def test_a_rematch_countdown_lists_only_the_players_still_in_the_room(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "ivy")
        async with app.run_test(size=SIZE) as pilot:
            code = await create_practice_room(pilot, app, countdown=3)
            stays = await join_and_ready(server.ws_url, code, "stays")
            goes = await join_and_ready(server.ws_url, code, "goes")
            await until(pilot, lambda: member_count(app) == 3)
            await pilot.press("s")
            await until(pilot, lambda: racing(app) and app.client.state.phase is m.Phase.RACING)
            await pilot.press("r", "r")
            for rival in (stays, goes):
                await rival.expect(m.RaceStart)
                await rival.send(m.Resign())
            await until(pilot, lambda: isinstance(app.screen, ResultsScreen))
            await goes.send(m.Leave())
            await stays.send(m.Rematch())
            await pilot.press("m")
            await until(pilot, lambda: isinstance(app.screen, RaceScreen))
            await until(pilot, lambda: "stays" in text_of(app, "#opponent-list"))
            assert "goes" not in text_of(app, "#opponent-list")
            await stays.close()
            await goes.close()


async def test_the_status_line_shows_the_name_not_the_internal_player_id(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "jo")
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.client.state.connection == "online")
            await pilot.pause(0.2)
            assert isinstance(app.screen, HomeScreen)
            status = text_of(app, "#connection")
            assert "jo" in status and str(app.client.state.player_id) not in status
            await asyncio.sleep(0)


def shown_text(app: TriPeaksApp, selector: str) -> str:
    """``text_of``, or nothing while the screen is still being mounted."""
    try:
        return text_of(app, selector)
    except NoMatches:
        return ""
