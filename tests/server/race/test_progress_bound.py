"""The progress bound holds at a race's end too: no `progress` sooner than 1/progress_hz.

docs/server.md promises at most one `progress` per `1 / progress_hz` seconds per
room however fast anyone plays.  A race that ends less than that after the last
`progress` sends no final one (`race_over`'s standings carry the final lines); a
race that ends later sends it, with the final counts, just before `race_over`.
"""

from __future__ import annotations

import itertools

from protocol.rules.game import DRAW
from protocol.wire import messages as m
from server.race.outputs import ToPlayers, ToSpectators
from server.race.room_types import Identity
from tests.server.race.test_core import DEALT, Clockwork, racing_room

INTERVAL = 100  # racing_room's progress_interval_ms


def player_frames(clock: Clockwork) -> list[tuple[int, m.ServerMessage]]:
    return [(at, out.message) for at, out in clock.frames if isinstance(out, ToPlayers)]


def progress_times(clock: Clockwork) -> list[int]:
    return [at for at, message in player_frames(clock) if isinstance(message, m.Progress)]


def win(clock: Clockwork, pid: str, start: int, step_ms: int) -> int:
    """``pid`` plays the deal's winning line, one move every ``step_ms``; the last move's time."""
    at = start
    for seq, step in enumerate(DEALT.solution, 1):
        clock.advance(at)
        if step == DRAW:
            request = m.MoveRequest(seq, m.MoveAction.DRAW)
        else:
            assert isinstance(step, int)
            request = m.MoveRequest(seq, m.MoveAction.PLAY, step)
        clock.feed(clock.room.move(pid, request, clock.now))
        at += step_ms
    return at - step_ms


def test_a_race_that_ends_right_after_a_progress_sends_no_extra_one() -> None:
    clock = racing_room(players=1)
    clock.feed(clock.room.join(Identity("s0", "eve"), m.Role.SPECTATOR, 0))
    last = win(clock, "p0", 1000, 7)  # a move every 7 ms, the race ends with the last one
    times = progress_times(clock)
    assert clock.room.phase is m.Phase.FINISHED
    assert times and last - times[-1] < INTERVAL  # the end came within the bound
    assert all(b - a >= INTERVAL for a, b in itertools.pairwise(times))
    spectator_progress = [
        at for at, out in clock.frames
        if isinstance(out, ToSpectators) and isinstance(out.message, m.Progress)
    ]
    assert spectator_progress == times
    over = [msg for _, msg in player_frames(clock) if isinstance(msg, m.RaceOver)]
    assert over and over[0].standings[0].cleared == 28  # the final line is in race_over


def test_every_end_of_race_at_any_moment_keeps_the_bound() -> None:
    for gap in range(0, 2 * INTERVAL + 1, 13):
        clock = racing_room(players=2)
        clock.feed(clock.room.move("p0", m.MoveRequest(1, m.MoveAction.DRAW), 1000))
        clock.advance(1000 + gap)
        clock.feed(clock.room.resign("p0", clock.now))
        clock.feed(clock.room.resign("p1", clock.now))
        clock.advance(5000)
        times = progress_times(clock)
        assert all(b - a >= INTERVAL for a, b in itertools.pairwise(times)), (gap, times)
        assert clock.room.phase is m.Phase.FINISHED


def test_a_race_that_ends_after_a_quiet_spell_sends_the_final_progress_before_race_over() -> None:
    clock = racing_room(players=2)
    clock.feed(clock.room.move("p0", m.MoveRequest(1, m.MoveAction.DRAW), 1000))
    clock.advance(2000)
    clock.feed(clock.room.resign("p0", 2000))
    clock.feed(clock.room.resign("p1", 2000))
    kinds = [type(msg) for at, msg in player_frames(clock) if at == 2000]
    assert kinds.index(m.Progress) < kinds.index(m.RaceOver)
    final = [msg for at, msg in player_frames(clock) if isinstance(msg, m.Progress)][-1]
    assert [p.status for p in final.players] == [m.PlayerStatus.RESIGNED] * 2
