"""Par off the start path: a race starts on a deal without par, par follows in the deal
workers, and race_over and the stored record carry it as before (server.pars)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from protocol.deals.dealer import DealtGame, deal_for_seed
from protocol.rules.game import DRAW, Rules
from protocol.wire import messages as m
from server.app import make_executor, stop_executor
from server.dealpool import par_now
from server.pars import ParJobs
from server.storage.store import RaceStore
from tests.serverutil import TestClient, move_request, open_room, shared_deal_pool, start_server

SEED = "42"


@cache
def with_par() -> DealtGame:
    return deal_for_seed(SEED, Rules())


@cache
def without_par() -> DealtGame:
    return deal_for_seed(SEED, Rules(), with_par=False)


class GatedPool(concurrent.futures.Executor):
    """The shared deal pool, with par jobs held back until :meth:`open` (or failed)."""

    def __init__(self, *, fail: bool = False) -> None:
        self.pool = shared_deal_pool()
        self.fail = fail
        self.held: list[tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...]]]
        self.held = []
        self.is_open = False
        self.par_jobs = 0

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        if fn is not par_now:
            return self.pool.submit(fn, *args, **kwargs)
        self.par_jobs += 1
        outer: concurrent.futures.Future[Any] = concurrent.futures.Future()
        if self.fail:
            outer.set_exception(RuntimeError("no par today"))
        elif self.is_open:
            self._chain(outer, fn, args)
        else:
            self.held.append((outer, fn, args))
        return outer

    def open(self) -> None:
        self.is_open = True
        held, self.held = self.held, []
        for outer, fn, args in held:
            self._chain(outer, fn, args)

    def _chain(
        self, outer: concurrent.futures.Future[Any], fn: Callable[..., Any], args: tuple[Any, ...]
    ) -> None:
        inner = self.pool.submit(fn, *args)
        inner.add_done_callback(lambda done: _copy(done, outer))


def _copy(done: concurrent.futures.Future[Any], outer: concurrent.futures.Future[Any]) -> None:
    if done.exception() is not None:
        outer.set_exception(done.exception())
    else:
        outer.set_result(done.result())


async def race_to_the_end(client: TestClient) -> None:
    """Start a one-player race on SEED and play the dealer's line to the last card."""
    await client.send(m.Start())
    await client.expect(m.RaceStart)
    for seq, step in enumerate(without_par().solution, 1):
        result = await client.request(move_request(seq, step), m.MoveResult)
        assert result.accepted, result


async def test_a_race_starts_before_its_par_is_known_and_race_over_waits_for_it(
    tmp_path: Path,
) -> None:
    pool = GatedPool()
    server = await start_server(tmp_path, executor=pool)
    try:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed=SEED)
        await race_to_the_end(ann)
        assert pool.held, "par was computed before the race started"
        with pytest.raises(TimeoutError):
            await ann.expect(m.RaceOver, timeout=0.5)
        pool.open()
        over = await ann.expect(m.RaceOver)
        assert (over.par, over.solution) == (with_par().par, with_par().solution)
        assert sum(1 for step in over.solution if step == DRAW) == over.par
        record = await server.store.get_race(over.race_id)
        assert record is not None
        assert (record.par, record.solution) == (with_par().par, with_par().solution)
    finally:
        await server.stop()


async def test_a_par_that_cannot_be_computed_leaves_par_null_and_the_dealers_line(
    tmp_path: Path,
) -> None:
    server = await start_server(tmp_path, executor=GatedPool(fail=True))
    try:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed=SEED)
        await race_to_the_end(ann)
        over = await ann.expect(m.RaceOver)
        assert over.par is None and over.solution == without_par().solution
        record = await server.store.get_race(over.race_id)
        assert record is not None and record.par is None
    finally:
        await server.stop()


async def test_a_race_waiting_for_its_par_at_shutdown_is_stored_without_it(
    tmp_path: Path,
) -> None:
    pool = GatedPool()
    server = await start_server(tmp_path, executor=pool)
    try:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed=SEED)
        await race_to_the_end(ann)
        await asyncio.sleep(0.2)
    finally:
        await server.stop()
    over = await ann.expect(m.RaceOver)  # told before the socket closed
    assert over.par is None
    store = await RaceStore.connect(server.db_url)
    try:
        record = await store.get_race(over.race_id)
    finally:
        await store.close()
    assert record is not None and record.par is None
    assert record.solution == without_par().solution


async def test_a_finished_race_asks_for_its_par_at_normal_priority(tmp_path: Path) -> None:
    pool = GatedPool()
    server = await start_server(tmp_path, executor=pool)
    try:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed=SEED)
        await race_to_the_end(ann)
        await asyncio.sleep(0.2)
        urgent = [args[1] for _outer, _fn, args in pool.held]
        assert urgent == [False, True]  # the idle job, then the hurried one
        pool.open()
        over = await ann.expect(m.RaceOver)
        assert over.par == with_par().par
    finally:
        await server.stop()


@pytest.mark.parametrize("closing", [False, True], ids=["running", "stopping"])
async def test_a_par_job_whose_pool_is_stopped_fails_quietly_only_while_the_server_stops(
    closing: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A stopping server stops its deal pool under the par jobs left: no error for those.
    A pool gone while the server runs is a failure, and logged as one."""
    executor = make_executor(1, idle=False)
    stop_executor(executor)
    free = asyncio.Event()
    free.set()
    tasks: list[asyncio.Task[None]] = []
    jobs = ParJobs(
        asyncio.get_running_loop(), executor, 1, free,
        lambda coro: tasks.append(asyncio.ensure_future(coro)), closing=lambda: closing,
    )
    job = jobs.submit(without_par())
    with caplog.at_level(logging.INFO, logger="tripeaks.server"):
        assert await asyncio.wait_for(job.future, 10) is None
        await asyncio.gather(*tasks)
    failures = [r for r in caplog.records if r.getMessage() == "par_failed"]
    assert len(failures) == (0 if closing else 1)
