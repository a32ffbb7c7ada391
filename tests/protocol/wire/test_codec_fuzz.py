"""Fuzzing the decoders: any input is a valid message or a ProtocolError, nothing else.

This is the decoder's contract (docs/protocol.md, "Errors"): random bytes,
random text, random JSON and msgpack values, and valid frames truncated or
mutated must never raise anything but :class:`ProtocolError`, and whatever
is accepted must be a message that encodes back to an accepted frame.
"""

from __future__ import annotations

import json
from typing import Any

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from tests.protocol.wire.test_codec_roundtrip import message_strategy

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CLIENT = tuple(m.CLIENT_MESSAGES.values())


def decodes_or_refuses(frame: bytes | str, encoding: str, server: bool = False) -> object | None:
    """The decoded message, or ``None`` after a ``ProtocolError`` (anything else fails)."""
    decode = codec.decode_server if server else codec.decode
    try:
        message = decode(frame, encoding)  # type: ignore[arg-type]
    except ProtocolError as err:
        assert isinstance(err.code, ErrorCode)
        assert codec.error_reply(err).code == err.code
        return None
    again = decode(codec.encode(message, encoding), encoding)  # type: ignore[arg-type]
    assert again == message
    return message


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_never_raise_anything_but_protocol_error(data: bytes) -> None:
    decodes_or_refuses(data, "msgpack")
    decodes_or_refuses(data, "msgpack", server=True)
    decodes_or_refuses(data, "json")


@FUZZ
@given(st.text(max_size=300))
def test_random_text_never_raises_anything_but_protocol_error(text: str) -> None:
    decodes_or_refuses(text, "json")
    decodes_or_refuses(text, "json", server=True)
    decodes_or_refuses(text, "msgpack")


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
    | st.sampled_from(["t", "hello", "move", "play", "draw", "??", "AS", "lobby", "player"])
)
_KEYS = st.sampled_from(["t", "seq", "action", "position", "name", "version", "options",
                         "max_players", "client_time_ms", "code", "ready"]) | st.text(max_size=8)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=20,
)


@FUZZ
@given(st.dictionaries(_KEYS, _VALUES, max_size=6), st.sampled_from(sorted(m.CLIENT_MESSAGES)))
def test_random_maps_with_a_real_type_tag_never_crash_the_decoder(
    body: dict[str, Any], tag: str
) -> None:
    body["t"] = tag
    decodes_or_refuses(json.dumps(body), "json")
    decodes_or_refuses(msgpack.packb(body, use_bin_type=True), "msgpack")


@FUZZ
@given(message_strategy(CLIENT), st.data())
def test_truncated_valid_frames_are_refused(message: Any, data: st.DataObject) -> None:
    for encoding in ("msgpack", "json"):
        frame = codec.encode(message, encoding)
        cut = data.draw(st.integers(0, len(frame) - 1))
        assert decodes_or_refuses(frame[:cut], encoding) is None


@FUZZ
@given(message_strategy(CLIENT), st.data())
def test_mutated_msgpack_frames_never_raise_anything_but_protocol_error(
    message: Any, data: st.DataObject
) -> None:
    frame = bytearray(codec.encode_msgpack(message))
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(frame) - 1))
        action = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        byte = data.draw(st.integers(0, 255))
        if action == "flip":
            frame[index] = byte
        elif action == "insert":
            frame.insert(index, byte)
        elif len(frame) > 1:
            del frame[index]
    decodes_or_refuses(bytes(frame), "msgpack")


@FUZZ
@given(message_strategy(CLIENT), st.data())
def test_mutated_json_frames_never_raise_anything_but_protocol_error(
    message: Any, data: st.DataObject
) -> None:
    chars = list(codec.encode_json(message))
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(chars) - 1))
        char = data.draw(st.sampled_from([*'{}[]",:0123456789-.etrufalsn\\ ', "\ud800"]))
        if data.draw(st.booleans()):
            chars[index] = char
        else:
            chars.insert(index, char)
    decodes_or_refuses("".join(chars), "json")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_strategy(tuple(m.SERVER_MESSAGES.values())), st.data())
def test_mutated_server_frames_never_raise_anything_but_protocol_error(
    message: Any, data: st.DataObject
) -> None:
    frame = bytearray(codec.encode_msgpack(message))
    index = data.draw(st.integers(0, len(frame) - 1))
    frame[index] = data.draw(st.integers(0, 255))
    decodes_or_refuses(bytes(frame), "msgpack", server=True)


@FUZZ
@given(
    st.integers(-128, 127),
    st.binary(max_size=20),
    st.sampled_from(sorted(m.CLIENT_MESSAGES)),
)
def test_extension_values_anywhere_are_refused(code: int, payload: bytes, tag: str) -> None:
    # ext 8: 0xc7, length, signed type code, payload (negative codes are reserved ones).
    ext = b"\xc7" + bytes([len(payload)]) + code.to_bytes(1, "big", signed=True) + payload
    frame = b"\x82\xa1t" + msgpack.packb(tag) + b"\xa1x" + ext
    assert decodes_or_refuses(frame, "msgpack") is None
