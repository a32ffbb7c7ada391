"""Prometheus metrics of one server, in their own registry.

Each app gets its own :class:`CollectorRegistry`, so several servers in one
process (the test suite) never share or clash on counters.  Gauges that
describe current state (connections, rooms by state) are read at scrape time
from a callback instead of being kept up to date on the hot path.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from server.metrics_hot import MOVE_BUCKETS, HotCounts

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_DEAL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: A commit's time is the wait of every answer it holds: a disk's slow syncs show here.
_COMMIT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class _StateCollector(Collector):
    """Connections, rooms by state and results waiting, read when Prometheus scrapes."""

    def __init__(
        self,
        connections: Callable[[], int],
        rooms: Callable[[], Mapping[str, int]],
        waiting: Callable[[], int],
    ) -> None:
        self._connections = connections
        self._rooms = rooms
        self._waiting = waiting

    def collect(self) -> Iterable[GaugeMetricFamily]:
        conns = GaugeMetricFamily("tripeaks_connections", "Open WebSocket connections")
        conns.add_metric([], self._connections())
        yield conns
        rooms = GaugeMetricFamily("tripeaks_rooms", "Open rooms by state", labels=["state"])
        for state, count in sorted(self._rooms().items()):
            rooms.add_metric([state], count)
        yield rooms
        waiting = GaugeMetricFamily(
            "tripeaks_races_waiting", "Race results the database refused, kept for a retry"
        )
        waiting.add_metric([], self._waiting())
        yield waiting


class _HotCollector(Collector):
    def __init__(self, counts: HotCounts) -> None:
        self._counts = counts

    def collect(self) -> Iterable[CounterMetricFamily | HistogramMetricFamily]:
        counts = self._counts
        frames = CounterMetricFamily("tripeaks_frames_sent", "WebSocket frames sent")
        frames.add_metric([], counts.frames_sent)
        yield frames
        moves = CounterMetricFamily("tripeaks_moves", "Moves accepted")
        moves.add_metric([], counts.moves)
        yield moves
        rejected = CounterMetricFamily(
            "tripeaks_rejected_moves", "Moves refused, by reason", labels=["reason"]
        )
        for reason, count in sorted(counts.rejected.items()):
            rejected.add_metric([reason], count)
        yield rejected
        timed = HistogramMetricFamily(
            "tripeaks_move_seconds",
            f"Time to handle one move on the server (one move in {Metrics.MOVE_SAMPLE} is timed)",
        )
        buckets, total = [], 0
        for bound, count in zip((*MOVE_BUCKETS, math.inf), counts.move_buckets, strict=True):
            total += count
            # The bounds as prometheus-client writes a histogram's (Go's shortest form).
            buckets.append(("+Inf" if bound == math.inf else repr(bound), total))
        timed.add_metric([], buckets, counts.move_seconds)
        yield timed


class Metrics:
    """Every counter and histogram the server exports."""

    #: One move in this many is timed for ``tripeaks_move_seconds``.
    MOVE_SAMPLE = 16

    def __init__(
        self,
        connections: Callable[[], int],
        rooms: Callable[[], Mapping[str, int]],
        waiting: Callable[[], int] = lambda: 0,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        reg.register(_StateCollector(connections, rooms, waiting))
        self.hot = HotCounts()
        reg.register(_HotCollector(self.hot))
        self.connections_opened = Counter(
            "tripeaks_connections_opened", "WebSocket connections accepted", registry=reg
        )
        self.races_started = Counter("tripeaks_races_started", "Races started", registry=reg)
        self.races_finished = Counter("tripeaks_races_finished", "Races finished", registry=reg)
        self.protocol_errors = Counter(
            "tripeaks_protocol_errors", "Error replies sent, by code", ["code"], registry=reg
        )
        self.deal_seconds = Histogram(
            "tripeaks_deal_seconds", "Time to deal a race", buckets=_DEAL_BUCKETS, registry=reg
        )
        self.deals_hedged = Counter(
            "tripeaks_deals_hedged",
            "Starts that dealt a second seed beside a slow one (the other went to the pool)",
            registry=reg,
        )
        self.log_commit_seconds = Histogram(
            "tripeaks_log_commit_seconds",
            "Time of one input log commit (its answers wait for it)",
            buckets=_COMMIT_BUCKETS,
            registry=reg,
        )
        self.log_fold_step_seconds = Histogram(
            "tripeaks_log_fold_step_seconds",
            "Time of one step of the input log's fold (a commit waits only for a copy)",
            buckets=_COMMIT_BUCKETS,
            registry=reg,
        )
        self.log_commit_gap_seconds = Gauge(
            "tripeaks_log_commit_gap_seconds",
            "Least time between two input log commits now (longer while the loop is busy)",
            registry=reg,
        )
        self.stored_races = Counter("tripeaks_races_stored", "Races written", registry=reg)
        self.storage_errors = Counter(
            "tripeaks_storage_errors", "Failed race writes (first tries and retries)", registry=reg
        )

    def render(self) -> bytes:
        """The metrics in the Prometheus text format."""
        return bytes(generate_latest(self.registry))
