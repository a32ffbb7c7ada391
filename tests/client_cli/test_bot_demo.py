"""The README's bot demo gives a person something to race or watch: a public room, a seat
and time to take it, a human pace, bots that differ from each other and stay for rematches."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.request
from collections import defaultdict
from pathlib import Path

from client_cli.bot import BotSettings, run_bots
from protocol.wire import codec
from protocol.wire import messages as m
from tests.serverutil import connect, running_server


def public_codes(http_url: str) -> list[str]:
    with urllib.request.urlopen(http_url + "/api/rooms", timeout=10) as response:
        data = json.loads(response.read())
    rooms = data.get("rooms", data) if isinstance(data, dict) else data
    return [str(room["code"]) for room in rooms]


async def test_the_readme_bot_command_opens_a_public_room_a_person_can_join_and_race(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "client_cli", "bot", "--server", server.ws_url,
            "--host", "--count", "3", "--countdown", "0",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            assert process.stdout is not None
            first = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
            code = first.split("room code:")[1].strip()
            banner = [(await process.stdout.readline()).decode() for _ in range(3)]
            assert f"tripeaks join {code}" in banner[0] and f"/watch/{code}" in banner[1]
            assert code in await asyncio.to_thread(public_codes, server.url)
            person = await connect(server.ws_url, "person")
            room = await person.request(m.Join(code), m.RoomState)
            assert room.phase is m.Phase.LOBBY  # three bots sat, and the lobby is still open
            await person.send(m.Ready(True))
            await person.expect(m.RaceStart, timeout=60)
            await asyncio.sleep(3.0)
            progress = await person.expect(m.Progress, timeout=30)
            bots = [line for line in progress.players if line.player_id != person.player_id]
            assert len(bots) == 3
            # About 1.5 moves a second each (full speed clears a deal in about 2 s).
            assert all(line.moves <= 12 for line in bots), [line.moves for line in bots]
            await person.close()
        finally:
            process.terminate()
            await process.wait()


async def race_frames(url: str, seed: int) -> dict[str, list[object]]:
    """What each of three mixed bots sent in one race on a practice seed."""
    sent: dict[str, list[object]] = defaultdict(list)

    def keep(name: str, direction: str, frame: bytes) -> None:
        if direction == "sent":
            message = codec.decode(frame, "msgpack")
            if isinstance(message, m.MoveRequest):
                sent[name].append((message.action, message.position))

    options = m.RoomOptions(countdown_s=0, practice_seed="demo-1", undo=m.UndoPolicy.OFF)
    results = await run_bots(
        url, 3, host=True, strategy="mixed", options=options,
        settings=BotSettings(seed=seed, on_frame=keep),
    )
    assert results.ok, results.errors
    return dict(sent)


async def test_mixed_bots_play_differently_and_a_seed_repeats_them(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        first = await race_frames(server.ws_url, 7)
        again = await race_frames(server.ws_url, 7)
    assert first == again
    lines = list(first.values())
    assert len(lines) == 3 and len({tuple(line) for line in lines}) == 3


async def test_bots_stay_for_the_rematch(tmp_path: Path) -> None:
    overs: dict[str, int] = defaultdict(int)

    def count(name: str, event: str, detail: str) -> None:
        if event == "race_over":
            overs[name] += 1

    options = m.RoomOptions(countdown_s=0, undo=m.UndoPolicy.OFF)
    async with running_server(tmp_path) as server:
        results = await run_bots(
            server.ws_url, 2, host=True, options=options,
            settings=BotSettings(races=2, on_event=count),
        )
    assert results.ok, results.errors
    assert overs == {"bot1": 2, "bot2": 2}
