"""The prepared-deal pool: how many deals to keep ready, and dealing for a waiting room.

A start takes a prepared deal when there is one, so most starts need no
solving.  How many to keep follows the starts the server has seen
(:func:`pool_target`): enough for the busiest second of the last minute,
twice over, so that a burst like the last one is served from the pool while
the workers refill it.  :class:`StartRate` keeps those seconds; both are pure
(time comes in as an argument).

The deal workers refill the pool at idle CPU priority (nothing is waiting for
those deals).  A start that finds the pool empty has a room waiting for it:
:func:`deal_now` deals it at normal priority, then returns the worker to
idle.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from typing import Final

from protocol.deals.dealer import DealtGame, Difficulty, deal_for_seed
from protocol.rules.game import Rules

#: How far back the busiest second is looked for.
RATE_WINDOW_MS: Final = 60_000
#: Deals kept per start seen in the busiest second: the burst, and the next one
#: while the workers refill.
DEALS_PER_PEAK_START: Final = 2
#: The most deals kept ready per rule set (a deal and its line take about 2 KiB).
POOL_CEILING: Final = 256


class StartRate:
    """Room starts per second over the last :data:`RATE_WINDOW_MS`, for one rule set."""

    __slots__ = ("_seconds",)

    def __init__(self) -> None:
        #: (second, starts in it), oldest first; only seconds with a start.
        self._seconds: deque[list[int]] = deque()

    def started(self, now_ms: int) -> None:
        """Count one start at ``now_ms``."""
        second = now_ms // 1000
        if self._seconds and self._seconds[-1][0] == second:
            self._seconds[-1][1] += 1
        else:
            self._seconds.append([second, 1])
        self._forget(now_ms)

    def peak(self, now_ms: int) -> int:
        """The most starts seen in one second of the window."""
        self._forget(now_ms)
        return max((count for _second, count in self._seconds), default=0)

    def _forget(self, now_ms: int) -> None:
        oldest = (now_ms - RATE_WINDOW_MS) // 1000
        while self._seconds and self._seconds[0][0] < oldest:
            self._seconds.popleft()


def pool_target(peak_per_s: int, floor: int, ceiling: int) -> int:
    """Deals to keep ready: :data:`DEALS_PER_PEAK_START` per start of the busiest second,
    never fewer than ``floor`` (``deals_ahead``) nor more than ``ceiling`` (at least the
    floor)."""
    if floor <= 0:
        return 0
    return min(max(floor, ceiling), max(floor, DEALS_PER_PEAK_START * peak_per_s))


def deal_now(seed: str, rules: Rules, difficulty: Difficulty) -> DealtGame:
    """In a deal worker: :func:`deal_for_seed` at normal CPU priority (a room is waiting
    for it), then back to idle priority if the worker ran there."""
    idle = _is_idle()
    if idle:
        _set_policy(os.SCHED_OTHER)
    try:
        return deal_for_seed(seed, rules, difficulty)
    finally:
        if idle:
            _set_policy(os.SCHED_IDLE)


def _is_idle() -> bool:
    try:
        return os.sched_getscheduler(0) == os.SCHED_IDLE
    except (AttributeError, OSError):
        return False


def _set_policy(policy: int) -> None:
    # Leaving SCHED_IDLE may be refused without privilege (RLIMIT_NICE): then the
    # deal runs at idle priority, as every deal did before.
    with contextlib.suppress(OSError):
        os.sched_setscheduler(0, policy, os.sched_param(0))
