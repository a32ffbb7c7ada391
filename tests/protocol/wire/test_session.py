"""The sans-I/O client session: hello and welcome, state guards, bad frames, move numbers
across drops and resyncs, and the fast ``move_result`` reader held to the codec."""

from __future__ import annotations

import random
from collections import Counter

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.rules.game import Deal, Rules, Status
from protocol.rules.refusals import Reason
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode
from protocol.wire.session import (
    BadFrame,
    ClientSession,
    HelloRefused,
    MoveAnswered,
    SessionMisuse,
    SessionState,
    answer_of,
    read_move_answer,
)
from server.race.race import Race
from tests.protocol.wire.test_codec_roundtrip import struct_strategy

MSGPACK = codec.Encoding.MSGPACK
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def welcome(resumed: bool = False, token: str = "tok-1") -> m.Welcome:
    return m.Welcome("p1", "ann", token, resumed, m.PROTOCOL_VERSION, "test")


def answer(seq: int) -> m.MoveResult:
    return m.MoveResult(
        seq, m.MoveAction.DRAW, True, None, None, "AS", (), (), None, "AS", 5, 0, seq, seq, 0,
        Status.PLAYING, 0, 10 * seq,
    )


def resync(last_seq: int) -> m.Resync:
    return m.Resync(3, m.Phase.RACING, "r1", None, 0, 100, 50, last_seq, 0, None)


def ready(session: ClientSession | None = None) -> ClientSession:
    session = session or ClientSession("ann")
    session.hello()
    session.receive(codec.encode_msgpack(welcome()))
    return session


def sent(frame: bytes | str) -> m.ClientMessage:
    return codec.decode(frame, MSGPACK)


# ---- hello and welcome --------------------------------------------------------------
def test_hello_carries_the_name_the_bot_flag_the_client_and_the_protocol_version() -> None:
    session = ClientSession("robo", bot=True, client="tripeaks-bot")
    hello = sent(session.hello())
    assert hello == m.Hello("robo", m.PROTOCOL_VERSION, None, True, "tripeaks-bot")
    assert session.state is SessionState.HELLO_SENT


def test_welcome_makes_the_session_ready_and_its_token_goes_in_the_next_hello() -> None:
    session = ClientSession("ann")
    session.hello()
    events = session.receive(codec.encode_msgpack(welcome(token="secret")))
    assert events == [welcome(token="secret")]
    assert session.state is SessionState.READY and session.token == "secret"
    session.connection_lost()
    hello = sent(session.hello())
    assert isinstance(hello, m.Hello) and hello.token == "secret"


def test_an_error_instead_of_welcome_is_a_refused_hello_and_disconnects() -> None:
    session = ClientSession("ann")
    session.hello()
    error = m.Error(int(ErrorCode.UNSUPPORTED_VERSION), "no", "hello", None)
    assert session.receive(codec.encode_msgpack(error)) == [HelloRefused(error)]
    assert session.state is SessionState.DISCONNECTED


def test_json_sessions_write_text_frames_and_read_them() -> None:
    session = ClientSession("ann", encoding=codec.Encoding.JSON)
    assert isinstance(session.hello(), str)
    assert session.receive(codec.encode_json(welcome())) == [welcome()]
    seq, frame = session.move(m.MoveAction.PLAY, 21)
    assert seq == 1 and codec.decode(frame, "json") == m.MoveRequest(1, m.MoveAction.PLAY, 21)


# ---- state guards -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "state"),
    [
        (lambda s: s.send(m.Ping(1)), "NEW"),
        (lambda s: s.receive(b"\x80"), "NEW"),
        (lambda s: s.move(m.MoveAction.DRAW), "NEW"),
        (lambda s: s.connection_lost(), "NEW"),
        (lambda s: s.resend_after_resync(0), "NEW"),
    ],
)
def test_a_new_session_refuses_everything_but_hello_naming_its_state(call, state) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SessionMisuse, match=f"in state {state}"):
        call(ClientSession("ann"))


def test_hello_twice_and_sending_while_disconnected_are_refused() -> None:
    session = ClientSession("ann")
    session.hello()
    with pytest.raises(SessionMisuse, match="hello\\(\\) cannot be called in state HELLO_SENT"):
        session.hello()
    with pytest.raises(SessionMisuse, match="HELLO_SENT"):
        session.send(m.Ping(1))
    session.receive(codec.encode_msgpack(welcome()))
    session.connection_lost()
    with pytest.raises(SessionMisuse, match="DISCONNECTED"):
        session.send(m.Ping(1))
    with pytest.raises(SessionMisuse, match="DISCONNECTED"):
        session.receive(codec.encode_msgpack(m.Pong(1, 2)))
    session.close()
    with pytest.raises(SessionMisuse, match="CLOSED"):
        session.hello()


def test_moves_go_through_move_not_send() -> None:
    with pytest.raises(SessionMisuse, match="move\\(\\) numbers them"):
        ready().send(m.MoveRequest(1, m.MoveAction.DRAW))


# ---- bad frames -----------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=50))
def test_a_frame_that_does_not_decode_is_a_bad_frame_event_never_an_exception(
    data: bytes | str,
) -> None:
    session = ready()
    events = session.receive(data)
    assert len(events) == 1
    if isinstance(events[0], BadFrame):
        assert isinstance(events[0].error.code, ErrorCode)
    assert session.state is SessionState.READY


def test_a_text_frame_on_msgpack_is_a_bad_frame_with_its_code() -> None:
    [event] = ready().receive('{"t":"pong"}')
    assert isinstance(event, BadFrame) and event.error.code is ErrorCode.WRONG_FRAME_TYPE


# ---- move numbers ---------------------------------------------------------------------
def test_moves_are_numbered_from_one_and_an_answer_settles_its_move_once() -> None:
    session = ready()
    seqs = [session.move(m.MoveAction.DRAW)[0] for _ in range(3)]
    assert seqs == [1, 2, 3]
    [first] = session.receive(codec.encode_msgpack(answer(1)))
    assert first == MoveAnswered(answer(1), m.MoveRequest(1, m.MoveAction.DRAW))
    assert session.receive(codec.encode_msgpack(answer(1))) == [answer(1)]  # a copy: no event
    [third] = session.receive(codec.encode_msgpack(answer(3)))  # 2's answer was lost
    assert isinstance(third, MoveAnswered) and session.in_flight == ()


def test_a_race_start_and_a_lost_seat_number_moves_from_one_again() -> None:
    session = ready()
    session.move(m.MoveAction.DRAW)
    view = m.BoardView(("??",) * 18 + ("AS",) * 10, "KH", 23, 0, 0, 0, Status.PLAYING)
    start = m.RaceStart("r2", False, True, False, "a" * 64, view, 0, 0)
    assert session.receive(codec.encode_msgpack(start)) == [start]
    assert session.next_seq == 1 and session.in_flight == ()
    session.move(m.MoveAction.DRAW)
    session.connection_lost()
    session.hello()
    session.receive(codec.encode_msgpack(welcome(resumed=False)))
    assert session.next_seq == 1 and session.in_flight == ()


def test_a_move_refused_unhandled_is_dropped_with_the_later_ones_and_its_number_reused() -> None:
    session = ready()
    for _ in range(4):
        session.move(m.MoveAction.DRAW)
    assert sent(session.resend(2)) == m.MoveRequest(2, m.MoveAction.DRAW)
    session.refused(2)
    assert [r.seq for r in session.in_flight] == [1]
    assert session.move(m.MoveAction.UNDO)[0] == 2
    with pytest.raises(SessionMisuse, match="move 3 is not in flight"):
        session.resend(3)


def test_after_a_resync_the_unhandled_moves_go_again_under_their_numbers() -> None:
    session = ready()
    for _ in range(5):
        session.move(m.MoveAction.DRAW)
    session.connection_lost()
    session.move(m.MoveAction.PLAY, 3)  # made while offline: kept, sent after the resync
    session.hello()
    session.receive(codec.encode_msgpack(welcome(resumed=True)))
    session.receive(codec.encode_msgpack(resync(3)))
    frames = session.resend_after_resync(3)
    assert [sent(f) for f in frames] == [
        m.MoveRequest(4, m.MoveAction.DRAW), m.MoveRequest(5, m.MoveAction.DRAW),
        m.MoveRequest(6, m.MoveAction.PLAY, 3),
    ]
    assert session.next_seq == 7


def test_a_server_behind_the_moves_in_flight_gets_them_renumbered_without_a_gap() -> None:
    session = ready()
    session.next_seq = 4  # as if three frames had been lost before the server
    for _ in range(2):
        session.move(m.MoveAction.DRAW)
    resent = [sent(f) for f in session.resend_after_resync(0)]
    assert resent == [m.MoveRequest(1, m.MoveAction.DRAW), m.MoveRequest(2, m.MoveAction.DRAW)]
    assert session.next_seq == 3


class Server:
    """A server's move numbering: handles ``last + 1``, keeps every answer."""

    def __init__(self) -> None:
        self.last = 0
        self.handled: list[int] = []
        self.inbox: list[bytes | str] = []  # frames on the way to the server
        self.outbox: list[bytes] = []  # answers on the way to the client

    def handle(self) -> None:
        move = codec.decode(self.inbox.pop(0), MSGPACK)
        assert isinstance(move, m.MoveRequest)
        assert move.seq == self.last + 1, "a move skipped ahead or came twice"
        self.last = move.seq
        self.handled.append(move.seq)
        self.outbox.append(codec.encode_msgpack(answer(move.seq)))


@PROPERTY
@given(st.lists(st.sampled_from(["move", "handle", "answer", "drop"]), max_size=80))
def test_any_interleaving_of_moves_answers_and_drops_never_loses_or_repeats_a_move(
    steps: list[str],
) -> None:
    session, server = ready(), Server()
    online, made = True, 0
    answered: Counter[int] = Counter()

    def deliver() -> None:
        for event in session.receive(server.outbox.pop(0)):
            if isinstance(event, MoveAnswered):
                assert event.result.seq == event.move.seq
                answered[event.move.seq] += 1

    def reconnect() -> None:
        nonlocal online
        session.hello()
        session.receive(codec.encode_msgpack(welcome(resumed=True)))
        session.receive(codec.encode_msgpack(resync(server.last)))
        server.inbox.extend(session.resend_after_resync(server.last))
        online = True

    for step in steps:
        if step == "move":
            made += 1
            seq, frame = session.move(m.MoveAction.DRAW)
            assert seq == made
            if online:
                server.inbox.append(frame)
        elif step == "handle" and server.inbox:
            server.handle()
        elif step == "answer" and server.outbox:
            deliver()
        elif step == "drop":
            if online:
                server.inbox.clear()  # frames on the wire and answers are lost with the socket
                server.outbox.clear()
                session.connection_lost()
                online = False
            else:
                reconnect()
    if not online:
        reconnect()
    while server.inbox or server.outbox:
        if server.inbox:
            server.handle()
        else:
            deliver()
    assert server.handled == list(range(1, made + 1))
    assert session.in_flight == () and session.next_seq == made + 1
    assert all(count == 1 for count in answered.values())


# ---- the fast move_result reader ------------------------------------------------------
def _deal(seed: int) -> Deal:
    cards = list(range(52))
    random.Random(seed).shuffle(cards)
    return Deal(Rules(), tuple(cards[:28]), cards[28], tuple(cards[29:]))


def _race_answers(seed: int, count: int, draws: float = 0.25) -> list[bytes]:
    """The frames a real race writes for random moves: every kind of answer."""
    race = Race(_deal(seed), [("a", "ann", True)], start_ms=0, allow_undo=True,
                undo_penalty_ms=0, time_limit_ms=10**9)
    rng = random.Random(seed)
    frames = []
    for seq in range(1, count + 1):
        pick = rng.random()
        move: tuple[m.MoveAction, int | None]
        if pick < 0.55:
            move = (m.MoveAction.PLAY, rng.randrange(28))
        elif pick < 0.55 + draws:
            move = (m.MoveAction.DRAW, None)
        else:
            move = (m.MoveAction.UNDO, None)
        result, _ = race.move("a", seq, move[0], move[1], now_ms=seq * 700)
        frames.append(codec.encode_msgpack(result))
    return frames


def test_every_kind_of_answer_a_race_writes_is_read_as_the_codec_reads_it() -> None:
    kinds: set[tuple[object, ...]] = set()
    runs = [_race_answers(seed, 150) for seed in range(6)] + [_race_answers(9, 80, draws=0.45)]
    for frames in runs:
        for frame in frames:
            read = read_move_answer(frame)
            assert read == answer_of(codec.decode_server(frame, MSGPACK))  # type: ignore[arg-type]
            assert read is not None
            kinds.add((read.action, read.accepted, read.undone, len(read.uncovered),
                       len(read.hidden), read.waste_top is None))
    actions = {(action, accepted) for action, accepted, *_ in kinds}
    assert actions == {(a, ok) for a in m.MoveAction for ok in (True, False)}
    assert {k[2] for k in kinds} >= {m.MoveAction.PLAY, m.MoveAction.DRAW}
    assert {k[3] for k in kinds} >= {0, 1}
    assert {k[4] for k in kinds} >= {0, 1}


@PROPERTY
@given(struct_strategy(m.MoveResult))
def test_any_valid_answer_the_codec_writes_is_read_to_the_same_values(
    result: m.MoveResult,
) -> None:
    frame = codec.encode_msgpack(result)
    read = read_move_answer(frame)
    if read is not None:  # a count past 32 bits, say, is left to the full decoder
        assert read == answer_of(result)
    small = result.position is None or result.position < 128
    counts = (result.moves, result.draws, result.undos, result.penalty_ms, result.elapsed_ms)
    if small and max(counts) < 2**32:
        assert read == answer_of(result)


@PROPERTY
@given(st.integers(0, 5), st.integers(0, 300), st.data())
def test_a_damaged_answer_is_read_only_if_the_codec_reads_it_the_same(
    seed: int, at: int, data: st.DataObject
) -> None:
    frame = bytearray(_race_answers(seed, 20)[at % 20])
    where = data.draw(st.integers(0, len(frame) - 1))
    frame[where] = data.draw(st.integers(0, 255))
    read = read_move_answer(bytes(frame))
    if read is not None:
        assert read == answer_of(codec.decode_server(bytes(frame), MSGPACK))  # type: ignore[arg-type]


def test_an_answer_in_another_key_order_or_another_message_is_not_read() -> None:
    frame = _race_answers(1, 1)[0]
    backwards = msgpack.packb(dict(reversed(msgpack.unpackb(frame).items())))
    assert read_move_answer(backwards) is None
    assert read_move_answer(codec.encode_msgpack(m.Pong(1, 2))) is None
    assert read_move_answer(b"") is None


def test_a_play_that_turns_two_cards_face_up_is_read_with_both() -> None:
    both = (m.Uncovered(3, "7D"), m.Uncovered(4, "TS"))
    play = m.MoveResult(
        9, m.MoveAction.PLAY, True, None, 9, "8C", both, (), None, "8C", 12, 4, 9, 3, 0,
        Status.PLAYING, 0, 2000,
    )
    read = read_move_answer(codec.encode_msgpack(play))
    assert read == answer_of(play) and read.uncovered == ((3, "7D"), (4, "TS"))


def test_a_refusal_is_read_with_its_reason() -> None:
    refused = m.MoveResult(
        4, m.MoveAction.PLAY, False, Reason.COVERED, 2, None, (), (), None, "KH", 10, 3, 7, 2, 0,
        Status.PLAYING, 0, 1234,
    )
    read = read_move_answer(codec.encode_msgpack(refused))
    assert read is not None and read.reason is Reason.COVERED and not read.accepted
