"""The small value types of a room (:mod:`server.race.room`), pure like the room itself.

Who a connection speaks for (:class:`Identity`), a member's seat
(:class:`Seat`), the server-side timings (:class:`RoomTimings`), the fresh
values the shell draws for a new race (:class:`Fresh`) and the race being
dealt or counted down (:class:`PendingRace`).  The hub and the tests import
them from here.  :class:`FlushDue`, one of the room's outputs, is here too, to
be compiled (:mod:`server.race.outputs` names it with the others).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from protocol.deals.dealer import DealtGame


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a connection speaks for."""

    player_id: str
    name: str
    bot: bool = False
    #: The claimed name proved with its key (:func:`server.race.identity.account_of`);
    #: None for a guest.
    account: str | None = None


@dataclass(slots=True)
class Seat:
    """A member's place in a room: who they are, ready or not, connected or not."""

    identity: Identity
    ready: bool = False
    connected: bool = True


@dataclass(frozen=True, slots=True)
class RoomTimings:
    """Server-side timings (settings), in ms."""

    reconnect_grace_ms: int = 60_000
    empty_grace_ms: int = 30_000
    progress_interval_ms: int = 250
    max_race_ms: int = 3_600_000


@dataclass(frozen=True, slots=True)
class Fresh:
    """Unpredictable values for a new race, drawn by the shell from a CSPRNG."""

    seed: str
    race_id: str


@dataclass(slots=True)
class PendingRace:
    """The race being dealt or counted down (private to :class:`~server.race.room.Room`)."""

    ticket: int
    race_id: str
    seed: str
    dealt: DealtGame | None = None
    start_at_ms: int | None = None


class FlushDue:
    """Call :meth:`Room.flush_progress <server.race.room.Room.flush_progress>` at
    ``at_ms`` (or a little later).

    Not a timer: a flush only sends (the progress line, the spectator boards)
    and changes nothing a replay of the room's input log must rebuild, so the
    shell does not log it and may run the flushes of many rooms together
    (:mod:`server.hub_flushes`).

    A plain class with the frozen dataclasses' equality, not one of them: compiled,
    a dataclass keeps the ``__init__`` the dataclasses module writes, which runs as
    Python (a frozen one's sets each field through ``object.__setattr__``), and the
    first move after each flush asks for the next one.
    """

    __slots__ = ("at_ms",)

    def __init__(self, at_ms: int) -> None:
        self.at_ms: Final = at_ms

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FlushDue):
            return NotImplemented
        return self.at_ms == other.at_ms

    def __hash__(self) -> int:
        return hash((FlushDue, self.at_ms))

    def __repr__(self) -> str:
        return f"FlushDue(at_ms={self.at_ms!r})"
