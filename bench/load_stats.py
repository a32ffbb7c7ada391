"""Latency histograms and process CPU/RSS sampling for the load benchmark.

The histogram is HdrHistogram-like: values are whole microseconds, kept exactly
below 256 µs and in buckets of 1/128 of their power of two above that (under
0.8 % error), so that histograms from several generator processes merge by
adding counts and travel as small JSON objects.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import psutil

_SUB_BITS = 8
_HALF = 1 << (_SUB_BITS - 1)


def _bucket_of(micros: int) -> int:
    if micros < (1 << _SUB_BITS):
        return micros
    shift = micros.bit_length() - _SUB_BITS
    return (shift << (_SUB_BITS - 1)) + (micros >> shift)


def _value_of(bucket: int) -> float:
    """Midpoint, in µs, of the values that fall into ``bucket``."""
    if bucket < (1 << _SUB_BITS):
        return float(bucket)
    shift = (bucket >> (_SUB_BITS - 1)) - 1
    low = (bucket - (shift << (_SUB_BITS - 1))) << shift
    return low + ((1 << shift) - 1) / 2


@dataclass
class Histogram:
    """Latency samples in µs buckets; percentiles come back in milliseconds."""

    counts: dict[int, int] = field(default_factory=dict)
    total: int = 0
    max_us: int = 0

    def record(self, seconds: float) -> None:
        """Add one latency sample given in seconds."""
        micros = int(seconds * 1_000_000)
        if micros < 0:
            micros = 0
        bucket = _bucket_of(micros)
        self.counts[bucket] = self.counts.get(bucket, 0) + 1
        self.total += 1
        if micros > self.max_us:
            self.max_us = micros

    def merge(self, other: Histogram) -> None:
        """Add every sample of ``other`` to this histogram."""
        for bucket, count in other.counts.items():
            self.counts[bucket] = self.counts.get(bucket, 0) + count
        self.total += other.total
        self.max_us = max(self.max_us, other.max_us)

    def percentile_ms(self, pct: float) -> float | None:
        """The ``pct`` percentile in ms, or None without samples."""
        if self.total == 0:
            return None
        rank = max(1, int(-(-pct * self.total // 100)))  # ceil: nearest-rank definition
        seen = 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= rank:
                return round(min(_value_of(bucket), self.max_us) / 1000, 3)
        return round(self.max_us / 1000, 3)

    def summary(self) -> dict[str, Any]:
        """Count and the usual percentiles, in ms."""
        return {
            "count": self.total,
            "p50_ms": self.percentile_ms(50),
            "p99_ms": self.percentile_ms(99),
            "p99_9_ms": self.percentile_ms(99.9),
            "max_ms": round(self.max_us / 1000, 3) if self.total else None,
        }

    def to_json(self) -> dict[str, Any]:
        """A compact form that :meth:`from_json` reads back."""
        return {"counts": {str(k): v for k, v in self.counts.items()}, "max_us": self.max_us}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Histogram:
        """Read what :meth:`to_json` wrote."""
        counts = {int(k): int(v) for k, v in data["counts"].items()}
        return cls(counts=counts, total=sum(counts.values()), max_us=int(data["max_us"]))


class CpuWindow:
    """CPU % and RSS of one process (and its children) over a time window."""

    def __init__(self, pid: int, core: int = 0) -> None:
        self.process = psutil.Process(pid)
        self.core = core
        self._start_wall = time.monotonic()
        self._start_own, self._start_children = self._cpu()
        self._start_core = self._core_times()

    def _core_times(self) -> tuple[float, float]:
        """(busy, total) seconds of the server's core, whoever used it."""
        times = psutil.cpu_times(percpu=True)
        if self.core >= len(times):
            return 0.0, 0.0
        core = times[self.core]
        idle = core.idle + getattr(core, "iowait", 0.0)
        total = sum(core)
        return total - idle, total

    def _cpu(self) -> tuple[float, float]:
        own = self.process.cpu_times()
        children = 0.0
        for child in self.process.children(recursive=True):
            try:
                times = child.cpu_times()
            except psutil.NoSuchProcess:
                continue
            children += times.user + times.system
        return own.user + own.system, children

    def rss_bytes(self) -> int:
        """Resident set size of the process itself."""
        return int(self.process.memory_info().rss)

    def finish(self) -> dict[str, float]:
        """CPU % of one core used since construction, by the process and its children."""
        wall = max(time.monotonic() - self._start_wall, 1e-9)
        own, children = self._cpu()
        busy, total = self._core_times()
        core_busy = busy - self._start_core[0]
        core_total = max(total - self._start_core[1], 1e-9)
        ours = own - self._start_own + max(children - self._start_children, 0.0)
        return {
            # Other engineers share this machine: what they took from the server's core.
            "core_busy_by_others_pct": round(max(0.0, 100 * (core_busy - ours) / core_total), 1),
            "cpu_pct": round(100 * (own - self._start_own) / wall, 1),
            # Children that exited during the window drop out of this sum; the deal
            # pool's workers live as long as the server, so that is rare here.
            "children_cpu_pct": round(100 * max(children - self._start_children, 0.0) / wall, 1),
            "rss_mib": round(self.rss_bytes() / 2**20, 1),
            "wall_s": round(wall, 2),
        }
