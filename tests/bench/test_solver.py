"""The solver benchmark at a tiny scale: every figure is produced (speed is not judged)."""

from __future__ import annotations

import json
from pathlib import Path

from bench import solver


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
