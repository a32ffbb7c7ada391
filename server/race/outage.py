"""The outage rule: where a room rebuilt from its log after a restart sets its timers again.

The race clock pauses for the gap: every racer's time, the time limit and a
countdown move on by it, so nobody loses or gains against another.  Every
timer the room needs is set again, and a deal (or the ghosts' runs) being
fetched when the server stopped is asked for again.  The members' side of the
rule (everyone away, with a full reconnect grace) is
:meth:`server.race.room.Room.resume`, which calls :func:`restart_timers` first.
"""

from __future__ import annotations

from server.race.outputs import LoadGhosts, Output, SetTimer
from server.race.race_cycle import RaceCycle
from server.race.room_timers import COUNTDOWN_TIMER, TIME_LIMIT_TIMER


def restart_timers(room: RaceCycle, gap_ms: int) -> list[Output]:
    """Pause ``room``'s race clock for the ``gap_ms`` outage and set its timers again."""
    outputs: list[Output] = []
    race, pending = room.race, room._pending
    if race is not None and not race.over:
        race.start_ms += gap_ms
        outputs.append(SetTimer(TIME_LIMIT_TIMER, race.deadline_ms))
        outputs += room._ghost_timer()
    if pending is not None and pending.dealt is None:
        # The deal was being solved (or the ghosts' runs read) when the server
        # stopped: ask again.
        if room.options.ghosts and not room.ghost_runs:
            outputs.append(LoadGhosts(pending.ticket, room.options.ghosts))
        else:
            outputs.append(room._deal_request(pending.seed))
    elif pending is not None and pending.start_at_ms is not None:
        pending.start_at_ms += gap_ms
        outputs.append(SetTimer(COUNTDOWN_TIMER, pending.start_at_ms))
    # The flush timer went with the old process; the first mark after this sets it again.
    room._progress.due_ms = None
    return outputs
