"""Every message survives encode then decode, in both encodings (property-based).

The strategies are built from the same schema the codec enforces
(:mod:`protocol.wire.schema`), so a new message or field is covered without
touching this file; other protocol tests import :func:`message_strategy`.
"""

from __future__ import annotations

import json
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.deals.shuffle import candidate_deal
from protocol.rules.game import DRAW, Game, Rules
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ProtocolError
from protocol.wire.schema import (
    BoolNode,
    ChoiceNode,
    IntEnumNode,
    IntNode,
    ListNode,
    Node,
    OptionalNode,
    PatternNode,
    StructNode,
    TextNode,
    UnionNode,
    compile_struct,
)

ALL_MESSAGES: tuple[type[Any], ...] = (
    *m.CLIENT_MESSAGES.values(),
    *m.SERVER_MESSAGES.values(),
)

# Letters, marks, digits, punctuation and symbols from all of Unicode, plus the
# plain space: exactly the characters str.isprintable() accepts.
_PRINTABLE = st.characters(categories=["L", "M", "N", "P", "S"]) | st.just(" ")

#: Fields whose valid values are a tiny corner of their wire type.
_OVERRIDES: dict[tuple[type[Any], str], st.SearchStrategy[Any]] = {
    # "msgpack" and "json" are the latest version's dialects; a hello names their version.
    (m.Hello, "version"): st.just(m.PROTOCOL_VERSION),
}

#: Long lists make slow examples without testing anything new.
_MAX_GENERATED_ITEMS = 20


def node_strategy(node: Node) -> st.SearchStrategy[Any]:
    """Values of one wire type that the codec accepts."""
    if isinstance(node, BoolNode):
        return st.booleans()
    if isinstance(node, IntNode):
        return st.integers(node.lo, node.hi)
    if isinstance(node, TextNode):
        return st.text(_PRINTABLE, min_size=node.min_len, max_size=node.max_len).filter(
            str.isprintable
        )
    if isinstance(node, ChoiceNode):
        return st.sampled_from(list(node.choices.values()))
    if isinstance(node, IntEnumNode):
        return st.sampled_from(list(node.enum_type))
    if isinstance(node, PatternNode):
        return st.from_regex(node.regex, fullmatch=True).filter(lambda s: len(s) <= node.max_len)
    if isinstance(node, OptionalNode):
        return st.none() | node_strategy(node.inner)
    if isinstance(node, UnionNode):
        return node_strategy(node.int_node) | node_strategy(node.str_node)
    if isinstance(node, ListNode):
        size = node.max_len if node.exact else min(node.max_len, _MAX_GENERATED_ITEMS)
        low = node.max_len if node.exact else 0
        return st.lists(node_strategy(node.item), min_size=low, max_size=size).map(tuple)
    if isinstance(node, StructNode):
        return struct_strategy(node.cls)
    raise AssertionError(f"no strategy for {node!r}")


def _passes_checks(node: StructNode, value: Any) -> bool:
    if node.check is None:
        return True
    try:
        node.check(value)
    except ProtocolError:
        return False
    return True


def struct_strategy(cls: type[Any]) -> st.SearchStrategy[Any]:
    """Valid instances of a message or nested dataclass."""
    node = compile_struct(cls)
    kwargs = {
        spec.name: _OVERRIDES[cls, spec.name]
        if (cls, spec.name) in _OVERRIDES
        else node_strategy(spec.node)
        for spec in node.fields
    }
    return st.builds(cls, **kwargs).filter(lambda value: _passes_checks(node, value))


def message_strategy(
    classes: tuple[type[Any], ...] = ALL_MESSAGES,
) -> st.SearchStrategy[Any]:
    """Any valid message of the given classes."""
    return st.one_of([struct_strategy(cls) for cls in classes])


def decoder_for(message: Any) -> Any:
    return codec.decode if type(message) in m.CLIENT_MESSAGES.values() else codec.decode_server


ROUNDTRIP = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=lambda cls: cls.TAG)
@pytest.mark.parametrize("encoding", ["msgpack", "json"])
def test_every_message_type_round_trips_unchanged(cls: type[Any], encoding: str) -> None:
    @ROUNDTRIP
    @given(struct_strategy(cls))
    def check(message: Any) -> None:
        frame = codec.encode(message, encoding)  # type: ignore[arg-type]
        assert decoder_for(message)(frame, encoding) == message

    check()


@ROUNDTRIP
@given(message_strategy())
def test_both_encodings_carry_the_same_map(message: Any) -> None:
    packed = codec.encode(message, "msgpack")
    text = codec.encode(message, "json")
    assert isinstance(packed, bytes) and isinstance(text, str)
    assert msgpack.unpackb(packed, raw=False) == json.loads(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_strategy((m.Progress, m.SpectatorBoard, m.SpectatorUpdate)))
def test_the_hand_written_maps_of_hot_frames_are_the_schemas_maps(message: Any) -> None:
    by_schema = {"t": message.TAG, **codec.node_for(type(message)).encode(message)}
    fast = codec.to_wire(message)
    assert fast == by_schema
    assert msgpack.packb(fast) == msgpack.packb(by_schema)
    assert json.dumps(fast) == json.dumps(by_schema)


@ROUNDTRIP
@given(message_strategy())
def test_encoding_puts_the_type_tag_first(message: Any) -> None:
    wire = msgpack.unpackb(codec.encode_msgpack(message), raw=False)
    assert next(iter(wire)) == "t"
    assert wire["t"] == message.TAG


@ROUNDTRIP
@given(message_strategy(tuple(m.CLIENT_MESSAGES.values())))
def test_every_valid_client_message_fits_the_client_frame_limit(message: Any) -> None:
    assert len(codec.encode_msgpack(message)) <= codec.MAX_CLIENT_FRAME
    assert len(codec.encode_json(message).encode("utf-8")) <= codec.MAX_CLIENT_FRAME


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_strategy(tuple(m.SERVER_MESSAGES.values())))
def test_every_valid_server_message_fits_the_server_frame_limit(message: Any) -> None:
    assert len(codec.encode_json(message).encode("utf-8")) <= codec.MAX_SERVER_FRAME


def test_the_largest_room_list_fits_the_server_frame_limit() -> None:
    options = m.RoomOptions(name="W" * 40, practice_seed="S" * 64)
    summary = m.RoomSummary("ABCDEFGHIJKLMNOP", m.Phase.LOBBY, 16, m.MAX_SAFE_INT, options)
    room_list = m.RoomList(tuple([summary] * 100))
    assert len(codec.encode_json(room_list).encode("utf-8")) <= codec.MAX_SERVER_FRAME
    assert codec.decode_server(codec.encode_msgpack(room_list), "msgpack") == room_list


def test_fields_with_defaults_may_be_left_out_and_get_their_defaults() -> None:
    assert codec.decode('{"t":"create_room"}', "json") == m.CreateRoom(m.RoomOptions())
    assert codec.decode('{"t":"create_room","options":{}}', "json") == m.CreateRoom()
    hello = codec.decode('{"t":"hello","name":"Ann","version":2}', "json")
    assert hello == m.Hello(name="Ann", version=2, token=None, bot=False, client="")
    assert codec.decode('{"t":"ready"}', "json") == m.Ready(ready=True)
    move = codec.decode('{"t":"move","seq":1,"action":"draw"}', "json")
    assert move == m.MoveRequest(1, m.MoveAction.DRAW, None)


def test_decoded_enums_are_enum_members_not_plain_strings() -> None:
    move = codec.decode('{"t":"move","seq":7,"action":"play","position":3}', "json")
    assert isinstance(move, m.MoveRequest)
    assert move.action is m.MoveAction.PLAY
    assert move.move == 3


def test_every_message_class_has_a_unique_tag_in_one_direction() -> None:
    client, server = set(m.CLIENT_MESSAGES), set(m.SERVER_MESSAGES)
    assert not client & server
    assert len(client) + len(server) == len(ALL_MESSAGES)
    assert all(tag == cls.TAG for tag, cls in m.CLIENT_MESSAGES.items())
    assert all(tag == cls.TAG for tag, cls in m.SERVER_MESSAGES.items())


@settings(max_examples=30, deadline=None)
@given(st.text(min_size=1, max_size=12).filter(str.isprintable), st.booleans(), st.booleans(),
       st.integers(0, 40))
def test_engine_views_and_deals_convert_to_the_wire_and_back(
    seed: str, wrap: bool, empty_waste: bool, steps: int
) -> None:
    rules = Rules(wrap, empty_waste)
    deal = candidate_deal(seed, 0, rules)
    game = Game(deal)
    for _ in range(steps):
        moves = game.legal_moves()
        if not moves:
            break
        game.push(moves[0])
    view = game.view()
    wire_view = m.BoardView.from_view(view)
    assert wire_view.to_view() == view and wire_view.cleared == view.cleared
    board = m.SpectatorBoard("p1", wire_view, 0)
    assert codec.decode_server(codec.encode_msgpack(board), "msgpack") == board
    codes = m.DealCodes.from_deal(deal)
    assert codes.to_deal(rules) == deal


def test_a_move_request_names_its_engine_move() -> None:
    assert m.MoveRequest(1, m.MoveAction.PLAY, 5).move == 5
    assert m.MoveRequest(2, m.MoveAction.DRAW).move == DRAW
    assert m.MoveRequest(3, m.MoveAction.UNDO).move is None


def test_room_options_name_their_rules_and_practice_flag() -> None:
    options = m.RoomOptions(wrap=False, empty_waste=True, practice_seed="42")
    assert options.rules == Rules(wrap=False, empty_waste=True)
    assert options.practice and not m.RoomOptions().practice


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_strategy((m.SpectatorUpdate,)), st.sampled_from(["msgpack", "json"]))
def test_an_update_built_on_its_encoded_progress_is_the_same_frame(
    update: Any, encoding: str
) -> None:
    progress = None if update.progress is None else codec.encode(update.progress, encoding)  # type: ignore[arg-type]
    spliced = codec.encode_update(update, encoding, progress)  # type: ignore[arg-type]
    assert spliced == codec.encode(update, encoding)  # type: ignore[arg-type]
