"""Each validation rule refuses its own kind of bad frame with its own error code."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgpack
import pytest

from protocol.rules.game import Status
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import CLOSE_FOR_ERROR, CloseCode, ErrorCode, ProtocolError

PING: dict[str, Any] = {"t": "ping", "client_time_ms": 5}
HELLO: dict[str, Any] = {"t": "hello", "name": "Ann", "version": m.PROTOCOL_VERSION}


def as_msgpack(value: object) -> bytes:
    return msgpack.packb(value, use_bin_type=True)  # type: ignore[no-any-return]


def as_json(value: object) -> str:
    return json.dumps(value)


Encoder = Callable[[object], bytes | str]
BOTH = pytest.mark.parametrize(
    ("encoding", "to_frame"), [("msgpack", as_msgpack), ("json", as_json)], ids=["msgpack", "json"]
)


def refusal(frame: bytes | str, encoding: str, server: bool = False) -> ProtocolError:
    decode = codec.decode_server if server else codec.decode
    with pytest.raises(ProtocolError) as info:
        decode(frame, encoding)  # type: ignore[arg-type]
    return info.value


def code_of(frame: bytes | str, encoding: str, server: bool = False) -> ErrorCode:
    return refusal(frame, encoding, server).code


def with_fields(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**base, **changes}


def move_result(**changes: Any) -> dict[str, Any]:
    base = codec.to_wire(
        m.MoveResult(
            seq=1, action=m.MoveAction.DRAW, accepted=True, reason=None, position=None,
            card="4H", uncovered=(), hidden=(), undone=None, waste_top="4H", stock_left=22,
            cleared=0, moves=1, draws=1, undos=0, status=Status.PLAYING, penalty_ms=0,
            elapsed_ms=900,
        )
    )
    return {**base, **changes}


# ---- frames --------------------------------------------------------------
def test_garbage_bytes_are_a_malformed_frame() -> None:
    assert code_of(b"\xc1", "msgpack") is ErrorCode.MALFORMED_FRAME
    assert code_of(b"\x82\xa1t", "msgpack") is ErrorCode.MALFORMED_FRAME
    assert code_of(b"", "msgpack") is ErrorCode.MALFORMED_FRAME


def test_text_that_is_not_json_is_a_malformed_frame() -> None:
    assert code_of('{"t":', "json") is ErrorCode.MALFORMED_FRAME
    assert code_of("", "json") is ErrorCode.MALFORMED_FRAME
    assert code_of("{'t': 'ping'}", "json") is ErrorCode.MALFORMED_FRAME


def test_two_values_in_one_frame_are_a_malformed_frame() -> None:
    assert code_of(as_msgpack(PING) + as_msgpack(PING), "msgpack") is ErrorCode.MALFORMED_FRAME
    assert code_of(as_json(PING) + as_json(PING), "json") is ErrorCode.MALFORMED_FRAME


def test_invalid_utf8_in_a_msgpack_string_is_a_malformed_frame() -> None:
    frame = as_msgpack(HELLO).replace(b"\xa3Ann", b"\xa3A\xff\xfe")
    assert code_of(frame, "msgpack") is ErrorCode.MALFORMED_FRAME


def test_json_nan_and_infinity_are_a_malformed_frame() -> None:
    assert code_of('{"t":"ping","client_time_ms":NaN}', "json") is ErrorCode.MALFORMED_FRAME
    assert code_of('{"t":"ping","client_time_ms":-Infinity}', "json") is ErrorCode.MALFORMED_FRAME


@BOTH
def test_a_frame_one_byte_over_the_limit_is_too_large(encoding: str, to_frame: Encoder) -> None:
    # Start past 255 characters so the msgpack string header keeps its size.
    fitting = to_frame(with_fields(HELLO, client="x" * 300))
    padding = codec.MAX_CLIENT_FRAME - len(fitting)
    at_limit = to_frame(with_fields(HELLO, client="x" * (300 + padding)))
    over = to_frame(with_fields(HELLO, client="x" * (301 + padding)))
    assert (len(at_limit), len(over)) == (codec.MAX_CLIENT_FRAME, codec.MAX_CLIENT_FRAME + 1)
    assert code_of(at_limit, encoding) is ErrorCode.STRING_TOO_LONG
    assert code_of(over, encoding) is ErrorCode.FRAME_TOO_LARGE


def test_json_frame_size_counts_utf8_bytes_not_characters() -> None:
    frame = as_json({"t": "ping", "pad": "€" * 1500}).replace("\\u20ac", "€")
    assert len(frame) < codec.MAX_CLIENT_FRAME < len(frame.encode("utf-8"))
    assert code_of(frame, "json") is ErrorCode.FRAME_TOO_LARGE


def test_server_frames_may_be_larger_than_client_frames() -> None:
    rooms = m.RoomList(tuple(m.RoomSummary(f"R{i}", m.Phase.LOBBY, 2, 0, m.RoomOptions())
                             for i in range(60)))
    frame = codec.encode_msgpack(rooms)
    assert len(frame) > codec.MAX_CLIENT_FRAME
    assert codec.decode_server(frame, "msgpack") == rooms


def test_a_text_frame_on_the_msgpack_subprotocol_is_the_wrong_frame_type() -> None:
    assert code_of(as_json(PING), "msgpack") is ErrorCode.WRONG_FRAME_TYPE


def test_a_binary_frame_on_the_json_subprotocol_is_the_wrong_frame_type() -> None:
    assert code_of(as_json(PING).encode(), "json") is ErrorCode.WRONG_FRAME_TYPE
    assert code_of(as_msgpack(PING), "json") is ErrorCode.WRONG_FRAME_TYPE


@BOTH
@pytest.mark.parametrize("value", [[1, 2], 3, "ping", None, True])
def test_a_frame_that_is_not_a_map_is_refused(
    encoding: str, to_frame: Encoder, value: object
) -> None:
    assert code_of(to_frame(value), encoding) is ErrorCode.NOT_A_MAP


def test_msgpack_extension_types_are_refused() -> None:
    frame = as_msgpack(with_fields(PING, client_time_ms=msgpack.ExtType(5, b"x")))
    assert code_of(frame, "msgpack") is ErrorCode.EXTENSION_TYPE


def test_msgpack_timestamps_are_extension_types_and_refused() -> None:
    frame = as_msgpack(with_fields(PING, client_time_ms=msgpack.Timestamp(1, 0)))
    assert code_of(frame, "msgpack") is ErrorCode.EXTENSION_TYPE


@BOTH
def test_nesting_deeper_than_the_limit_is_refused(encoding: str, to_frame: Encoder) -> None:
    deep: object = 1
    for _ in range(codec.MAX_DEPTH):
        deep = [deep]
    assert code_of(to_frame(with_fields(PING, client_time_ms=deep)), encoding) is (
        ErrorCode.TOO_DEEP
    )


@BOTH
def test_nesting_at_the_limit_reaches_the_field_checks(encoding: str, to_frame: Encoder) -> None:
    deep: object = 1
    for _ in range(codec.MAX_DEPTH - 1):
        deep = [deep]
    assert code_of(to_frame(with_fields(PING, client_time_ms=deep)), encoding) is (
        ErrorCode.WRONG_TYPE
    )


def test_thousands_of_nested_brackets_are_too_deep_not_a_crash() -> None:
    assert code_of('{"t":' + "[" * 2000 + "]" * 2000 + "}", "json") is ErrorCode.TOO_DEEP
    assert code_of(b"\x81\xa1t" + b"\x91" * 3000 + b"\x90", "msgpack") is ErrorCode.TOO_DEEP


def test_a_non_string_map_key_is_refused() -> None:
    assert code_of(as_msgpack({1: 2}), "msgpack") is ErrorCode.NON_STRING_KEY
    bytes_key: dict[object, object] = {"t": "ping", "client_time_ms": 5, b"t": "x"}
    assert code_of(as_msgpack(bytes_key), "msgpack") is ErrorCode.NON_STRING_KEY
    options = {"t": "create_room", "options": {7: True}}
    assert code_of(as_msgpack(options), "msgpack") is ErrorCode.NON_STRING_KEY


def test_a_repeated_key_is_refused_in_json() -> None:
    frame = '{"t":"ping","client_time_ms":1,"client_time_ms":2}'
    assert code_of(frame, "json") is ErrorCode.DUPLICATE_KEY


def test_a_repeated_key_is_refused_in_msgpack() -> None:
    # A map header for three entries followed by the key "t" twice.
    frame = b"\x83" + b"\xa1t\xa4ping" * 2 + b"\xaeclient_time_ms\x01"
    assert code_of(frame, "msgpack") is ErrorCode.DUPLICATE_KEY


# ---- message types and fields ----------------------------------------------
@BOTH
def test_an_unknown_message_type_is_refused(encoding: str, to_frame: Encoder) -> None:
    err = refusal(to_frame({"t": "teleport"}), encoding)
    assert err.code is ErrorCode.UNKNOWN_TYPE
    assert "teleport" in err.message


def test_a_server_message_sent_to_the_server_is_an_unknown_type() -> None:
    frame = codec.encode_json(m.Pong(1, 2))
    assert code_of(frame, "json") is ErrorCode.UNKNOWN_TYPE
    assert code_of(as_json(PING), "json", server=True) is ErrorCode.UNKNOWN_TYPE


@BOTH
def test_a_missing_type_tag_is_a_missing_field(encoding: str, to_frame: Encoder) -> None:
    assert code_of(to_frame({"client_time_ms": 5}), encoding) is ErrorCode.MISSING_FIELD


@BOTH
def test_a_missing_required_field_is_refused_and_named(encoding: str, to_frame: Encoder) -> None:
    err = refusal(to_frame({"t": "ping"}), encoding)
    assert err.code is ErrorCode.MISSING_FIELD
    assert err.path == "client_time_ms"


def test_a_missing_field_in_a_nested_map_names_the_path() -> None:
    state = codec.to_wire(
        m.RoomState(1, "ABC", m.Phase.LOBBY, "p1", m.RoomOptions(),
                    (m.Member("p1", "Ann", False, True, True),), 0, m.Role.PLAYER, None)
    )
    del state["members"][0]["ready"]  # type: ignore[index]
    err = refusal(as_json(state), "json", server=True)
    assert err.code is ErrorCode.MISSING_FIELD
    assert err.path == "members[0].ready"


@BOTH
def test_an_extra_field_is_refused(encoding: str, to_frame: Encoder) -> None:
    err = refusal(to_frame(with_fields(PING, colour="blue")), encoding)
    assert err.code is ErrorCode.EXTRA_FIELD
    assert err.path == "colour"


def test_an_extra_field_in_nested_options_is_refused() -> None:
    frame = as_json({"t": "create_room", "options": {"max_players": 4, "cheat": True}})
    err = refusal(frame, "json")
    assert (err.code, err.path) == (ErrorCode.EXTRA_FIELD, "options.cheat")


def test_a_type_tag_inside_a_nested_map_is_an_extra_field() -> None:
    frame = as_json({"t": "create_room", "options": {"t": "room_options"}})
    assert code_of(frame, "json") is ErrorCode.EXTRA_FIELD


@BOTH
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("client_time_ms", True),
        ("client_time_ms", 5.0),
        ("client_time_ms", "5"),
        ("client_time_ms", None),
        ("client_time_ms", [5]),
        ("client_time_ms", {"ms": 5}),
    ],
    ids=["bool-for-int", "float-for-int", "string-for-int", "null", "list", "map"],
)
def test_a_wrong_type_is_refused(
    encoding: str, to_frame: Encoder, field: str, value: object
) -> None:
    assert code_of(to_frame(with_fields(PING, **{field: value})), encoding) is ErrorCode.WRONG_TYPE


@BOTH
def test_an_int_is_not_a_bool(encoding: str, to_frame: Encoder) -> None:
    assert code_of(to_frame({"t": "ready", "ready": 1}), encoding) is ErrorCode.WRONG_TYPE


def test_msgpack_binary_is_not_a_string() -> None:
    frame = as_msgpack(with_fields(HELLO, name=b"Ann"))
    assert code_of(frame, "msgpack") is ErrorCode.WRONG_TYPE


@BOTH
def test_a_type_tag_that_is_not_a_string_is_the_wrong_type(
    encoding: str, to_frame: Encoder
) -> None:
    assert code_of(to_frame({"t": 3}), encoding) is ErrorCode.WRONG_TYPE


@BOTH
@pytest.mark.parametrize(
    "frame",
    [
        {"t": "create_room", "options": {"max_players": 1}},
        {"t": "create_room", "options": {"max_players": 17}},
        {"t": "create_room", "options": {"spectator_delay_s": 601}},
        {"t": "create_room", "options": {"spectator_delay_s": -1}},
        {"t": "move", "seq": 0, "action": "draw"},
        {"t": "move", "seq": 2**31, "action": "draw"},
        {"t": "move", "seq": 1, "action": "play", "position": 256},
        {"t": "ping", "client_time_ms": 2**64 - 1},
        {"t": "ping", "client_time_ms": -(2**63)},
    ],
    ids=[
        "one-player", "seventeen-players", "long-delay", "negative-delay", "seq-zero",
        "seq-too-big", "position-256", "uint64", "int64-min",
    ],
)
def test_an_integer_out_of_range_is_refused(
    encoding: str, to_frame: Encoder, frame: dict[str, Any]
) -> None:
    assert code_of(to_frame(frame), encoding) is ErrorCode.INT_OUT_OF_RANGE


def test_a_four_thousand_digit_json_integer_is_out_of_range_not_a_crash() -> None:
    frame = '{"t":"ping","client_time_ms":' + "9" * 4000 + "}"
    assert code_of(frame, "json") is ErrorCode.INT_OUT_OF_RANGE


def test_a_move_to_a_position_past_27_is_well_formed_for_the_rules_to_refuse() -> None:
    move = codec.decode('{"t":"move","seq":1,"action":"play","position":200}', "json")
    assert move == m.MoveRequest(1, m.MoveAction.PLAY, 200)


@BOTH
def test_a_name_of_25_characters_is_too_long(encoding: str, to_frame: Encoder) -> None:
    err = refusal(to_frame(with_fields(HELLO, name="N" * 25)), encoding)
    assert (err.code, err.path) == (ErrorCode.STRING_TOO_LONG, "name")


@BOTH
def test_a_name_of_24_characters_any_script_is_accepted(encoding: str, to_frame: Encoder) -> None:
    for name in ("N" * 24, "Ж" * 24, "🂡" * 24):
        hello = codec.decode(to_frame(with_fields(HELLO, name=name)), encoding)  # type: ignore[arg-type]
        assert isinstance(hello, m.Hello) and hello.name == name


@BOTH
def test_an_empty_name_is_too_short(encoding: str, to_frame: Encoder) -> None:
    assert code_of(to_frame(with_fields(HELLO, name="")), encoding) is ErrorCode.STRING_TOO_SHORT


@BOTH
@pytest.mark.parametrize(
    "name", ["Ann\n", "A\x00n", "\u200bAnn", "A\u2028", "Ann\t", "\x7f"],
    ids=["newline", "nul", "zero-width-space", "line-separator", "tab", "delete"],
)
def test_a_name_with_unprintable_characters_is_refused(
    encoding: str, to_frame: Encoder, name: str
) -> None:
    assert code_of(to_frame(with_fields(HELLO, name=name)), encoding) is (
        ErrorCode.STRING_NOT_PRINTABLE
    )


def test_a_lone_surrogate_escape_in_json_is_not_printable() -> None:
    frame = '{"t":"hello","name":"A\\ud800","version":2}'
    assert code_of(frame, "json") is ErrorCode.STRING_NOT_PRINTABLE


@BOTH
@pytest.mark.parametrize(
    "frame",
    [
        {"t": "move", "seq": 1, "action": "fly"},
        {"t": "join", "code": "ABCDEF", "role": "referee"},
        {"t": "create_room", "options": {"undo": "sometimes"}},
        {"t": "create_room", "options": {"difficulty": "impossible"}},
    ],
    ids=["action", "role", "undo-policy", "difficulty"],
)
def test_a_string_outside_its_choices_is_refused(
    encoding: str, to_frame: Encoder, frame: dict[str, Any]
) -> None:
    assert code_of(to_frame(frame), encoding) is ErrorCode.BAD_CHOICE


def test_a_bad_card_code_or_reason_or_commitment_is_refused_to_clients() -> None:
    assert code_of(as_json(move_result(waste_top="1X")), "json", True) is ErrorCode.BAD_CHOICE
    assert code_of(as_json(move_result(waste_top="??")), "json", True) is ErrorCode.BAD_CHOICE
    rejected = move_result(accepted=False, reason=99)
    assert code_of(as_json(rejected), "json", True) is ErrorCode.BAD_CHOICE
    race = codec.to_wire(
        m.RaceStart("r", False, True, False, "A" * 64, _board_view(), 0, 0)
    )
    assert code_of(as_json(race), "json", True) is ErrorCode.BAD_CHOICE


def _board_view(size: int = 28) -> m.BoardView:
    return m.BoardView(("??",) * size, "AS", 23, 0, 0, 0, Status.PLAYING)


def test_a_list_over_its_limit_is_too_long() -> None:
    member = m.Member("p", "Ann", False, False, True)
    state = m.RoomState(1, "ABC", m.Phase.LOBBY, "p", m.RoomOptions(), (member,) * 17, 0,
                        m.Role.PLAYER, None)
    assert code_of(codec.encode_json(state), "json", True) is ErrorCode.LIST_TOO_LONG


def test_a_board_without_exactly_28_entries_has_the_wrong_length() -> None:
    for size in (27, 29):
        frame = codec.encode_json(m.SpectatorBoard("p", _board_view(size), 0))
        assert code_of(frame, "json", True) is ErrorCode.LIST_WRONG_LENGTH


@BOTH
@pytest.mark.parametrize(
    "frame",
    [
        {"t": "move", "seq": 1, "action": "play"},
        {"t": "move", "seq": 1, "action": "play", "position": None},
        {"t": "move", "seq": 1, "action": "draw", "position": 3},
        {"t": "move", "seq": 1, "action": "undo", "position": 0},
    ],
    ids=["play-without-position", "play-null-position", "draw-with-position", "undo-with-position"],
)
def test_a_move_whose_position_does_not_fit_its_action_is_refused(
    encoding: str, to_frame: Encoder, frame: dict[str, Any]
) -> None:
    err = refusal(to_frame(frame), encoding)
    assert (err.code, err.tag, err.seq) == (ErrorCode.INVALID_COMBINATION, "move", 1)


def test_a_move_result_with_a_reason_must_be_a_rejection() -> None:
    accepted_with_reason = move_result(reason=2)
    assert code_of(as_json(accepted_with_reason), "json", True) is ErrorCode.INVALID_COMBINATION
    rejected_without = move_result(accepted=False)
    assert code_of(as_json(rejected_without), "json", True) is ErrorCode.INVALID_COMBINATION


@BOTH
@pytest.mark.parametrize("version", [0, 3, 65535])
def test_an_unsupported_protocol_version_is_refused(
    encoding: str, to_frame: Encoder, version: int
) -> None:
    err = refusal(to_frame(with_fields(HELLO, version=version)), encoding)
    assert err.code is ErrorCode.UNSUPPORTED_VERSION
    assert err.close_code is CloseCode.UNSUPPORTED_VERSION
    assert str(version) in err.message


# ---- the error reply ---------------------------------------------------------
def test_a_refused_move_reports_its_tag_and_sequence_number_in_the_reply() -> None:
    err = refusal('{"t":"move","seq":9,"action":"fly"}', "json")
    reply = codec.error_reply(err)
    assert reply == m.Error(int(ErrorCode.BAD_CHOICE), reply.message, ref="move", seq=9)
    assert "action" in reply.message
    assert codec.decode_server(codec.encode_msgpack(reply), "msgpack") == reply


def test_an_error_reply_is_always_a_valid_error_message() -> None:
    err = refusal(as_json({"t": "x" * 500}), "json")
    reply = codec.error_reply(err)
    assert reply.ref is None and len(reply.message) <= 200
    assert codec.decode_server(codec.encode_json(reply), "json") == reply


def test_every_decode_error_has_a_close_code_hint() -> None:
    assert ProtocolError(ErrorCode.EXTRA_FIELD).close_code is CloseCode.PROTOCOL_ERROR
    for code, close in CLOSE_FOR_ERROR.items():
        assert ProtocolError(code).close_code is close


# ---- what an undo took back ---------------------------------------------------
def _undo_answer(undone: str) -> dict[str, object]:
    return {
        "t": "move_result", "seq": 3, "action": "undo", "accepted": True, "reason": None,
        "position": None, "card": None, "uncovered": [], "hidden": [], "undone": undone,
        "waste_top": "AS", "stock_left": 22, "cleared": 0, "moves": 2, "draws": 2, "undos": 1,
        "status": "playing", "penalty_ms": 0, "elapsed_ms": 900,
    }


@BOTH
def test_an_undo_takes_back_a_play_or_a_draw_never_another_undo(
    encoding: str, to_frame: Encoder
) -> None:
    for undone in ("play", "draw"):
        result = codec.decode_server(to_frame(_undo_answer(undone)), encoding)  # type: ignore[arg-type]
        assert isinstance(result, m.MoveResult) and result.undone is m.MoveAction(undone)
    assert code_of(to_frame(_undo_answer("undo")), encoding, server=True) is ErrorCode.BAD_CHOICE
