"""Record a short race on a real server, every frame both ways, in both encodings.

``tests/data/race_transcript.json`` (protocol version 2) and
``tests/data/race_transcript_v1.json`` (the same race on version 1) are what
this records; a client author can replay them offline (docs/protocol.md, "A
recorded race").  Regenerate them with::

    python -m tests.docs.transcript

and ``tests/docs/test_transcript.py`` records the race again on every run and
fails when the two differ in anything but what legitimately varies (see
:func:`normalised`).  The race is played in lock step, each action only after
the frames it causes have arrived, on a server whose progress interval is
longer than the race, so each connection's frames come in one order only.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from protocol.wire import codec
from protocol.wire import messages as m
from tests.server.test_race import SEED, dealt
from tests.serverutil import TestClient, connect, move_request, running_server

DATA = Path(__file__).resolve().parents[1] / "data"
#: The transcript file of each protocol version.
PATHS = {m.PROTOCOL_VERSION: DATA / "race_transcript.json", 1: DATA / "race_transcript_v1.json"}
PATH = PATHS[m.PROTOCOL_VERSION]
COMMAND = "python -m tests.docs.transcript"
#: One progress interval (100 s) outlasts the race: exactly one ``progress`` shows.
SETTINGS: dict[str, Any] = {"progress_hz": 0.01}
OPTIONS = m.RoomOptions(name="Transcript race", practice_seed=SEED, countdown_s=1)

#: Values that differ from run to run: ids and tokens (numbered in order of first
#: appearance, so the same id stays the same placeholder) and clock readings.
IDS = frozenset({"player_id", "host_id", "token", "race_id", "code"})
TIMES = frozenset({"server_time_ms", "started_at_ms", "start_at_ms", "elapsed_ms", "time_ms"})
VERSION_FIELDS = frozenset({"server_version"})

#: (connection, "client" or "server", raw frame) in the order each connection saw them.
Log = list[tuple[str, str, bytes | str]]


class Tap:
    """Stands in for a client's socket and logs every data frame that passes."""

    def __init__(self, ws: Any, who: str, log: Log) -> None:
        self.ws, self.who, self.log = ws, who, log

    async def send(self, frame: bytes | str) -> None:
        self.log.append((self.who, "client", frame))
        await self.ws.send(frame)

    async def recv(self) -> bytes | str:
        frame: bytes | str = await self.ws.recv()
        self.log.append((self.who, "server", frame))
        return frame

    async def close(self) -> None:
        await self.ws.close()


async def tapped(ws_url: str, who: str, encoding: str, log: Log) -> TestClient:
    client = await connect(ws_url, who, encoding=encoding, hello=False)
    client.ws = Tap(client.ws, who, log)  # type: ignore[assignment]
    hello = m.Hello(name=who, version=client.encoding.version)
    client.welcome = await client.request(hello, m.Welcome)
    return client


async def take(client: TestClient, *kinds: type) -> list[m.ServerMessage]:
    """The next frames, which must be of ``kinds`` in this order (lock step)."""
    got = [await client.recv() for _ in kinds]
    assert [type(g) for g in got] == list(kinds), got
    return got


async def short_race(ws_url: str, encoding: str) -> Log:
    """Ann hosts, Bob joins; Ann wins the practice deal while Bob resigns; both leave."""
    log: Log = []
    ann = await tapped(ws_url, "ann", encoding, log)
    await ann.send(m.Ping(1_700_000_000_000))
    await take(ann, m.Pong)
    await ann.send(m.CreateRoom(OPTIONS))
    state = (await take(ann, m.RoomState))[0]
    assert isinstance(state, m.RoomState)
    bob = await tapped(ws_url, "bob", encoding, log)
    for message in (m.Join(state.code), m.Ready(True)):
        await bob.send(message)
        await take(bob, m.RoomState)
        await take(ann, m.RoomState)
    await bob.send(m.Start())  # only the host starts
    await take(bob, m.Error)
    await ann.send(m.Start())
    for client in (ann, bob):
        await take(client, m.RoomState, m.Countdown, m.RoomState, m.RaceStart)
    line = dealt().solution
    await ann.send(move_request(1, line[0]))
    await take(ann, m.MoveResult, m.Progress)  # the first change is shown at once
    await take(bob, m.Progress)
    await ann.send(m.MoveRequest(2, m.MoveAction.PLAY, 0))  # not free: refused
    await take(ann, m.MoveResult)
    await bob.send(m.Sync())
    await take(bob, m.RoomState, m.Resync)
    for seq, step in enumerate(line[1:], 3):
        await ann.send(move_request(seq, step))
        await take(ann, m.MoveResult)
    await take(ann, m.Finish)
    await take(bob, m.Finish)
    await bob.send(m.Resign())
    for client in (bob, ann):
        await take(client, m.RaceOver, m.RoomState)
    await ann.send(m.Leave())
    await take(ann, m.Left)
    await take(bob, m.RoomState)
    await bob.send(m.Leave())
    await take(bob, m.Left)
    await ann.close()
    await bob.close()
    return log


def as_entries(log: Log) -> dict[str, list[dict[str, str]]]:
    """The log per connection, each frame as JSON text or msgpack hex."""
    out: dict[str, list[dict[str, str]]] = {}
    for who, side, frame in log:
        entry = {"from": side}
        if isinstance(frame, str):
            entry["json"] = frame
        else:
            entry["msgpack"] = frame.hex()
        out.setdefault(who, []).append(entry)
    return out


async def record(version: int = m.PROTOCOL_VERSION) -> dict[str, Any]:
    """The whole transcript document of protocol ``version``: the race once per encoding,
    each on a fresh server."""
    transcripts = {}
    suffix = "" if version == m.PROTOCOL_VERSION else f".v{version}"
    for encoding in ("msgpack", "json"):
        with tempfile.TemporaryDirectory() as tmp:
            async with running_server(tmp, **SETTINGS) as server:
                race = await short_race(server.ws_url, encoding + suffix)
                transcripts[encoding] = as_entries(race)
    return {
        "about": "Every frame of a short race, both ways, as each connection saw it, "
        "recorded from a real server; see docs/protocol.md, 'A recorded race'.",
        "protocol_version": version,
        "subprotocols": [f"tripeaks.v{version}.msgpack", f"tripeaks.v{version}.json"],
        "regenerate": COMMAND,
        "server_settings": SETTINGS,
        "varies": {
            "ids and tokens": sorted(IDS),
            "clock readings": sorted(TIMES),
            "software version": sorted(VERSION_FIELDS),
        },
        "transcripts": transcripts,
    }


def frame_map(entry: dict[str, str]) -> dict[str, Any]:
    """The decoded map of one transcript entry (either encoding)."""
    if "json" in entry:
        return codec.parse_frame(entry["json"], "json", codec.MAX_SERVER_FRAME)
    return codec.parse_frame(bytes.fromhex(entry["msgpack"]), "msgpack", codec.MAX_SERVER_FRAME)


def normalised(doc: dict[str, Any], encoding: str) -> dict[str, list[Any]]:
    """One encoding's transcript as decoded maps, with what varies replaced by placeholders."""
    names: dict[object, str] = {}

    def walk(value: Any, key: str | None) -> Any:
        if isinstance(value, dict):
            return [(k, walk(v, k)) for k, v in value.items()]  # key order is kept
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if key in IDS and value is not None:
            return names.setdefault(value, f"<{key} {len(names) + 1}>")
        if key in TIMES:
            assert isinstance(value, int) and not isinstance(value, bool), (key, value)
            return "<ms>"
        if key in VERSION_FIELDS:
            return "<version>"
        return value

    return {
        who: [(entry["from"], walk(frame_map(entry), None)) for entry in entries]
        for who, entries in doc["transcripts"][encoding].items()
    }


def main() -> None:
    for version, path in PATHS.items():
        doc = asyncio.run(record(version))
        path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
