"""Every input of a room's reducer as a value, and the one function that applies it.

The shell never calls a room's methods for a change of state directly: it
builds one of these inputs and hands it to :func:`apply` (the lobby does the
same for joins, reconnects and drops).  Each input holds everything the call
needs, ``now_ms`` included, and nothing else, so the inputs of a room, in
order, are all it takes to rebuild it: :mod:`server.recovery` logs each input
before its outputs go out, and after a restart replays the log through
:func:`apply` into a fresh room (outputs discarded) to get the same room back.

Pure like the room: no I/O, no clock, no randomness (the fresh seeds and race
ids are inside :class:`Started` and :class:`Rematched`, the dealt deal inside
:class:`Dealt`, so a replay neither draws nor solves anything).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from protocol.deals.dealer import DealtGame
from protocol.wire.errors import ErrorCode
from protocol.wire.messages import MoveAction, MoveRequest, Role, RoomOptions
from server.race.ghost import GhostRun
from server.race.outputs import Logged, Output
from server.race.room import Room
from server.race.room_types import Fresh, Identity, RoomTimings


@dataclass(frozen=True, slots=True)
class Opened(Logged):
    """Room ``code`` is created by ``host`` (whose reconnect token has ``token_digest``)."""

    code: str
    options: RoomOptions
    host: Identity
    token_digest: str
    now_ms: int


@dataclass(frozen=True, slots=True)
class Joined(Logged):
    """A player takes a seat, or a spectator starts watching."""

    who: Identity
    token_digest: str
    role: Role
    now_ms: int


@dataclass(frozen=True, slots=True)
class Left(Logged):
    player_id: str
    now_ms: int


@dataclass(frozen=True, slots=True)
class Kicked(Logged):
    host_id: str
    target: str
    now_ms: int


@dataclass(frozen=True, slots=True)
class Dropped(Logged):
    """A member's connection dropped (the seat is kept for the grace)."""

    player_id: str
    now_ms: int


@dataclass(frozen=True, slots=True)
class Returned(Logged):
    """A member came back with their token."""

    player_id: str
    now_ms: int


@dataclass(frozen=True, slots=True)
class ReadySet(Logged):
    player_id: str
    ready: bool
    now_ms: int


@dataclass(frozen=True, slots=True)
class OptionsSet(Logged):
    host_id: str
    options: RoomOptions
    now_ms: int


@dataclass(frozen=True, slots=True)
class Started(Logged):
    host_id: str
    fresh: Fresh
    now_ms: int


@dataclass(frozen=True, slots=True)
class Rematched(Logged):
    player_id: str
    fresh: Fresh
    now_ms: int


@dataclass(frozen=True, slots=True)
class Moved(Logged):
    player_id: str
    seq: int
    action: MoveAction
    position: int | None
    now_ms: int


@dataclass(frozen=True, slots=True)
class Resigned(Logged):
    player_id: str
    now_ms: int


@dataclass(frozen=True, slots=True)
class TimerFired(Logged):
    name: str
    now_ms: int


@dataclass(frozen=True, slots=True)
class Dealt(Logged):
    """The deal for ``ticket`` is ready (seed, layout and winning line: never re-solved);
    ``daily``: the day whose deal it is, for a daily attempt registered in the store."""

    ticket: int
    dealt: DealtGame
    now_ms: int
    daily: str | None = None


@dataclass(frozen=True, slots=True)
class DealFailed(Logged):
    """Dealing ``ticket`` failed; ``code`` is the error the host is sent."""

    ticket: int
    reason: str
    now_ms: int
    code: int = int(ErrorCode.BAD_SEED)


@dataclass(frozen=True, slots=True)
class GhostsLoaded(Logged):
    """The runs a ghost race names, read from the store (moves and all: never read again)."""

    ticket: int
    runs: tuple[GhostRun, ...]
    now_ms: int


@dataclass(frozen=True, slots=True)
class Halted(Logged):
    """The server stopped in order at ``now_ms`` (changes nothing; dates the outage)."""

    now_ms: int


@dataclass(frozen=True, slots=True)
class Resumed(Logged):
    """The server came back ``gap_ms`` after the room's last input (the outage rule:
    :meth:`Room.resume`)."""

    gap_ms: int
    now_ms: int


Input = (
    Joined | Left | Kicked | Dropped | Returned | ReadySet | OptionsSet | Started | Rematched
    | Moved | Resigned | TimerFired | Dealt | DealFailed | GhostsLoaded | Halted | Resumed
)


def open_room(opened: Opened, timings: RoomTimings) -> Room:
    """The room an :class:`Opened` input creates (the lobby and a replay both use this)."""
    room = Room(opened.code, opened.options, opened.host, opened.now_ms, timings)
    room.version += 1  # the creator's room_state is the first version
    return room


def apply(room: Room, given: Input) -> list[Output]:
    """Carry ``given`` into ``room``: its outputs (a refusal raises, changing nothing)."""
    return _CALLS[type(given)](room, given)


def _move(room: Room, i: Moved) -> list[Output]:
    return room.move(i.player_id, MoveRequest(i.seq, i.action, i.position), i.now_ms)


_CALLS: Final[dict[type[Any], Callable[[Room, Any], list[Output]]]] = {
    Joined: lambda room, i: room.join(i.who, i.role, i.now_ms),
    Left: lambda room, i: room.leave(i.player_id, i.now_ms),
    Kicked: lambda room, i: room.kick(i.host_id, i.target, i.now_ms),
    Dropped: lambda room, i: room.disconnect(i.player_id, i.now_ms),
    Returned: lambda room, i: room.reconnect(i.player_id, i.now_ms),
    ReadySet: lambda room, i: room.set_ready(i.player_id, i.ready),
    OptionsSet: lambda room, i: room.update_options(i.host_id, i.options),
    Started: lambda room, i: room.start(i.host_id, i.now_ms, i.fresh),
    Rematched: lambda room, i: room.rematch(i.player_id, i.now_ms, i.fresh),
    Moved: _move,
    Resigned: lambda room, i: room.resign(i.player_id, i.now_ms),
    TimerFired: lambda room, i: room.on_timer(i.name, i.now_ms),
    Dealt: lambda room, i: room.deal_ready(i.ticket, i.dealt, i.now_ms, daily=i.daily),
    DealFailed: lambda room, i: room.deal_failed(i.ticket, i.reason, ErrorCode(i.code)),
    GhostsLoaded: lambda room, i: room.ghosts_ready(i.ticket, i.runs),
    Halted: lambda room, i: [],
    Resumed: lambda room, i: room.resume(i.gap_ms, i.now_ms),
}
