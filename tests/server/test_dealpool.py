"""The prepared-deal pool's sizing rule and the deal a waiting room gets."""

from __future__ import annotations

import os
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from protocol.deals.dealer import Difficulty, deal_for_seed
from protocol.rules.game import Rules
from server.dealpool import (
    DEALS_PER_PEAK_START,
    RATE_WINDOW_MS,
    StartRate,
    deal_now,
    pool_target,
)


def test_a_server_that_saw_no_starts_keeps_deals_ahead_ready() -> None:
    assert pool_target(0, 16, 256) == 16


def test_the_pool_holds_twice_the_busiest_second_of_starts() -> None:
    assert pool_target(50, 16, 256) == 2 * 50


def test_the_pool_never_grows_past_its_ceiling() -> None:
    assert pool_target(1000, 16, 256) == 256


def test_no_deals_ahead_means_no_pool_whatever_the_starts() -> None:
    assert pool_target(50, 0, 256) == 0


@given(st.integers(0, 10_000), st.integers(1, 500), st.integers(0, 1000))
def test_the_target_lies_between_the_floor_and_the_ceiling(
    peak: int, floor: int, ceiling: int
) -> None:
    target = pool_target(peak, floor, ceiling)
    assert floor <= target <= max(floor, ceiling)
    assert target >= min(max(floor, ceiling), DEALS_PER_PEAK_START * peak)


def test_the_peak_is_the_busiest_second_of_the_last_minute() -> None:
    rate = StartRate()
    for i in range(50):
        rate.started(10_000 + i * 10)  # a burst of 50 within half a second
    for i in range(5):
        rate.started(20_000 + i * 1000)  # then one a second
    assert rate.peak(30_000) == 50


def test_a_burst_is_forgotten_once_it_is_a_minute_old() -> None:
    rate = StartRate()
    for i in range(50):
        rate.started(10_000 + i)
    rate.started(40_000)
    assert rate.peak(40_000) == 50
    assert rate.peak(10_000 + RATE_WINDOW_MS + 1000) == 1
    assert rate.peak(40_000 + RATE_WINDOW_MS + 1000) == 0


def test_a_waiting_room_gets_the_deal_the_pool_would_have_made_and_the_priority_is_restored(
) -> None:
    policy = os.sched_getscheduler(0)
    dealt = deal_now("pool-seed", Rules(), Difficulty.ANY)
    assert dealt == deal_for_seed("pool-seed", Rules(), Difficulty.ANY)
    assert os.sched_getscheduler(0) == policy


def test_an_idle_priority_worker_deals_for_a_waiting_room_and_goes_back_to_idle() -> None:
    code = (
        "import os\n"
        "from server import dealpool\n"
        "from protocol.rules.game import Rules\n"
        "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
        "seen = []\n"
        "real = dealpool.deal_for_seed\n"
        "def spy(*args):\n"
        "    seen.append(os.sched_getscheduler(0))\n"
        "    return real(*args)\n"
        "dealpool.deal_for_seed = spy\n"
        "dealpool.deal_now('pool-seed', Rules(), 'any')\n"
        "raised = seen[0] != os.SCHED_IDLE or os.geteuid() != 0\n"
        "print(raised, os.sched_getscheduler(0) == os.SCHED_IDLE)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split() == ["True", "True"]
