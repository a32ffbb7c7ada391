"""Protocol versions 1 and 2 side by side: each dialect writes its own version's frames.

Every message the strategies of ``test_codec_roundtrip`` make, encoded for a
version-1 connection, validates against ``docs/protocol-v1.schema.json``, the
version-1 schema kept as it was published: a field added since and not marked
``Since(2)`` fails here.  The markers are read in one place (the compiled
encoders); the fast path's frames, which no marker reaches, are held to having
none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final

import msgpack
import pytest
from hypothesis import HealthCheck, assume, given, settings

from protocol.rules.game import HIDDEN, Status
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode, ProtocolError
from protocol.wire.schema import Node, Since, StructNode, compile_struct, since
from protocol.wire.session import ClientSession
from tests.protocol.wire.test_codec_roundtrip import message_strategy
from tools import docgen

ROOT = Path(__file__).resolve().parents[3]
V1_SCHEMA = ROOT / "docs" / "protocol-v1.schema.json"
V1 = (codec.Encoding.MSGPACK_V1, codec.Encoding.JSON_V1)
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def v1_validators() -> dict[str, Any]:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(V1_SCHEMA.read_text(encoding="utf-8"))
    return {
        side: jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{side}"})
        for side in ("ClientMessage", "ServerMessage")
    }


def v1_map(message: Any, encoding: codec.Encoding) -> Any:
    frame = codec.encode(message, encoding)
    if isinstance(frame, bytes):
        return msgpack.unpackb(frame, raw=False)
    return json.loads(frame)


def board(waste_top: str | None) -> m.BoardView:
    return m.BoardView((HIDDEN,) * 28, waste_top, 20, 3, 1, 0, Status.PLAYING)


def test_the_frozen_version_1_schema_is_version_1() -> None:
    schema = json.loads(V1_SCHEMA.read_text(encoding="utf-8"))
    assert schema["title"] == "TriPeaks Race wire protocol, version 1"
    assert "open_boards" not in schema["$defs"]["RoomOptions"]["properties"]


#: What a version-1 connection can be sent: not the messages new in version 2.
V1_SERVER: Final = tuple(c for c in m.SERVER_MESSAGES.values() if since(c) == 1)


@PROPERTY
@given(message_strategy(V1_SERVER))
def test_every_server_message_on_a_version_1_connection_is_a_version_1_frame(
    v1_validators: dict[str, Any], message: Any
) -> None:
    # A daily race_over (seed, candidate, deal and line kept back) needs version 2:
    # version 1 cannot ask for one; every other race_over carries all four.
    assume(not (isinstance(message, m.RaceOver)
                and None in (message.seed, message.candidate, message.deal, message.solution)))
    for encoding in V1:
        wire = v1_map(message, encoding)
        errors = [e.message for e in v1_validators["ServerMessage"].iter_errors(wire)]
        assert errors == [], (encoding, wire)


@PROPERTY
@given(message_strategy(tuple(m.CLIENT_MESSAGES.values())))
def test_every_client_message_this_code_writes_in_version_1_is_a_version_1_frame(
    v1_validators: dict[str, Any], message: Any
) -> None:
    if isinstance(message, m.Hello):
        message = m.Hello(message.name, 1, message.token, message.bot, message.client)
    wire = v1_map(message, codec.Encoding.JSON_V1)
    assert v1_validators["ClientMessage"].is_valid(wire), wire


def test_version_1_leaves_out_the_fields_version_2_added() -> None:
    options = m.RoomOptions(open_boards=True, spectator_delay_s=30)
    member = m.Member("p1", "Ann", bot=False, ready=True, connected=True, guest=False)
    state = m.RoomState(1, "K7QX", m.Phase.LOBBY, "p1", options, (member,), 0,
                        m.Role.PLAYER, None)
    old, new = v1_map(state, codec.Encoding.JSON_V1), v1_map(state, codec.Encoding.JSON)
    assert "open_boards" not in old["options"] and "guest" not in old["members"][0]
    assert new["options"]["open_boards"] is True and new["members"][0]["guest"] is False
    added = {"open_boards", "daily", "ghosts"}  # RoomOptions' fields marked Since(2)
    assert {k: v for k, v in new["options"].items() if k not in added} == old["options"]


def test_a_hidden_waste_top_is_null_in_version_1_and_the_board_keeps_its_face_down_cards() -> None:
    hidden = m.SpectatorBoard("p1", board(HIDDEN), 1200)
    for encoding in V1:
        view = v1_map(hidden, encoding)["view"]
        assert view["waste_top"] is None and view["board"] == [HIDDEN] * 28
    assert v1_map(hidden, codec.Encoding.MSGPACK)["view"]["waste_top"] == HIDDEN
    shown = m.SpectatorBoard("p1", board("KS"), 1200)
    assert v1_map(shown, codec.Encoding.JSON_V1)["view"]["waste_top"] == "KS"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_strategy((m.Progress, m.SpectatorBoard)))
def test_the_hand_written_maps_of_hot_frames_are_each_versions_schema_maps(message: Any) -> None:
    for version in sorted(m.SUPPORTED_VERSIONS):
        by_schema = {"t": message.TAG, **codec.node_for(type(message), version).encode(message)}
        assert codec.to_wire(message, version) == by_schema


def _marked(node: Node, seen: set[type]) -> list[str]:
    """Every ``Since``-marked field inside ``node``."""
    if not isinstance(node, StructNode):
        inner = [getattr(node, name, None) for name in ("inner", "item", "int_node", "str_node")]
        return [f for child in inner if isinstance(child, Node) for f in _marked(child, seen)]
    if node.cls in seen:
        return []
    seen.add(node.cls)
    own = [f"{node.cls.__name__}.{f.name}" for f in node.fields if f.since is not None]
    return own + [f for spec in node.fields for f in _marked(spec.node, seen)]


def test_the_fast_paths_frames_have_no_field_newer_than_version_1() -> None:
    # protocol/wire/fast.py writes one move_result for every connection, and the hub
    # encodes move answers and progress the same way for both versions.
    for cls in (m.MoveResult, m.Progress, m.MoveRequest):
        assert _marked(compile_struct(cls), set()) == [], cls


def test_marking_a_field_since_2_is_all_it_takes_to_leave_it_out_of_version_1() -> None:
    @dataclass(frozen=True, slots=True)
    class Probe:
        kept: bool
        added: Annotated[bool, Since(2)] = False

    assert [f.name for f in compile_struct(Probe, 1).fields] == ["kept"]
    assert compile_struct(Probe, 1).encode(Probe(True, True)) == {"kept": True}
    assert compile_struct(Probe).encode(Probe(True, True)) == {"kept": True, "added": True}


def test_the_late_saved_note_is_news_only_for_version_2_and_reads_as_race_over() -> None:
    over = next(e for e in docgen.example_messages() if isinstance(e, m.RaceOver))
    note = m.SavedLater.of(over)
    assert note.saved is True and note.standings == over.standings
    assert not any(codec.sent_in(note, encoding) for encoding in V1)
    assert codec.sent_in(note, codec.Encoding.MSGPACK) and codec.sent_in(over, V1[0])
    # A catch-up that holds it still gives a version-1 spectator the race's race_over.
    assert v1_map(note, codec.Encoding.JSON_V1) == v1_map(over, codec.Encoding.JSON_V1)
    decoded = codec.decode_server(codec.encode(note, codec.Encoding.JSON), "json")
    assert type(decoded) is m.RaceOver and decoded.saved is True


@pytest.mark.parametrize(
    ("encoding", "version"),
    [(codec.Encoding.MSGPACK, 1), (codec.Encoding.JSON, 1),
     (codec.Encoding.MSGPACK_V1, 2), (codec.Encoding.JSON_V1, 2)],
)
def test_a_hello_of_the_other_version_than_the_subprotocols_is_error_21(
    encoding: codec.Encoding, version: int
) -> None:
    frame = codec.encode(m.Hello("Ann", version), "json" if not encoding.binary else "msgpack")
    with pytest.raises(ProtocolError) as caught:
        codec.decode(frame, encoding)
    err = caught.value
    assert err.code is ErrorCode.UNSUPPORTED_VERSION
    assert err.close_code is CloseCode.UNSUPPORTED_VERSION
    assert (err.tag, err.path) == ("hello", "version")
    wanted = next(s for s, e in codec.ENCODING_FOR_SUBPROTOCOL.items()
                  if e.version == version and e.binary == encoding.binary)
    assert wanted in err.message
    right = codec.encode(m.Hello("Ann", encoding.version), encoding)
    assert codec.decode(right, encoding) == m.Hello("Ann", encoding.version)


def test_every_subprotocol_names_a_dialect_and_the_latest_comes_first() -> None:
    assert codec.SUBPROTOCOLS[:2] == ("tripeaks.v2.msgpack", "tripeaks.v2.json")
    for sub in codec.SUBPROTOCOLS:
        enc = codec.encoding_for(sub)
        assert sub == f"tripeaks.v{enc.version}.{'msgpack' if enc.binary else 'json'}"
    assert codec.offer("json") == ["tripeaks.v2.json", "tripeaks.v1.json"]
    assert codec.offer(codec.Encoding.MSGPACK_V1) == ["tripeaks.v2.msgpack", "tripeaks.v1.msgpack"]


@pytest.mark.parametrize("encoding", list(codec.Encoding))
def test_a_client_session_says_hello_in_its_dialects_version(encoding: codec.Encoding) -> None:
    session = ClientSession("ann", encoding=encoding)
    hello = codec.decode(session.hello(), encoding)
    assert isinstance(hello, m.Hello) and hello.version == encoding.version
    assert ClientSession("bob").encoding.version == m.PROTOCOL_VERSION == 2
