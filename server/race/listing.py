"""The public room list as sent: encoded once per encoding until a listed room changes.

A listing is the largest answer a client can ask for with a few bytes (100
rooms are about 26 KB), so it is kept encoded while no listed room changes,
and it costs credit by its size (:func:`listing_cost`).  Whether one has
changed is asked on every ``list_rooms``: :class:`Summaries` answers it
without building a summary for a room that shows what it showed before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from protocol.wire import codec
from protocol.wire import messages as m

if TYPE_CHECKING:
    from server.race.room import Room

#: A room listing costs one credit per started block of this many bytes.
LIST_COST_BYTES: Final = 1024


def listing_cost(size: int, burst: float) -> float:
    """Credits a listing of ``size`` bytes costs: one per started KiB, at most ``burst``
    (so that a full bucket can always pay for one)."""
    blocks = max(1, -(-size // LIST_COST_BYTES))
    return float(min(blocks, max(1.0, burst)))


@dataclass(eq=False, slots=True)
class RoomListing:
    """The public rooms, newest first, with their encoded forms."""

    rooms: tuple[m.RoomSummary, ...]
    frames: dict[codec.Encoding, bytes | str] = field(default_factory=dict)
    #: The ``GET /api/rooms`` body, made by the HTTP handler from :attr:`rooms`.
    http_body: bytes | None = None

    def frame(self, encoding: codec.Encoding) -> bytes | str:
        """The ``room_list`` frame in ``encoding``."""
        frame = self.frames.get(encoding)
        if frame is None:
            frame = self.frames[encoding] = codec.encode(m.RoomList(self.rooms), encoding)
        return frame


class Summaries:
    """Each listed room's :class:`~protocol.wire.messages.RoomSummary`, made again only
    when something it shows has changed.

    An unchanged room gives the very same summary object, so comparing a new
    listing with the one held encoded is a comparison of identical objects.
    Rooms that left the listing are forgotten once more than ``2 * keep`` are held.
    """

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._made: dict[str, m.RoomSummary] = {}

    def __len__(self) -> int:
        """How many rooms' summaries are held."""
        return len(self._made)

    def listed(self, rooms: Iterable[Room]) -> list[m.RoomSummary]:
        """The summaries of ``rooms``, in their order."""
        made = self._made
        out = []
        for room in rooms:
            summary = made.get(room.code)
            # Room.summary's fields, read without building a frozen dataclass.
            if (
                summary is None or summary.phase is not room.phase
                or summary.players != len(room.seats)
                or summary.spectators != len(room.spectators)
                or summary.options is not room.options
            ):
                summary = made[room.code] = room.summary()
            out.append(summary)
        if len(made) > 2 * self.keep:
            self._made = {summary.code: summary for summary in out}
        return out
