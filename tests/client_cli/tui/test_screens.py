"""The screens at the sizes people use: 80×24 works, smaller says so; panels, keys, fields."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Digits, Footer, Input, Static

from client_cli.results import par_text, replay_steps
from client_cli.state import Opponent, by_standing
from client_cli.tui.app import TriPeaksApp
from client_cli.tui.base import progress_bar
from client_cli.tui.home import HomeScreen, MarkedCheckbox
from client_cli.tui.lobby import LobbyScreen
from client_cli.tui.race import RaceScreen, opponent_lines
from client_cli.tui.results import ResultsScreen
from client_cli.tui.watch import watch_panel
from protocol.rules.game import Rules
from protocol.wire import messages as m
from tests.client_cli.tui.test_app import (
    SEED,
    create_practice_room,
    join_and_ready,
    member_count,
    racing,
    start_race,
    text_of,
    until,
)
from tests.server.test_players import hello, new_key
from tests.serverutil import connect, running_server

SMALL = (80, 24)


def inside(app: TriPeaksApp, selector: str) -> bool:
    region = app.screen.query_one(selector).region
    width, height = app.size
    return region.width > 0 and region.right <= width and region.bottom <= height


async def test_home_fits_in_80_by_24(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "kim")
        async with app.run_test(size=SMALL) as pilot:
            await until(pilot, lambda: app.client.state.connection == "online")
            await pilot.pause(0.2)
            assert not app.screen.query_one("#too-small").display
            for selector in ("#code", "#join", "#watch", "#create"):
                assert inside(app, selector), selector
            assert app.screen.query(Footer)


async def test_the_race_screen_fits_in_80_by_24_with_unwrapped_bars(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "lee")
        async with app.run_test(size=SMALL) as pilot:
            rival = await start_race(pilot, app, server.ws_url)
            await pilot.pause(0.3)
            for selector in ("#board", "#keys", "#opponents", "#clock"):
                assert inside(app, selector), selector
            panel = app.screen.query_one("#opponents")
            lines = text_of(app, "#opponent-list").splitlines()
            assert lines and all(len(line) <= panel.content_size.width for line in lines)
            await rival.close()


async def test_a_terminal_below_80_by_24_is_told_the_minimum() -> None:
    app = TriPeaksApp("ws://127.0.0.1:9/ws", "max")
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause(0.3)
        note = app.screen.query_one("#too-small", Static)
        assert note.display
        assert "at least 80×24" in str(note.content)
        await pilot.resize_terminal(100, 30)
        await pilot.pause(0.3)
        assert not app.screen.query_one("#too-small").display


def test_opponents_are_listed_by_standing_and_one_card_short_does_not_look_full() -> None:
    slow = Opponent("a", "slow", cleared=10, moves=30)
    close = Opponent("b", "close", cleared=27, moves=50)
    winner = Opponent("c", "winner", cleared=28, finish_ms=60_000, rank=1)
    assert [p.name for p in by_standing([slow, close, winner])] == ["winner", "close", "slow"]
    assert "░" in str(progress_bar(27)) and "░" not in str(progress_bar(28))


def test_equal_counts_are_ranked_by_who_reached_them_first_then_fewer_moves() -> None:
    late = Opponent("a", "late", cleared=12, cleared_at_ms=9_000, moves=20)
    early = Opponent("b", "early", cleared=12, cleared_at_ms=4_000, moves=40)
    lean = Opponent("c", "lean", cleared=12, cleared_at_ms=4_000, moves=35)
    assert [p.name for p in by_standing([late, early, lean])] == ["lean", "early", "late"]


async def test_the_race_header_keeps_the_counts_with_an_undo_penalty_at_120_columns(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "mo")
        async with app.run_test(size=(120, 40)) as pilot:
            rival = await start_race(pilot, app, server.ws_url)
            board = app.client.state.board
            assert board is not None
            await pilot.press("space")
            await until(pilot, lambda: board.confirmed.moves == 1)
            await pilot.press("u")
            await until(pilot, lambda: "undo penalty" in text_of(app, "#clock"))
            clock_widget = app.screen.query_one("#clock")
            lines = text_of(app, "#clock").splitlines()
            assert all(len(line) <= clock_widget.content_size.width for line in lines), lines
            assert "moves 1" in text_of(app, "#clock") and "undos 1" in text_of(app, "#clock")
            await rival.close()


async def test_checkboxes_show_their_state_without_colour_and_fields_keep_text_on_focus(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "ned")
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.client.state.connection == "online")
            public = app.screen.query_one("#opt-public", MarkedCheckbox)
            assert "✔" not in str(public.render())
            public.value = True
            await pilot.pause(0.1)
            assert "✔" in str(public.render())
            field = app.screen.query_one("#opt-max", Input)
            app.screen.query_one("#opt-public").focus()
            await pilot.press("tab")
            await pilot.pause(0.1)
            assert app.focused is field
            await pilot.press("6")
            assert field.value.startswith("8") and field.value != "6"


async def test_ctrl_c_quits_without_a_prompt(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "oz")
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.client.state.connection == "online")
            await pilot.press("ctrl+c")
            await pilot.pause(0.3)
        assert app.return_value == 0


async def test_results_explain_par_and_name_cards_as_the_board_does(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        host = await connect(server.ws_url, "pia")
        room = await host.request(
            m.CreateRoom(m.RoomOptions(countdown_s=0, practice_seed=SEED)), m.RoomState
        )
        await host.send(m.Start())
        await host.expect(m.RaceStart)
        await host.send(m.Resign())
        over = await host.expect(m.RaceOver)
        await host.close()
    assert "fewest draws" in par_text(over)
    steps = replay_steps(over)
    assert any(glyph in steps[0] for glyph in "♠♥♦♣"), steps[0]
    assert room.code


async def test_results_have_a_key_footer_with_rematch_and_leave(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "quinn")
        async with app.run_test(size=(120, 40)) as pilot:
            rival = await start_race(pilot, app, server.ws_url)
            await pilot.press("r", "r")
            await rival.expect(m.RaceStart)
            await rival.send(m.Resign())
            await until(pilot, lambda: isinstance(app.screen, ResultsScreen))
            await pilot.pause(0.3)
            bindings = app.screen.active_bindings.values()
            footer_keys = {b.binding.key for b in bindings if b.binding.show}
            assert {"m", "l"} <= footer_keys, footer_keys
            assert app.screen.query(Footer)
            await pilot.press("l")
            await until(pilot, lambda: isinstance(app.screen, HomeScreen))
            await rival.close()


async def test_the_countdown_digits_do_not_overlap_other_text(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "rex")
        async with app.run_test(size=SMALL) as pilot:
            code = await create_practice_room(pilot, app, countdown=3)
            rival = await join_and_ready(server.ws_url, code)
            await until(pilot, lambda: member_count(app) == 2)
            await pilot.press("s")
            await until(pilot, lambda: isinstance(app.screen, RaceScreen))
            await until(pilot, lambda: bool(app.screen.query("#countdown")))  # mounted
            digits = app.screen.query_one("#countdown", Digits)
            await until(pilot, lambda: digits.display and digits.region.height > 0)
            for widget in app.screen.query("#left > *"):
                if widget is not digits and widget.display and widget.region.height:
                    assert not widget.region.overlaps(digits.region), widget.id
            await until(pilot, lambda: racing(app))
            await rival.close()


def test_guests_ghosts_and_bots_are_marked_in_the_race_and_watch_panels() -> None:
    players = [
        Opponent("a", "Ann", guest=False),  # a claimed name: no mark
        Opponent("b", "Bea", guest=True),
        Opponent("c", "Robo", bot=True, guest=True),
        Opponent("ghost-1", "Ann", ghost=True),
    ]
    side = str(opponent_lines(players, "a"))
    assert "Ann (you)\n" in side and "Bea (guest)" in side
    assert "Robo 🤖\n" in side and "👻 ghost" in side
    panels = [str(watch_panel(p, Rules())) for p in players]
    assert panels[0].startswith("Ann  ") and panels[1].startswith("Bea (guest)")
    assert panels[2].startswith("Robo 🤖") and panels[3].startswith("Ann 👻 ghost")


async def test_the_lobby_marks_guests_but_not_a_proved_claimed_name(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "hoster", start="host", options=m.RoomOptions())
        async with app.run_test(size=SMALL) as pilot:
            await until(pilot, lambda: isinstance(app.screen, LobbyScreen))
            room = app.client.state.room
            assert room is not None
            ann, welcome = await hello(server.ws_url, "Ann", new_key())
            assert isinstance(welcome, m.Welcome)
            await ann.request(m.Join(room.code), m.RoomState)
            await until(pilot, lambda: member_count(app) == 2)
            table = app.screen.query_one("#members", DataTable)
            await until(pilot, lambda: table.row_count == 2)
            rows = {str(table.get_row_at(i)[0]): str(table.get_row_at(i)[1]) for i in range(2)}
            assert rows == {"hoster (you)": "host · guest", "Ann": "player"}
            await ann.close()
