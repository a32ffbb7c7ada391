"""The full-screen app driven by Textual's pilot against a real server on an ephemeral port."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import DataTable, Digits, Input, Static

from client_cli.render import HOTKEYS
from client_cli.tui.app import TriPeaksApp
from client_cli.tui.home import HomeScreen
from client_cli.tui.lobby import LobbyScreen
from client_cli.tui.race import RaceScreen
from client_cli.tui.results import ResultsScreen
from client_cli.tui.watch import WatchScreen
from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import DRAW, Move, Rules
from protocol.wire import messages as m
from tests.serverutil import TestClient, connect, running_server

SEED = "pilot-seed-1"
SIZE = (150, 50)


def winning_line(seed: str = SEED) -> tuple[Move, ...]:
    return deal_for_seed(seed, Rules()).solution


async def until(pilot: Pilot[int], condition: Callable[[], object], timeout: float = 20.0) -> None:
    """Let the app run until ``condition()`` is true (fails the test after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the app"
        await pilot.pause(0.05)


def standings_rows(app: TriPeaksApp) -> int:
    tables = app.screen.query("#standings").results(DataTable)
    return next((t.row_count for t in tables), 0)


def text_of(app: TriPeaksApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


def shown(app: TriPeaksApp, selector: str) -> str:
    """:func:`text_of`, or ``""`` while the screen has not mounted the widget yet (a screen
    is current before its widgets are mounted): for conditions to wait on."""
    found = app.screen.query(selector).results(Static)
    return next((str(widget.content) for widget in found), "")


async def press_line(pilot: Pilot[int], line: tuple[Move, ...]) -> None:
    for step in line:
        await pilot.press("space" if step == DRAW else HOTKEYS[step])


async def create_practice_room(
    pilot: Pilot[int], app: TriPeaksApp, seed: str = SEED, countdown: int = 0
) -> str:
    await until(pilot, lambda: app.client.state.connection == "online")
    assert isinstance(app.screen, HomeScreen)
    app.screen.query_one("#opt-seed", Input).value = seed
    app.screen.query_one("#opt-countdown", Input).value = str(countdown)
    await pilot.click("#create")
    await until(pilot, lambda: isinstance(app.screen, LobbyScreen) and app.client.state.room)
    room = app.client.state.room
    assert room is not None
    return room.code


def member_count(app: TriPeaksApp) -> int:
    room = app.client.state.room
    return 0 if room is None else len(room.members)


def all_ready(app: TriPeaksApp, count: int = 2) -> bool:
    room = app.client.state.room
    return room is not None and len(room.members) == count and all(x.ready for x in room.members)


def racing(app: TriPeaksApp) -> bool:
    return isinstance(app.screen, RaceScreen) and app.client.state.board is not None


async def start_race(
    pilot: Pilot[int], app: TriPeaksApp, url: str, countdown: int = 0
) -> TestClient:
    """Create a practice room, let a rival join, get ready (space) and start (s)."""
    code = await create_practice_room(pilot, app, countdown=countdown)
    rival = await join_and_ready(url, code)
    await until(pilot, lambda: member_count(app) == 2)
    await pilot.press("space")
    await until(pilot, lambda: all_ready(app))
    await pilot.press("s")
    await until(pilot, lambda: racing(app))
    return rival


async def join_and_ready(url: str, code: str, name: str = "rival") -> TestClient:
    rival = await connect(url, name)
    await rival.request(m.Join(code), m.RoomState)
    await rival.send(m.Ready(True))
    return rival


async def test_a_host_races_a_second_client_to_the_finish_with_key_presses(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "alice")
        async with app.run_test(size=SIZE) as pilot:
            code = await create_practice_room(pilot, app)
            assert code.replace(" ", "") in text_of(app, "#code").replace(" ", "")
            rival = await join_and_ready(server.ws_url, code)
            await until(pilot, lambda: member_count(app) == 2)
            await pilot.press("space")  # ready
            await until(pilot, lambda: all_ready(app))
            await pilot.pause(0.2)  # let the lobby lay out its new row before clicking
            await pilot.click("#start")
            await until(pilot, lambda: racing(app))
            start = await rival.expect(m.RaceStart, timeout=30)
            # The rival plays one legal move: its bar in our side panel must move.
            bottom = start.view.board[18:]
            await rival.send(m.MoveRequest(1, m.MoveAction.DRAW))
            await until(pilot, lambda: app.client.state.players[rival.player_id].moves >= 1)
            assert "rival" in text_of(app, "#opponent-list")
            del bottom
            await press_line(pilot, winning_line())
            await until(pilot, lambda: app.client.state.my_finish_ms is not None)
            await rival.send(m.Resign())
            await until(pilot, lambda: isinstance(app.screen, ResultsScreen))
            await until(pilot, lambda: standings_rows(app) == 2)
            table = app.screen.query_one("#standings", DataTable)
            rows = [table.get_row_at(i) for i in range(table.row_count)]
            assert rows[0][0] == "1" and "alice" in str(rows[0][1]) and rows[0][2] == "finished"
            assert rows[1][0] == "2" and "rival" in str(rows[1][1])
            summary = text_of(app, "#summary")
            assert "commitment" in summary and "✗" not in summary and "practice" in summary
            await pilot.press("n")
            assert "1/" in text_of(app, "#replay-step")
            await pilot.click("#rematch")
            await until(pilot, lambda: "rematch asked by alice" in text_of(app, "#summary"))
            await rival.send(m.Rematch())
            await until(pilot, lambda: racing(app) and app.client.state.race_over is None)
            board = app.client.state.board
            assert board is not None and board.confirmed.cleared == 0
            await rival.close()


async def test_an_illegal_key_flashes_the_card_and_says_why(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "bob")
        async with app.run_test(size=SIZE) as pilot:
            rival = await start_race(pilot, app, server.ws_url)
            screen = app.screen
            assert isinstance(screen, RaceScreen)
            await pilot.press("q")  # position 0, the left peak's top: covered
            assert screen.flash_position == 0
            assert "still covered" in text_of(app, "#message")
            board = app.client.state.board
            assert board is not None
            shown = board.shown
            misfit = next(p for p in range(18, 28) if shown.fits(shown.peaks[p]) is False)
            await pilot.press(HOTKEYS[misfit])
            assert screen.flash_position == misfit
            assert "not one rank above or below" in text_of(app, "#message")
            assert board.confirmed.moves == 0  # nothing was sent, nothing was counted
            stock = board.confirmed.stock_left
            await pilot.press("space")
            await until(pilot, lambda: board.confirmed.stock_left == stock - 1)
            await pilot.press("u")  # the room's default undo costs a time penalty
            await until(pilot, lambda: board.confirmed.stock_left == stock)
            assert board.confirmed.undos == 1
            await until(pilot, lambda: "undo penalty" in text_of(app, "#clock"))
            await rival.close()


async def test_the_app_reconnects_mid_race_and_keeps_its_progress(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "carol")
        events: list[str] = []
        listener = app.client.listener
        assert listener is not None

        def spy(event: str, detail: object) -> None:
            events.append(event)
            listener(event, detail)

        app.client.listener = spy
        async with app.run_test(size=SIZE) as pilot:
            rival = await start_race(pilot, app, server.ws_url)
            line = winning_line()
            half = len(line) // 2
            await press_line(pilot, line[:half])
            board = app.client.state.board
            assert board is not None
            await until(pilot, lambda: not board.pending)
            cleared = board.confirmed.cleared
            app.client.drop_connection()
            await until(pilot, lambda: "reconnecting" in events)
            await until(pilot, lambda: app.client.state.connection == "online")
            await until(pilot, lambda: "resync" in events)
            assert app.client.state.board is not None
            assert app.client.state.board.confirmed.cleared == cleared
            await press_line(pilot, line[half:])
            await until(pilot, lambda: app.client.state.my_finish_ms is not None)
            await rival.send(m.Resign())
            await until(pilot, lambda: isinstance(app.screen, ResultsScreen))
            await rival.close()


@asynccontextmanager
async def watched_race(
    tmp_path: Path,
) -> AsyncIterator[tuple[TriPeaksApp, Pilot[int], TestClient, TestClient]]:
    """Two players start a practice race while a third client watches it."""
    async with running_server(tmp_path) as server:
        host = await connect(server.ws_url, "hosty")
        options = m.RoomOptions(countdown_s=0, practice_seed=SEED)
        room = await host.request(m.CreateRoom(options), m.RoomState)
        guest = await join_and_ready(server.ws_url, room.code, "guesty")
        app = TriPeaksApp(server.ws_url, "viewer", start="watch", code=room.code)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.client.state.room is not None)
            await host.send(m.Ready(True))
            await until(pilot, lambda: all_ready(app))
            await host.send(m.Start())
            await until(pilot, lambda: isinstance(app.screen, WatchScreen))
            yield app, pilot, host, guest
        await host.close()
        await guest.close()


async def test_the_watch_screen_shows_every_board_and_then_the_results(tmp_path: Path) -> None:
    async with watched_race(tmp_path) as (app, pilot, host, guest):
        await host.expect(m.RaceStart, timeout=30)
        await guest.expect(m.RaceStart, timeout=30)
        await host.send(m.MoveRequest(1, m.MoveAction.DRAW))
        await guest.send(m.MoveRequest(1, m.MoveAction.DRAW))
        await until(
            pilot, lambda: all(p.board is not None for p in app.client.state.players.values())
        )
        await pilot.pause(0.3)
        panels = [str(w.content) for w in app.screen.query(".player").results(Static)]
        assert len(panels) == 2
        assert any("hosty" in p for p in panels) and any("guesty" in p for p in panels)
        await host.send(m.Resign())
        await guest.send(m.Resign())
        await until(pilot, lambda: isinstance(app.screen, ResultsScreen))
        await until(pilot, lambda: standings_rows(app) == 2)


async def test_the_watch_screen_draws_every_board_before_anyone_moves(tmp_path: Path) -> None:
    async with watched_race(tmp_path) as (app, pilot, host, _guest):
        start = await host.expect(m.RaceStart, timeout=30)
        await until(pilot, lambda: app.client.state.race is not None)
        boards = [p.board for p in app.client.state.players.values()]
        assert boards == [start.view, start.view]
        await pilot.pause(0.3)
        panels = [str(w.content) for w in app.screen.query(".player").results(Static)]
        assert len(panels) == 2
        assert not any("no board yet" in panel for panel in panels)


async def test_a_wrong_room_code_is_shown_in_words(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "dave")
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.client.state.connection == "online")
            app.screen.query_one("#code", Input).value = "NOPE99"
            await pilot.click("#join")
            await until(pilot, lambda: app.client.state.last_error)
            assert "no room has" in app.client.state.last_error.lower()
            assert isinstance(app.screen, HomeScreen)


async def test_a_server_that_is_down_is_reported_not_crashed() -> None:
    app = TriPeaksApp("ws://127.0.0.1:9/ws", "erin")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.client.state.connection == "offline")
        assert isinstance(app.screen, HomeScreen)
        assert "offline" in text_of(app, "#connection")


async def test_the_home_screen_lists_public_rooms_and_fills_in_a_chosen_code(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        host = await connect(server.ws_url, "opener")
        options = m.RoomOptions(name="open table", public=True)
        room = await host.request(m.CreateRoom(options), m.RoomState)
        app = TriPeaksApp(server.ws_url, "browser")
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.client.state.connection == "online")
            await pilot.click("#refresh")
            table = app.screen.query_one("#rooms", DataTable)
            await until(pilot, lambda: table.row_count == 1)
            assert "open table" in [str(cell) for cell in table.get_row_at(0)]
            table.focus()
            await pilot.press("enter")
            await until(pilot, lambda: app.screen.query_one("#code", Input).value == room.code)
            await pilot.click("#join")
            await until(pilot, lambda: isinstance(app.screen, LobbyScreen))
        await host.close()


async def test_the_countdown_shows_and_resigning_takes_a_second_press(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "frank")
        async with app.run_test(size=SIZE) as pilot:
            code = await create_practice_room(pilot, app, countdown=2)
            rival = await join_and_ready(server.ws_url, code)
            await until(pilot, lambda: member_count(app) == 2)
            await pilot.press("space")
            await until(pilot, lambda: all_ready(app))
            await pilot.press("s")
            await until(pilot, lambda: isinstance(app.screen, RaceScreen))
            await until(pilot, lambda: app.screen.query_one("#countdown", Digits).display)
            await until(pilot, lambda: racing(app) and app.client.state.phase is m.Phase.RACING)
            await pilot.press("r")
            assert "press r again" in text_of(app, "#message")
            await pilot.press("r")
            assert "you resigned" in text_of(app, "#message")
            await until(
                pilot,
                lambda: (
                    app.client.state.players[app.client.state.player_id or ""].status == "resigned"
                ),
            )
            await rival.close()


async def test_host_and_join_shortcuts_open_the_lobby_directly(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        options = m.RoomOptions(name="shortcut room", practice_seed="via-cli")
        host_app = TriPeaksApp(server.ws_url, "hoster", start="host", options=options)
        async with host_app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(host_app.screen, LobbyScreen))
            await until(pilot, lambda: "shortcut room" in shown(host_app, "#options"))
            assert "via-cli" in text_of(host_app, "#options")
            room = host_app.client.state.room
            assert room is not None
            join_app = TriPeaksApp(server.ws_url, "joiner", start="join", code=room.code)
            joiner = asyncio.create_task(_join_and_look(join_app))
            await until(pilot, lambda: member_count(host_app) == 2)
            assert await joiner == room.code


async def _join_and_look(app: TriPeaksApp) -> str:
    async with app.run_test(size=SIZE) as pilot:
        # The screen is up before it has mounted and shown the room: wait for its code too.
        await until(pilot, lambda: isinstance(app.screen, LobbyScreen) and member_count(app) == 2
                    and shown(app, "#code").strip() != "")
        return text_of(app, "#code").replace(" ", "")
