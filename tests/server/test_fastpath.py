"""The move fast path gives exactly what the general path gives: same decisions, same bytes.

``protocol.wire.codec.parse_move`` must accept only frames the full decoder turns
into the same move; ``Race.answer`` must build the very map the codec writes
for the ``MoveResult`` the race returns; the server must answer odd move
frames with the general path's error codes; and frames written straight to
the socket (``server.transport.framing``) must reach a real client intact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import aiohttp
import msgpack
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.deals.dealer import deal_for_seed
from protocol.rules.cards import card_code
from protocol.rules.game import DRAW, HIDDEN, Game, Rules, Status
from protocol.rules.layout import COVERED_BY
from protocol.rules.refusals import IllegalMoveError, Reason
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from server.race.outputs import Output, SetTimer, ToPlayers
from server.race.race import Race, SeqOutOfOrder, message_of
from server.race.ratelimit import CreditBucket
from server.race.records import MoveLogEntry
from server.race.room import PROGRESS_TIMER, Room
from server.race.room_types import Fresh, Identity, RoomTimings
from server.transport.connection import Connection, Transport
from server.transport.framing import WriteBatch, frame_header
from tests.serverutil import open_room, running_server

DEALT = deal_for_seed("42", Rules())
DEALT_NO_WRAP = deal_for_seed("7", Rules(wrap=False, empty_waste=True))

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


def _decoded(frame: bytes) -> tuple[int, m.MoveAction, int | None] | ErrorCode | str:
    try:
        message = codec.decode(frame, codec.Encoding.MSGPACK)
    except ProtocolError as exc:
        return exc.code
    if not isinstance(message, m.MoveRequest):
        return message.TAG
    return message.seq, message.action, message.position


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(_move_like_map())
def test_parse_move_accepts_only_what_the_full_decoder_reads_as_the_same_move(
    wire: dict[str, object],
) -> None:
    frame = msgpack.packb(wire)
    fast = codec.parse_move(frame)
    if fast is not None:
        assert _decoded(frame) == fast
    elif isinstance(_decoded(frame), tuple):
        # The fast path may decline a valid move only when its frame is unusually shaped.
        assert len(frame) > 64 or frame[0] & 0xF0 != 0x80


@given(st.binary(max_size=80))
def test_parse_move_declines_or_agrees_on_arbitrary_bytes(frame: bytes) -> None:
    fast = codec.parse_move(frame)
    assert fast is None or _decoded(frame) == fast


def test_parse_move_declines_duplicate_keys_timestamps_and_non_string_keys() -> None:
    dup = b"\x84\xa1t\xa4move\xa3seq\x01\xa6action\xa4draw\xa3seq\x02"
    assert codec.parse_move(dup) is None and _decoded(dup) is ErrorCode.DUPLICATE_KEY
    stamp = msgpack.packb({"t": "move", "seq": msgpack.Timestamp(1), "action": "draw"})
    assert codec.parse_move(stamp) is None and _decoded(stamp) is ErrorCode.EXTENSION_TYPE
    bkey = msgpack.packb({"t": "move", "seq": 1, "action": "draw", b"position": None})
    assert codec.parse_move(bkey) is None
    assert codec.parse_move(b"") is None and codec.parse_move(b"\x80") is None


def test_parse_move_takes_every_plain_move_the_clients_send() -> None:
    for request in (
        m.MoveRequest(1, m.MoveAction.PLAY, 0), m.MoveRequest(m.MAX_SEQ, m.MoveAction.PLAY, 255),
        m.MoveRequest(2, m.MoveAction.DRAW), m.MoveRequest(3, m.MoveAction.UNDO),
    ):
        frame = codec.encode_msgpack(request)
        assert codec.parse_move(frame) == (request.seq, request.action, request.position)
    bare = msgpack.packb({"t": "move", "seq": 9, "action": "draw"})
    assert codec.parse_move(bare) == (9, m.MoveAction.DRAW, None)


def _race(allow_undo: bool, penalty_ms: int, wrap: bool) -> Race:
    dealt = DEALT if wrap else DEALT_NO_WRAP
    players = [("a", "ann", False), ("b", "bob", True)]
    return Race(
        dealt.deal, players, start_ms=1000, allow_undo=allow_undo,
        undo_penalty_ms=penalty_ms, time_limit_ms=600_000,
    )


STEPS = st.lists(
    st.tuples(
        st.sampled_from(list(m.MoveAction)),
        st.one_of(st.none(), st.integers(0, 30), st.sampled_from([27, 255])),
        st.sampled_from([1, 1, 1, 1, 0, -1, -5, 2]),
    ),
    max_size=80,
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(STEPS, st.booleans(), st.sampled_from([0, 5000]), st.booleans())
def test_fast_answers_are_the_codecs_bytes_for_every_kind_of_move_result(
    steps: list[tuple[m.MoveAction, int | None, int]], allow_undo: bool, penalty: int, wrap: bool
) -> None:
    """Two races fed the same moves: one answers through ``move`` (a MoveResult, then the
    codec), the other through ``answer`` (the wire map, packed as it is)."""
    general, fast = _race(allow_undo, penalty, wrap), _race(allow_undo, penalty, wrap)
    last = 0
    for now, (action, position, step) in enumerate(steps, start=1000):
        seq = max(1, last + step)
        try:
            result, fresh = general.move("a", seq, action, position, now * 7)
        except Exception as exc:
            with pytest.raises(type(exc)):
                fast.answer("a", seq, action, position, now * 7)
            continue
        answer = fast.answer("a", seq, action, position, now * 7)
        last = max(last, seq)
        assert fresh == answer.fresh and answer.reason == result.reason
        assert answer.frame == codec.encode_msgpack(result)
        wire = msgpack.unpackb(answer.frame)
        assert json.dumps(wire, separators=(",", ":")) == codec.encode_json(result)
        assert message_of(wire) == result
    assert fast.results() == general.results()
    game = fast.racers["a"].game
    removed = [game.is_removed(p) for p in range(28)]
    expected = tuple(
        None if removed[p]
        else HIDDEN if not all(removed[q] for q in COVERED_BY[p])
        else card_code(game.deal.peaks[p])
        for p in range(28)
    )
    assert game.view().board == expected  # the board kept up to date move by move


def test_a_resent_move_is_answered_with_the_same_frame_and_message() -> None:
    race = _race(True, 0, True)
    answer = race.answer("a", 1, m.MoveAction.DRAW, None, 1005)
    first, fresh_again = race.move("a", 1, m.MoveAction.DRAW, None, 1009)
    again, _ = race.move("a", 1, m.MoveAction.DRAW, None, 1010)
    assert answer.fresh and not fresh_again and again == first
    assert race.answer("a", 1, m.MoveAction.DRAW, None, 1011) == (answer.frame, None, False)
    assert codec.encode_msgpack(first) == answer.frame


def _odd_move_frames() -> list[bytes]:
    return [
        b"\x84\xa1t\xa4move\xa3seq\x05\xa6action\xa4draw\xa3seq\x06",  # duplicate key
        msgpack.packb({"t": "move", "seq": 5, "action": "draw", "extra": 1}),
        msgpack.packb({"t": "move", "seq": True, "action": "draw"}),
        msgpack.packb({"t": "move", "seq": 5, "action": "draw", "position": 3}),
        msgpack.packb({"t": "move", "seq": 5, "action": "play"}),
        msgpack.packb({"t": "move", "seq": 5, "action": "play", "position": 256}),
        msgpack.packb({"t": "move", "seq": 5, "action": "jump"}),
        msgpack.packb({"t": "move", "seq": 0, "action": "draw"}),
        msgpack.packb({"t": "move", "seq": 5.0, "action": "draw"}),
        msgpack.packb({"t": "move", "seq": msgpack.Timestamp(3), "action": "draw"}),
    ]


async def test_odd_move_frames_get_the_general_paths_error_codes_from_a_racing_server(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path, bad_frame_limit=100) as server:
        (ann, bob), _ = await open_room(server.ws_url, ["ann", "bob"])
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        first = await ann.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        assert first.accepted and first.seq == 1
        for frame in _odd_move_frames():
            expected = _decoded(frame)
            assert isinstance(expected, ErrorCode), frame
            await ann.send_raw(frame)
            error = await ann.expect(m.Error)
            assert error.code == expected, (frame, error)
        skipped = await ann.request(m.MoveRequest(7, m.MoveAction.DRAW), m.Error)
        assert skipped.code == ErrorCode.SEQ_OUT_OF_ORDER and skipped.seq == 7
        resent = await ann.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        assert resent == first
        await bob.close()


async def test_a_json_player_and_a_msgpack_player_get_the_same_answers(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (host,), _ = await open_room(server.ws_url, ["host"], practice_seed="42")
        (jay,), _ = await open_room(
            server.ws_url, ["jay"], encoding="json", practice_seed="42"
        )
        answers: dict[str, list[m.MoveResult]] = {}
        for client in (host, jay):
            await client.send(m.Start())
            await client.expect(m.RaceStart)
            moves = [m.MoveRequest(1, m.MoveAction.DRAW), m.MoveRequest(2, m.MoveAction.UNDO),
                     m.MoveRequest(3, m.MoveAction.PLAY, 40), m.MoveRequest(4, m.MoveAction.DRAW)]
            answers[client.encoding] = [await client.request(mv, m.MoveResult) for mv in moves]
        strip = [[r.seq, r.action, r.accepted, r.reason, r.card, r.waste_top]
                 for r in answers["msgpack"]]
        assert strip == [[r.seq, r.action, r.accepted, r.reason, r.card, r.waste_top]
                         for r in answers["json"]]


SIZES = (0, 1, 125, 126, 127, 65535, 65536, 70_000)


async def test_frames_written_straight_to_the_socket_reach_a_real_client_intact() -> None:
    """Every length encoding of RFC 6455 (7-bit, 16-bit, 64-bit), binary and text."""

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(compress=False)
        await ws.prepare(request)
        transport = cast(Transport, request.transport)
        conn = Connection(ws, codec.Encoding.MSGPACK, "x", 1, WriteBatch(), transport)
        for size in SIZES:
            conn.send(bytes([size % 251]) * size)
            conn.send("é" * (size // 2))
        await conn.flush()
        await ws.receive()
        return ws

    app = web.Application()
    app.router.add_get("/ws", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as session:
            ws = await session.ws_connect(f"ws://127.0.0.1:{port}/ws", max_msg_size=2**20)
            for size in SIZES:
                assert await ws.receive_bytes() == bytes([size % 251]) * size
                assert await ws.receive_str() == "é" * (size // 2)
            await ws.close()
    finally:
        await runner.cleanup()


def test_frame_headers_use_the_shortest_length_encoding() -> None:
    assert frame_header(0x2, 125) == b"\x82\x7d"
    assert frame_header(0x1, 126) == b"\x81\x7e\x00\x7e"
    assert frame_header(0x2, 65536) == b"\x82\x7f" + (65536).to_bytes(8, "big")


# ---- the shortcuts of the fast path, each against what it stands for ----------
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
    fast = codec.parse_move(frame)
    decoded = _decoded(frame)
    if fast is not None:
        assert decoded == fast
    elif isinstance(decoded, tuple):
        assert len(frame) > 64 or frame[0] & 0xF0 != 0x80


def test_parse_move_reads_every_seq_form_of_the_codecs_layout() -> None:
    tail = b"\xa6action\xa4play\xa8position\xcc\xc8"
    for seq in (b"\x01", b"\x7f", b"\xcc\x05", b"\xcc\xff", b"\xcd\x01\x2c",
                b"\xce\x7f\xff\xff\xff", b"\xcf" + b"\x00" * 7 + b"\x01"):
        assert codec.parse_move(HEAD + seq + tail) == _decoded(HEAD + seq + tail)
    for seq in (b"\x00", b"\xcc\x00", b"\xce\x80\x00\x00\x00"):
        assert codec.parse_move(HEAD + seq + tail) is None


def _expected_answer(
    game: Game, race_over: bool, action: m.MoveAction, position: int | None
) -> tuple[Reason | None, int | None, str | None, tuple[int, ...], tuple[int, ...]]:
    """Apply the move to a plain engine ``game`` through its public API: the refusal (or
    None), and the position, card, uncovered and hidden positions of the answer."""
    before = game.view().board
    if race_over:
        return Reason.GAME_OVER, position if position is None or position <= 255 else None, \
            None, (), ()
    try:
        if action is m.MoveAction.PLAY:
            if position is None:
                return Reason.NO_SUCH_POSITION, None, None, (), ()
            game.play(position)
            card: str | None = card_code(game.deal.peaks[position])
        elif action is m.MoveAction.DRAW:
            position, card = None, card_code(game.draw())
        else:
            undone = game.undo()
            position = None if undone == DRAW else int(undone)
            card = None if position is None else card_code(game.deal.peaks[position])
    except IllegalMoveError as exc:
        return exc.reason, position if position is None or position <= 255 else None, None, (), ()
    after = game.view().board
    turned_up = tuple(
        p for p in range(28) if before[p] == HIDDEN and after[p] not in (HIDDEN, None)
    )
    turned_down = tuple(p for p in range(28) if after[p] == HIDDEN and before[p] != HIDDEN)
    if action is m.MoveAction.UNDO:
        return None, position, card, (), turned_down
    return None, position, card, turned_up, ()


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(STEPS, st.booleans(), st.sampled_from([0, 5000]), st.booleans())
def test_answers_say_what_a_plain_engine_says_about_the_same_moves(
    steps: list[tuple[m.MoveAction, int | None, int]], allow_undo: bool, penalty: int, wrap: bool
) -> None:
    """Each answer against a reference kept with the engine's public API only: refusals,
    cards, turned cards, counters, status, penalty, elapsed time and the move log."""
    race = _race(allow_undo, penalty, wrap)
    dealt = DEALT if wrap else DEALT_NO_WRAP
    game = Game(dealt.deal, allow_undo=allow_undo)
    answered: dict[int, bytes] = {}
    reasons: dict[int, Reason | None] = {}
    log: list[MoveLogEntry] = []
    penalty_ms = 0
    finished = False
    for now, (action, position, step) in enumerate(steps, start=1000):
        seq = max(1, len(answered) + step)
        if seq > len(answered) + 1:
            with pytest.raises(SeqOutOfOrder):
                race.answer("a", seq, action, position, now * 7)
            continue
        answer = race.answer("a", seq, action, position, now * 7)
        if seq in answered:  # a resend: the same frame and reason, and nothing changes
            assert (answer.frame, answer.reason, answer.fresh) == (
                answered[seq], reasons[seq], False
            )
            continue
        answered[seq], reasons[seq] = answer.frame, answer.reason
        at = now * 7 - 1000
        reason, where, card, uncovered, hidden = _expected_answer(game, finished, action, position)
        result = answer.message()
        view = game.view()
        if reason is None:
            penalty_ms += penalty if action is m.MoveAction.UNDO else 0
            undone = None
            if action is m.MoveAction.UNDO:
                undone = m.MoveAction.DRAW if where is None else m.MoveAction.PLAY
            log.append(MoveLogEntry(seq, at, action.value, where, True, None, card))
        else:
            undone = None
            log.append(MoveLogEntry(seq, at, action.value, where, False, int(reason), None))
        assert (answer.reason, answer.fresh) == (reason, True)
        assert (result.accepted, result.reason, result.position, result.card) == (
            reason is None, reason, where, card
        )
        assert tuple(u.position for u in result.uncovered) == uncovered
        assert all(u.card == view.board[u.position] for u in result.uncovered)
        assert (result.hidden, result.undone) == (hidden, undone)
        assert (result.waste_top, result.stock_left, result.moves, result.draws, result.undos) == (
            view.waste_top, view.stock_left, view.moves, view.draws, view.undos
        )
        assert (result.cleared, result.status, result.penalty_ms, result.elapsed_ms) == (
            view.cleared, view.status, penalty_ms, at
        )
        finished = finished or view.status is Status.WON
    assert race.racers["a"].log.entries() == tuple(log)


def test_answers_beyond_the_table_of_packed_numbers_are_the_codecs_bytes() -> None:
    """Long races: seq numbers, counters, penalties and race times past 2**14 and 2**16."""
    race = Race(
        DEALT.deal, [("a", "ann", False)], start_ms=0, allow_undo=True,
        undo_penalty_ms=70_000, time_limit_ms=10**9,
    )
    seq = 0
    for now in (5, 16_383, 16_384, 65_535, 65_536, 3_600_000, 10**8):
        for action in (m.MoveAction.DRAW, m.MoveAction.UNDO) * 5:
            seq += 1
            answer = race.answer("a", seq, action, None, now)
            assert answer.frame == codec.encode_msgpack(answer.message())
    while seq < 70_000:
        seq += 1
        answer = race.answer("a", seq, m.MoveAction.DRAW if seq % 2 else m.MoveAction.UNDO,
                             None, 10**8)
    result = answer.message()
    assert answer.frame == codec.encode_msgpack(result)
    assert (result.seq, result.moves, result.undos, result.penalty_ms) == (
        70_000, 35_000, 35_000, 35_000 * 70_000
    )


class _Refill:
    """The credit bucket's rules, step by step: refill, then spend."""

    def __init__(self, bucket: CreditBucket) -> None:
        self.bucket = bucket

    def spend(self, now_ms: int, cost: float) -> bool:
        bucket = self.bucket
        bucket.refill(now_ms)
        if bucket.credits >= cost:
            bucket.credits -= cost
            bucket.strikes = 0
            return True
        bucket.strikes += 1
        return False


@given(
    st.floats(0.5, 1000), st.floats(1, 500), st.sampled_from([1.0, 0.5, 3.0]),
    st.lists(st.integers(-50, 400), max_size=60),
)
def test_spending_a_credit_is_a_refill_then_a_spend(
    rate: float, burst: float, cost: float, gaps: list[int]
) -> None:
    fast, slow = CreditBucket.full(rate, burst, 1000), CreditBucket.full(rate, burst, 1000)
    reference = _Refill(slow)
    now = 1000
    for gap in gaps:
        now += gap  # gaps below zero: a clock read out of order
        strikes = fast.strikes
        will = fast.has_credit(now, cost)
        assert fast.strikes == strikes  # asking strikes nothing
        assert fast.spend(now, cost) == reference.spend(now, cost) == will
        assert fast == slow


def test_only_the_first_move_after_a_flush_sets_the_progress_timer_and_a_win_still_ends() -> None:
    host = Identity("h", "host")
    room = Room("ABCD", m.RoomOptions(countdown_s=0, undo=m.UndoPolicy.FREE), host, 0,
                RoomTimings(progress_interval_ms=250))
    room.start("h", 0, Fresh("42", "race-1"))
    room.deal_ready(1, DEALT, 0)
    assert room.phase is m.Phase.RACING
    _, reason, outputs = room.answer_move("h", 1, m.MoveAction.DRAW, None, 10)
    assert reason is None and list(outputs) == [SetTimer(PROGRESS_TIMER, 250)]
    assert room.answer_move("h", 2, m.MoveAction.UNDO, None, 20)[2] == ()
    assert room.answer_move("h", 2, m.MoveAction.UNDO, None, 30)[2] == ()  # a resend
    refused = room.answer_move("h", 3, m.MoveAction.UNDO, None, 40)
    assert refused[1] is Reason.NOTHING_TO_UNDO and refused[2] == ()
    with pytest.raises(ProtocolError) as skipped:
        room.answer_move("h", 9, m.MoveAction.DRAW, None, 50)
    assert skipped.value.code is ErrorCode.SEQ_OUT_OF_ORDER and skipped.value.seq == 9
    assert room.on_timer(PROGRESS_TIMER, 250)  # the flush
    assert list(room.answer_move("h", 4, m.MoveAction.DRAW, None, 260)[2]) == [
        SetTimer(PROGRESS_TIMER, 500)
    ]
    assert room.answer_move("h", 5, m.MoveAction.UNDO, None, 270)[1] is None  # back to the deal
    last: list[Output] = []
    for seq, move in enumerate(DEALT.solution, start=6):
        action = m.MoveAction.DRAW if move == DRAW else m.MoveAction.PLAY
        frame, reason, outputs = room.answer_move(
            "h", seq, action, None if move == DRAW else int(move), 300
        )
        assert reason is None
        last = list(outputs)
    won = message_of(msgpack.unpackb(frame))
    assert won.status is Status.WON and won.cleared == 28
    assert frame == codec.encode_msgpack(won)
    # The winning move ends the race of the lone player, with the progress timer still due.
    assert room.race is not None and room.race.over
    assert any(isinstance(out, ToPlayers) and isinstance(out.message, m.RaceOver) for out in last)
