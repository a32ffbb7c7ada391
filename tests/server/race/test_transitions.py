"""Every phase and racer-status transition in the life-cycle tables happens in a real room.

Each entry of ``PHASE_TRANSITIONS`` and ``RACER_TRANSITIONS`` has a scenario here
that brings a room (or one of its racers) to the entry's state, does what the
entry's event names through the room's public methods, and checks the state
the table gives; the scenarios cover the tables exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import DRAW, Deal, Game, Move, Rules, Status
from protocol.wire import messages as m
from protocol.wire.lifecycle import (
    PHASE_TRANSITIONS,
    RACER_TRANSITIONS,
    PhaseEvent,
    RacerEvent,
)
from protocol.wire.messages import Phase, PlayerStatus
from server.race.room import Room
from server.race.room_timers import COUNTDOWN_TIMER, TIME_LIMIT_TIMER
from server.race.room_types import Fresh, Identity, RoomTimings

DEALT = deal_for_seed("42", Rules())
HOST, GUEST = Identity("p0", "ann"), Identity("p1", "bob")


def _room(players: int = 1, **options: object) -> Room:
    opts = m.RoomOptions(**options)  # type: ignore[arg-type]
    room = Room("ABCDEF", opts, HOST, 0, RoomTimings())
    if players > 1:
        room.join(GUEST, m.Role.PLAYER, 0)
        room.set_ready(GUEST.player_id, True)
    return room


def _counting_down() -> Room:
    room = _room()
    room.start(HOST.player_id, 0, Fresh("s", "race-1"))
    return room


def _racing(players: int = 1, **options: object) -> Room:
    room = _room(players, countdown_s=0, time_limit_s=60, **options)
    room.start(HOST.player_id, 0, Fresh("s", "race-1"))
    room.deal_ready(1, DEALT, 0)
    return room


def _finished() -> Room:
    room = _racing()
    room.resign(HOST.player_id, 10)
    return room


def _to_countdown_end(room: Room) -> None:
    room.deal_ready(1, DEALT, 0)
    assert room.phase is Phase.COUNTDOWN  # the countdown runs until its timer
    room.on_timer(COUNTDOWN_TIMER, 3000)


PHASE_SCENARIOS: dict[
    tuple[Phase, PhaseEvent], tuple[Callable[[], Room], Callable[[Room], object]]
] = {
    (Phase.LOBBY, PhaseEvent.START): (_room, lambda r: r.start("p0", 0, Fresh("s", "race-1"))),
    (Phase.COUNTDOWN, PhaseEvent.RACE_START): (_counting_down, _to_countdown_end),
    (Phase.COUNTDOWN, PhaseEvent.DEAL_FAILED): (_counting_down, lambda r: r.deal_failed(1, "no")),
    (Phase.COUNTDOWN, PhaseEvent.ALL_LEFT): (_counting_down, lambda r: r.leave("p0", 5)),
    (Phase.RACING, PhaseEvent.RACE_END): (_racing, lambda r: r.resign("p0", 10)),
    (Phase.FINISHED, PhaseEvent.REMATCH): (
        _finished, lambda r: r.rematch("p0", 20, Fresh("s2", "race-2"))
    ),
}


def test_every_phase_transition_has_a_scenario() -> None:
    assert set(PHASE_SCENARIOS) == set(PHASE_TRANSITIONS)


@pytest.mark.parametrize("key", list(PHASE_TRANSITIONS), ids=lambda key: "-".join(key))
def test_a_real_room_makes_each_phase_transition_of_the_table(
    key: tuple[Phase, PhaseEvent],
) -> None:
    setup, act = PHASE_SCENARIOS[key]
    room = setup()
    assert room.phase is key[0]
    act(room)
    assert room.phase is PHASE_TRANSITIONS[key]


# ---- racers -----------------------------------------------------------------------
def _stuck_line(deal: Deal) -> list[Move]:
    """Legal moves that leave the game stuck (no move but an undo)."""
    for attempt in range(200):
        rng, game, line = random.Random(attempt), Game(deal), list[Move]()
        while game.status is Status.PLAYING:
            line.append(rng.choice(game.legal_moves()))
            game.push(line[-1])
        if game.status is Status.STUCK:
            return line
    raise AssertionError("no stuck line found")


class Racing:
    """A race of two with undo allowed, driven through ``Room.move``; ann is watched."""

    def __init__(self) -> None:
        self.room = _racing(2, undo=m.UndoPolicy.FREE)
        self.seq = 0

    @property
    def status(self) -> PlayerStatus:
        race = self.room.race
        assert race is not None
        return race.racers[HOST.player_id].status

    def play(self, moves: list[Move]) -> None:
        for move in moves:
            action = m.MoveAction.DRAW if move == DRAW else m.MoveAction.PLAY
            self.send(action, None if move == DRAW else int(move))

    def send(self, action: m.MoveAction, position: int | None = None) -> None:
        self.seq += 1
        self.room.move(HOST.player_id, m.MoveRequest(self.seq, action, position), 100)


def _racer() -> Racing:
    return Racing()


def _stuck_racer() -> Racing:
    racing = Racing()
    racing.play(_stuck_line(DEALT.deal))
    return racing


def _time_up(racing: Racing) -> None:
    race = racing.room.race
    assert race is not None
    racing.room.on_timer(TIME_LIMIT_TIMER, race.deadline_ms)


_STOPS: dict[RacerEvent, Callable[[Racing], object]] = {
    RacerEvent.RESIGN: lambda r: r.room.resign("p0", 200),
    RacerEvent.LEAVE: lambda r: r.room.leave("p0", 200),
    RacerEvent.TIME_OUT: _time_up,
}

RACER_SCENARIOS: dict[
    tuple[PlayerStatus, RacerEvent], tuple[Callable[[], Racing], Callable[[Racing], object]]
] = {
    (PlayerStatus.RACING, RacerEvent.WIN): (_racer, lambda r: r.play(list(DEALT.solution))),
    (PlayerStatus.RACING, RacerEvent.GET_STUCK): (
        _racer, lambda r: r.play(_stuck_line(DEALT.deal))
    ),
    (PlayerStatus.STUCK, RacerEvent.UNDO): (_stuck_racer, lambda r: r.send(m.MoveAction.UNDO)),
    **{(PlayerStatus.RACING, event): (_racer, stop) for event, stop in _STOPS.items()},
    **{(PlayerStatus.STUCK, event): (_stuck_racer, stop) for event, stop in _STOPS.items()},
}


def test_every_racer_transition_has_a_scenario() -> None:
    assert set(RACER_SCENARIOS) == set(RACER_TRANSITIONS)


@pytest.mark.parametrize("key", list(RACER_TRANSITIONS), ids=lambda key: "-".join(key))
def test_a_real_race_makes_each_racer_transition_of_the_table(
    key: tuple[PlayerStatus, RacerEvent],
) -> None:
    setup, act = RACER_SCENARIOS[key]
    racing = setup()
    assert racing.status is key[0]
    act(racing)
    assert racing.status is RACER_TRANSITIONS[key]
