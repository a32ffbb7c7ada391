"""A real server speaks protocol versions 1 and 2 at once, each connection its own.

A whole race (players, a spectator, the end, public rooms with the options
version 2 added, guests) is recorded on ``tripeaks.v1.*`` connections and every
frame both ways validated against ``docs/protocol-v1.schema.json``, the version-1
schema as published (the same race on version 2 is ``tests/docs/test_schema.py``).
A ``hello`` of the other version than the subprotocol's is error 21, the late
"saved" note reaches only version 2, and the shipped clients speak version 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import websockets
from websockets.typing import Subprotocol

from client_cli.connection import Connection
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode
from protocol.wire.session import ClientSession
from tests.docs.test_schema import Log, assert_every_frame_fits, race_with_every_message
from tests.server.storage.diskfull import ROOMY, fill, limit_pages
from tests.server.test_ops import LINE, SEED
from tests.serverutil import connect, move_request, running_server

ROOT = Path(__file__).resolve().parents[2]
V1_SCHEMA = ROOT / "docs" / "protocol-v1.schema.json"


@pytest.fixture
def v1_sides() -> dict[str, Any]:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(V1_SCHEMA.read_text(encoding="utf-8"))
    return {
        side: jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{name}"})
        for side, name in (("client", "ClientMessage"), ("server", "ServerMessage"))
    }


async def test_every_frame_of_a_race_on_version_1_is_a_version_1_frame(
    tmp_path: Path, v1_sides: dict[str, Any]
) -> None:
    log: Log = []
    async with running_server(tmp_path) as server:
        board = await race_with_every_message(server.ws_url, log, version=1)
    assert {encoding for _, encoding, _ in log} == {
        codec.Encoding.JSON_V1, codec.Encoding.MSGPACK_V1
    }
    assert_every_frame_fits(log, v1_sides)
    # The spectator's board of a draw the other racer has not seen: version 2 says "??".
    assert board.view.waste_top is None


async def test_the_same_race_on_version_2_is_not_a_version_1_race(
    tmp_path: Path, v1_sides: dict[str, Any]
) -> None:
    log: Log = []
    async with running_server(tmp_path) as server:
        await race_with_every_message(server.ws_url, log)
    with pytest.raises(AssertionError):
        assert_every_frame_fits(log, {"server": v1_sides["server"]})


@pytest.mark.parametrize(
    ("dialect", "version"), [("msgpack", 1), ("json", 1), ("msgpack.v1", 2), ("json.v1", 2)]
)
async def test_a_hello_of_the_other_version_gets_error_21_and_close_4000(
    tmp_path: Path, dialect: str, version: int
) -> None:
    async with running_server(tmp_path) as server:
        ann = await connect(server.ws_url, "ann", encoding=dialect, hello=False)
        await ann.send(m.Hello(name="ann", version=version))
        error = await ann.expect(m.Error)
        assert error.code == ErrorCode.UNSUPPORTED_VERSION and error.ref == "hello"
        assert f"tripeaks.v{version}." in error.message
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                await ann.recv(timeout=10)  # the closing frame, then the close
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == CloseCode.UNSUPPORTED_VERSION
        assert not server.hub.sessions


async def test_the_server_prefers_version_2_and_answers_version_1_to_who_offers_only_it(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        both = [Subprotocol(codec.SUBPROTOCOL_JSON_V1), Subprotocol(codec.SUBPROTOCOL_JSON)]
        async with websockets.connect(server.ws_url, subprotocols=both) as ws:
            assert ws.subprotocol == codec.SUBPROTOCOL_JSON_V1  # the client's order
        ann = await connect(server.ws_url, "ann", encoding="json.v1")
        state = await ann.request(m.CreateRoom(), m.RoomState)
        assert ann.welcome is not None and ann.welcome.protocol_version == 1
        assert state.members[0].name == "ann"
        bob = await connect(server.ws_url, "bob", encoding="json")
        assert bob.welcome is not None and bob.welcome.protocol_version == 2


async def test_the_late_saved_note_reaches_version_2_and_not_version_1(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        limit = {"pages": 1}
        limit_pages(server.store, limit)
        await fill(server.store)
        ann = await connect(server.ws_url, "ann")
        options = m.RoomOptions(practice_seed=SEED, countdown_s=0)
        state = await ann.request(m.CreateRoom(options), m.RoomState)
        old = await connect(server.ws_url, "old", encoding="msgpack.v1")
        await old.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        for seq, step in enumerate(LINE, 1):
            assert (await ann.request(move_request(seq, step), m.MoveResult)).accepted
        assert (await ann.expect(m.RaceOver)).saved is False
        await old.expect(m.RaceOver)  # without saved: version 1 cannot say it
        limit["pages"] = ROOMY
        again = await ann.expect(m.RaceOver, timeout=60)
        assert again.saved is True
        # Anything sent to the old spectator before this pong (the note was) comes first.
        await old.send(m.Ping(7))
        while not isinstance(frame := await old.recv(), m.Pong):
            assert not isinstance(frame, m.RaceOver), frame
        # Its catch-up, holding the note, still shows the race's end in version 1.
        await old.send(m.Sync())
        caught_up = await old.expect(m.RaceOver)
        assert caught_up.race_id == again.race_id


@pytest.mark.parametrize("encoding", [codec.Encoding.MSGPACK, codec.Encoding.JSON])
async def test_the_terminal_client_offers_version_2_first_and_speaks_it(
    tmp_path: Path, encoding: codec.Encoding
) -> None:
    async with running_server(tmp_path) as server:
        session = ClientSession("ann", encoding=encoding)
        conn = Connection(server.ws_url, session)
        welcome = await conn.open()
        assert conn.ws is not None
        assert conn.ws.subprotocol == codec.SUBPROTOCOL_FOR_ENCODING[encoding]
        assert welcome.protocol_version == 2 and session.encoding is encoding
        await conn.send(m.CreateRoom(m.RoomOptions(open_boards=True, spectator_delay_s=30)))
        frames = [event for event in await conn.receive() if isinstance(event, m.RoomState)]
        assert frames and frames[0].options.open_boards
        await conn.close()


def test_the_browser_pages_offer_and_speak_version_2() -> None:
    js = ROOT / "server" / "static" / "js"
    ws, playnet = (js / "ws.js").read_text(), (js / "playnet.js").read_text()
    assert 'export const SUBPROTOCOL = "tripeaks.v2.json";' in ws
    assert "export const PROTOCOL_VERSION = 2;" in ws
    assert "tripeaks.v1" not in ws + playnet + (js / "playsession.js").read_text()
    assert "new WebSocket(url, [SUBPROTOCOL])" in playnet

