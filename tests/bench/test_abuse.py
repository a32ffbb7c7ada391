"""Smoke test of the abuse benchmark: its quick run goes end to end.

It checks that every window and every pair of the run is reported, with what
others took of the cores, and that the run ends with its verdict; it asserts
nothing about the figures themselves (``make bench-abuse`` measures them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import abuse

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    out = tmp_path_factory.mktemp("bench") / "abuse.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.abuse", "--quick", "--out", str(out)],
        cwd=ROOT, capture_output=True, timeout=240, check=False,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return json.loads(out.read_text()), done.stdout.decode()


def test_every_attack_sits_between_two_quiet_windows() -> None:
    assert abuse.schedule(2) == [
        "quiet", "pings", "quiet", "paced", "quiet", "list_rooms",
        "quiet", "pings", "quiet", "paced", "quiet", "list_rooms", "quiet",
    ]


def test_the_quick_run_reports_every_window_with_the_cores_others_took(
    quick_run: tuple[dict, str],
) -> None:
    figures, _ = quick_run
    windows = figures["windows"]
    assert [w["kind"] for w in windows] == abuse.schedule(1)
    for window in windows:
        assert window["moves"] > 0 and window["p99_ms"] > 0
        assert "core0_others_pct" in window and isinstance(window["disturbed"], list)
        assert window["server_cpu_pct"] > 0
    for window in windows[1::2]:
        assert window["attacker"]["sent"] > 0, window


def test_the_quick_run_ends_with_each_attacks_ratio_and_its_verdict(
    quick_run: tuple[dict, str],
) -> None:
    figures, stdout = quick_run
    assert [p["attack"] for p in figures["pairs"]] == list(abuse.ATTACKS)
    for pair in figures["pairs"]:
        assert pair["ratio"] == round(pair["p99_ms"] / pair["quiet_p99_ms"], 2)
    assert set(figures["attacks"]) == set(abuse.ATTACKS)
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("MET: " if figures["met"] else "MISSED: ")


def test_the_verdict_counts_undisturbed_pairs_only_when_there_are_some() -> None:
    def pair(attack: str, ratio: float, disturbed: bool) -> dict[str, object]:
        return {"attack": attack, "ratio": ratio, "disturbed": disturbed,
                "server_cpu_pct": 1.0, "attack_cpu_pct": 0.5}

    result = abuse.verdict([
        pair("pings", 1.0, False), pair("pings", 9.0, True), pair("pings", 1.4, False),
        pair("paced", 3.0, True), pair("paced", 2.6, True),
        pair("list_rooms", 1.9, False),
    ])
    attacks = result["attacks"]
    assert attacks["pings"]["median_ratio"] == 1.2
    assert attacks["pings"]["disturbed_pairs"] == 1
    assert attacks["paced"]["median_ratio"] == 2.8 and attacks["paced"]["only_disturbed"]
    assert not result["met"]
    assert abuse.verdict([pair(kind, 1.5, False) for kind in abuse.ATTACKS])["met"]
