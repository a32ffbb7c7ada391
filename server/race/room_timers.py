"""The names of a room's timers.

The room asks for a timer with a :class:`~server.race.outputs.SetTimer` output
and the shell fires it back by name (:meth:`server.race.room.Room.on_timer`).
The ghosts' timer is :data:`server.race.ghost.GHOST_TIMER`.
"""

from __future__ import annotations

from typing import Final

#: The progress flush as input logs written before 2026-12-04 hold it; a room asks for
#: its flushes with :class:`~server.race.outputs.FlushDue` now, and they are not logged.
PROGRESS_TIMER: Final = "progress"
#: The end of the countdown: the race starts.
COUNTDOWN_TIMER: Final = "countdown"
#: The race's time limit (or the server's longest race).
TIME_LIMIT_TIMER: Final = "time_limit"
#: The grace of a room with no members, after which it closes.
EMPTY_TIMER: Final = "empty"
#: A member's or spectator's reconnect grace: this prefix and their player id.
GRACE_PREFIX: Final = "grace:"
