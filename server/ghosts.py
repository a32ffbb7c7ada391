"""Reading the runs a ghost race names: the shell's half of :mod:`server.race.ghost`."""

from __future__ import annotations

from collections.abc import Sequence

from protocol.wire import codec
from protocol.wire.errors import ErrorCode
from protocol.wire.messages import GhostRef
from server.daily import DailyService
from server.race.ghost import GhostError, GhostRun, run_of
from server.race.outputs import LoadGhosts, Output
from server.race.room import Room
from server.storage.store import RaceStore, StorageError


async def load_runs(
    store: RaceStore, daily: DailyService, refs: Sequence[GhostRef]
) -> list[GhostRun]:
    """The runs ``refs`` name; :class:`GhostError` says why one cannot be raced.

    A daily attempt is raced only once its day is over: until then its deal is secret.
    """
    runs: list[GhostRun] = []
    for ref in refs:
        try:
            day = await daily.race_hidden(ref.race_id)
            record = None if day else await store.get_race(ref.race_id)
        except StorageError as exc:
            raise GhostError(f"the stored races cannot be read now: {exc}") from exc
        if day is not None:
            raise GhostError(f"race {ref.race_id} is a daily attempt at {day}: race it once "
                             "that day is over")
        if record is None:
            raise GhostError(f"no stored race has the id {ref.race_id!r}")
        runs.append(run_of(record, ref))
    return runs


async def ghosts_for_room(
    store: RaceStore, daily: DailyService, room: Room, request: LoadGhosts
) -> list[Output]:
    """The room's answer to its :class:`LoadGhosts`: deal the runs, or back to the lobby."""
    try:
        return room.ghosts_ready(request.ticket, await load_runs(store, daily, request.ghosts))
    except GhostError as exc:
        reason = codec.printable_line(str(exc))
        return room.deal_failed(request.ticket, reason, ErrorCode.GHOST_UNAVAILABLE)
