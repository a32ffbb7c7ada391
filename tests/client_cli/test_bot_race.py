"""Bots race end to end against a real server, and never play a card they were not shown."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgpack
import pytest

from client_cli.bot import BotSettings, run_bots
from client_cli.keys import new_key
from protocol.rules.cards import ALL_CODES
from protocol.rules.game import Deal, Game, Rules
from protocol.wire import messages as m
from tests.serverutil import connect, running_server

QUICK = m.RoomOptions(countdown_s=0, undo=m.UndoPolicy.FREE)
CARD_CODES = frozenset(ALL_CODES)
CODE_IN_TEXT = re.compile(r"\b[A2-9TJQK][CDHS]\b")


def codes_in(value: Any) -> set[str]:
    """Every card code anywhere in a decoded frame (inside error texts too)."""
    if isinstance(value, str):
        return set(CODE_IN_TEXT.findall(value)) if len(value) > 2 else (
            {value} if value in CARD_CODES else set()
        )
    if isinstance(value, dict):
        return set().union(*(codes_in(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(codes_in(v) for v in value)) if value else set()
    return set()


def audit(frames: list[tuple[str, bytes]]) -> int:
    """Check one bot's frames against the deal revealed at the end; return plays checked.

    No received frame names a card before this player has seen it, and every
    play the bot sent was of a card face up on its board at that moment.
    """
    events = [(direction, msgpack.unpackb(frame)) for direction, frame in frames]
    over = next(w for d, w in events if d == "received" and w["t"] == "race_over")
    rules = Rules(wrap=over["wrap"], empty_waste=over["empty_waste"])
    deal_codes = over["deal"]
    deal = Deal.from_codes(rules, deal_codes["peaks"], deal_codes["waste"], deal_codes["stock"])
    game = Game(deal)
    seen = set()
    plays = 0

    def look() -> None:
        for p in range(28):
            if game.is_face_up(p):
                seen.add(ALL_CODES[deal.peaks[p]])
        if game.waste_top is not None:
            seen.add(ALL_CODES[game.waste_top])

    look()
    for direction, wire in events:
        if wire is over:
            break
        if direction == "sent":
            if wire["t"] == "move" and wire["action"] == "play":
                position = wire["position"]
                assert game.is_face_up(position) and not game.is_removed(position)
                plays += 1
            continue
        if wire["t"] == "move_result" and wire["accepted"]:
            if wire["action"] == "play":
                game.play(wire["position"])
            elif wire["action"] == "draw":
                game.draw()
            else:
                game.undo()
            look()
        leaked = codes_in(wire) - seen
        assert not leaked, f"{wire['t']} named cards not yet shown: {sorted(leaked)}"
    return plays


async def test_a_room_of_bots_races_to_the_end_with_ranks_and_bot_labels(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        results = await run_bots(server.ws_url, 3, host=True, options=QUICK)
    assert results.ok, results.errors
    assert results.room and results.race_over is not None
    assert sorted(b.rank for b in results.bots if b.rank is not None) == [1, 2, 3]
    assert all(b.status in ("finished", "stuck", "resigned") for b in results.bots)
    assert all(s.bot for s in results.race_over.standings)
    assert results.start_latency_s is not None


async def test_bots_never_play_or_receive_a_card_before_it_is_shown(tmp_path: Path) -> None:
    frames: dict[str, list[tuple[str, bytes]]] = defaultdict(list)
    settings = BotSettings(on_frame=lambda name, d, f: frames[name].append((d, f)))
    async with running_server(tmp_path) as server:
        results = await run_bots(
            server.ws_url, 4, host=True, strategy="lookahead", options=QUICK, settings=settings
        )
    assert results.ok, results.errors
    assert sum(audit(bot_frames) for bot_frames in frames.values()) > 4


async def test_bots_join_a_room_a_human_hosts(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        host = await connect(server.ws_url, "human")
        room = await host.request(m.CreateRoom(QUICK), m.RoomState)
        bots = asyncio.create_task(run_bots(server.ws_url, 2, room=room.code, pace=50.0))
        await host.send(m.Ready(True))
        while True:
            state = await host.expect(m.RoomState)
            host.drop_unread()
            if len(state.members) == 3 and all(x.ready for x in state.members):
                break
        await host.send(m.Start())
        await host.expect(m.RaceStart, timeout=30)
        await host.send(m.Resign())
        results = await asyncio.wait_for(bots, 120)
        await host.close()
    assert results.ok, results.errors
    assert {b.status for b in results.bots} <= {"finished", "stuck", "resigned"}
    assert results.race_over is not None and len(results.race_over.standings) == 3


async def test_bots_without_undo_play_on_until_stuck_or_done(tmp_path: Path) -> None:
    options = m.RoomOptions(countdown_s=0, undo=m.UndoPolicy.OFF, practice_seed="bots-no-undo")
    async with running_server(tmp_path) as server:
        results = await run_bots(server.ws_url, 2, host=True, options=options)
    assert results.ok, results.errors
    assert all(b.undos == 0 for b in results.bots)
    assert results.race_over is not None and results.race_over.practice


async def test_an_unknown_room_code_is_reported_in_words(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        results = await run_bots(server.ws_url, 2, room="ZZZZZZ")
    assert not results.ok
    assert all("no room has" in (b.error or "").lower() for b in results.bots)


async def test_a_server_that_is_not_there_is_reported_in_words() -> None:
    results = await run_bots("ws://127.0.0.1:9/ws", 1, host=True)
    assert not results.ok
    assert "cannot connect" in (results.bots[0].error or "")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"host": True, "room": "ABCDEF"}, "exactly one"),
        ({"host": True, "pace": 0.0}, "pace"),
        ({"host": True, "strategy": "random"}, "unknown strategy"),
    ],
)
async def test_bad_bot_arguments_are_refused_before_connecting(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        await run_bots("ws://127.0.0.1:9/ws", 1, **kwargs)


async def run_cli(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "client_cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_the_bot_command_hosts_races_and_exits_zero(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        status, out, err = await run_cli(
            "bot", "--server", server.ws_url, "--host", "--count", "2", "--countdown", "0",
            "--strategy", "lookahead", "--pace", "0", "--lobby", "0", "--races", "1",
        )
    assert status == 0, err
    assert "room code: " in out
    assert "commitment" in out and "✔" in out


async def test_the_bot_command_exits_non_zero_with_the_reason(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        status, _, err = await run_cli("bot", "--server", server.ws_url, "--room", "QQQQQQ")
    assert status == 1
    assert "could not be completed" in err and "no room has" in err.lower()


async def test_bots_send_again_what_the_server_refused_for_lack_of_credit(
    tmp_path: Path,
) -> None:
    """A refused hello, create, join or ready was not handled: the bot sends it again."""
    refusals: list[str] = []

    def on_frame(name: str, direction: str, frame: bytes) -> None:
        message = msgpack.unpackb(frame)
        if direction == "received" and message["t"] == "error" and message["code"] == 114:
            refusals.append(message.get("ref") or "")

    settings = BotSettings(on_frame=on_frame)
    # The race ends after 2 s: at half a credit a second the bots could not finish it.
    options = m.RoomOptions(countdown_s=0, undo=m.UndoPolicy.OFF, time_limit_s=2)
    # A credit of 2 refilled every 2 s: a bot's hello and join (or create) spend it,
    # and its ready, sent at once after the answer, finds none however slow the
    # machine (within 2 s).  The bots' resends every 0.25 s stay under the abuse rule.
    async with running_server(
        tmp_path, player_burst=2, player_rate=0.5, abuse_strikes=1000
    ) as server:
        async with asyncio.timeout(60):
            results = await run_bots(server.ws_url, 2, host=True, options=options,
                                     settings=settings)
    assert results.ok, results.errors
    assert refusals.count("ready") >= 2, refusals


async def test_a_host_bot_starts_without_a_bot_that_never_reached_the_room(
    tmp_path: Path,
) -> None:
    """A bot that fails on its way in sends the host nothing: the host must not wait for it."""
    async with running_server(tmp_path) as server:
        # Someone else claims "bot3": that bot's hello is refused before it joins.
        owner = await connect(server.ws_url, hello=False)
        await owner.send(m.Hello(name="bot3", version=m.PROTOCOL_VERSION, key=new_key()))
        assert isinstance(await owner.recv(), m.Welcome)
        await owner.close()
        async with asyncio.timeout(30):
            results = await run_bots(server.ws_url, 3, host=True, options=QUICK)
    assert results.race_over is not None and not results.ok
    assert [b.name for b in results.bots if b.error] == ["bot3"]
    assert "claimed" in (results.bots[2].error or "")
    assert sorted(s.name for s in results.race_over.standings) == ["bot1", "bot2"]


async def test_a_hundred_and_twenty_eight_bots_race_in_one_process(tmp_path: Path) -> None:
    options = m.RoomOptions(countdown_s=0, undo=m.UndoPolicy.OFF, max_players=16)
    last: dict[str, str] = {}
    settings = BotSettings(on_event=lambda name, event, detail: last.__setitem__(
        name, f"{event} {detail}"))
    async with running_server(tmp_path) as server:
        try:
            async with asyncio.timeout(150):
                rooms = await asyncio.gather(*(
                    run_bots(server.ws_url, 16, host=True, options=options, settings=settings)
                    for _ in range(8)
                ))
        except TimeoutError:
            pytest.fail(f"the bots never finished; each bot's last event: {last}")
    assert all(r.ok for r in rooms), [e for r in rooms for e in r.errors]
    assert len({r.room for r in rooms}) == 8
    assert sum(len(r.bots) for r in rooms) == 128
