"""Par off the start path: computed in the deal workers while the race runs.

A room's deal is dealt without par (:func:`protocol.deals.dealer.deal_for_seed`
with ``with_par=False``): a winnable deal with a winning line is all a start
needs, and par costs several times the deal itself.  Once the deal is handed
to its room, :class:`ParJobs` computes par and a winning line with exactly
that many draws (:func:`protocol.deals.solver.par_of`) in a deal worker, at
the workers' idle priority and never more at once than leaves a worker free
for a room waiting for a deal.  ``race_over`` and the stored record carry
that par and that line, as they always have.

A race that ends before its par is known *hurries* it: a job still waiting
runs at once at normal priority, one already running is run once more at
normal priority, and the first answer wins.  The race's ``race_over`` waits
meanwhile, with every frame of the room after it, as it waits for the
result to be stored (:mod:`server.storing`).  A par job that fails, and a
race that ends while the server shuts down, leave par ``null`` ("not
computed") and the line the dealer found.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
from collections.abc import Callable, Coroutine
from typing import Any

from protocol.deals.dealer import DealtGame
from protocol.rules.game import Deal, Move
from protocol.wire import messages as m
from server import logs
from server.dealpool import par_now
from server.race.outputs import Output, ToPlayers, ToSpectators
from server.race.records import RaceRecord

#: Par and a winning line with exactly that many draws; ``None`` when it failed.
ParResult = tuple[int, tuple[Move, ...]] | None


@dataclasses.dataclass(slots=True)
class ParJob:
    """The par of one dealt game: known once ``future`` is done."""

    seed: str
    candidate: int
    deal: Deal
    future: asyncio.Future[ParResult]
    hurried: bool = False

    def belongs_to(self, record: RaceRecord) -> bool:
        """True when ``record`` is the race of this job's deal."""
        return record.seed == self.seed and record.candidate == self.candidate


class ParJobs:
    """Par jobs for the deal workers: at most ``workers`` at a time (idle priority),
    none started while ``free`` is clear (a room waits for a deal)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        executor: concurrent.futures.Executor,
        workers: int,
        free: asyncio.Event,
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        closing: Callable[[], bool] = lambda: False,
    ) -> None:
        self._loop, self._executor, self._free, self._spawn = loop, executor, free, spawn
        #: True once the server is stopping: its pool is stopped under the jobs left.
        self._closing = closing
        self._slots = asyncio.Semaphore(max(1, workers))

    def submit(self, dealt: DealtGame) -> ParJob:
        """Compute the par of ``dealt`` in the background (its own, when it has one)."""
        job = ParJob(dealt.seed, dealt.candidate, dealt.deal, self._loop.create_future())
        if dealt.par is not None:
            job.future.set_result((dealt.par, dealt.solution))
        else:
            self._spawn(self._queued(job))
        return job

    def hurry(self, job: ParJob) -> None:
        """A race is waiting for this par: compute it now at normal priority as well."""
        if job.future.done() or job.hurried:
            return
        job.hurried = True
        self._spawn(self._run(job, True))

    async def _queued(self, job: ParJob) -> None:
        async with self._slots:
            await self._free.wait()
            if not job.future.done():
                await self._run(job, False)

    async def _run(self, job: ParJob, urgent: bool) -> None:
        try:
            result: ParResult = await self._loop.run_in_executor(
                self._executor, par_now, job.deal, urgent
            )
        except Exception:
            if not self._closing():  # a stopping server stops its pool: no failure
                logs.failure("par_failed", seed=job.seed, candidate=job.candidate)
            result = None
        if not job.future.done():
            job.future.set_result(result)


def with_par(record: RaceRecord, held: list[Output], result: ParResult) -> RaceRecord:
    """``record`` with its par and line, and its race's held ``race_over`` frames (in
    ``held``, changed in place) likewise; unchanged when ``result`` is ``None``."""
    if result is None:
        return record
    par, line = result
    for index, out in enumerate(held):
        if isinstance(out, ToPlayers | ToSpectators) and type(out.message) is m.RaceOver:
            over = out.message
            if over.race_id == record.race_id:
                over = dataclasses.replace(over, par=par, solution=line)
                held[index] = dataclasses.replace(out, message=over)
    return dataclasses.replace(record, par=par, solution=line)
