"""A start that finds no deal ready is hedged: a slow seed gets a second seed beside it.

:func:`server.hub_deals.first_dealt` runs the real dealer; where a test needs a
seed to be slow, the deal waits for a gate the test opens (a thread pool, so
the gates are shared), so the order in which deals finish is the test's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from protocol.deals.dealer import DealtGame, Difficulty, deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import messages as m
from server.hub_deals import first_dealt
from tests.serverutil import open_room, running_server, shared_deal_pool

RULES = Rules()


def exact(seed: str) -> DealtGame:
    return deal_for_seed(seed, RULES, Difficulty.ANY, with_par=False)


class Gated:
    """The dealer, each seed waiting for its gate (open unless the test closed it)."""

    def __init__(self, *closed: str, failing: tuple[str, ...] = ()) -> None:
        self.gates = {seed: threading.Event() for seed in closed}
        self.failing = failing
        self.dealt: list[str] = []

    def open(self, seed: str) -> None:
        self.gates[seed].set()

    def __call__(self, seed: str, rules: Rules, difficulty: Difficulty) -> DealtGame:
        gate = self.gates.get(seed)
        if gate is not None:
            assert gate.wait(30), f"gate of {seed} never opened"
        self.dealt.append(seed)
        if seed in self.failing:
            raise ValueError(f"cannot deal {seed}")
        return deal_for_seed(seed, rules, difficulty, with_par=False)


@pytest.fixture
def threads() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        yield pool


class Kept:
    """What ``first_dealt`` hands back as the deal it did not take."""

    def __init__(self) -> None:
        self.items: list[DealtGame | BaseException] = []
        self.arrived = asyncio.Event()

    def __call__(self, item: DealtGame | BaseException) -> None:
        self.items.append(item)
        self.arrived.set()

    async def wait(self, count: int = 1) -> list[DealtGame | BaseException]:
        while len(self.items) < count:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), 30)
        return self.items


async def hedged(
    pool: concurrent.futures.Executor, deal: Gated, kept: Kept, after: float | None = 0.01
) -> DealtGame:
    spares = iter(["spare-1", "spare-2"])
    return await first_dealt(
        asyncio.get_running_loop(),
        pool,
        "own",
        RULES,
        Difficulty.ANY,
        hedge_after_s=after,
        spare_seed=lambda: next(spares),
        keep=kept,
        deal=deal,
    )


async def test_a_seed_dealt_before_the_hedge_is_the_deal_and_no_second_seed_is_drawn(
    threads: concurrent.futures.ThreadPoolExecutor,
) -> None:
    deal, kept = Gated(), Kept()
    assert await hedged(threads, deal, kept, after=5.0) == exact("own")
    await asyncio.sleep(0.05)
    assert deal.dealt == ["own"] and kept.items == []


async def test_a_slow_seed_is_passed_by_a_second_one_and_its_deal_is_kept_for_later(
    threads: concurrent.futures.ThreadPoolExecutor,
) -> None:
    deal, kept = Gated("own"), Kept()
    assert await hedged(threads, deal, kept) == exact("spare-1")
    assert kept.items == []  # the slow one is still being dealt
    deal.open("own")
    assert await kept.wait() == [exact("own")]


async def test_the_rooms_own_seed_still_wins_when_it_is_ready_first_after_the_hedge(
    threads: concurrent.futures.ThreadPoolExecutor,
) -> None:
    deal, kept = Gated("own", "spare-1"), Kept()
    task = asyncio.create_task(hedged(threads, deal, kept))
    await asyncio.sleep(0.1)  # both wait at their gates
    deal.open("own")
    assert await task == exact("own")
    deal.open("spare-1")
    assert await kept.wait() == [exact("spare-1")]


async def test_a_seed_that_fails_after_the_hedge_leaves_the_room_the_second_deal(
    threads: concurrent.futures.ThreadPoolExecutor,
) -> None:
    deal, kept = Gated("own", failing=("own",)), Kept()
    task = asyncio.create_task(hedged(threads, deal, kept))
    await asyncio.sleep(0.1)
    deal.open("own")
    assert await task == exact("spare-1")
    [failure] = await kept.wait()
    assert isinstance(failure, ValueError) and "own" in str(failure)


async def test_when_both_seeds_fail_the_rooms_own_failure_is_raised(
    threads: concurrent.futures.ThreadPoolExecutor,
) -> None:
    deal, kept = Gated("own", failing=("own", "spare-1")), Kept()
    task = asyncio.create_task(hedged(threads, deal, kept))
    await asyncio.sleep(0.1)
    deal.open("own")
    with pytest.raises(ValueError, match="cannot deal own"):
        await task
    [failure] = await kept.wait()
    assert isinstance(failure, ValueError) and "spare-1" in str(failure)


async def test_a_failure_before_the_hedge_is_raised_without_a_second_seed(
    threads: concurrent.futures.ThreadPoolExecutor,
) -> None:
    deal, kept = Gated(failing=("own",)), Kept()
    with pytest.raises(ValueError, match="cannot deal own"):
        await hedged(threads, deal, kept, after=5.0)
    await asyncio.sleep(0.05)
    assert deal.dealt == ["own"] and kept.items == []


async def test_a_start_given_up_while_both_deal_loses_neither_deal(
    threads: concurrent.futures.ThreadPoolExecutor,
) -> None:
    deal, kept = Gated("own", "spare-1"), Kept()
    task = asyncio.create_task(hedged(threads, deal, kept))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deal.open("own")
    deal.open("spare-1")
    items = await kept.wait(2)
    assert sorted(items, key=lambda d: getattr(d, "seed", "")) == [exact("own"), exact("spare-1")]


async def test_a_start_given_up_before_the_hedge_keeps_its_own_deal_and_draws_no_spare(
    threads: concurrent.futures.ThreadPoolExecutor,
) -> None:
    deal, kept = Gated("own"), Kept()
    task = asyncio.create_task(hedged(threads, deal, kept, after=5.0))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deal.open("own")
    assert await kept.wait() == [exact("own")]
    assert deal.dealt == ["own"]


async def test_without_a_hedge_a_slow_seed_is_waited_for_alone(
    threads: concurrent.futures.ThreadPoolExecutor,
) -> None:
    deal, kept = Gated("own"), Kept()
    task = asyncio.create_task(hedged(threads, deal, kept, after=None))
    await asyncio.sleep(0.1)
    assert not task.done()
    deal.open("own")
    assert await task == exact("own")
    assert deal.dealt == ["own"] and kept.items == []


async def test_a_hedge_after_zero_deals_both_seeds_at_once_even_a_fast_one(
    threads: concurrent.futures.ThreadPoolExecutor,
) -> None:
    deal, kept = Gated(), Kept()
    dealt = await hedged(threads, deal, kept, after=0)
    [other] = await kept.wait()
    assert sorted(deal.dealt) == ["own", "spare-1"]
    assert {dealt, other} == {exact("own"), exact("spare-1")}


async def test_in_the_deal_workers_both_seeds_deal_exactly_and_one_is_returned_one_kept() -> None:
    # Seed bench-dealer-278 takes tens of milliseconds (an unwinnable first candidate);
    # a hedge after 0 s deals the second seed beside it at once.
    kept = Kept()
    spares = iter(["hedge-spare"])
    dealt = await first_dealt(
        asyncio.get_running_loop(),
        shared_deal_pool(),
        "bench-dealer-278",
        RULES,
        Difficulty.ANY,
        hedge_after_s=0,
        spare_seed=lambda: next(spares),
        keep=kept,
    )
    [other] = await kept.wait()
    assert isinstance(other, DealtGame)
    assert {dealt.seed, other.seed} == {"bench-dealer-278", "hedge-spare"}
    assert dealt == exact(dealt.seed) and other == exact(other.seed)


async def metric(url: str, name: str) -> float:
    async with aiohttp.ClientSession() as http, http.get(url + "/metrics") as resp:
        text = await resp.text()
    values = [line.split()[1] for line in text.splitlines() if line.startswith(name + " ")]
    return float(values[0]) if values else 0.0


async def test_a_hedged_start_races_on_one_deal_and_the_next_start_takes_the_other(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path, deal_hedge_ms=0) as server:
        key = (RULES, Difficulty.ANY)
        pool = server.hub.dealing.prepared
        clients, _state = await open_room(server.ws_url, ["ann", "bob"])
        await clients[0].send(m.Start())
        for client in clients:
            await client.expect(m.RaceStart)
        for _ in range(3000):
            if pool.get(key):
                break
            await asyncio.sleep(0.01)
        [spare] = pool[key]
        assert spare == exact(spare.seed)
        assert await metric(server.url, "tripeaks_deals_hedged_total") == 1
        others, _ = await open_room(server.ws_url, ["cat", "dan"])
        await others[0].send(m.Start())
        for client in others:
            await client.expect(m.RaceStart)
        assert not pool[key]  # the second start took the spare: nothing was dealt, or hedged
        assert await metric(server.url, "tripeaks_deals_hedged_total") == 1
        for client in [*clients, *others]:
            await client.close()
