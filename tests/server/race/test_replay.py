"""Replaying a room's input log gives the same room: random inputs through a live room,
each one logged as the server logs it, then the log replayed into a fresh room."""

from __future__ import annotations

import enum
from array import array
from collections import deque
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.deals.dealer import Difficulty, deal_for_seed
from protocol.rules.game import DRAW, Game, Rules
from protocol.wire import messages as m
from protocol.wire.errors import ProtocolError
from server.race import inputs
from server.race.ghost import GHOST_TIMER, GhostMove, GhostRun
from server.race.lobby import token_digest
from server.race.outputs import FlushDue, Output, ToPlayers
from server.race.room import Room
from server.race.room_timers import (
    COUNTDOWN_TIMER,
    EMPTY_TIMER,
    GRACE_PREFIX,
    PROGRESS_TIMER,
    TIME_LIMIT_TIMER,
)
from server.race.room_types import Fresh, Identity, RoomTimings
from server.recovery import codec
from server.recovery.resume import ReplayError, replay

DEALT = deal_for_seed("42", Rules())
LINE = DEALT.solution
TIMINGS = RoomTimings(reconnect_grace_ms=5_000, empty_grace_ms=3_000, progress_interval_ms=100)
PLAYERS = [Identity(f"p{i}", f"name{i % 2}", bot=i == 3) for i in range(4)]
TIMERS = [PROGRESS_TIMER, COUNTDOWN_TIMER, TIME_LIMIT_TIMER, EMPTY_TIMER, GHOST_TIMER] + [
    GRACE_PREFIX + p.player_id for p in PLAYERS
]
#: A stored run of DEALT's deal: its winning line, a move every 300 ms.
RUN = GhostRun(
    m.GhostRef("rghost", "p9"), "Ghosty", DEALT.seed, DEALT.rules, Difficulty.ANY,
    DEALT.candidate, m.UndoPolicy.PENALTY, 5,
    tuple(
        GhostMove(300 * (i + 1), m.MoveAction.DRAW if step == DRAW else m.MoveAction.PLAY,
                  None if step == DRAW else int(step))
        for i, step in enumerate(LINE)
    ),
    None,
)
STOPPING = GhostRun(RUN.ref, "Quitter", RUN.seed, RUN.rules, RUN.difficulty, RUN.candidate,
                    RUN.undo, 5, RUN.moves[:3], 1_500)


def state_of(value: Any) -> Any:
    """Everything a value holds, as plain data to compare (private fields included)."""
    if value is None or isinstance(value, str | int | float | bool | enum.Enum):
        return value
    if isinstance(value, dict):
        return [(repr(k), state_of(v)) for k, v in value.items()]
    if isinstance(value, list | tuple | deque):
        return [state_of(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(repr(state_of(v)) for v in value)
    if isinstance(value, array):
        return list(value)
    attrs = dict(vars(value)) if hasattr(value, "__dict__") else {}
    for cls in type(value).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if hasattr(value, slot):
                attrs[slot] = getattr(value, slot)
    if isinstance(value, Game):
        # Worked out when first asked for (an unlogged flush asks): compared worked out.
        attrs["_status"] = value.status
    return type(value).__name__, sorted((k, state_of(v)) for k, v in attrs.items())


def room_state(room: Room) -> Any:
    """:func:`state_of` the room but for its progress flush's bookkeeping: flushes are not
    logged (what they kept is about what was sent), and a resume asks for the next one."""
    name, attrs = state_of(room)
    return name, [(k, v) for k, v in attrs if k != "_progress"]


def _input(room: Room, draw: st.DrawFn, now: int) -> inputs.Input:
    """One input of any kind, usually one the room can take."""
    who = draw(st.sampled_from(PLAYERS))
    racing = room.race is not None and not room.race.over
    if racing and draw(st.integers(0, 3)):
        assert room.race is not None
        who = draw(st.sampled_from([p for p in PLAYERS if p.player_id in room.race.racers]))
    pid = who.player_id
    likely = {
        m.Phase.LOBBY: ["ready", "start"], m.Phase.COUNTDOWN: ["dealt", "timer", "loaded"],
        m.Phase.RACING: ["move", "move", "move"], m.Phase.FINISHED: ["rematch"],
    }[room.phase]
    kind = draw(st.sampled_from([*likely, *likely,
        "join", "join", "watch", "leave", "kick", "ready", "options", "start", "rematch",
        "dealt", "move", "move", "move", "move", "resign", "timer", "timer", "drop", "return",
        "resume", "halt", "failed", "ghosts", "loaded",
    ]))
    fresh = Fresh(f"seed{now}", f"race{now}")
    if kind == "move":
        racer = room.race.racers.get(pid) if room.race else None
        seq = (racer.last_seq if racer else 0) + draw(st.sampled_from([1, 1, 1, 0, -1, 2]))
        step = LINE[min(racer.game.moves if racer else 0, len(LINE) - 1)]
        action = draw(st.sampled_from([m.MoveAction.PLAY, m.MoveAction.DRAW, m.MoveAction.UNDO]))
        if draw(st.booleans()):
            action = m.MoveAction.DRAW if step == DRAW else m.MoveAction.PLAY
        position = (step if isinstance(step, int) else draw(st.integers(0, 27))) if (
            action is m.MoveAction.PLAY
        ) else None
        return inputs.Moved(pid, max(1, seq), action, position, now)
    pending = room._pending
    table: dict[str, inputs.Input] = {
        "join": inputs.Joined(who, token_digest(pid), m.Role.PLAYER, now),
        "watch": inputs.Joined(who, token_digest(pid), m.Role.SPECTATOR, now),
        "leave": inputs.Left(pid, now),
        "kick": inputs.Kicked(room.host_id or pid, pid, now),
        "ready": inputs.ReadySet(pid, draw(st.booleans()), now),
        "options": inputs.OptionsSet(room.host_id or pid, m.RoomOptions(
            countdown_s=draw(st.sampled_from([0, 1])), undo=draw(st.sampled_from(m.UndoPolicy)),
            time_limit_s=draw(st.sampled_from([0, 5])), allow_spectators=draw(st.booleans()),
        ), now),
        "start": inputs.Started(room.host_id or pid, fresh, now),
        "rematch": inputs.Rematched(pid, fresh, now),
        "ghosts": inputs.OptionsSet(room.host_id or pid, m.RoomOptions(
            countdown_s=draw(st.sampled_from([0, 1])),
            ghosts=tuple(m.GhostRef("rghost", f"p{9 + i}") for i in range(draw(st.integers(1, 3)))),
        ), now),
        "loaded": inputs.GhostsLoaded(
            pending.ticket if pending else 0,
            tuple(draw(st.lists(st.sampled_from([RUN, STOPPING]), max_size=3))), now,
        ),
        "dealt": inputs.Dealt(pending.ticket if pending else 0, DEALT, now,
                              daily=draw(st.sampled_from([None, "2024-05-01"]))),
        "failed": inputs.DealFailed(pending.ticket if pending else 0, "no deal", now,
                                    draw(st.sampled_from([116, 130, 132, 133]))),
        "resign": inputs.Resigned(pid, now),
        "timer": inputs.TimerFired(draw(st.sampled_from(TIMERS)), now),
        "drop": inputs.Dropped(pid, now),
        "return": inputs.Returned(pid, now),
        "resume": inputs.Resumed(draw(st.integers(0, 10_000)), now),
        "halt": inputs.Halted(now),
    }
    return table[kind]


@st.composite
def live_rooms(draw: st.DrawFn) -> tuple[Room, list[str]]:
    """A room driven by random inputs, and its log as the server writes it."""
    now = 1_000_000
    host = PLAYERS[0]
    opened = inputs.Opened("ROOM01", m.RoomOptions(countdown_s=0), host, token_digest("p0"), now)
    room = inputs.open_room(opened, TIMINGS)
    log = [codec.encode(opened)]
    for _ in range(draw(st.integers(1, 80))):
        now += draw(st.sampled_from([0, 1, 50, 400, 3_000]))
        if draw(st.integers(0, 5)) == 0:
            room.flush_progress(now)  # as the hub flushes: not an input, not logged
            continue
        given = _input(room, draw, now)
        try:
            inputs.apply(room, given)
        except (ProtocolError, KeyError):
            continue  # refused: the room is unchanged and nothing is logged
        log.append(codec.encode(given))
        if room.closed:
            break
    return room, log


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(live_rooms())
def test_replaying_the_log_of_any_input_sequence_rebuilds_the_same_room(
    live: tuple[Room, list[str]],
) -> None:
    room, log = live
    rebuilt = replay(log, TIMINGS)
    if room.closed:
        assert rebuilt is None
        return
    assert rebuilt is not None
    assert room_state(rebuilt.room) == room_state(room)
    assert rebuilt.next_index == len(log)
    members = {identity.player_id for identity, _ in rebuilt.members}
    assert members == set(room.seats) | room.spectators


def test_a_race_is_rebuilt_move_for_move_and_its_clock_pauses_for_the_outage() -> None:
    host = PLAYERS[0]
    now = 5_000_000
    opened = inputs.Opened("ROOM02", m.RoomOptions(countdown_s=0), host, "d", now)
    room = inputs.open_room(opened, TIMINGS)
    given: list[inputs.Input] = [inputs.Started("p0", Fresh("s", "r1"), now)]
    given.append(inputs.Dealt(1, DEALT, now))
    for seq, step in enumerate(LINE[:6], 1):
        action = m.MoveAction.DRAW if step == DRAW else m.MoveAction.PLAY
        given.append(inputs.Moved("p0", seq, action, step if action is m.MoveAction.PLAY else None,
                                  now + 100 * seq))
    for one in given:
        inputs.apply(room, one)
    rebuilt = replay([codec.encode(opened), *map(codec.encode, given)], TIMINGS)
    assert rebuilt is not None and rebuilt.last_ms == now + 600
    again = rebuilt.room
    assert again.race is not None and room.race is not None
    assert again.race.racers["p0"].log.entries() == room.race.racers["p0"].log.entries()
    outputs = inputs.apply(again, inputs.Resumed(7_000, now + 7_600))
    assert again.race.elapsed(now + 7_600) == 600  # the seven seconds away do not count
    assert again.race.deadline_ms == room.race.deadline_ms + 7_000
    grace = [o for o in outputs if getattr(o, "name", "").startswith(GRACE_PREFIX)]
    assert [(o.name, o.at_ms) for o in grace] == [("grace:p0", now + 7_600 + 5_000)]
    assert not again.seats["p0"].connected


def test_a_rebuilt_room_flushes_its_progress_again_though_its_flushes_were_not_logged() -> None:
    now = 5_500_000
    opened = inputs.Opened("ROOM06", m.RoomOptions(countdown_s=0), PLAYERS[0], "d", now)
    room = inputs.open_room(opened, TIMINGS)
    given: list[inputs.Input] = [
        inputs.Started("p0", Fresh("s", "r1"), now), inputs.Dealt(1, DEALT, now),
        inputs.Moved("p0", 1, m.MoveAction.DRAW, None, now + 10),
    ]
    asked = [out for one in given for out in inputs.apply(room, one)]
    assert FlushDue(now + 10) in asked
    assert room.flush_progress(now + 10)  # sent, and not in the log
    rebuilt = replay([codec.encode(opened), *map(codec.encode, given)], TIMINGS)
    assert rebuilt is not None
    assert room_state(rebuilt.room) == room_state(room)
    again = rebuilt.room
    def lines(flushed: list[Output]) -> list[tuple[str, int, bool]]:
        sent = [o.message for o in flushed if isinstance(o, ToPlayers)]
        assert len(sent) == 1 and isinstance(sent[0], m.Progress)
        return [(p.player_id, p.moves, p.connected) for p in sent[0].players]

    # The flush the old process owed is not: the first change asks for one afresh
    # (here the resume itself: every member is away).
    outputs = inputs.apply(again, inputs.Resumed(3_000, now + 3_050))
    assert [o for o in outputs if isinstance(o, FlushDue)] == [FlushDue(now + 3_050)]
    assert lines(again.flush_progress(now + 3_050)) == [("p0", 1, False)]
    inputs.apply(again, inputs.Returned("p0", now + 3_055))
    inputs.apply(again, inputs.Moved("p0", 2, m.MoveAction.DRAW, None, now + 3_060))
    assert again.flush_progress(now + 3_149) == []  # one interval after the last
    assert lines(again.flush_progress(now + 3_150)) == [("p0", 2, True)]


def test_a_ghost_race_is_rebuilt_from_its_log_and_its_ghost_moves_on_after_the_outage() -> None:
    now = 6_000_000
    options = m.RoomOptions(countdown_s=0, ghosts=(RUN.ref,))
    opened = inputs.Opened("ROOM04", options, PLAYERS[0], "d", now)
    room = inputs.open_room(opened, TIMINGS)
    given: list[inputs.Input] = [
        inputs.Started("p0", Fresh("s", "r1"), now),
        inputs.GhostsLoaded(1, (RUN,), now),
        inputs.Dealt(1, DEALT, now),
        inputs.TimerFired(GHOST_TIMER, now + 650),
    ]
    for one in given:
        inputs.apply(room, one)
    assert room.race is not None and room.race.racers["ghost-1"].game.moves == 2
    rebuilt = replay([codec.encode(opened), *map(codec.encode, given)], TIMINGS)
    assert rebuilt is not None
    assert room_state(rebuilt.room) == room_state(room)
    outputs = inputs.apply(rebuilt.room, inputs.Resumed(10_000, now + 10_650))
    timers = {o.name: o.at_ms for o in outputs if type(o).__name__ == "SetTimer"}
    assert timers[GHOST_TIMER] == now + 10_000 + 900  # the third move, the clock paused


def test_a_rebuilt_room_whose_ghost_runs_were_being_read_asks_for_them_again() -> None:
    options = m.RoomOptions(countdown_s=0, ghosts=(RUN.ref,))
    opened = inputs.Opened("ROOM05", options, PLAYERS[0], "d", 1)
    started = inputs.Started("p0", Fresh("s", "r1"), 1)
    rebuilt = replay([codec.encode(opened), codec.encode(started)], TIMINGS)
    assert rebuilt is not None
    outputs = inputs.apply(rebuilt.room, inputs.Resumed(5, 6))
    asked = [o for o in outputs if type(o).__name__ == "LoadGhosts"]
    assert [(o.ticket, o.ghosts) for o in asked] == [(1, (RUN.ref,))]


def test_a_log_that_does_not_rebuild_its_room_is_refused_in_words() -> None:
    opened = inputs.Opened("ROOM03", m.RoomOptions(), PLAYERS[0], "d", 1)
    with pytest.raises(ReplayError, match="not with the room opening"):
        replay([codec.encode(inputs.Halted(1))], TIMINGS)
    with pytest.raises(ReplayError, match="entry 1"):
        replay([codec.encode(opened), '{"t":"nonsense"}'], TIMINGS)
    with pytest.raises(ReplayError, match="refused"):
        replay([codec.encode(opened), codec.encode(inputs.Resigned("p0", 2))], TIMINGS)
