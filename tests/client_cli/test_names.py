"""The name a terminal client races under: ``--name``, the name saved on the first run, or
the login name, and saying so; a name taken in the room is said too (real server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Input, Static

from client_cli.names import (
    LOGIN,
    OPTION,
    SAVED,
    BadName,
    check_name,
    choose_name,
    config_file,
    login_name,
    save_name,
)
from client_cli.tui.app import TriPeaksApp
from client_cli.tui.name import NameScreen
from tests.client_cli.test_plain import PlainProcess
from tests.client_cli.tui.test_app import SIZE, until
from tests.serverutil import running_server


def test_the_config_file_lives_in_the_user_config_directory(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert config_file() == tmp_path / "tripeaks" / "client.json"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert config_file() == Path.home() / ".config" / "tripeaks" / "client.json"


def test_with_nothing_saved_the_login_name_is_offered_and_the_app_asks() -> None:
    choice = choose_name(None)
    assert (choice.name, choice.source, choice.ask) == (login_name(), LOGIN, True)
    assert "login name" in choice.explained() and "--name" in choice.explained()
    assert not config_file().exists()  # offering a name saves nothing


def test_a_saved_name_is_used_on_later_runs_and_name_wins_for_one_run() -> None:
    path = save_name("  alice  ")
    assert json.loads(path.read_text()) == {"name": "alice"}
    choice = choose_name(None)
    assert (choice.name, choice.source, choice.ask) == ("alice", SAVED, False)
    assert str(path) in choice.explained()
    once = choose_name("bob")
    assert (once.name, once.source) == ("bob", OPTION)
    assert choose_name(None).name == "alice"  # --name is not saved


def test_saving_keeps_the_other_settings_and_leaves_no_temporary_file() -> None:
    path = config_file()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"name": "old", "theme": "dark"}))
    save_name("new")
    assert json.loads(path.read_text()) == {"name": "new", "theme": "dark"}
    assert [p.name for p in path.parent.iterdir()] == ["client.json"]


@pytest.mark.parametrize(
    "text", ["{not json", '{"name": ""}', '{"name": 7}', '{"name": "a\\u0007"}']
)
def test_a_broken_name_file_is_said_left_alone_and_the_login_name_used(text: str) -> None:
    path = config_file()
    path.parent.mkdir(parents=True)
    path.write_text(text)
    choice = choose_name(None)
    assert (choice.name, choice.source) == (login_name(), LOGIN)
    assert str(path) in choice.warning and "delete it" in choice.warning
    assert path.read_text() == text


@pytest.mark.parametrize(
    ("text", "why"),
    [("", "at least one"), ("   ", "at least one"), ("x" * 25, "at most 24"),
     ("tab\there", "printable")],
)
def test_a_name_the_server_would_refuse_is_explained(text: str, why: str) -> None:
    with pytest.raises(BadName, match=why):
        check_name(text)
    with pytest.raises(BadName, match=why):
        choose_name(text)


def test_a_bad_name_option_stops_the_client_with_the_reason() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "client_cli", "play", "--plain", "--name", "y" * 30],
        capture_output=True, text=True, timeout=60, env=os.environ.copy(), check=False,
    )
    assert done.returncode == 2
    assert "error: a name has at most 24 characters" in done.stderr


def test_a_name_file_that_cannot_be_written_is_an_error_in_words(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(blocker))  # a file where a directory must go
    with pytest.raises(BadName, match="cannot save the name in"):
        save_name("alice")


# ---- plain mode says which name, and a name already taken -----------------------
async def test_plain_mode_says_which_name_it_used_and_why(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        plain = await PlainProcess.start("--server", server.ws_url)
        line = await plain.wait_for("connected as ")
        assert line.startswith(f"connected as {login_name()} (your login name;")
        assert "--name NAME" in line
        assert await plain.finish() == 0
        save_name("carol")
        plain = await PlainProcess.start("--server", server.ws_url)
        line = await plain.wait_for("connected as ")
        assert line.startswith(f"connected as carol (your saved name, in {config_file()})")
        assert await plain.finish() == 0


async def test_two_friends_with_one_name_are_told_who_is_who(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        first = await PlainProcess.start("--server", server.ws_url)
        await first.wait_for("connected as")
        await first.send("host")
        code = (await first.wait_for("room ")).split()[1]
        second = await PlainProcess.start("--server", server.ws_url)
        await second.wait_for("connected as")
        await second.send(f"join {code}")
        told = await second.wait_for("another player in this room is called")
        assert f"called {login_name()}: you are seated as {login_name()} (2)" in told
        assert "--name NAME" in told
        await first.wait_for(f"{login_name()} (2)")  # the host sees both, told apart
        assert not any("another player" in line for line in first.lines)
        assert await second.finish() == 0
        assert await first.finish() == 0


# ---- the full-screen app asks once ------------------------------------------------
async def test_the_first_full_screen_run_asks_for_a_name_and_saves_it(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, login_name(), ask_name=True)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, NameScreen))
            field = app.screen.query_one("#name-input", Input)
            assert field.value == login_name()
            assert app.client.state.connection != "online"  # nothing sent before the answer
            field.value = ""
            await pilot.press("enter")
            problem = str(app.screen.query_one("#name-problem", Static).content)
            assert "at least one character" in problem
            assert isinstance(app.screen, NameScreen)
            for key in "dora":
                await pilot.press(key)
            await pilot.press("enter")
            await until(pilot, lambda: app.client.state.connection == "online")
            assert app.client.state.name == "dora"
        assert choose_name(None).name == "dora"

        again = TriPeaksApp(server.ws_url, "dora", ask_name=choose_name(None).ask)
        async with again.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: again.client.state.connection == "online")
            assert not isinstance(again.screen, NameScreen)


async def test_escape_races_under_the_offered_name_once_and_saves_nothing(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        app = TriPeaksApp(server.ws_url, "offered", ask_name=True)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, NameScreen))
            await pilot.press("escape")
            await until(pilot, lambda: app.client.state.connection == "online")
            assert app.client.state.name == "offered"
        assert not config_file().exists()
