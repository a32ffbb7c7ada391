"""The solver benchmark at a tiny scale: every figure is produced (speed is not judged)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bench import solver
from bench._timing import percentile, percentile_interval, percentile_ranks


def test_a_tiny_run_reports_the_dealer_and_hedged_starts(tmp_path: Path) -> None:
    out = tmp_path / "solver.json"
    args = ["--deals", "6", "--baseline-deals", "2", "--dealer-seeds", "4", "--par-deals", "2"]
    assert solver.main([*args, "--rules", "wrap", "--hedge-ms", "0", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["dealer"]["seeds"] == 4
    start = report["start_dealing"]
    # A hedge after 0 ms deals a second seed beside every start's own.
    assert start["seeds"] == 4 and start["hedged"] == 4 and start["hedge_ms"] == 0
    assert 0 < start["wall"]["median_ms"] <= start["wall"]["max_ms"]
    assert report["rules"]["wrap"]["deals"] == 6
    # Four seeds cannot bound a p99 from above.
    assert report["dealer"]["p99_interval95_cpu_ms"][1] is None


def test_percentile_ranks_match_the_binomial_tables() -> None:
    # The median's 95% ranks for 10 and 100 values, as in the printed tables.
    assert percentile_ranks(10, 0.5) == (2, 9)
    assert percentile_ranks(100, 0.5) == (40, 61)
    # Too few values: five cannot bracket a median, and no fewer than 368 a p99 from
    # above (0.99 ** 368 < 0.025 < 0.99 ** 367).
    assert percentile_ranks(5, 0.5) == (None, None)
    assert percentile_ranks(367, 0.99)[1] is None
    assert percentile_ranks(368, 0.99)[1] == 368
    low, high = percentile_ranks(1000, 0.99)
    assert low is not None and high is not None and low < 990 < high <= 1000
    with pytest.raises(ValueError):
        percentile_ranks(100, 1.0)


def test_the_p99_interval_covers_the_true_p99_at_least_95_times_in_100() -> None:
    rng = random.Random(20261204)
    covered = trials = 0
    for _ in range(1500):
        # uniform values on [0, 1): the population's p99 is 0.99
        low, high = percentile_interval([rng.random() for _ in range(600)], 0.99)
        assert low is not None and high is not None and low <= high
        covered += low <= 0.99 <= high
        trials += 1
    # 95% nominal (at least, the ranks being whole); 1,500 trials put the
    # share within about 1.1 points of the truth
    assert covered / trials >= 0.935


def test_percentile_interval_holds_the_nearest_rank_percentile() -> None:
    values = [float(v) for v in range(1, 1001)]
    low, high = percentile_interval(values, 0.99)
    assert low is not None and high is not None
    assert low <= percentile(values, 0.99) <= high
