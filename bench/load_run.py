"""Running a measured window across several generator processes and merging what they saw."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bench.load_procs import python_module, start, stop
from bench.load_stats import CpuWindow, Histogram, busy_share, core_busy

SERVER_CORE = 0
GENERATOR_CORE = 1
#: Above this share of its core the generator, not the server, may be the limit.
GENERATOR_SATURATED_PCT = 90.0


@dataclass
class WindowResult:
    """What every generator of one window saw, merged, plus the server's CPU and RSS."""

    hists: dict[str, Histogram] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    generator_cpu_pct: float = 0.0
    server: dict[str, float] = field(default_factory=dict)
    ready: list[dict[str, Any]] = field(default_factory=list)
    #: Share of the generators' core that other processes took during the window.
    generator_core_busy_by_others_pct: float = 0.0

    def rate(self, name: str) -> float:
        """Counter ``name`` per second of the window."""
        return round(self.counts.get(name, 0) / self.wall_s, 1) if self.wall_s else 0.0

    @property
    def generator_saturated(self) -> bool:
        """True when the generator core was too busy to trust the figures fully."""
        return self.generator_cpu_pct > GENERATOR_SATURATED_PCT


class _Worker:
    """One generator process and a thread that reads its stdout lines."""

    def __init__(self, job: dict[str, Any], log: Path, pool: concurrent.futures.Executor) -> None:
        self.proc = start(
            python_module("bench.load_worker", json.dumps(job)),
            core=GENERATOR_CORE,
            log=log,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.pool = pool

    def next_line(self) -> concurrent.futures.Future[bytes]:
        assert self.proc.stdout is not None
        return self.pool.submit(self.proc.stdout.readline)

    def read_event(
        self, expected: str, timeout_s: float, line: concurrent.futures.Future[bytes] | None = None
    ) -> dict[str, Any]:
        future = line or self.next_line()
        try:
            text = future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            raise RuntimeError(f"generator gave no {expected!r} within {timeout_s:.0f} s") from None
        return self._parse(text, expected)

    def _parse(self, line: bytes, expected: str) -> dict[str, Any]:
        if not line:
            raise RuntimeError(f"generator exited ({self.proc.wait()}) before {expected!r}")
        event: dict[str, Any] = json.loads(line)
        if event.get("event") != expected:
            raise RuntimeError(f"generator sent {event.get('event')!r}, expected {expected!r}")
        return event

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.flush()


def run_window(
    jobs: list[dict[str, Any]],
    *,
    server_pid: int,
    log: Path,
    setup_timeout_s: float = 300.0,
    before_go: Callable[[], None] | None = None,
    spread_pool: bool = False,
    metrics_url: str | None = None,
) -> WindowResult:
    """Start one generator per job, wait until all are ready, measure one window, merge.

    With ``spread_pool``, the server's child processes (its deal pool) may use
    every core while the generators set their rooms up, which only shortens
    the set-up; they are pinned back to the server's core before the window.
    With ``metrics_url`` (the game server's ``/metrics``), the window's input log
    commits are counted, and those over 50 ms (``log_commits``, ``log_commits_over_50ms``
    in :attr:`WindowResult.server`), and its fold steps, and those over 10 ms
    (``log_fold_steps``, ``log_fold_steps_over_10ms``).
    """
    result = WindowResult()
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        workers: list[_Worker] = []
        try:
            workers = [_Worker(job, log, pool) for job in jobs]
            lines = [w.next_line() for w in workers]
            deadline = time.monotonic() + setup_timeout_s
            while not all(f.done() for f in lines) and time.monotonic() < deadline:
                # The deal pool starts on the first deal: keep widening new workers.
                if spread_pool:
                    pin_children(server_pid, None)
                concurrent.futures.wait(lines, timeout=0.5)
            if spread_pool:
                pin_children(server_pid, [SERVER_CORE])
            pairs = zip(workers, lines, strict=True)
            result.ready = [w.read_event("ready", 1.0, line) for w, line in pairs]
            if before_go is not None:
                before_go()
            log_at_go = scraped_log_figures(metrics_url) if metrics_url else None
            window = CpuWindow(server_pid)
            generator_core_at_go = core_busy(GENERATOR_CORE)
            for worker in workers:
                worker.go()
            duration = max(float(job["duration_s"]) for job in jobs)
            events = [w.read_event("result", duration + setup_timeout_s) for w in workers]
            result.server = window.finish()
            log_at_end = (
                scraped_log_figures(metrics_url) if metrics_url and log_at_go is not None else None
            )
            if log_at_go is not None and log_at_end is not None:
                names = ("log_commits", "log_commits_over_50ms", "log_fold_steps",
                         "log_fold_steps_over_10ms")
                for name, now, then in zip(names, log_at_end, log_at_go, strict=True):
                    result.server[name] = now - then
            generator_core = busy_share(generator_core_at_go, core_busy(GENERATOR_CORE))
        finally:
            for worker in workers:
                stop(worker.proc, grace_s=5.0)
    for event in events:
        for name, data in event.get("hists", {}).items():
            result.hists.setdefault(name, Histogram()).merge(Histogram.from_json(data))
        for name, value in event.get("counts", {}).items():
            result.counts[name] = result.counts.get(name, 0) + int(value)
        for name, value in event.get("extra", {}).items():
            result.extra.setdefault(name, []).append(value)
        result.wall_s = max(result.wall_s, float(event["wall_s"]))
        result.generator_cpu_pct += float(event["generator_cpu_pct"])
    result.generator_cpu_pct = round(result.generator_cpu_pct, 1)
    result.generator_core_busy_by_others_pct = round(
        max(0.0, generator_core - result.generator_cpu_pct), 1
    )
    return result


def scraped_log_figures(
    metrics_url: str, timeout_s: float = 10.0
) -> tuple[int, int, int, int] | None:
    """:func:`log_figures`, or ``None`` (said on stderr) when the server did not answer
    within its timeout: a server swamped by the window's start leaves the window's log
    figures out, and the window is measured all the same."""
    try:
        return log_figures(metrics_url, timeout_s)
    except OSError as exc:  # a timeout, a refused or reset connection
        print(f"[bench-load] the server's /metrics did not answer ({exc}): the window's input"
              " log figures are left out", file=sys.stderr, flush=True)
        return None


def log_figures(metrics_url: str, timeout_s: float = 10.0) -> tuple[int, int, int, int]:
    """The server's input log commits so far and those over 50 ms (from
    ``tripeaks_log_commit_seconds``), then its fold steps and those over 10 ms (from
    ``tripeaks_log_fold_step_seconds``); zeros before the first of each."""
    with urllib.request.urlopen(metrics_url, timeout=timeout_s) as response:
        return parse_log_figures(response.read().decode())


def parse_log_figures(text: str) -> tuple[int, int, int, int]:
    """:func:`log_figures` of the Prometheus ``text``."""
    return (*_over(text, "tripeaks_log_commit_seconds", "0.05"),
            *_over(text, "tripeaks_log_fold_step_seconds", "0.01"))


def _over(text: str, histogram: str, bound: str) -> tuple[int, int]:
    """Observations of ``histogram`` in the Prometheus ``text``, and those above ``bound``."""
    total = within = 0
    for line in text.splitlines():
        if line.startswith(f"{histogram}_count "):
            total = int(float(line.split()[1]))
        elif line.startswith(f'{histogram}_bucket{{le="{bound}"}} '):
            within = int(float(line.split()[1]))
    return total, total - within


def pin_children(pid: int, cores: list[int] | None) -> None:
    """Set the CPU affinity of every descendant of ``pid`` (``None``: all cores)."""
    wanted = cores if cores is not None else list(range(psutil.cpu_count() or 1))
    if max(wanted) >= (psutil.cpu_count() or 1):
        return
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            child.cpu_affinity(wanted)


def split_evenly(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal non-negative shares."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def wait_settled(seconds: float) -> None:
    """A pause that lets the server finish work queued by the previous phase."""
    time.sleep(seconds)
