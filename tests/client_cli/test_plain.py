"""``tripeaks play --plain`` through pipes, against a real server."""

from __future__ import annotations

import asyncio
import io
import os
import sys
from pathlib import Path

import pytest

from client_cli.plain import PlainUI, parse_play, parse_room_options
from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import DRAW, Rules
from protocol.wire import messages as m
from tests.serverutil import connect, running_server

SEED = "plain-pipe-1"


class PlainProcess:
    """The plain client in a subprocess, talked to through its stdin and stdout pipes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []

    @classmethod
    async def start(cls, *args: str, command: tuple[str, ...] = ("play",)) -> PlainProcess:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "client_cli", *command, "--plain", *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        return cls(process)

    async def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((line + "\n").encode())
        await self.process.stdin.drain()

    async def wait_for(self, text: str, timeout: float = 30.0) -> str:
        """Read lines until one contains ``text``; return it."""
        assert self.process.stdout is not None
        try:
            async with asyncio.timeout(timeout):
                while True:
                    raw = await self.process.stdout.readline()
                    if not raw:
                        raise AssertionError(f"output ended before {text!r}: {self.lines[-15:]}")
                    line = raw.decode().rstrip("\n")
                    self.lines.append(line)
                    if text in line:
                        return line
        except TimeoutError:
            raise AssertionError(f"no {text!r} in time; last lines: {self.lines[-15:]}") from None

    async def finish(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return await asyncio.wait_for(self.process.wait(), 30)


async def test_plain_mode_hosts_races_and_verifies_through_a_pipe(tmp_path: Path) -> None:
    line = deal_for_seed(SEED, Rules()).solution
    async with running_server(tmp_path) as server:
        plain = await PlainProcess.start("--server", server.ws_url, "--name", "piper")
        await plain.wait_for("connected as piper")
        await plain.send(f"host seed={SEED} countdown=0 undo=free")
        room_line = await plain.wait_for("room ")
        code = room_line.split()[1]
        rival = await connect(server.ws_url, "rival")
        await rival.request(m.Join(code), m.RoomState)
        await rival.send(m.Ready(True))
        await plain.send("ready")
        await plain.wait_for("rival (ready, guest)")
        await plain.wait_for("piper (host, ready, guest)")
        await plain.send("start")
        await plain.wait_for("race started")
        await plain.wait_for("free: ")
        await plain.send("p 0")
        await plain.wait_for("refused: that card is still covered")
        for step in line:
            await plain.send("d" if step == DRAW else f"p {step}")
        await plain.wait_for("piper finished #1")
        await rival.send(m.Resign())
        await plain.wait_for("race over")
        checks = await plain.wait_for("checks:")
        assert "✗" not in checks
        await plain.send("replay")
        await plain.wait_for(" 1. ")
        await plain.send("quit")
        assert await plain.finish() == 0
        await rival.close()


async def test_plain_mode_joins_by_code_and_says_when_the_code_is_wrong(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        plain = await PlainProcess.start("--server", server.ws_url, "--name", "joiner")
        await plain.wait_for("connected as joiner")
        await plain.send("join NOPE77")
        error = await plain.wait_for("error:")
        assert "no room has" in error.lower()
        await plain.send("frobnicate")
        await plain.wait_for("unknown command")
        assert await plain.finish() == 0


async def test_a_plain_watcher_with_no_input_watches_to_the_end(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        host = await connect(server.ws_url, "hosty")
        room = await host.request(m.CreateRoom(m.RoomOptions(countdown_s=0)), m.RoomState)
        guest = await connect(server.ws_url, "guesty")
        await guest.request(m.Join(room.code), m.RoomState)
        await guest.send(m.Ready(True))
        watcher = await PlainProcess.start(
            "--server", server.ws_url, "--name", "eyes", command=("watch", room.code)
        )
        await watcher.wait_for("watching")
        assert watcher.process.stdin is not None
        watcher.process.stdin.close()  # nothing more to say: it must keep watching
        await asyncio.sleep(0.5)  # the end of input reaches the watcher while the room waits
        await host.send(m.Ready(True))
        await host.send(m.Start())
        await host.expect(m.RaceStart, timeout=30)
        await host.send(m.MoveRequest(1, m.MoveAction.DRAW))
        await watcher.wait_for("hosty: 0/28 cleared")
        await host.send(m.Resign())
        await guest.send(m.Resign())
        await watcher.wait_for("race over")
        await watcher.wait_for("checks:")
        assert await asyncio.wait_for(watcher.process.wait(), 30) == 0
        await host.close()
        await guest.close()


async def test_plain_mode_reports_a_server_that_is_down() -> None:
    plain = await PlainProcess.start("--server", "ws://127.0.0.1:9/ws", "--name", "x")
    await plain.wait_for("error: cannot connect")
    assert await plain.finish() == 1


def test_room_options_are_read_from_words() -> None:
    options = parse_room_options(["seed=abc", "undo=off", "wrap=off", "max=4", "public"])
    assert options.practice_seed == "abc" and options.undo is m.UndoPolicy.OFF
    assert not options.wrap and options.max_players == 4 and options.public


@pytest.mark.parametrize("word", ["colour=red", "max=many", "undo=sometimes"])
def test_a_bad_room_option_is_named_in_the_error(word: str) -> None:
    with pytest.raises(ValueError, match="not a room option"):
        parse_room_options([word])


@pytest.mark.parametrize(("text", "message"), [("28", "no such position"), ("XX", "neither")])
def test_a_bad_play_argument_is_explained(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_play(text)


async def test_help_lists_the_race_commands() -> None:
    out = io.StringIO()
    from client_cli.client import GameClient

    ui = PlainUI(GameClient("ws://127.0.0.1:9/ws", "h"), out)
    await ui.command("help")
    assert "p POSITION" in out.getvalue() and "u (undo)" in out.getvalue()
