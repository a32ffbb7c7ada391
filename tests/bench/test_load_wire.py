"""The load generator's shortcuts: reads dispatched without the buffer, moves built ahead,
the zero mask key, the pacer, the window's counters, and the players' view of the board.

Everything here runs in-process against a transport that keeps what is written,
or against a real :class:`server.race.race.Race`; nothing is timed.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import msgpack
import pytest

from bench.load_game import (
    ACCEPTED_ANSWER,
    ACTIONS,
    DRAW,
    FIT_RANKS,
    PLAY,
    UNDO,
    Clock,
    Conn,
    Player,
    Room,
    move_frame,
    move_wire_frame,
)
from bench.load_stats import Meters
from bench.load_wire import OP_BINARY, OP_PING, OP_PONG, ZERO_KEY, Pacer, WireClient, frame
from protocol.rules.game import Deal, Rules
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.fast import parse_move
from server.race.race import Race


class KeptWrites:
    """A transport that keeps every write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True


def server_frame(payload: bytes, opcode: int = OP_BINARY) -> bytes:
    """A server frame: final, unmasked."""
    n = len(payload)
    if n < 126:
        return bytes((0x80 | opcode, n)) + payload
    if n < 1 << 16:
        return bytes((0x80 | opcode, 126)) + n.to_bytes(2, "big") + payload
    return bytes((0x80 | opcode, 127)) + n.to_bytes(8, "big") + payload


def open_client() -> tuple[WireClient, list[bytes], KeptWrites]:
    client = WireClient("127.0.0.1", 1, "/ws", "tripeaks.v1.msgpack")
    transport = KeptWrites()
    client.transport = transport  # type: ignore[assignment]
    client._handshaken = True
    got: list[bytes] = []
    client.on_message = got.append
    return client, got, transport


def unmasked(data: bytes) -> tuple[int, bytes]:
    """Opcode and payload of a client frame, unmasked with its key."""
    n, at = data[1] & 0x7F, 2
    if n == 126:
        n, at = int.from_bytes(data[2:4], "big"), 4
    key, body = data[at : at + 4], data[at + 4 :]
    assert len(body) == n
    return data[0] & 0x0F, bytes(b ^ key[i % 4] for i, b in enumerate(body))


# ---- reading ---------------------------------------------------------------
@pytest.mark.parametrize("size", [0, 1, 125, 126, 191, 65535, 65536])
async def test_a_whole_frame_in_one_read_arrives_as_its_payload(size: int) -> None:
    client, got, _ = open_client()
    payload = bytes(i % 251 for i in range(size))
    client.data_received(server_frame(payload))
    assert got == [payload]
    assert not client._buffer


@pytest.mark.parametrize("size", [3, 125, 191, 300])
async def test_a_frame_split_across_reads_arrives_once_whole_at_any_cut(size: int) -> None:
    payload = bytes(i % 256 for i in range(size))
    data = server_frame(payload)
    for cut in range(1, len(data)):
        client, got, _ = open_client()
        client.data_received(data[:cut])
        assert got == []
        client.data_received(data[cut:])
        assert got == [payload], cut
        assert not client._buffer


async def test_two_frames_in_one_read_both_arrive_in_order() -> None:
    client, got, _ = open_client()
    first, second = b"\x81\xa1t\xa4pong", bytes(200)
    client.data_received(server_frame(first) + server_frame(second))
    assert got == [first, second]


async def test_a_ping_between_frames_is_answered_and_the_frames_still_arrive() -> None:
    client, got, transport = open_client()
    client.data_received(server_frame(b"one") + server_frame(b"hb", OP_PING) + server_frame(b"two"))
    client.data_received(server_frame(b"hb2", OP_PING))
    client.data_received(server_frame(b"three"))
    assert got == [b"one", b"two", b"three"]
    assert [unmasked(w) for w in transport.writes] == [(OP_PONG, b"hb"), (OP_PONG, b"hb2")]


async def test_a_whole_frame_after_a_partial_one_waits_for_it_in_the_buffer() -> None:
    client, got, _ = open_client()
    first, second = server_frame(b"first frame"), server_frame(b"second")
    client.data_received(first[:4])
    client.data_received(first[4:] + second)
    client.data_received(second)
    assert got == [b"first frame", b"second", b"second"]


async def test_a_read_that_is_longer_than_its_frame_is_not_taken_for_one_frame() -> None:
    client, got, _ = open_client()
    data = server_frame(b"abc")
    client.data_received(data + data[:1])
    assert got == [b"abc"]
    client.data_received(data[1:])
    assert got == [b"abc", b"abc"]


async def test_a_masked_frame_from_the_server_is_refused() -> None:
    client, got, transport = open_client()
    client.data_received(bytes((0x82, 0x80 | 3)) + ZERO_KEY + b"abc")
    assert got == []
    assert transport.closed


# ---- writing ----------------------------------------------------------------
@pytest.mark.parametrize("size", [0, 35, 125, 126, 70_000])
def test_client_frames_carry_the_zero_mask_key_and_the_payload_as_it_is(size: int) -> None:
    payload = bytes(i % 253 for i in range(size))
    data = frame(OP_BINARY, payload)
    assert data[0] == 0x82 and data[1] & 0x80
    assert data.endswith(ZERO_KEY + payload)
    if size < 126:
        assert unmasked(data) == (OP_BINARY, payload)


def test_the_players_move_frames_are_the_codecs_bytes_framed() -> None:
    seqs = [1, 127, 128, 255, 256, 32_767, 32_768, 65_535, 65_536, m.MAX_SEQ]
    for seq in seqs:
        moves = [(PLAY, p) for p in range(28)] + [(DRAW, None), (UNDO, None)]
        for action, position in moves:
            request = m.MoveRequest(seq, ACTIONS[action], position)
            expected = codec.encode_msgpack(request)
            assert move_frame(request.seq, request.action, position) == expected
            assert move_wire_frame(seq, action, position) == frame(OP_BINARY, expected)


# ---- pacing -------------------------------------------------------------------
async def test_the_pacer_turns_with_the_loop_until_it_is_told_to_stop() -> None:
    loop = asyncio.get_running_loop()
    turns = 0

    def running() -> bool:
        nonlocal turns
        turns += 1
        return turns <= 5

    pacer = Pacer(1e-4)
    pacer.start(loop, running)
    pacer.start(loop, running)  # a second start changes nothing
    for _ in range(20):
        await asyncio.sleep(0)
    assert turns == 6


async def test_a_pacer_with_no_cycle_never_turns() -> None:
    pacer = Pacer(0.0)
    pacer.start(asyncio.get_running_loop(), lambda: pytest.fail("asked whether to run"))
    await asyncio.sleep(0)
    assert not pacer.started


# ---- the window's figures ----------------------------------------------------------
def test_meters_report_only_what_happened_inside_the_window() -> None:
    meters = Meters()
    meters.frames_in += 7
    meters.accepted_draw += 2
    meters.rtt.add(9.0)
    meters.rtt_sent.add(0.0)
    meters.opened = 100.0
    meters.measuring = True
    meters.frames_in += 3
    meters.accepted_play += 2
    meters.accepted_undo += 1
    for sent, rtt in [(100.2, 0.004), (100.5, 0.002), (102.1, 0.010), (98.5, 0.5)]:
        meters.rtt.add(rtt)
        meters.rtt_sent.add(sent)
    meters.fanout.add(0.1)
    meters.count("room_starts")
    meters.measuring = False
    meters.frames_in += 100  # after the window: not counted
    meters.rtt.add(1.0)
    assert meters.counts == {
        "frames_in": 3, "accepted_play": 2, "accepted_undo": 1, "accepted": 3, "room_starts": 1,
    }
    assert meters.hists["rtt"].total == 4
    assert meters.hists["rtt"].percentile_ms(100) == pytest.approx(500, rel=0.01)
    assert meters.hists["fanout"].total == 1
    assert "rtt_during_burst" not in meters.hists
    # the move sent before the window opened counts in the histogram, not in any second
    assert meters.worst_by_second == pytest.approx([0.004, 0.0, 0.010])


# ---- the players against a real race ----------------------------------------------------
def _deal(seed: int) -> Deal:
    cards = list(range(52))
    random.Random(seed).shuffle(cards)
    return Deal(Rules(), tuple(cards[:28]), cards[28], tuple(cards[29:]))


def _view(race: Race, player_id: str) -> dict[str, Any]:
    view = race.racers[player_id].game.view()
    return {"board": list(view.board), "waste_top": view.waste_top, "stock_left": view.stock_left}


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_players_see_the_servers_face_up_cards_and_make_only_legal_moves(seed: int) -> None:
    race = Race(_deal(seed), [("a", "ann", True)], start_ms=0, allow_undo=True,
                undo_penalty_ms=0, time_limit_ms=10**9)
    client, _, transport = open_client()
    meters = Meters()
    conn = Conn(client, meters)
    room = Room(conn, "ROOM", meters)
    player = Player(conn, room, "a", random.Random(seed))
    room.players = [player]
    player._on_race_start({"view": _view(race, "a")})
    meters.measuring = True
    player.play(0.0, Clock())
    for at in range(600):
        opcode, sent = unmasked(transport.writes.pop())
        assert opcode == OP_BINARY
        move = parse_move(sent)
        assert move is not None
        result, _ = race.move("a", *move, now_ms=at)
        answer = codec.encode_msgpack(result)
        assert ACCEPTED_ANSWER.search(answer, 17) is not None  # read without decoding
        client.data_received(server_frame(answer))
        view = race.racers["a"].game.view()
        face_up = sorted(p for p, card in enumerate(view.board) if card not in (None, "??"))
        assert sorted(p for rank in player.face for p in rank) == face_up
        top = None if view.waste_top is None else view.waste_top.encode()
        assert player.fits == FIT_RANKS[top]
        assert player.stock_left == view.stock_left
        assert player.cleared == view.board.count(None)
    meters.measuring = False
    assert "rejected" not in meters.counts
    assert meters.counts["accepted"] == 600 == meters.hists["rtt"].total
    assert set(meters.counts) >= {"accepted_play", "accepted_draw", "accepted_undo"}


def _seated(race: Race) -> tuple[WireClient, KeptWrites, Player, Meters]:
    client, _, transport = open_client()
    meters = Meters()
    conn = Conn(client, meters)
    room = Room(conn, "ROOM", meters)
    player = Player(conn, room, "a", random.Random(7))
    room.players = [player]
    player._on_race_start({"view": _view(race, "a")})
    return client, transport, player, meters


def _state(player: Player) -> tuple[object, ...]:
    return (sorted(map(sorted, player.face)), player.fits, player.stock_left, player.cleared,
            player.actions, player.depth, player.meters.accepted_play,
            player.meters.accepted_draw, player.meters.accepted_undo)


async def test_answers_in_another_key_order_are_decoded_in_full_to_the_same_board() -> None:
    """The same answers, once as the codec writes them and once with the keys in reverse."""
    races = [Race(_deal(4), [("a", "ann", True)], start_ms=0, allow_undo=True,
                  undo_penalty_ms=0, time_limit_ms=10**9) for _ in range(2)]
    seats = [_seated(race) for race in races]
    for _, _, player, _ in seats:
        player.play(0.0, Clock())
    for at in range(300):
        moves = [parse_move(unmasked(transport.writes.pop())[1]) for _, transport, _, _ in
                 seats]
        assert moves[0] == moves[1] and moves[0] is not None
        plain, _ = races[0].move("a", *moves[0], now_ms=at)
        reordered, _ = races[1].move("a", *moves[0], now_ms=at)
        wire = msgpack.unpackb(codec.encode_msgpack(reordered))
        backwards = msgpack.packb(dict(reversed(wire.items())))
        assert ACCEPTED_ANSWER.search(backwards, 17) is None
        seats[0][0].data_received(server_frame(codec.encode_msgpack(plain)))
        seats[1][0].data_received(server_frame(backwards))
        assert _state(seats[0][2]) == _state(seats[1][2])


async def test_a_refused_move_is_counted_and_the_player_moves_on() -> None:
    race = Race(_deal(5), [("a", "ann", True)], start_ms=0, allow_undo=True,
                undo_penalty_ms=0, time_limit_ms=10**9)
    client, transport, player, meters = _seated(race)
    meters.measuring = True
    player.play(0.0, Clock())
    before = _state(player)
    seq = parse_move(unmasked(transport.writes.pop())[1])[0]  # type: ignore[index]
    refusal, _ = race.move("a", seq, m.MoveAction.PLAY, 0, now_ms=0)  # position 0 is covered
    assert not refusal.accepted
    client.data_received(server_frame(codec.encode_msgpack(refusal)))
    meters.measuring = False
    assert meters.counts["rejected"] == 1 and "accepted" not in meters.counts
    assert _state(player) == before
    assert parse_move(unmasked(transport.writes.pop())[1]) is not None  # it moved again
