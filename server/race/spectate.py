"""The delayed spectator feed of one room, pure (time passed in).

Every frame meant for spectators is queued with a release time ``delay_ms``
after it was made, so a spectator never sees a board before the room's
spectator delay has passed.  Released frames also update a snapshot, keyed
by what they describe (``"room"``, ``"race"``, ``"board:<player>"`` ...), so
that a spectator who joins late first receives the latest released frame of
each kind and then the live (delayed) stream.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Queued(Generic[T]):
    release_ms: int
    key: str | None
    frame: T
    new_race: bool


class SpectatorFeed(Generic[T]):
    """Frames for spectators, held back by ``delay_ms`` and remembered by key."""

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._queue: deque[_Queued[T]] = deque()
        self._snapshot: dict[str, T] = {}

    def push(
        self, now_ms: int, frame: T, key: str | None = None, *, new_race: bool = False
    ) -> None:
        """Queue ``frame``; ``new_race`` drops the previous race's snapshot on release."""
        self._queue.append(_Queued(now_ms + self.delay_ms, key, frame, new_race))

    def next_release_ms(self) -> int | None:
        """When the next queued frame is due, or ``None`` when nothing is queued."""
        return self._queue[0].release_ms if self._queue else None

    def due(self, now_ms: int) -> list[T]:
        """Pop every frame due by ``now_ms``, in order, updating the snapshot."""
        released: list[T] = []
        while self._queue and self._queue[0].release_ms <= now_ms:
            item = self._queue.popleft()
            if item.new_race:
                self._snapshot.clear()
            if item.key is not None:
                # Re-inserting moves the key last, so the snapshot replays in causal order.
                self._snapshot.pop(item.key, None)
                self._snapshot[item.key] = item.frame
            released.append(item.frame)
        return released

    def snapshot(self) -> list[T]:
        """The latest released frame of each kind, oldest first, for a new spectator."""
        return list(self._snapshot.values())

    def pending(self) -> int:
        """Frames still held back."""
        return len(self._queue)
