"""What a room or the lobby asks its shell to do: the outputs of :mod:`server.race.room`
and :mod:`server.race.lobby`.

Plain frozen dataclasses (but :class:`FlushDue`, a compiled class from
:mod:`server.race.room_types` that compares the same); the shell
(:mod:`server.hub`) carries them out in order.  Nothing here does any I/O.
A room's outputs (:data:`Output`) concern that room; the lobby's
(:data:`LobbyOutput`) concern the connection that asked, and carry a room's
outputs in :class:`InRoom`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from protocol.deals.dealer import Difficulty
from protocol.rules.game import Rules
from protocol.wire.messages import GhostRef, LeftReason, RaceEnd, Role, ServerMessage
from server.race.records import RaceRecord
from server.race.room_types import FlushDue as FlushDue

#: A connection, as the lobby knows it: an opaque key the shell chose.
C = TypeVar("C")


class Logged:
    """Base of the room inputs (:mod:`server.race.inputs`) that a lobby output carries
    for the shell to log before carrying the output out."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``message`` to one connected player or spectator."""

    player_id: str
    message: ServerMessage


@dataclass(frozen=True, slots=True)
class ToPlayers:
    """Send ``message`` to every connected member (encoded once)."""

    message: ServerMessage


@dataclass(frozen=True, slots=True)
class ToSpectators:
    """Send ``message`` to every spectator: after the delay unless ``live``.

    ``key`` names what the frame describes, for late joiners' snapshot; a
    ``quiet`` frame only goes into that snapshot.
    """

    message: ServerMessage
    key: str | None = None
    new_race: bool = False
    live: bool = False
    quiet: bool = False


@dataclass(frozen=True, slots=True)
class SetTimer:
    """Call :meth:`Room.on_timer` with ``name`` at ``at_ms`` (replacing any earlier one)."""

    name: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class CancelTimer:
    name: str


@dataclass(frozen=True, slots=True)
class DealRequest:
    """Deal ``seed`` off the event loop, then call :meth:`Room.deal_ready` with ``ticket``."""

    ticket: int
    seed: str
    rules: Rules
    difficulty: Difficulty
    #: The race this deal is for; with ``daily``, the deal is the day's (the shell
    #: registers the attempt, then calls :meth:`Room.deal_ready` with the day).
    race_id: str = ""
    daily: bool = False
    #: A seed the room chose (practice, ghosts): never one of the deals kept ready.
    chosen: bool = False


@dataclass(frozen=True, slots=True)
class LoadGhosts:
    """Read these runs from the store, then call :meth:`Room.ghosts_ready` with ``ticket``
    (or :meth:`Room.deal_failed` when one cannot be raced)."""

    ticket: int
    ghosts: tuple[GhostRef, ...]


@dataclass(frozen=True, slots=True)
class SaveRace:
    record: RaceRecord


@dataclass(frozen=True, slots=True)
class Detach:
    """This player or spectator is no longer in the room."""

    player_id: str
    reason: LeftReason


@dataclass(frozen=True, slots=True)
class RaceBegan:
    """A race started (for metrics and logs)."""

    race_id: str
    players: int


@dataclass(frozen=True, slots=True)
class RaceEnded:
    """A race ended (for metrics and logs)."""

    race_id: str
    ended_by: RaceEnd


@dataclass(frozen=True, slots=True)
class CloseRoom:
    """The room is gone: forget it."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Send this spectator what the spectator feed has released so far."""

    player_id: str


Output = (
    Send
    | ToPlayers
    | ToSpectators
    | SetTimer
    | FlushDue
    | CancelTimer
    | DealRequest
    | LoadGhosts
    | SaveRace
    | Detach
    | RaceBegan
    | RaceEnded
    | CloseRoom
    | Snapshot
)


# ---- the lobby's outputs --------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Reply:
    """Send ``message`` to the connection that asked."""

    message: ServerMessage


@dataclass(frozen=True, slots=True)
class Replace(Generic[C]):
    """Close ``conn``: a newer connection took over its session."""

    conn: C


@dataclass(frozen=True, slots=True)
class Retune(Generic[C]):
    """Give ``conn`` the rate limit of ``role``."""

    conn: C
    role: Role


@dataclass(frozen=True, slots=True)
class RoomOpened:
    """Room ``code`` was created by ``host`` (the shell sets up its timers and feed)."""

    code: str
    host: str
    public: bool
    #: The :class:`~server.race.inputs.Opened` input that made the room.
    logged: Logged | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class InRoom:
    """Carry out room ``code``'s ``outputs``."""

    code: str
    outputs: Sequence[Output]
    #: The room input these outputs came from, when it changed the room (to be logged).
    logged: Logged | None = field(default=None, compare=False)


LobbyOutput = Reply | Replace[C] | Retune[C] | RoomOpened | InRoom
