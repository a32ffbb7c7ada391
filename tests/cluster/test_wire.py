"""The redirect on the wire: ``moved``, what a client session makes of it, and where it
sends the client."""

from __future__ import annotations

import json

import pytest

from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.json_schema import protocol_schema
from protocol.wire.session import ClientSession, Redirected, SessionState, redirect_url


@pytest.mark.parametrize(
    ("current", "target", "expected"),
    [
        ("ws://127.0.0.1:8765/ws", "/n/b/ws", "ws://127.0.0.1:8765/n/b/ws"),
        ("wss://race.example.org/ws?x=1", "/n/b/ws", "wss://race.example.org/n/b/ws"),
        ("ws://127.0.0.1:8765/n/a/ws", "ws://10.0.0.2:8766/ws", "ws://10.0.0.2:8766/ws"),
    ],
)
def test_a_moved_url_is_a_whole_address_or_a_path_on_the_one_in_use(
    current: str, target: str, expected: str
) -> None:
    assert redirect_url(current, target) == expected


def test_moved_instead_of_welcome_disconnects_the_session_keeping_its_token_and_moves() -> None:
    session = ClientSession("ann", token="tok", encoding=codec.Encoding.JSON)
    session.hello()
    moved = m.Moved("/n/b/ws", "hello", "K7QXMP")
    (event,) = session.receive(codec.encode(moved, codec.Encoding.JSON))
    assert event == Redirected(moved)
    assert session.state is SessionState.DISCONNECTED and session.token == "tok"
    assert b"tok" in codec.encode_msgpack(m.Hello("ann", 1, "tok")) and session.hello()


def test_moved_after_welcome_is_a_plain_message_and_fits_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    session = ClientSession("ann")
    session.hello()
    session.receive(codec.encode(m.Welcome("p1", "ann", "tok", False, 1, "x"), "msgpack"))
    moved = m.Moved("/n/b/ws", "join", "K7QXMP")
    assert session.receive(codec.encode(moved, "msgpack")) == [moved]
    schema = protocol_schema()
    validator = jsonschema.Draft202012Validator(
        {**schema, "$ref": "#/$defs/ServerMessage"}
    )
    assert list(validator.iter_errors(json.loads(codec.encode_json(moved)))) == []
