"""The move fast path gives exactly what the general path gives: same decisions, same bytes.

``Race.answer``'s outcome, written by ``protocol.wire.fast.move_result_msgpack``,
must be the very bytes the codec writes for the ``MoveResult`` the race returns
(``tests/protocol/wire/test_fast.py`` holds ``parse_move`` to the decoder); the
server must answer odd move frames with the general path's error codes; and
frames written straight to the socket (``server.transport.framing``) must
reach a real client intact.
"""

from __future__ import annotations

import json
import random
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
from protocol.rules.game import DRAW, HIDDEN, Deal, Game, Move, Rules, Status
from protocol.rules.layout import COVERED_BY
from protocol.rules.refusals import IllegalMoveError, Reason
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from protocol.wire.fast import (
    ACTION,
    FRESH,
    POSITION,
    REASON,
    TURNED,
    TURNED_2,
    UNDONE,
    MoveOutcome,
    move_result_message,
    move_result_msgpack,
    resent,
)
from server.race.outputs import FlushDue, Output, ToPlayers
from server.race.race import Race, SeqOutOfOrder
from server.race.ratelimit import CreditBucket
from server.race.records import MoveLogEntry
from server.race.room import Room
from server.race.room_types import Fresh, Identity, RoomTimings
from server.transport.connection import Connection, Transport
from server.transport.framing import WriteBatch, frame_header
from tests.protocol.wire.test_fast import decoded_move
from tests.serverutil import open_room, running_server

DEALT = deal_for_seed("42", Rules())
DEALT_NO_WRAP = deal_for_seed("7", Rules(wrap=False, empty_waste=True))

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
    codec), the other through ``answer`` (the outcome, written by the fast encoder)."""
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
        assert fresh == answer[FRESH] and answer[REASON] == result.reason
        frame = move_result_msgpack(answer)
        assert frame == codec.encode_msgpack(result)
        wire = msgpack.unpackb(frame)
        assert json.dumps(wire, separators=(",", ":")) == codec.encode_json(result)
        assert move_result_message(answer) == result
        assert codec.decode_server(frame, codec.Encoding.MSGPACK) == result
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
    assert answer[FRESH] and not fresh_again and again == first
    again_answer = race.answer("a", 1, m.MoveAction.DRAW, None, 1011)
    assert again_answer == resent(answer) and again_answer[REASON] is None
    assert not again_answer[FRESH] and answer[FRESH]
    assert move_result_msgpack(again_answer) == move_result_msgpack(answer)
    assert codec.encode_msgpack(first) == move_result_msgpack(answer)


def _kind(answer: MoveOutcome) -> str:
    """What kind of answer this is, as the encoder tells them apart."""
    if answer[REASON] is not None:
        named = "no position" if answer[POSITION] is None else "a position"
        return f"{answer[ACTION]} refused: {Reason(answer[REASON]).name}, {named}"
    if answer[ACTION] == m.MoveAction.PLAY:
        return f"play turning up {_count(answer, TURNED, TURNED_2)}"
    if answer[ACTION] == m.MoveAction.DRAW:
        return "draw"
    return f"undo of a {answer[UNDONE]} hiding {_count(answer, TURNED, TURNED_2)}"


def _count(answer: MoveOutcome, *fields: int) -> int:
    """How many of ``fields`` (an entry each, ``None`` where there is none) hold one."""
    return sum(answer[field] is not None for field in fields)


def _line_to_an_empty_stock(deal: Deal) -> list[Move]:
    """Legal moves that draw the whole stock with cards still to play."""
    for attempt in range(100):
        rng, game, line = random.Random(attempt), Game(deal), list[Move]()
        while game.status is Status.PLAYING:
            if game.stock_left == 0:
                return line
            line.append(rng.choice(game.legal_moves()))
            game.push(line[-1])
    raise AssertionError("no line found")


def test_every_kind_of_answer_is_the_codecs_bytes() -> None:
    """Plays turning up 0, 1 and 2 cards, draws, undos of each, every refusal and resends."""
    race = Race(
        DEALT.deal, [("a", "ann", False), ("b", "bob", False)], start_ms=0, allow_undo=True,
        undo_penalty_ms=5000, time_limit_ms=10**9,
    )
    strict = Race(DEALT.deal, [("c", "cy", False)], start_ms=0, allow_undo=False,
                  undo_penalty_ms=0, time_limit_ms=10**9)
    seqs = {"a": 0, "b": 0, "c": 0}
    kinds: set[str] = set()

    def move(pid: str, action: m.MoveAction, position: int | None = None) -> MoveOutcome:
        seqs[pid] += 1
        answer = (strict if pid == "c" else race).answer(pid, seqs[pid], action, position, 7)
        assert move_result_msgpack(answer) == codec.encode_msgpack(move_result_message(answer))
        kinds.add(_kind(answer))
        return answer

    play, draw, undo = m.MoveAction.PLAY, m.MoveAction.DRAW, m.MoveAction.UNDO
    assert move("a", undo)[REASON] == Reason.NOTHING_TO_UNDO
    assert move("a", play)[REASON] == move("a", play, 40)[REASON] == Reason.NO_SUCH_POSITION
    assert move("a", play, 300)[POSITION] is None  # past what a move may name on the wire
    assert move("a", play, 0)[REASON] == Reason.COVERED
    assert move("c", undo)[REASON] == Reason.UNDO_NOT_ALLOWED
    for step in _line_to_an_empty_stock(DEALT.deal):
        assert move("b", draw if step == DRAW else play, None if step == DRAW else step)[
            REASON
        ] is None
    assert _kind(move("b", draw)) == "draw refused: STOCK_EMPTY, no position"
    game = race.racers["a"].game
    for step in DEALT.solution:
        if step != DRAW:
            unfit = [p for p in range(28) if game.is_free(p) and p not in game.legal_moves()]
            if unfit:
                assert move("a", play, unfit[0])[REASON] == Reason.NOT_ADJACENT
        action, position = (draw, None) if step == DRAW else (play, int(step))
        assert move("a", action, position)[REASON] is None
        if game.status is Status.WON:
            break  # a won game takes no undo
        assert move("a", undo)[REASON] is move("a", action, position)[REASON] is None
        if step != DRAW:
            assert move("a", play, position)[REASON] == Reason.ALREADY_PLAYED
    assert move("a", draw)[REASON] == Reason.GAME_OVER
    last = seqs["a"]
    for pid, seq in (("a", last - 63), ("a", last - 40), ("a", last - 2), ("a", last),
                     ("b", seqs["b"])):
        again = race.answer(pid, seq, draw, None, 9)
        assert not again[FRESH]
        assert move_result_msgpack(again) == codec.encode_msgpack(move_result_message(again))
    assert {f"play turning up {n}" for n in range(3)} <= kinds
    assert {"draw", "undo of a draw hiding 0", "undo of a play hiding 0"} <= kinds
    assert {"undo of a play hiding 1", "undo of a play hiding 2"} <= kinds
    assert {reason.name for reason in Reason} <= {k.split(": ")[1].split(",")[0] for k in kinds
                                                  if "refused" in k}
    assert {"play refused: NO_SUCH_POSITION, no position",
            "play refused: NO_SUCH_POSITION, a position"} <= kinds


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
            expected = decoded_move(frame)
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
            assert (move_result_msgpack(answer), answer[REASON], answer[FRESH]) == (
                answered[seq], reasons[seq], False
            )
            continue
        answered[seq], reasons[seq] = move_result_msgpack(answer), answer[REASON]
        at = now * 7 - 1000
        reason, where, card, uncovered, hidden = _expected_answer(game, finished, action, position)
        result = move_result_message(answer)
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
        assert (answer[REASON], answer[FRESH]) == (reason, True)
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
            assert move_result_msgpack(answer) == codec.encode_msgpack(move_result_message(answer))
    while seq < 70_000:
        seq += 1
        answer = race.answer("a", seq, m.MoveAction.DRAW if seq % 2 else m.MoveAction.UNDO,
                             None, 10**8)
    result = move_result_message(answer)
    assert move_result_msgpack(answer) == codec.encode_msgpack(result)
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
            return True
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
        will = fast.has_credit(now, cost)
        assert fast.spend(now, cost) == reference.spend(now, cost) == will
        assert fast == slow


def test_only_the_first_move_after_a_flush_asks_for_the_next_one_and_a_win_still_ends() -> None:
    host = Identity("h", "host")
    room = Room("ABCD", m.RoomOptions(countdown_s=0, undo=m.UndoPolicy.FREE), host, 0,
                RoomTimings(progress_interval_ms=250))
    room.start("h", 0, Fresh("42", "race-1"))
    room.deal_ready(1, DEALT, 0)
    assert room.phase is m.Phase.RACING
    answer, outputs = room.answer_move("h", 1, m.MoveAction.DRAW, None, 10)
    assert answer[REASON] is None and list(outputs) == [FlushDue(250)]
    assert room.answer_move("h", 2, m.MoveAction.UNDO, None, 20)[1] == ()
    assert room.answer_move("h", 2, m.MoveAction.UNDO, None, 30)[1] == ()  # a resend
    refused = room.answer_move("h", 3, m.MoveAction.UNDO, None, 40)
    assert refused[0][REASON] == Reason.NOTHING_TO_UNDO and refused[1] == ()
    with pytest.raises(ProtocolError) as skipped:
        room.answer_move("h", 9, m.MoveAction.DRAW, None, 50)
    assert skipped.value.code is ErrorCode.SEQ_OUT_OF_ORDER and skipped.value.seq == 9
    assert room.flush_progress(249) == []  # not due yet
    assert room.flush_progress(250)  # the flush
    assert room.flush_progress(251) == []  # made already
    assert list(room.answer_move("h", 4, m.MoveAction.DRAW, None, 260)[1]) == [FlushDue(500)]
    assert room.answer_move("h", 5, m.MoveAction.UNDO, None, 270)[0][REASON] is None  # back
    last: list[Output] = []
    for seq, move in enumerate(DEALT.solution, start=6):
        action = m.MoveAction.DRAW if move == DRAW else m.MoveAction.PLAY
        answer, outputs = room.answer_move(
            "h", seq, action, None if move == DRAW else int(move), 300
        )
        assert answer[REASON] is None
        last = list(outputs)
    won, frame = move_result_message(answer), move_result_msgpack(answer)
    assert won.status is Status.WON and won.cleared == 28
    assert frame == codec.encode_msgpack(won)
    assert codec.decode_server(frame, codec.Encoding.MSGPACK) == won
    # The winning move ends the race of the lone player, with the progress timer still due.
    assert room.race is not None and room.race.over
    assert any(isinstance(out, ToPlayers) and isinstance(out.message, m.RaceOver) for out in last)
