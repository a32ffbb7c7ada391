"""The move fast path's micro-benchmark runs, and every recorded move takes the fast path.

``bench.hotpath`` replays moves through ``server.hub.Hub.fast_move`` and
stops with an error when one of them falls back to the general path, so this
quick run also catches a change that quietly sends moves the slow way.  It
asserts nothing about speed.
"""

from __future__ import annotations

import re
import subprocess
import sys


def test_the_hotpath_benchmark_replays_every_move_on_the_fast_path() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.hotpath", "--rooms", "2", "--moves", "3000", "--repeat", "2"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    recorded = re.match(r"(\d+) moves over 2 rooms of 4: (.*)$", first)
    assert recorded, done.stdout
    assert int(recorded.group(1)) >= 3000
    kinds = dict(part.split() for part in recorded.group(2).split(", "))
    assert set(kinds) == {"draw", "play", "undo"}
    rounds = re.findall(
        r"^round \d: ([\d.]+) us/move, ([\d.]+) with the input log \((\d+) entries", done.stdout,
        re.M,
    )
    assert len(rounds) == 2 and all(float(a) > 0 and float(b) > 0 for a, b, _ in rounds)
    assert all(int(entries) >= 3000 for _, _, entries in rounds)  # every move was logged
    assert re.search(r"^best: [\d.]+ us/move CPU, [\d.]+ with the input log$", done.stdout, re.M)


def test_the_fanout_benchmark_flushes_every_room_with_its_spectator_board_and_one_write_each(
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.hotpath", "--rooms", "2", "--moves", "800", "--repeat", "1",
         "--fanout"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    line = re.search(r"^round 1: ([\d.]+) us/flush, ([\d.]+) frames/flush, ([\d.]+) "
                     r"writes/flush \((\d+) flushes\)$", done.stdout, re.M)
    assert line, done.stdout
    # Each flush reaches 4 players and the spectator, each socket in one write.
    assert float(line.group(3)) == 5.0
    assert float(line.group(2)) > 5.0  # the progress to all five, and the boards that changed
    assert int(line.group(4)) > 0
