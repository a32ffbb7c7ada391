"""Latency histograms, a generator's meters, and process CPU/RSS sampling for the load benchmark.

The histogram is HdrHistogram-like: values are whole microseconds, kept exactly
below 256 µs and in buckets of 1/128 of their power of two above that (under
0.8 % error), so that histograms from several generator processes merge by
adding counts and travel as small JSON objects.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass, field
from typing import Any, Final

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


class Samples:
    """Latencies in seconds, kept raw while a window runs and bucketed afterwards.

    Appending a float to an array costs the generator a fraction of
    :meth:`Histogram.record`; the histogram is built once, after the window,
    when the generator's CPU is no longer measured.  ``add`` is the array's own
    ``append``, so the hot path calls it without a method of ours in between.
    """

    __slots__ = ("add", "values")

    def __init__(self) -> None:
        self.values = array("d")
        self.add = self.values.append

    def clear(self) -> None:
        """Forget every sample (``add`` stays valid)."""
        del self.values[:]

    def __len__(self) -> int:
        return len(self.values)

    def histogram(self) -> Histogram:
        """The samples as a :class:`Histogram`."""
        hist = Histogram()
        counts = hist.counts
        top = 0
        for seconds in self.values:
            micros = int(seconds * 1_000_000)
            if micros < 0:
                micros = 0
            bucket = _bucket_of(micros)
            counts[bucket] = counts.get(bucket, 0) + 1
            if micros > top:
                top = micros
        hist.total = len(self.values)
        hist.max_us = top
        return hist


class Meters:
    """Everything one generator process measures during the window.

    What happens once per move is kept cheap.  Its counters are plain
    attributes that run all the time; the window reports how much they grew
    between ``measuring = True`` and ``measuring = False``.  Its latencies go
    raw into :class:`Samples` (emptied when the window opens) and become
    histograms in :attr:`hists`, and :attr:`worst_by_second`, when it closes,
    after the generator's CPU was measured.  Anything rarer goes through
    :meth:`record` and :meth:`count`, which count only inside the window.
    """

    #: The always-running counters, by the name they have in :attr:`counts`.
    HOT_COUNTS: Final = (
        "frames_in", "moves_sent", "accepted_play", "accepted_draw", "accepted_undo", "rejected",
    )

    def __init__(self) -> None:
        self.hists: dict[str, Histogram] = {}
        self.counts: dict[str, int] = {}
        self.burst_active = False
        #: True in a window with a burst until the burst begins (the calm to compare with).
        self.burst_pending = False
        self.opened = 0.0  # perf_counter() when the window opened
        self.worst_by_second: list[float] = []
        self.frames_in = 0
        self.moves_sent = 0
        self.accepted_play = 0
        self.accepted_draw = 0
        self.accepted_undo = 0
        self.rejected = 0
        self.rtt = Samples()
        self.rtt_sent = Samples()  # perf_counter() at each move's send, in step with rtt
        self.rtt_during_burst = Samples()
        self.rtt_before_burst = Samples()
        self.fanout = Samples()
        self._measuring = False
        self._base: dict[str, int] = {}

    @property
    def measuring(self) -> bool:
        """Whether the window is open; closing it turns the hot figures into counts and hists."""
        return self._measuring

    @measuring.setter
    def measuring(self, on: bool) -> None:
        if on and not self._measuring:
            self._base = self._hot_counts()
            for samples in (
                self.rtt, self.rtt_sent, self.rtt_during_burst, self.rtt_before_burst, self.fanout
            ):
                samples.clear()
        elif not on and self._measuring:
            self._close_window()
        self._measuring = on

    def _hot_counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.HOT_COUNTS}

    def _close_window(self) -> None:
        grown = {name: n - self._base.get(name, 0) for name, n in self._hot_counts().items()}
        grown["accepted"] = grown["accepted_play"] + grown["accepted_draw"] + grown["accepted_undo"]
        for name, n in grown.items():
            if n:
                self.counts[name] = self.counts.get(name, 0) + n
        for name, samples in (
            ("rtt", self.rtt), ("rtt_during_burst", self.rtt_during_burst),
            ("rtt_before_burst", self.rtt_before_burst), ("fanout", self.fanout),
        ):
            if len(samples):
                self.hists.setdefault(name, Histogram()).merge(samples.histogram())
        worst = self.worst_by_second
        opened = self.opened
        for sent, seconds in zip(self.rtt_sent.values, self.rtt.values, strict=True):
            second = int(sent - opened)
            if second >= 0:
                while len(worst) <= second:
                    worst.append(0.0)
                if seconds > worst[second]:
                    worst[second] = seconds

    def record(self, name: str, seconds: float) -> None:
        if self._measuring:
            hist = self.hists.get(name)
            if hist is None:
                hist = self.hists[name] = Histogram()
            hist.record(seconds)

    def count(self, name: str, n: int = 1) -> None:
        if self._measuring:
            self.counts[name] = self.counts.get(name, 0) + n


def core_busy(core: int) -> tuple[float, float]:
    """(busy, total) seconds of ``core`` so far, whoever used it."""
    times = psutil.cpu_times(percpu=True)
    if core >= len(times):
        return 0.0, 0.0
    idle = times[core].idle + getattr(times[core], "iowait", 0.0)
    total = sum(times[core])
    return total - idle, total


def busy_share(before: tuple[float, float], after: tuple[float, float]) -> float:
    """Percent of the core that was busy between two :func:`core_busy` readings."""
    total = after[1] - before[1]
    return 100 * (after[0] - before[0]) / total if total > 0 else 0.0


class CpuWindow:
    """CPU % and RSS of one process (and its children) over a time window."""

    def __init__(self, pid: int, core: int = 0) -> None:
        self.process = psutil.Process(pid)
        self.core = core
        self._start_wall = time.monotonic()
        self._start_own, self._start_children, self._start_system = self._cpu()
        self._start_core = self._core_times()

    def _core_times(self) -> tuple[float, float]:
        """(busy, total) seconds of the server's core, whoever used it."""
        return core_busy(self.core)

    def _cpu(self) -> tuple[float, float, float]:
        """CPU seconds of the process, of its children, and the kernel's of the process."""
        own = self.process.cpu_times()
        children = 0.0
        for child in self.process.children(recursive=True):
            try:
                times = child.cpu_times()
            except psutil.NoSuchProcess:
                continue
            children += times.user + times.system
        return own.user + own.system, children, own.system

    def rss_bytes(self) -> int:
        """Resident set size of the process itself."""
        return int(self.process.memory_info().rss)

    def finish(self) -> dict[str, float]:
        """CPU % of one core used since construction, by the process and its children."""
        wall = max(time.monotonic() - self._start_wall, 1e-9)
        own, children, system = self._cpu()
        busy, total = self._core_times()
        core_busy = busy - self._start_core[0]
        core_total = max(total - self._start_core[1], 1e-9)
        ours = own - self._start_own + max(children - self._start_children, 0.0)
        return {
            # Other engineers share this machine: what they took from the server's core.
            "core_busy_by_others_pct": round(max(0.0, 100 * (core_busy - ours) / core_total), 1),
            "cpu_pct": round(100 * (own - self._start_own) / wall, 1),
            # The kernel's part of it (system calls: socket reads and writes, epoll).
            "cpu_system_pct": round(100 * (system - self._start_system) / wall, 1),
            # Children that exited during the window drop out of this sum; the deal
            # pool's workers live as long as the server, so that is rare here.
            "children_cpu_pct": round(100 * max(children - self._start_children, 0.0) / wall, 1),
            "rss_mib": round(self.rss_bytes() / 2**20, 1),
            "wall_s": round(wall, 2),
        }
