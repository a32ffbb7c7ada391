"""Where a room's deal is requested: dealt in the worker processes, or taken ready.

A room's ``DealRequest`` output comes here.  A race deal is taken from the
deals kept ready per rule set (:mod:`server.dealpool` sizes the pool from the
starts seen lately), or dealt at once when none is ready; a practice deal
(a chosen seed) is always dealt at once, and the daily deal is the day's
(:mod:`server.daily`).  While a room waits for a deal, no refill and no par
job is handed to the workers.  A race deal dealt at once is hedged
(:func:`first_dealt`): a seed that is slow to deal gets a second seed beside
it after ``deal_hedge_ms`` (10 ms: about 97% of seeds deal in under a
millisecond, the rest in up to tens), the room takes whichever deal comes
first, and the other joins the pool.  The dealt game reaches the room as a
``Dealt`` input, a few starts per turn of the loop (:mod:`server.turns`);
its par follows off the start path (:mod:`server.pars`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from protocol.deals.dealer import DealtGame, Difficulty, deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import codec
from server import ids, logs
from server.config import Settings
from server.daily import DailyService, daily_for_room
from server.dealpool import POOL_CEILING, StartRate, deal_later, deal_now, pool_target
from server.hub_rooms import RoomHandle
from server.metrics import Metrics
from server.pars import ParJobs
from server.race import inputs
from server.race.daily import day_end_ms, day_of
from server.race.outputs import DealRequest, Output
from server.transport.framing import WriteBatch
from server.turns import TurnSlots


class Shell(Protocol):
    """What this module needs of the hub."""

    settings: Settings
    executor: concurrent.futures.Executor
    metrics: Metrics
    batch: WriteBatch
    daily: DailyService
    pars: ParJobs
    closing: bool

    def now_ms(self) -> int: ...

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None: ...

    def enter(self, handle: RoomHandle, given: inputs.Input) -> list[Output]: ...

    async def carry(self, handle: RoomHandle, given: Awaitable[inputs.Input | None]) -> None: ...


class Dealing:
    """The deals of one hub's rooms, and the deals kept ready for them."""

    def __init__(self, hub: Shell, loop: asyncio.AbstractEventLoop) -> None:
        self.hub = hub
        self._loop = loop
        #: Deals kept ready per rule set, oldest first.
        self.prepared: dict[tuple[Rules, Difficulty], deque[DealtGame]] = {}
        self._preparing: set[tuple[Rules, Difficulty]] = set()
        #: Starts per rule set, which size its pool (:func:`server.dealpool.pool_target`).
        self._start_rates: dict[tuple[Rules, Difficulty], StartRate] = {}
        #: Deals rooms are waiting for; refills (and par jobs) wait until there are none.
        self._urgent = 0
        self.no_urgent = asyncio.Event()
        self.no_urgent.set()
        self._start_slots = TurnSlots(loop)

    async def deal(self, handle: RoomHandle, request: DealRequest) -> None:
        """Deal ``request`` (or take a ready deal) and hand it to the room."""
        hub = self.hub
        if request.daily:
            await hub.carry(handle, daily_for_room(hub.daily, handle.room, request, hub.now_ms))
            return
        practice = request.chosen
        key = (request.rules, request.difficulty)
        started = time.perf_counter()
        if not practice:
            self._start_rates.setdefault(key, StartRate()).started(hub.now_ms())
        try:
            dealt = await self._dealt(request, key, practice)
        except Exception as exc:
            logs.event("deal_failed", level=logging.WARNING, room=handle.room.code, reason=str(exc))
            if not handle.room.closed:
                reason = codec.printable_line(f"cannot deal: {exc}")
                hub.enter(handle, inputs.DealFailed(request.ticket, reason, hub.now_ms()))
            return
        hub.metrics.deal_seconds.observe(time.perf_counter() - started)
        if not practice:
            self.prepare_ahead(key)
        await self._start_slots.take()  # a burst of starts is spread over turns of the loop
        if not handle.room.closed and not hub.closing:
            with hub.batch:  # room_state and race_start: one write per member
                outputs = hub.enter(handle, inputs.Dealt(request.ticket, dealt, hub.now_ms()))
            if outputs:  # par follows, off the start path (server.pars)
                handle.par = hub.pars.submit(dealt)

    async def _dealt(
        self, request: DealRequest, key: tuple[Rules, Difficulty], practice: bool
    ) -> DealtGame:
        if not practice and self.prepared.get(key):
            return self.prepared[key].popleft()
        # A room waits for this one: dealt at normal priority (deal_now), and no refill
        # is handed to the workers meanwhile (see _fill).
        self._urgent += 1
        self.no_urgent.clear()
        hub = self.hub
        # A chosen seed's deal is that seed's; a race may take any seed's (a second
        # worker is needed for the hedge to run beside the first deal).
        hedge = not practice and hub.settings.deal_workers > 1
        try:
            return await first_dealt(
                self._loop,
                hub.executor,
                request.seed,
                request.rules,
                request.difficulty,
                hedge_after_s=hub.settings.deal_hedge_ms / 1000 if hedge else None,
                spare_seed=self._hedge_seed,
                keep=lambda dealt: self._keep_spare(key, dealt),
            )
        finally:
            self._urgent -= 1
            if not self._urgent:
                self.no_urgent.set()

    def _hedge_seed(self) -> str:
        """A fresh seed for a start whose own seed is slow to deal (counted as a hedge)."""
        self.hub.metrics.deals_hedged.inc()
        return ids.seed()

    def _keep_spare(self, key: tuple[Rules, Difficulty], dealt: DealtGame | BaseException) -> None:
        """A race deal a start did not take (a hedge's other deal, or that of a start
        given up): into the pool, as it is a fresh seed's exact deal."""
        hub = self.hub
        if isinstance(dealt, BaseException):
            logs.event("spare_deal_failed", level=logging.WARNING, reason=str(dealt))
            return
        queue = self.prepared.setdefault(key, deque())
        if not hub.closing and len(queue) < POOL_CEILING:
            queue.append(dealt)

    async def deal_in_pool(self, seed: str, rules: Rules, difficulty: Difficulty) -> DealtGame:
        """Deal ``seed`` in the worker processes (the daily deal's dealer)."""
        return await self._loop.run_in_executor(
            self.hub.executor, deal_for_seed, seed, rules, difficulty
        )

    async def warm_daily(self) -> None:
        """Today's daily deal drawn and dealt at start-up and after each midnight (UTC)."""
        hub = self.hub
        while not hub.closing:
            try:
                await hub.daily.warm()
            except Exception:
                logs.failure("daily_warm_failed")
            now = hub.now_ms()
            await asyncio.sleep((day_end_ms(day_of(now)) - now) / 1000 + 0.001)

    def prepare_ahead(self, key: tuple[Rules, Difficulty]) -> None:
        """Keep deals ready per rule set, so most starts need no solving at all."""
        if self.hub.settings.deals_ahead <= 0 or key in self._preparing or self.hub.closing:
            return
        self._preparing.add(key)
        self.hub.spawn(self._fill(key))

    def pool_target(self, key: tuple[Rules, Difficulty]) -> int:
        """How many deals to keep ready for ``key``, from the starts seen lately."""
        rate = self._start_rates.get(key)
        peak = rate.peak(self.hub.now_ms()) if rate is not None else 0
        return pool_target(peak, self.hub.settings.deals_ahead, POOL_CEILING)

    async def _fill(self, key: tuple[Rules, Difficulty]) -> None:
        queue = self.prepared.setdefault(key, deque())
        # All workers but one at once: a pool emptied by a burst refills in parallel (at
        # idle priority, never at the expense of the loop), and a worker stays free for
        # a room that finds the pool empty.  Refills wait while such a room waits: the
        # workers take jobs in order, and an idle-priority deal may take long to finish.
        hub = self.hub
        workers = max(1, hub.settings.deal_workers - 1)
        try:
            while not hub.closing:
                await self.no_urgent.wait()
                missing = self.pool_target(key) - len(queue)
                if missing <= 0:
                    break
                batch = [
                    self._loop.run_in_executor(
                        hub.executor, deal_later, ids.seed(), key[0], key[1]
                    )
                    for _ in range(min(missing, workers))
                ]
                queue.extend(await asyncio.gather(*batch))
        except Exception:
            logs.failure("prepare_deal_failed")
        finally:
            self._preparing.discard(key)


DealFn = Callable[[str, Rules, Difficulty], DealtGame]


async def first_dealt(
    loop: asyncio.AbstractEventLoop,
    executor: concurrent.futures.Executor,
    seed: str,
    rules: Rules,
    difficulty: Difficulty,
    *,
    hedge_after_s: float | None,
    spare_seed: Callable[[], str],
    keep: Callable[[DealtGame | BaseException], None],
    deal: DealFn = deal_now,
) -> DealtGame:
    """Deal ``seed`` in ``executor``; if that takes over ``hedge_after_s``, deal a second
    seed (``spare_seed()``) beside it and return whichever deal is ready first.

    Both are exact deals of their seeds, so the one not returned is handed to ``keep``
    when it is ready (a failure as its exception), and so is every deal of a caller
    cancelled while waiting: nothing a worker dealt is lost.  Most seeds deal in well
    under a millisecond; the few that take tens (an unwinnable first candidate proved
    so, a winning line the probes miss) no longer hold a start up.  0 deals both seeds
    at once.  ``None`` never hedges and keeps nothing (a chosen seed's deal must not
    reach the pool).  If the first deal fails before the hedge, that failure is raised;
    after it, only when both fail.
    """
    first = loop.run_in_executor(executor, deal, seed, rules, difficulty)
    if hedge_after_s is None:
        return await first
    order = [first]
    taken: asyncio.Future[DealtGame] | None = None
    try:
        if hedge_after_s > 0:
            done, _ = await asyncio.wait({first}, timeout=hedge_after_s)
            if done:
                taken = first
                return first.result()
        order.append(loop.run_in_executor(executor, deal, spare_seed(), rules, difficulty))
        pending: set[asyncio.Future[DealtGame]] = set(order)
        while pending:
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            # The first seed wins a tie: it is the room's own.
            for future in order:
                if future.done() and future.exception() is None:
                    taken = future
                    return future.result()
        error = first.exception()
        assert error is not None
        taken = first  # raised here; the second's failure is the spare's
        raise error
    finally:
        for future in order:
            if future is not taken:
                future.add_done_callback(lambda f: keep(_outcome(f)))


def _outcome(future: asyncio.Future[DealtGame]) -> DealtGame | BaseException:
    if future.cancelled():
        return asyncio.CancelledError()
    error = future.exception()
    return error if error is not None else future.result()
