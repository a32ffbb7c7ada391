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
"""

from __future__ import annotations

from typing import Final

from protocol.wire.errors import ErrorCode
from protocol.wire.messages import Phase, Role

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


#: The rows of :data:`ALLOWED` where ``move`` is allowed (``move`` is for any member of such a row).
_MOVE_ROWS: Final = frozenset(row for row, tags in ALLOWED.items() if "move" in tags)


def move_allowed(phase: Phase, role: Role | None) -> bool:
    """``refusal("move", True, phase, role) is None``, precomputed (the move fast path)."""
    return (phase, role) in _MOVE_ROWS
