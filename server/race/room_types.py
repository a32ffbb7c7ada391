"""The small value types of a room (:mod:`server.race.room`), pure like the room itself.

Who a connection speaks for (:class:`Identity`), a member's seat
(:class:`Seat`), the server-side timings (:class:`RoomTimings`), the fresh
values the shell draws for a new race (:class:`Fresh`) and the race being
dealt or counted down (:class:`PendingRace`).  The hub and the tests import
them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

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
