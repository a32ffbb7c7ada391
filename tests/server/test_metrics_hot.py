"""The hot path's counters, compiled (``server/metrics_hot.py``), as Prometheus reads them:
``tripeaks_move_seconds`` is a histogram made at scrape time from plain counts."""

from __future__ import annotations

import math

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from server.metrics import Metrics
from server.metrics_hot import MOVE_BUCKETS, HotCounts


def scrape(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_a_timed_move_falls_in_the_first_bucket_whose_bound_it_does_not_pass() -> None:
    counts = HotCounts()
    for seconds in (0.0, MOVE_BUCKETS[0], MOVE_BUCKETS[0] * 1.01, MOVE_BUCKETS[-1], 7.5):
        counts.time_move(seconds)
    expected = [0] * (len(MOVE_BUCKETS) + 1)
    expected[0], expected[1], expected[-2], expected[-1] = 2, 1, 1, 1
    assert counts.move_buckets == expected
    assert math.isclose(
        counts.move_seconds, MOVE_BUCKETS[0] * 2.01 + MOVE_BUCKETS[-1] + 7.5
    )


def test_the_move_histogram_is_scraped_with_cumulative_buckets_count_and_sum() -> None:
    metrics = Metrics(lambda: 0, dict, lambda: 0)
    times = [0.00003, 0.0002, 0.0002, 0.003, 0.2]
    for seconds in times:
        metrics.hot.time_move(seconds)
    samples = scrape(metrics)
    bucket = "tripeaks_move_seconds_bucket"
    assert samples[(bucket, (("le", "5e-05"),))] == 1
    assert samples[(bucket, (("le", "0.00025"),))] == 3
    assert samples[(bucket, (("le", "0.005"),))] == 4
    assert samples[(bucket, (("le", "0.1"),))] == 4
    assert samples[(bucket, (("le", "+Inf"),))] == len(times)
    assert samples[("tripeaks_move_seconds_count", ())] == len(times)
    assert math.isclose(samples[("tripeaks_move_seconds_sum", ())], sum(times))
    bounds = [labels[0][1] for name, labels in samples if name == bucket]
    assert bounds == [repr(b) for b in MOVE_BUCKETS] + ["+Inf"]
