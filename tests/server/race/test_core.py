"""The server's pure pieces, without sockets: room reducer, race, buckets, feed, ids, purity."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import DRAW, Rules
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from server.ids import ROOM_CODE_ALPHABET, normalize_room_code, room_code
from server.race.outputs import (
    DealRequest,
    FlushDue,
    Output,
    SetTimer,
    ToPlayers,
    ToSpectators,
)
from server.race.race import Race
from server.race.ratelimit import AddressLimiter, CreditBucket
from server.race.room import Room
from server.race.room_types import Fresh, Identity, RoomTimings
from server.race.spectate import SpectatorFeed

ROOT = Path(__file__).resolve().parents[3]
DEALT = deal_for_seed("42", Rules())


#: :class:`Clockwork`'s name for the progress flush a room asked for.
FLUSH = "(progress flush)"


class Clockwork:
    """Drives a Room like the shell does, on a simulated clock (a due progress flush
    is kept as a timer named :data:`FLUSH`)."""

    def __init__(self, room: Room, now: int = 0) -> None:
        self.room = room
        self.now = now
        self.timers: dict[str, int] = {}
        self.frames: list[tuple[int, Output]] = []

    def feed(self, outputs: list[Output]) -> None:
        for out in outputs:
            if isinstance(out, SetTimer):
                self.timers[out.name] = out.at_ms
            elif isinstance(out, FlushDue):
                self.timers[FLUSH] = out.at_ms
            elif isinstance(out, DealRequest):
                self.feed(self.room.deal_ready(out.ticket, DEALT, self.now))
            else:
                self.frames.append((self.now, out))

    def advance(self, to: int) -> None:
        while True:
            due = sorted((at, name) for name, at in self.timers.items() if at <= to)
            if not due:
                break
            at, name = due[0]
            del self.timers[name]
            self.now = max(self.now, at)
            if name == FLUSH:
                self.feed(self.room.flush_progress(self.now))
            else:
                self.feed(self.room.on_timer(name, self.now))
        self.now = to


def racing_room(players: int = 2, **options: object) -> Clockwork:
    opts = m.RoomOptions(countdown_s=0, practice_seed="42", **options)  # type: ignore[arg-type]
    host = Identity("p0", "ann")
    room = Room("ABCDEF", opts, host, 0, RoomTimings(progress_interval_ms=100))
    clock = Clockwork(room)
    for n in range(1, players):
        clock.feed(room.join(Identity(f"p{n}", f"player{n}"), m.Role.PLAYER, 0))
        clock.feed(room.set_ready(f"p{n}", True))
    clock.feed(room.start("p0", 0, Fresh("unused", "race1")))
    assert room.phase is m.Phase.RACING
    return clock


def progress_frames(clock: Clockwork) -> list[int]:
    return [
        at
        for at, out in clock.frames
        if isinstance(out, ToPlayers) and isinstance(out.message, m.Progress)
    ]


def test_progress_is_coalesced_to_at_most_progress_hz_frames_per_second_per_room() -> None:
    clock = racing_room(players=4, undo=m.UndoPolicy.FREE)
    seq = {f"p{n}": 0 for n in range(4)}
    # Every player draws and undoes as fast as possible: 400 moves in one simulated second.
    for step in range(100):
        clock.advance(step * 10)
        for pid in seq:
            seq[pid] += 1
            action = m.MoveAction.DRAW if seq[pid] % 2 else m.MoveAction.UNDO
            clock.feed(clock.room.move(pid, m.MoveRequest(seq[pid], action), clock.now))
    clock.advance(1000)
    times = progress_frames(clock)
    assert 5 <= len(times) <= 11  # 10 per second, one more at the very end of the window
    assert all(b - a >= 100 for a, b in itertools.pairwise(times))


def test_spectators_get_one_board_per_changed_player_per_progress_tick() -> None:
    clock = racing_room(players=2)
    clock.feed(clock.room.join(Identity("s0", "eve"), m.Role.SPECTATOR, 0))
    clock.frames.clear()
    clock.feed(clock.room.move("p0", m.MoveRequest(1, m.MoveAction.DRAW), 0))
    clock.feed(clock.room.move("p0", m.MoveRequest(2, m.MoveAction.DRAW), 0))
    clock.advance(200)
    boards = [
        out.message
        for _, out in clock.frames
        if isinstance(out, ToSpectators) and isinstance(out.message, m.SpectatorBoard)
    ]
    assert [(b.player_id, b.view.draws) for b in boards] == [("p0", 2)]


def test_without_spectators_no_boards_are_built_and_a_first_spectator_gets_them_all() -> None:
    clock = racing_room(players=2)
    clock.feed(clock.room.move("p0", m.MoveRequest(1, m.MoveAction.DRAW), 0))
    clock.advance(200)
    assert not [
        o
        for _, o in clock.frames
        if isinstance(o, ToSpectators) and isinstance(o.message, m.SpectatorBoard)
    ]
    clock.feed(clock.room.join(Identity("s0", "eve"), m.Role.SPECTATOR, 300))
    boards = [
        o.message
        for _, o in clock.frames
        if isinstance(o, ToSpectators) and isinstance(o.message, m.SpectatorBoard)
    ]
    assert sorted((b.player_id, b.view.draws) for b in boards) == [("p0", 1), ("p1", 0)]


def test_a_lobby_refuses_a_start_while_a_member_is_not_ready() -> None:
    room = Room("ABCDEF", m.RoomOptions(), Identity("p0", "ann"), 0, RoomTimings())
    room.join(Identity("p1", "bob"), m.Role.PLAYER, 0)
    with pytest.raises(ProtocolError) as refused:
        room.start("p0", 0, Fresh("s", "r"))
    assert refused.value.code == ErrorCode.PLAYERS_NOT_READY


def test_the_host_passes_in_join_order_and_an_empty_room_schedules_its_closing() -> None:
    room = Room("ABCDEF", m.RoomOptions(), Identity("p0", "ann"), 0, RoomTimings(empty_grace_ms=5))
    room.join(Identity("p1", "bob"), m.Role.PLAYER, 0)
    room.join(Identity("p2", "cyd"), m.Role.PLAYER, 0)
    room.leave("p0", 1)
    assert room.host_id == "p1"
    room.leave("p1", 2)
    assert room.host_id == "p2"
    outputs = room.leave("p2", 3)
    assert room.host_id is None
    assert any(isinstance(o, SetTimer) and o.name == "empty" and o.at_ms == 8 for o in outputs)


def test_a_stale_deal_is_ignored() -> None:
    room = Room("ABCDEF", m.RoomOptions(countdown_s=0), Identity("p0", "ann"), 0, RoomTimings())
    first = room.start("p0", 0, Fresh("s1", "r1"))
    request = next(o for o in first if isinstance(o, DealRequest))
    assert room.deal_ready(request.ticket + 1, DEALT, 0) == []
    assert room.phase is m.Phase.COUNTDOWN
    room.deal_ready(request.ticket, DEALT, 0)
    assert room.phase is m.Phase.RACING


def test_the_race_answers_a_resent_seq_from_memory_without_replaying_it() -> None:
    race = Race(
        DEALT.deal,
        [("a", "ann", False)],
        start_ms=0,
        allow_undo=True,
        undo_penalty_ms=0,
        time_limit_ms=10_000,
    )
    first, fresh = race.move("a", 1, m.MoveAction.DRAW, None, 5)
    again, fresh_again = race.move("a", 1, m.MoveAction.DRAW, None, 9)
    assert fresh and not fresh_again and again == first
    assert race.racers["a"].game.draws == 1


def test_finishers_rank_by_time_then_the_rest_by_cleared_cards_then_when() -> None:
    players = [("a", "ann", False), ("b", "bob", False), ("c", "cyd", False)]
    race = Race(
        DEALT.deal, players, start_ms=0, allow_undo=True, undo_penalty_ms=0, time_limit_ms=10_000
    )
    line = DEALT.solution
    for seq, step in enumerate(line, 1):
        action = m.MoveAction.DRAW if step == DRAW else m.MoveAction.PLAY
        race.move("b", seq, action, None if step == DRAW else step, 100 + seq)
    for seq, step in enumerate(line[:10], 1):
        action = m.MoveAction.DRAW if step == DRAW else m.MoveAction.PLAY
        race.move("c", seq, action, None if step == DRAW else step, 50 + seq)
    assert [r.player_id for r in race.standings()] == ["b", "c", "a"]


def test_a_credit_bucket_refills_over_time() -> None:
    bucket = CreditBucket.full(rate=10, burst=2, now_ms=0)
    assert bucket.spend(0) and bucket.spend(0)
    assert not bucket.spend(0) and not bucket.spend(50)
    assert bucket.spend(200)  # 10 per second: one credit back after 100 ms
    bucket.retune(rate=1, burst=1)
    assert bucket.burst == 1 and bucket.credits <= 1


def test_the_address_limiter_keeps_one_bucket_per_address_and_stays_bounded() -> None:
    limiter = AddressLimiter(rate=1, burst=1, max_entries=3)
    assert limiter.allow("a", 0) and not limiter.allow("a", 0)
    assert limiter.allow("b", 0)
    for n in range(10):
        limiter.allow(f"x{n}", 10_000 + n)
    assert len(limiter._buckets) <= 3


def test_the_spectator_feed_holds_frames_back_and_remembers_the_latest_of_each_kind() -> None:
    feed: SpectatorFeed[str] = SpectatorFeed(delay_ms=1000)
    feed.push(0, "start-1", "race", new_race=True)
    feed.push(10, "board-a1", "board:a")
    feed.push(20, "board-a2", "board:a")
    assert feed.due(999) == [] and feed.next_release_ms() == 1000
    assert feed.due(1015) == ["start-1", "board-a1"]
    assert feed.due(2000) == ["board-a2"]
    assert feed.snapshot() == ["start-1", "board-a2"]
    feed.push(2000, "over-1", "over")
    feed.push(2000, "start-2", "race", new_race=True)
    feed.due(3000)
    assert feed.snapshot() == ["start-2"]  # a new race forgets every frame of the last one


def test_one_moments_frames_leave_the_delayed_feed_together_and_never_early() -> None:
    feed: SpectatorFeed[str] = SpectatorFeed(delay_ms=1000)
    feed.push(100, "progress", "progress")
    feed.push(101, "board-a", "board:a")  # the clock ticked within the flush
    feed.push(103, "board-b", "board:b")
    assert feed.due(1100) == [] and feed.next_release_ms() == 1103
    assert feed.due(1103) == ["progress", "board-a", "board-b"]
    feed.push(2000, "progress-2", "progress")
    feed.push(2010, "board-a2", "board:a")  # the next moment: its own release
    assert feed.due(3000) == ["progress-2"]


def test_room_codes_use_the_unambiguous_alphabet_and_typed_codes_are_normalized() -> None:
    codes = {room_code() for _ in range(200)}
    assert all(len(c) == 6 and set(c) <= set(ROOM_CODE_ALPHABET) for c in codes)
    assert len(codes) > 190
    assert room_code(taken={"AAAAAA"}) != "AAAAAA"
    assert normalize_room_code(" abc-def ") == "ABCDEF"


PURE_MODULES = (
    "race/room", "race/race_cycle", "race/progress_flush", "race/room_timers",
    "race/race", "race/results", "race/outputs", "race/spectate", "race/ratelimit",
    "race/lobby", "transport/clientaddr",
)
FORBIDDEN = {"asyncio", "aiohttp", "websockets", "textual", "socket", "time", "random", "secrets"}


@pytest.mark.parametrize("name", PURE_MODULES)
def test_the_room_and_race_core_imports_no_io_clock_or_randomness(name: str) -> None:
    tree = ast.parse((ROOT / "server" / f"{name}.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.partition(".")[0])
    assert not imported & FORBIDDEN


def test_an_undone_play_hides_exactly_the_positions_that_go_face_down_again() -> None:
    import random

    from protocol.rules.game import Game

    for n in range(20):
        deal = deal_for_seed(f"undo-{n}", Rules(), with_par=False).deal
        race = Race(
            deal,
            [("a", "ann", False)],
            start_ms=0,
            allow_undo=True,
            undo_penalty_ms=0,
            time_limit_ms=10**9,
        )
        game = Game(deal)
        rng = random.Random(n)
        for seq in range(1, 150):
            if game.history and rng.random() < 0.3:
                free_before = {p for p in range(28) if game.is_free(p)}
                game.undo()
                expected = {p for p in free_before if not game.is_face_up(p)}
                result, _ = race.move("a", seq, m.MoveAction.UNDO, None, seq)
                assert set(result.hidden) == expected
                continue
            legal = game.legal_moves()
            if not legal:
                break
            step = rng.choice(legal)
            game.push(step)
            action = m.MoveAction.DRAW if step == DRAW else m.MoveAction.PLAY
            race.move("a", seq, action, None if step == DRAW else step, seq)


def test_a_late_spectator_after_a_rematch_sees_only_the_new_race() -> None:
    clock = racing_room(players=1)
    room = clock.room
    clock.feed(room.join(Identity("s0", "eve"), m.Role.SPECTATOR, 0))
    clock.feed(room.resign("p0", 10))
    assert room.phase is m.Phase.FINISHED
    clock.feed(room.rematch("p0", 20, Fresh("unused", "race2")))
    assert room.phase is m.Phase.RACING
    feed: SpectatorFeed[m.ServerMessage] = SpectatorFeed(0)
    for at, out in clock.frames:
        if isinstance(out, ToSpectators) and not out.live:
            feed.push(at, out.message, out.key, new_race=out.new_race)
    feed.due(10_000)
    kinds = [type(frame) for frame in feed.snapshot()]
    assert m.RaceOver not in kinds
    assert kinds[0] is m.RaceStart
