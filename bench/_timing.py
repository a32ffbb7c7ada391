"""Small helpers for the solver benchmark: timed calls, percentiles, the machine."""

from __future__ import annotations

import math
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Timed:
    """Wall-clock and CPU seconds of one call."""

    wall: float
    cpu: float


def timed(call: Callable[[], T]) -> tuple[T, Timed]:
    """Run ``call`` once; its result and how long it took."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    result = call()
    return result, Timed(time.perf_counter() - wall0, time.process_time() - cpu0)


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (``share`` in 0..1) of a non-empty sample."""
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def percentile_ranks(
    count: int, share: float, confidence: float = 0.95
) -> tuple[int | None, int | None]:
    """Ranks ``(r, s)`` (1-based, ascending) of a sample of ``count`` whose values
    bracket the population's ``share`` quantile with at least ``confidence``.

    Distribution-free: the number of sample values below the quantile is
    binomial (``count``, ``share``), so the ``r``-th and ``s``-th smallest
    values bracket it unless that number is below ``r`` or at least ``s``;
    each side may fail with at most half of ``1 - confidence``.  A side is
    ``None`` when the sample is too small to bound it (even its smallest or
    largest value is not far enough out).  ``share`` lies strictly between 0
    and 1.
    """
    if not 0 < share < 1:
        raise ValueError("share must lie strictly between 0 and 1")
    tail = (1 - confidence) / 2
    below = 0.0  # P(fewer than k of the values lie below the quantile), for k = 0, 1, ...
    low: int | None = None
    ways, log_in, log_out = math.lgamma(count + 1), math.log(share), math.log1p(-share)
    for k in range(count + 1):
        if below >= 1 - tail:
            return low, k
        if k and below <= tail:
            low = k
        # the binomial probability of exactly k, in logs (the counts overflow a float)
        below += math.exp(
            ways - math.lgamma(k + 1) - math.lgamma(count - k + 1)
            + k * log_in + (count - k) * log_out
        )
    return low, None


def percentile_interval(
    values: Sequence[float], share: float, confidence: float = 0.95
) -> tuple[float | None, float | None]:
    """The sample values that bracket the ``share`` quantile (see :func:`percentile_ranks`)."""
    ordered = sorted(values)
    low, high = percentile_ranks(len(ordered), share, confidence)
    return (
        None if low is None else ordered[low - 1],
        None if high is None else ordered[high - 1],
    )


def summary_ms(values: Sequence[float]) -> dict[str, float]:
    """Mean, median, p99 and max of seconds, in milliseconds."""
    return {
        "mean_ms": 1000 * sum(values) / len(values),
        "median_ms": 1000 * percentile(values, 0.5),
        "p99_ms": 1000 * percentile(values, 0.99),
        "max_ms": 1000 * max(values),
    }


def p99_interval_ms(values: Sequence[float]) -> list[float | None]:
    """The 95% interval of the p99 of seconds (:func:`percentile_interval`), in ms."""
    return [None if v is None else 1000 * v for v in percentile_interval(values, 0.99)]


def machine() -> dict[str, object]:
    """What the figures were measured on (load included: the machine is shared)."""
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "system": platform.platform(),
        "load_average": list(os.getloadavg()),
    }
