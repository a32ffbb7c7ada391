"""The move fast path's wire work gives exactly what the general codec gives.

``parse_move`` must accept only frames the full decoder turns into the same
move, and take every move the codec writes; ``move_result_msgpack`` must write
the very bytes the codec writes for the ``MoveResult`` of the same outcome.
"""

from __future__ import annotations

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.rules.cards import ALL_CODES
from protocol.rules.game import Status
from protocol.rules.refusals import Reason
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from protocol.wire.fast import (
    FRESH,
    REASON,
    MoveOutcome,
    face,
    move_result_message,
    move_result_msgpack,
    parse_move,
    resent,
)

KEYS = st.sampled_from(["t", "seq", "action", "position", "x", "Seq"])
VALUES = st.one_of(
    st.sampled_from(["move", "play", "draw", "undo", "ping", "PLAY", ""]),
    st.integers(min_value=-3, max_value=300),
    st.sampled_from([0, 1, m.MAX_SEQ, m.MAX_SEQ + 1, 2**40, 2**64 - 1, -(2**63)]),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, width=64),
    st.binary(max_size=4),
    st.lists(st.integers(0, 3), max_size=2),
)


def _move_like_map() -> st.SearchStrategy[dict[str, object]]:
    plain = st.fixed_dictionaries(
        {"t": st.just("move"), "seq": st.integers(1, 2**31 - 1),
         "action": st.sampled_from(["play", "draw", "undo"])},
        optional={"position": st.one_of(st.none(), st.integers(0, 255))},
    )
    return st.one_of(plain, st.dictionaries(KEYS, VALUES, max_size=6), plain.flatmap(_spoil))


def _spoil(base: dict[str, object]) -> st.SearchStrategy[dict[str, object]]:
    return st.tuples(KEYS, VALUES).map(lambda kv: {**base, kv[0]: kv[1]})


def decoded_move(frame: bytes) -> tuple[int, m.MoveAction, int | None] | ErrorCode | str:
    """What the general decoder makes of ``frame``: the move, its error code, or another tag."""
    try:
        message = codec.decode(frame, codec.Encoding.MSGPACK)
    except ProtocolError as exc:
        return exc.code
    if not isinstance(message, m.MoveRequest):
        return message.TAG
    return message.seq, message.action, message.position


# ---- reading a move ----------------------------------------------------------------
@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(_move_like_map())
def test_parse_move_accepts_only_what_the_full_decoder_reads_as_the_same_move(
    wire: dict[str, object],
) -> None:
    frame = msgpack.packb(wire)
    fast = parse_move(frame)
    if fast is not None:
        assert decoded_move(frame) == fast
    elif isinstance(decoded_move(frame), tuple):
        # The fast path may decline a valid move only when its frame is unusually shaped.
        assert len(frame) > 64 or frame[0] & 0xF0 != 0x80


@given(st.binary(max_size=80))
def test_parse_move_declines_or_agrees_on_arbitrary_bytes(frame: bytes) -> None:
    fast = parse_move(frame)
    assert fast is None or decoded_move(frame) == fast


MOVES = st.one_of(
    st.builds(m.MoveRequest, st.integers(1, m.MAX_SEQ), st.just(m.MoveAction.PLAY),
              st.integers(0, 255)),
    st.builds(m.MoveRequest, st.integers(1, m.MAX_SEQ),
              st.sampled_from([m.MoveAction.DRAW, m.MoveAction.UNDO])),
)


@given(MOVES)
def test_parse_move_reads_every_move_the_codec_writes_as_the_decoder_does(
    request: m.MoveRequest,
) -> None:
    frame = codec.encode_msgpack(request)
    assert parse_move(frame) == (request.seq, request.action, request.position)
    assert decoded_move(frame) == parse_move(frame)


def test_parse_move_declines_duplicate_keys_timestamps_and_non_string_keys() -> None:
    dup = b"\x84\xa1t\xa4move\xa3seq\x01\xa6action\xa4draw\xa3seq\x02"
    assert parse_move(dup) is None and decoded_move(dup) is ErrorCode.DUPLICATE_KEY
    stamp = msgpack.packb({"t": "move", "seq": msgpack.Timestamp(1), "action": "draw"})
    assert parse_move(stamp) is None and decoded_move(stamp) is ErrorCode.EXTENSION_TYPE
    bkey = msgpack.packb({"t": "move", "seq": 1, "action": "draw", b"position": None})
    assert parse_move(bkey) is None
    assert parse_move(b"") is None and parse_move(b"\x80") is None


def test_parse_move_takes_every_plain_move_the_clients_send() -> None:
    for request in (
        m.MoveRequest(1, m.MoveAction.PLAY, 0), m.MoveRequest(m.MAX_SEQ, m.MoveAction.PLAY, 255),
        m.MoveRequest(2, m.MoveAction.DRAW), m.MoveRequest(3, m.MoveAction.UNDO),
    ):
        frame = codec.encode_msgpack(request)
        assert parse_move(frame) == (request.seq, request.action, request.position)
    bare = msgpack.packb({"t": "move", "seq": 9, "action": "draw"})
    assert parse_move(bare) == (9, m.MoveAction.DRAW, None)


HEAD = b"\x84\xa1t\xa4move\xa3seq"
SEQ_BYTES = st.one_of(
    st.integers(0, 2**31 + 5).map(msgpack.packb),  # the shortest form, as clients write it
    st.integers(0, 255).map(lambda n: b"\xcc" + n.to_bytes(1, "big")),
    st.integers(0, 2**16 - 1).map(lambda n: b"\xcd" + n.to_bytes(2, "big")),
    st.integers(0, 2**32 - 1).map(lambda n: b"\xce" + n.to_bytes(4, "big")),
    st.integers(0, 2**64 - 1).map(lambda n: b"\xcf" + n.to_bytes(8, "big")),
    st.integers(-(2**31), 2**31 - 1).map(lambda n: b"\xd2" + n.to_bytes(4, "big", signed=True)),
    st.sampled_from([b"\xc0", b"\xc3", b"\xcb" + b"\x00" * 8, b"\xa1x", b""]),
)
TAILS = st.one_of(
    st.builds(
        lambda action, position: msgpack.packb({"action": action, "position": position})[1:],
        st.sampled_from(["play", "draw", "undo", "jump"]),
        st.one_of(st.none(), st.integers(-2, 300), st.booleans()),
    ),
    st.binary(max_size=30),
)


def _spoiled(data: bytes, cut: int, extra: bytes, flip: int) -> bytes:
    """``data`` cut short, extended or with one byte changed (or left alone)."""
    if flip and data:
        at = flip % len(data)
        data = data[:at] + bytes([(data[at] + flip) % 256]) + data[at + 1 :]
    return data[: len(data) - cut] + extra


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(SEQ_BYTES, TAILS, st.integers(0, 3), st.sampled_from([b"", b"\x00", b"\xc0"]),
       st.sampled_from([0, 0, 0, 1, 7, 200]))
def test_parse_move_reads_the_codecs_layout_byte_for_byte_as_the_full_decoder_does(
    seq: bytes, tail: bytes, cut: int, extra: bytes, flip: int
) -> None:
    """Frames in (or near) the codec's own layout, every msgpack form of ``seq``, good and
    spoiled tails: ``parse_move`` agrees with ``decode``, and takes every move it reads."""
    frame = _spoiled(HEAD + seq + tail, cut, extra, flip)
    fast = parse_move(frame)
    decoded = decoded_move(frame)
    if fast is not None:
        assert decoded == fast
    elif isinstance(decoded, tuple):
        assert len(frame) > 64 or frame[0] & 0xF0 != 0x80


def test_parse_move_reads_every_seq_form_of_the_codecs_layout() -> None:
    tail = b"\xa6action\xa4play\xa8position\xcc\xc8"
    for seq in (b"\x01", b"\x7f", b"\xcc\x05", b"\xcc\xff", b"\xcd\x01\x2c",
                b"\xce\x7f\xff\xff\xff", b"\xcf" + b"\x00" * 7 + b"\x01"):
        assert parse_move(HEAD + seq + tail) == decoded_move(HEAD + seq + tail)
    for seq in (b"\x00", b"\xcc\x00", b"\xce\x80\x00\x00\x00"):
        assert parse_move(HEAD + seq + tail) is None


# ---- writing the answer ------------------------------------------------------------
CARDS = st.integers(0, len(ALL_CODES) - 1)
POSITIONS = st.integers(0, 27)
#: Numbers around the encoder's table of packed integers (2**14) and msgpack's widths.
NUMBERS = st.one_of(
    st.integers(0, 300),
    st.sampled_from([2**14 - 1, 2**14, 2**16 - 1, 2**16, 2**32 - 1, 2**32]),
    st.integers(0, m.MAX_SAFE_INT),
)
TALLIES = st.tuples(
    st.one_of(st.none(), CARDS), st.integers(0, 24), st.integers(0, 28), NUMBERS, NUMBERS,
    NUMBERS, st.sampled_from([status.value for status in Status]),
)
FACES = st.builds(face, POSITIONS, CARDS)


def _pair(items: st.SearchStrategy[int]) -> st.SearchStrategy[tuple[int | None, int | None]]:
    """Two fields for none, one or two items."""
    return st.one_of(st.tuples(st.none(), st.none()), st.tuples(items, st.none()),
                     st.tuples(items, items))


def _outcomes() -> st.SearchStrategy[MoveOutcome]:
    """Every kind of answer the race gives: plays, draws, undos of each, refusals."""
    play, draw, undo = "play", "draw", "undo"
    nothing = st.just((None, None))
    kinds = st.one_of(
        st.tuples(st.just(play), st.none(), POSITIONS, CARDS, _pair(FACES), st.none()),
        st.tuples(st.just(draw), st.none(), st.none(), CARDS, nothing, st.none()),
        st.tuples(st.just(undo), st.none(), st.none(), st.none(), nothing, st.just(draw)),
        st.tuples(st.just(undo), st.none(), POSITIONS, CARDS, _pair(POSITIONS), st.just(play)),
        st.tuples(st.sampled_from([a.value for a in m.MoveAction]),
                  st.sampled_from([int(reason) for reason in Reason]),
                  st.one_of(st.none(), st.integers(0, 255)), st.none(), nothing, st.none()),
    )
    return st.builds(
        lambda kind, seq, tally, penalty, at, fresh: (
            seq, *kind[:4], *kind[4], kind[5], *tally, penalty, at, fresh
        ),
        kinds, st.one_of(st.integers(1, 300), st.integers(1, m.MAX_SEQ)), TALLIES, NUMBERS,
        NUMBERS, st.booleans(),
    )


@settings(max_examples=1000)
@given(_outcomes())
def test_the_answer_frame_is_the_codecs_bytes_of_the_answers_message(
    outcome: MoveOutcome,
) -> None:
    frame = move_result_msgpack(outcome)
    message = move_result_message(outcome)
    assert frame == codec.encode_msgpack(message)
    assert codec.decode_server(frame, codec.Encoding.MSGPACK) == message
    assert message.accepted == (outcome[REASON] is None)
    assert resent(outcome)[:FRESH] == outcome[:FRESH] and not resent(outcome)[FRESH]


def test_an_answer_message_names_its_cards_by_their_codes() -> None:
    outcome: MoveOutcome = (
        12, "play", None, 5, 12, face(1, 30), face(2, 51), None,
        7, 20, 3, 9, 4, 1, "playing", 5000, 4321, True,
    )
    message = move_result_message(outcome)
    assert (message.card, message.waste_top) == (ALL_CODES[12], ALL_CODES[7])
    assert message.uncovered == (m.Uncovered(1, ALL_CODES[30]), m.Uncovered(2, ALL_CODES[51]))
    assert (message.stock_left, message.cleared, message.moves, message.draws) == (20, 3, 9, 4)
    assert (message.undos, message.penalty_ms, message.elapsed_ms) == (1, 5000, 4321)
    assert (message.action, message.undone, message.status, message.hidden) == (
        m.MoveAction.PLAY, None, Status.PLAYING, ()
    )
    assert type(message.action) is m.MoveAction and type(message.status) is Status
