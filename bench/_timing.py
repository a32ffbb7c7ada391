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


def summary_ms(values: Sequence[float]) -> dict[str, float]:
    """Mean, median, p99 and max of seconds, in milliseconds."""
    return {
        "mean_ms": 1000 * sum(values) / len(values),
        "median_ms": 1000 * percentile(values, 0.5),
        "p99_ms": 1000 * percentile(values, 0.99),
        "max_ms": 1000 * max(values),
    }


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
