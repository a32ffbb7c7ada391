"""docs/protocol.schema.json is what the server serves, and every frame of a real race fits it.

The schema is built from the codec's own tables (protocol/wire/json_schema.py);
these tests hold it to the codec from the other side: every frame both ways
of a race between a JSON host, a msgpack player and a JSON spectator
validates, and frames the codec refuses (an extra field, a bad value, a broken
cross-field rule) fail validation too.  The validator is the ``jsonschema``
package (the ``test`` extra); without it those tests are skipped.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ProtocolError
from protocol.wire.json_schema import protocol_schema, schema_text
from protocol.wire.schema import since
from tests.server.test_race import SEED, dealt, play_line
from tests.serverutil import TestClient, connect, running_server
from tools import docgen

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "protocol.schema.json"

#: (direction, encoding, raw frame) for every frame a tapped client sent or read.
Log = list[tuple[str, codec.Encoding, bytes | str]]


@pytest.fixture
def validator() -> Any:
    """A draft 2020-12 validator of the whole document (either direction)."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = protocol_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def as_json(message: Any) -> dict[str, Any]:
    """The map a JSON client decodes from ``message``'s frame."""
    return json.loads(codec.encode_json(message))  # type: ignore[no-any-return]


def direction(validator: Any, name: str) -> Any:
    """A validator of ``#/$defs/ClientMessage`` or ``#/$defs/ServerMessage`` alone."""
    return validator.evolve(schema={**validator.schema, "$ref": f"#/$defs/{name}"})


def test_the_committed_schema_file_is_the_generated_one() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == schema_text()
    assert json.loads(schema_text()) == protocol_schema()


def test_every_message_has_a_definition_named_by_its_tag_with_t_as_a_constant() -> None:
    defs = protocol_schema()["$defs"]
    directions = (("ClientMessage", m.CLIENT_MESSAGES), ("ServerMessage", m.SERVER_MESSAGES))
    for name, registry in directions:
        assert defs[name]["oneOf"] == [{"$ref": f"#/$defs/{tag}"} for tag in registry]
        for tag in registry:
            assert defs[tag]["properties"]["t"] == {"const": tag}
            assert defs[tag]["additionalProperties"] is False
            assert "t" in defs[tag]["required"]


async def test_the_server_serves_the_committed_schema_at_a_stable_url(tmp_path: Path) -> None:
    url = "/api/protocol.schema.json"
    async with running_server(tmp_path) as server, aiohttp.ClientSession(server.url) as session:
        response = await session.get(url)
        assert response.status == 200
        assert response.content_type == "application/schema+json"
        assert await response.text() == COMMITTED.read_text(encoding="utf-8")


def test_every_documented_example_fits_its_direction(validator: Any) -> None:
    client, server = direction(validator, "ClientMessage"), direction(validator, "ServerMessage")
    for message in docgen.example_messages():
        wire = as_json(message)
        client_side = message.TAG in m.CLIENT_MESSAGES
        assert (client if client_side else server).is_valid(wire), wire
        assert not (server if client_side else client).is_valid(wire), wire


# ---- a recorded race -----------------------------------------------------------
class Tap:
    """Stands in for a client's socket and logs every frame that passes."""

    def __init__(self, ws: Any, encoding: codec.Encoding, log: Log) -> None:
        self.ws, self.encoding, self.log = ws, encoding, log

    async def send(self, frame: bytes | str) -> None:
        self.log.append(("client", self.encoding, frame))
        await self.ws.send(frame)

    async def recv(self) -> bytes | str:
        frame: bytes | str = await self.ws.recv()
        self.log.append(("server", self.encoding, frame))
        return frame

    async def close(self) -> None:
        await self.ws.close()


async def tapped(
    ws_url: str, name: str, encoding: str, log: Log, token: str | None = None,
    *, spectator_update: bool = False,
) -> TestClient:
    """A connected client that said hello, with every frame it sends or reads logged;
    ``encoding`` names the dialect (``"json.v1"``: JSON of version 1)."""
    client = await connect(ws_url, name, encoding=encoding, hello=False)
    client.ws = Tap(client.ws, client.encoding, log)  # type: ignore[assignment]
    hello = m.Hello(
        name=name, version=client.encoding.version, token=token,
        spectator_update=spectator_update,
    )
    client.welcome = await client.request(hello, m.Welcome)
    assert client.welcome.protocol_version == client.encoding.version
    return client


def dialects(version: int) -> tuple[str, str]:
    """The JSON and the msgpack dialect of protocol ``version``."""
    suffix = "" if version == m.PROTOCOL_VERSION else f".v{version}"
    return f"json{suffix}", f"msgpack{suffix}"


async def race_with_every_message(
    ws_url: str, log: Log, version: int = m.PROTOCOL_VERSION
) -> m.SpectatorBoard:
    """Host, player and spectator go through a race that sends every message type, all
    on protocol ``version``; another public room shows open boards.  Returns the
    spectator's board of the host's draw (its waste top not seen by the other racer)."""
    text, binary = dialects(version)
    ann = await tapped(ws_url, "ann", text, log)
    await ann.request(m.Ping(1234), m.Pong)
    options = m.RoomOptions(public=True, practice_seed=SEED, undo=m.UndoPolicy.FREE, countdown_s=1)
    state = await ann.request(m.CreateRoom(options), m.RoomState)
    await ann.request(m.UpdateOptions(replace(options, name="Schema race")), m.RoomState)
    cy = await tapped(ws_url, "cy", binary, log)
    shown = m.RoomOptions(public=True, open_boards=True, spectator_delay_s=30)
    await cy.request(m.CreateRoom(shown), m.RoomState)
    bob = await tapped(ws_url, "bob", binary, log)
    assert len((await bob.request(m.ListRooms(), m.RoomList)).rooms) == 2
    await bob.request(m.Join(state.code), m.RoomState)
    await bob.request(m.Start(), m.Error)  # only the host starts
    await bob.send(m.Ready(True))
    eve = await tapped(ws_url, "eve", text, log)
    await eve.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
    # A second spectator takes a flush's progress and boards in one spectator_update
    # (version 2: version 1 cannot ask for it).
    fay = await tapped(ws_url, "fay", binary, log, spectator_update=True) if version > 1 else None
    if fay is not None:
        await fay.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
    while not all(mb.ready for mb in state.members if mb.player_id != ann.player_id):
        state = await ann.expect(m.RoomState)
    await ann.send(m.Start())
    await ann.expect(m.Countdown)
    for client in (ann, bob, eve):
        await client.expect(m.RaceStart)
    board = await race(ann, bob, eve)
    for client in (ann, bob, eve):
        await client.expect(m.RaceOver)
    await eve.expect(m.SpectatorBoard)
    await eve.expect(m.Progress)
    if fay is not None:
        await fay.expect(m.SpectatorUpdate)
    await bob.expect(m.Finish)
    await ann.request(m.Rematch(), m.RoomState)
    await ann.send(m.Kick(bob.player_id))
    await bob.expect(m.Left)
    await eve.request(m.Leave(), m.Left)
    assert ann.welcome is not None
    await tapped(ws_url, "ann", binary, log, token=ann.welcome.token)
    await ann.expect(m.Closing)  # the new connection replaced this one
    await cy.close()
    return board


async def race(ann: TestClient, bob: TestClient, eve: TestClient) -> m.SpectatorBoard:
    """A refused play, a draw taken back, then ann wins while bob resigns; the board
    the spectator ``eve`` is shown of ann's draw."""
    refused = await ann.request(m.MoveRequest(1, m.MoveAction.PLAY, 0), m.MoveResult)
    assert not refused.accepted and refused.reason is not None
    await ann.request(m.MoveRequest(2, m.MoveAction.DRAW), m.MoveResult)
    board = await eve.expect(m.SpectatorBoard)
    while board.player_id != ann.player_id or board.view.draws != 1:
        board = await eve.expect(m.SpectatorBoard)
    undo = await ann.request(m.MoveRequest(3, m.MoveAction.UNDO), m.MoveResult)
    assert undo.accepted and undo.undone is m.MoveAction.DRAW
    await bob.request(m.Sync(), m.Resync)
    await play_line(ann, dealt().solution, 4)
    await bob.send(m.Resign())
    return board


async def test_every_frame_of_a_recorded_race_fits_the_schema(
    tmp_path: Path, validator: Any
) -> None:
    log: Log = []
    async with running_server(tmp_path) as server:
        board = await race_with_every_message(server.ws_url, log)
    assert board.view.waste_top == "??"  # bob has not drawn that card
    sides = {"client": direction(validator, "ClientMessage"),
             "server": direction(validator, "ServerMessage")}
    assert_every_frame_fits(log, sides)
    assert {encoding for _, encoding, _ in log} == {codec.Encoding.JSON, codec.Encoding.MSGPACK}


def assert_every_frame_fits(log: Log, sides: dict[str, Any]) -> None:
    """Every logged frame validates against its direction's validator in ``sides``, and the
    frames hold every message type both ways."""
    seen: dict[str, set[str]] = {"client": set(), "server": set()}
    for side, encoding, frame in log:
        wire = codec.parse_frame(frame, encoding, codec.MAX_SERVER_FRAME)
        if side in sides:
            errors = [e.message for e in sides[side].iter_errors(wire)]
            assert errors == [], (side, errors, wire)
        seen[side].add(wire["t"])
    # moved comes in cluster mode only (tests/cluster/test_routing.py checks it); a
    # version-1 race sees no message new in version 2.
    version = min(codec.dialect(encoding).version for _, encoding, _ in log)
    server = {tag for tag, cls in m.SERVER_MESSAGES.items() if since(cls) <= version}
    server -= {m.Moved.TAG}
    assert seen == {"client": set(m.CLIENT_MESSAGES), "server": server}


# ---- what the codec refuses, the schema refuses ----------------------------------
def _move(**fields: object) -> dict[str, object]:
    return {"t": "move", "seq": 1, "action": "play", "position": 3, **fields}


def _result(**fields: object) -> dict[str, object]:
    return {**as_json(_example(m.MoveResult)), **fields}


def _example(cls: type) -> Any:
    return next(e for e in docgen.example_messages() if isinstance(e, cls))


def _race_over_waste(waste: object) -> dict[str, object]:
    wire = as_json(_example(m.RaceOver))
    return {**wire, "deal": {**wire["deal"], "waste": waste}}


def _short_board() -> dict[str, object]:
    wire = as_json(_example(m.SpectatorBoard))
    return {**wire, "view": {**wire["view"], "board": [None] * 27}}


REFUSED: dict[str, dict[str, object]] = {
    "an extra field": _move(speed=3),
    "an extra field in a structure": {"t": "create_room", "options": {"colour": "red"}},
    "a missing field": {"t": "move", "action": "draw"},
    "an int out of range": _move(position=256),
    "a bool for an int": _move(seq=True),
    "an unknown action": _move(action="jump"),
    "a name too long": {"t": "hello", "name": "x" * 25, "version": 2},
    "a name with a control character": {"t": "hello", "name": "a\u0007b", "version": 2},
    "an unknown tag": {"t": "teleport"},
    "a play without a position": {"t": "move", "seq": 1, "action": "play"},
    "a draw with a position": _move(action="draw"),
    "an accepted move with a reason": _result(reason=1),
    "a refused move without a reason": _result(accepted=False),
    "a bad card code": _result(card="1X"),
    "an uncommitted commitment": {**as_json(_example(m.RaceStart)), "commitment": "AB"},
    "no waste without empty_waste": _race_over_waste(None),
    "a short board": _short_board(),
    "open boards without a delay": {"t": "create_room", "options": {"open_boards": True}},
    "open boards with too short a delay": {
        "t": "create_room",
        "options": {"open_boards": True, "spectator_delay_s": m.OPEN_BOARDS_MIN_DELAY_S - 1},
    },
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_frame_the_codec_refuses_fails_validation(case: str, validator: Any) -> None:
    wire = REFUSED[case]
    frame = json.dumps(wire)
    with pytest.raises(ProtocolError):
        if wire["t"] in m.SERVER_MESSAGES:
            codec.decode_server(frame, "json")
        else:
            codec.decode(frame, "json")
    assert not validator.is_valid(wire)


def test_the_frames_the_refused_ones_were_made_from_pass_both(validator: Any) -> None:
    undo = {"t": "move", "seq": 2, "action": "undo"}
    open_boards = {"open_boards": True, "spectator_delay_s": m.OPEN_BOARDS_MIN_DELAY_S}
    valid = (
        _move(), _move(action="draw", position=None), undo, _result(), _race_over_waste("KS"),
        {"t": "create_room", "options": open_boards},
    )
    for wire in valid:
        frame = json.dumps(wire)
        if wire["t"] in m.SERVER_MESSAGES:
            codec.decode_server(frame, "json")
        else:
            codec.decode(frame, "json")
        assert validator.is_valid(wire), wire
