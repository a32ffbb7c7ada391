"""Where a room's progress is flushed: which racers changed, and when the next flush is due.

A move only marks its racer; the flush (the ``progress`` line and the
spectator boards, built by :mod:`server.race.progress`) goes out at most once
per progress interval, when the shell calls it back for the
:class:`~server.race.outputs.FlushDue` the first mark after a flush asks for.
Pure like the room that owns it.

What this bookkeeping holds is about what was sent, not about the race: the
shell does not log flushes, so a room rebuilt from its input log has it as the
marks left it; :meth:`server.race.race_cycle.RaceCycle._restart_timers` forgets
the flush the old process owed, and the next mark asks for one afresh.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from protocol.wire.messages import Progress, RoomOptions, SpectatorBoard
from server.race.ghost import GhostRun, ghost_members
from server.race.outputs import FlushDue, Output
from server.race.progress import FlushRows, boards_wanted, current_frame, progress_rows
from server.race.race import Race
from server.race.room_types import Identity, Seat
from server.race.spectate import BoardsShown


class ProgressFlush:
    """One room's flush bookkeeping (the room reads :attr:`dirty` and :attr:`due_ms`
    on its move path directly, to spare a call per move)."""

    __slots__ = ("dirty", "due_ms", "interval_ms", "last_ms", "shown")

    def __init__(self, interval_ms: int) -> None:
        self.interval_ms = interval_ms
        #: The racers changed since the last flush.
        self.dirty: set[str] = set()
        #: When the flush is due, or ``None`` when none is scheduled.
        self.due_ms: int | None = None
        #: When the last ``progress`` line went out.
        self.last_ms = 0
        #: The boards spectators were last shown.
        self.shown = BoardsShown()

    def mark(self, player_id: str, now_ms: int) -> list[Output]:
        """``player_id`` changed: the next flush, if none is due yet."""
        self.dirty.add(player_id)
        if self.due_ms is not None:
            return []
        due = max(now_ms, self.last_ms + self.interval_ms)
        self.due_ms = due
        return [FlushDue(due)]

    def new_race(self) -> None:
        """A race starts: nothing of it was flushed or shown yet."""
        self.dirty.clear()
        self.shown.forget()

    def flush(
        self,
        race: Race | None,
        seats: dict[str, Seat],
        ghosts: Sequence[GhostRun],
        options: RoomOptions,
        spectators: Collection[str],
        now_ms: int,
        *,
        final: bool = False,
    ) -> FlushRows | None:
        """The due flush, as rows (:data:`server.race.progress.FlushRows`; ``None``:
        nothing to send).

        ``ghosts``: the runs racing as ghosts, shown beside ``seats``.  The
        ``final`` flush at the race's end sends ``progress`` only when the bound
        allows one now; otherwise ``race_over``'s standings are the last word.
        """
        self.due_ms = None
        if race is None or not self.dirty:
            return None
        bounded = not final or now_ms >= self.last_ms + self.interval_ms
        if bounded:
            self.last_ms = now_ms
        elapsed = race.elapsed(race.end_ms or now_ms)
        boards = (
            self.shown.changed_rows(race, self.dirty, options.open_boards, elapsed)
            if boards_wanted(options, spectators)
            else []
        )
        self.dirty.clear()
        lines = progress_rows(race, _with_ghosts(seats, ghosts), elapsed) if bounded else None
        return elapsed, lines, boards

    def current(
        self,
        race: Race | None,
        seats: dict[str, Seat],
        ghosts: Sequence[GhostRun],
        options: RoomOptions,
        key: str,
        now_ms: int,
    ) -> Progress | SpectatorBoard | None:
        """:func:`server.race.progress.current_frame` of the race (``ghosts`` as in
        :meth:`flush`), for a catch-up: nothing of this bookkeeping changes."""
        if race is None:
            return None
        return current_frame(race, _with_ghosts(seats, ghosts), key, options.open_boards, now_ms)


def _with_ghosts(seats: dict[str, Seat], runs: Sequence[GhostRun]) -> dict[str, Seat]:
    """``seats`` and the ghosts of ``runs`` as always-connected seats, for the progress
    lines."""
    if not runs:
        return seats
    ghosts = {
        member.player_id: Seat(Identity(member.player_id, member.name), True, True)
        for member in ghost_members(runs)
    }
    return {**seats, **ghosts}
