"""``bench/cluster.py --quick``: the cluster benchmark runs end to end and reports every
figure the issue asks for (never its speed: that is the benchmark's business)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cluster.clusterutil import need

ROOT = Path(__file__).resolve().parents[2]


def test_the_quick_cluster_benchmark_reports_both_modes_the_round_trip_and_a_takeover(
    tmp_path: Path,
) -> None:
    need("redis-server", "redis-server")
    need("nginx", "nginx")
    out = tmp_path / "cluster.json"
    run = subprocess.run(
        [sys.executable, "-m", "bench.cluster", "--quick", "--out", str(out)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=600, check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    figures = json.loads(out.read_text())
    saturation = figures["saturation"]
    modes = ("off", "off_postgres", "on")
    assert all(len(saturation[f"moves_per_s_{mode}"]) == 2 for mode in modes)
    assert all(rate > 0 for mode in modes for rate in saturation[f"moves_per_s_{mode}"])
    assert saturation["ratio"] > 0 and saturation["ratio_to_postgres"] > 0
    assert figures["human_on"]["rtt"]["p99_ms"] is not None
    assert figures["takeover"]["runs"] == 1 and figures["takeover"]["max_s"] > 0
    assert "on/off ratio" in run.stdout and "takeover" in run.stdout
