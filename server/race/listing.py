"""The public room list as sent: encoded once per encoding until a listed room changes.

A listing is the largest answer a client can ask for with a few bytes (100
rooms are about 26 KB), so it is kept encoded while no listed room changes,
and it costs credit by its size (:func:`listing_cost`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from protocol.wire import codec
from protocol.wire import messages as m

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
