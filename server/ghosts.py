"""Reading the runs a ghost race names: the shell's half of :mod:`server.race.ghost`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from protocol.wire import codec
from protocol.wire.errors import ErrorCode
from protocol.wire.messages import GhostRef
from server.daily import DailyService
from server.race import inputs
from server.race.ghost import GhostError, GhostRun, run_of
from server.race.outputs import LoadGhosts
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
    store: RaceStore, daily: DailyService, request: LoadGhosts, clock: Callable[[], int]
) -> inputs.GhostsLoaded | inputs.DealFailed:
    """The room's input answering its :class:`LoadGhosts`: the runs, or why not."""
    try:
        runs = await load_runs(store, daily, request.ghosts)
    except GhostError as exc:
        reason = codec.printable_line(str(exc))
        return inputs.DealFailed(
            request.ticket, reason, clock(), int(ErrorCode.GHOST_UNAVAILABLE)
        )
    return inputs.GhostsLoaded(request.ticket, tuple(runs), clock())
