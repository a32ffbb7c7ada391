"""``make bench-cluster``: what cluster mode costs one node, in one run.

Starts a throwaway PostgreSQL and a ``redis-server`` (loopback, append-only
file on, pinned to the load generators' core), then, each against a fresh
server pinned to core 0 with the same database (bench/load.py's windows):

1. ``saturation``: every player moving as fast as the server answers, with
   cluster mode off and on, alternately (off, on, off, on); the ratio of the
   medians of accepted moves per second (target: at least 0.8);
2. ``human``: the same rooms at 2 moves/s per player with cluster mode on:
   the p99 move round trip.

A table goes to stdout and every figure to ``bench/results/cluster.json``.
``--quick`` runs a tiny scale (the smoke test uses it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.load import QUICK, Bench, Scale, machine
from bench.load_procs import free_port, start, stop
from bench.load_run import GENERATOR_CORE

RESULTS = Path(__file__).resolve().parent / "results" / "cluster.json"
TARGET_RATIO = 0.8


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A redis-server on a free port; yields its URL."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(binary).exists():
        raise SystemExit("bench-cluster needs redis-server (apt-get install redis-server)")
    port = free_port()
    cmd = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir),
           "--save", "", "--appendonly", "yes", "--appendfsync", "everysec"]
    proc = start(cmd, core=GENERATOR_CORE, log=workdir / "redis.log")
    try:
        _wait_for_pong(port)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(proc)


def _wait_for_pong(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", port), timeout=1) as sock,
        ):
            sock.sendall(b"PING\r\n")
            if sock.recv(16).startswith(b"+PONG"):
                return
        time.sleep(0.05)
    raise SystemExit("redis-server did not start")


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL database; yields its URL."""
    from tests import pgutil

    cluster = pgutil.start_cluster()
    try:
        yield cluster.create_database("bench")
    finally:
        cluster.stop()


def _window(bench: Bench, run: str, args: list[str]) -> dict[str, Any]:
    """One of bench/load.py's windows on a server started with ``args`` added."""
    os.environ["BENCH_LOAD_SERVER_ARGS"] = " ".join(args)
    try:
        getattr(bench, f"run_{run}")()
    finally:
        os.environ.pop("BENCH_LOAD_SERVER_ARGS", None)
    return dict(bench.figures[run])


def measure(scale: Scale, workdir: Path) -> dict[str, Any]:
    """Every figure of the run."""
    with postgres() as db, redis_server(workdir) as redis_url:
        bench = Bench(scale, workdir)
        off = ["--db", db]
        on = [*off, "--redis-url", redis_url, "--node-id", "bench"]
        runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
        for mode in ("off", "on", "off", "on"):
            runs[mode].append(_window(bench, "saturation", off if mode == "off" else on))
        human = _window(bench, "human", on)
    rates = {mode: [r["accepted_moves_per_s"] for r in found] for mode, found in runs.items()}
    medians = {mode: statistics.median(values) for mode, values in rates.items()}
    return {
        "machine": machine(),
        "saturation": {
            "moves_per_s_off": rates["off"], "moves_per_s_on": rates["on"],
            "ratio": round(medians["on"] / medians["off"], 3) if medians["off"] else None,
            "server_cpu_pct_off": [r.get("server_cpu_pct") for r in runs["off"]],
            "server_cpu_pct_on": [r.get("server_cpu_pct") for r in runs["on"]],
            "players": runs["on"][0]["players"],
        },
        "human_on": human,
    }


def table(figures: dict[str, Any]) -> str:
    """The stdout summary."""
    sat, human = figures["saturation"], figures["human_on"]
    ratio = sat["ratio"]
    verdict = "-" if ratio is None else ("MET" if ratio >= TARGET_RATIO else "MISSED")
    rtt = human["rtt"]
    return "\n".join([
        f"saturation   {sat['players']} players, moves/s off {sat['moves_per_s_off']}"
        f" on {sat['moves_per_s_on']}",
        f"             on/off ratio (medians) {ratio}  target >= {TARGET_RATIO}: {verdict}",
        f"human (on)   {human['players']} players at 2 moves/s: move RTT ms p50"
        f" {rtt.get('p50_ms')} p99 {rtt.get('p99_ms')} ({rtt.get('count')} moves)",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.cluster", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a tiny scale (smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = parser.parse_args(argv)
    scale = QUICK if args.quick else Scale()
    with tempfile.TemporaryDirectory(prefix="tripeaks-bench-cluster-") as tmp:
        figures = measure(scale, Path(tmp))
    print(table(figures))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
