"""Which client message is allowed when: the whole table, as data.

Everything that decides whether a client message may be handled lives in
this module (in the spirit of h11's ``_state.py``); a message missing from
the table for the sender's situation is refused with the
:class:`~protocol.wire.errors.ErrorCode` that :func:`refusal` names, and the
server replies with an ``error`` and changes nothing.

A connection is in one of three stages: before ``hello``, after ``hello``
but outside any room, or in a room, where the room's :class:`Phase` and the
connection's :class:`Role` pick the row of :data:`ALLOWED`.  Host-only
messages (:data:`HOST_ONLY`) also need the sender to be the host.

Everything that changes a room's phase or a racer's status lives in this
table too: :data:`PHASE_TRANSITIONS` and :data:`RACER_TRANSITIONS` map a state
and an event to the next state, and :func:`next_phase` and
:func:`next_status` refuse anything else with :class:`LifecycleError`, a
:class:`~protocol.wire.errors.ProtocolError` with code ``NOT_ALLOWED_NOW``.  A
client never meets it from a server: :func:`refusal` turns its message away first.
"""

from __future__ import annotations

import enum
from typing import Final

from protocol.wire.errors import ErrorCode, ProtocolError
from protocol.wire.messages import Phase, PlayerStatus, Role

#: Allowed before ``hello``.
BEFORE_HELLO: Final = frozenset({"hello"})

#: Allowed after ``hello`` whatever else holds.
ANYTIME: Final = frozenset({"ping", "list_rooms"})

#: Allowed after ``hello`` while not in a room.
OUTSIDE_ROOM: Final = ANYTIME | {"create_room", "join"}

_IN_ROOM: Final = ANYTIME | {"leave", "sync"}

#: Allowed in a room, by the room's phase and the sender's role.
ALLOWED: Final[dict[tuple[Phase, Role], frozenset[str]]] = {
    (Phase.LOBBY, Role.PLAYER): _IN_ROOM | {"ready", "start", "kick", "update_options"},
    (Phase.COUNTDOWN, Role.PLAYER): _IN_ROOM,
    (Phase.RACING, Role.PLAYER): _IN_ROOM | {"move", "resign"},
    # Between races the host may still tidy up the room before everyone asks for a rematch.
    (Phase.FINISHED, Role.PLAYER): _IN_ROOM | {"rematch", "kick", "update_options"},
    (Phase.LOBBY, Role.SPECTATOR): _IN_ROOM,
    (Phase.COUNTDOWN, Role.SPECTATOR): _IN_ROOM,
    (Phase.RACING, Role.SPECTATOR): _IN_ROOM,
    (Phase.FINISHED, Role.SPECTATOR): _IN_ROOM,
}

#: Messages only the room's host may send (when the phase allows them).
HOST_ONLY: Final = frozenset({"start", "kick", "update_options"})


def allowed(hello_done: bool, phase: Phase | None, role: Role | None) -> frozenset[str]:
    """Message tags allowed now; ``phase``/``role`` are ``None`` outside a room."""
    if not hello_done:
        return BEFORE_HELLO
    if phase is None or role is None:
        return OUTSIDE_ROOM
    return ALLOWED[phase, role]


def refusal(
    tag: str, hello_done: bool, phase: Phase | None, role: Role | None, is_host: bool = False
) -> ErrorCode | None:
    """Why message ``tag`` must be refused now, or ``None`` when it may be handled."""
    if not hello_done:
        return None if tag in BEFORE_HELLO else ErrorCode.HELLO_REQUIRED
    if tag == "hello":
        return ErrorCode.ALREADY_HELLO
    if phase is None or role is None:
        if tag in OUTSIDE_ROOM:
            return None
        return ErrorCode.NOT_IN_ROOM
    if tag in ("create_room", "join"):
        return ErrorCode.ALREADY_IN_ROOM
    if tag not in ALLOWED[phase, role]:
        return ErrorCode.NOT_ALLOWED_NOW
    if tag in HOST_ONLY and not is_host:
        return ErrorCode.NOT_HOST
    return None


#: The phases in which each role (``None``: not in the room) may send ``move``: the rows of
#: :data:`ALLOWED`, read once for the move fast path.
MOVE_PHASES: Final[dict[Role | None, frozenset[Phase]]] = {
    role: frozenset(
        phase for (phase, row), tags in ALLOWED.items() if row is role and "move" in tags
    )
    for role in (*Role, None)
}


def move_allowed(phase: Phase, role: Role | None) -> bool:
    """``refusal("move", True, phase, role) is None``, precomputed (the move fast path)."""
    return phase in MOVE_PHASES[role]


# ---- phase and racer-status transitions ----------------------------------------------
class PhaseEvent(enum.StrEnum):
    """What moves a room from one phase to the next."""

    START = "start"  #: the host starts the race
    REMATCH = "rematch"  #: the last member asks for a rematch
    DEAL_FAILED = "deal_failed"  #: the deal cannot be made (a practice seed)
    ALL_LEFT = "all_left"  #: every member left during the countdown
    RACE_START = "race_start"  #: the deal is ready and the countdown is over
    RACE_END = "race_end"  #: everyone is done, the time is up, or the server stops


class RacerEvent(enum.StrEnum):
    """What changes a racer's status."""

    WIN = "win"  #: the last peak card is played
    GET_STUCK = "get_stuck"  #: no move is left but an undo
    UNDO = "undo"  #: an undo out of a stuck position
    RESIGN = "resign"
    LEAVE = "leave"  #: the player left, or their reconnect grace ran out
    TIME_OUT = "time_out"  #: the time limit ended the race


#: ``(phase, event) -> next phase``; the room starts in ``lobby``.
PHASE_TRANSITIONS: Final[dict[tuple[Phase, PhaseEvent], Phase]] = {
    (Phase.LOBBY, PhaseEvent.START): Phase.COUNTDOWN,
    (Phase.FINISHED, PhaseEvent.REMATCH): Phase.COUNTDOWN,
    (Phase.COUNTDOWN, PhaseEvent.DEAL_FAILED): Phase.LOBBY,
    (Phase.COUNTDOWN, PhaseEvent.ALL_LEFT): Phase.LOBBY,
    (Phase.COUNTDOWN, PhaseEvent.RACE_START): Phase.RACING,
    (Phase.RACING, PhaseEvent.RACE_END): Phase.FINISHED,
}

_STOPS: Final = {
    RacerEvent.RESIGN: PlayerStatus.RESIGNED,
    RacerEvent.LEAVE: PlayerStatus.LEFT,
    RacerEvent.TIME_OUT: PlayerStatus.TIMED_OUT,
}

#: ``(status, event) -> next status``; every racer starts ``racing``.  A stuck racer
#: may undo (when the room allows it) and race on, or stop.
RACER_TRANSITIONS: Final[dict[tuple[PlayerStatus, RacerEvent], PlayerStatus]] = {
    (PlayerStatus.RACING, RacerEvent.WIN): PlayerStatus.FINISHED,
    (PlayerStatus.RACING, RacerEvent.GET_STUCK): PlayerStatus.STUCK,
    (PlayerStatus.STUCK, RacerEvent.UNDO): PlayerStatus.RACING,
    **{(status, event): stop for status in (PlayerStatus.RACING, PlayerStatus.STUCK)
       for event, stop in _STOPS.items()},
}


class LifecycleError(ProtocolError):
    """A phase or status change the transition tables do not hold (``NOT_ALLOWED_NOW``)."""

    def __init__(self, state: Phase | PlayerStatus, event: PhaseEvent | RacerEvent) -> None:
        self.state = state
        self.event = event
        super().__init__(
            ErrorCode.NOT_ALLOWED_NOW, f"no transition from {state.value!r} on {event.value!r}"
        )


def next_phase(phase: Phase, event: PhaseEvent) -> Phase:
    """The phase after ``event`` (:data:`PHASE_TRANSITIONS`), or :class:`LifecycleError`."""
    after = PHASE_TRANSITIONS.get((phase, event))
    if after is None:
        raise LifecycleError(phase, event)
    return after


def next_status(status: PlayerStatus, event: RacerEvent) -> PlayerStatus:
    """The racer status after ``event`` (:data:`RACER_TRANSITIONS`), or :class:`LifecycleError`."""
    after = RACER_TRANSITIONS.get((status, event))
    if after is None:
        raise LifecycleError(status, event)
    return after


def transition_rows() -> list[tuple[str, str, str]]:
    """Both tables as ``(from, event, to)`` rows of names, phases first (for docs and tests)."""
    tables: tuple[dict[tuple[Phase, PhaseEvent], Phase]
                  | dict[tuple[PlayerStatus, RacerEvent], PlayerStatus], ...] = (
        PHASE_TRANSITIONS, RACER_TRANSITIONS,
    )
    return [
        (state.value, event.value, after.value)
        for table in tables
        for (state, event), after in table.items()
    ]
