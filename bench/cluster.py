"""``make bench-cluster``: what cluster mode costs one node, in one run.

Starts a throwaway PostgreSQL and a ``redis-server`` (loopback, append-only
file on, pinned to the load generators' core), then, each against a fresh
server pinned to core 0 with the same database (bench/load.py's windows):

1. ``saturation``: every player moving as fast as the server answers, with
   cluster mode off (the embedded default, SQLite; and with the PostgreSQL
   database) and on, alternately, twice; the ratio of the medians of
   accepted moves per second, on against the embedded default (target: at
   least 0.8);
2. ``human``: the same rooms at 2 moves/s per player with cluster mode on:
   the p99 move round trip;
3. ``takeover``: three nodes behind nginx (tests/cluster's cluster), three
   bots racing at 3 moves/s; the owner is killed (``kill -9``) mid-race and
   the time from the kill to the first move accepted on the new owner is
   taken, run after run (the killed node is started again in between).

A table goes to stdout and every figure to ``bench/results/cluster.json``.
``--quick`` runs a tiny scale (the smoke test uses it).
"""

from __future__ import annotations

import argparse
import asyncio
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
from client_cli.bot import BotSettings, run_bots
from protocol.wire import codec
from protocol.wire import messages as m
from tests import pgutil
from tests.cluster.clusterutil import running_cluster
from tests.pgutil import PostgresCluster

RESULTS = Path(__file__).resolve().parent / "results" / "cluster.json"
TARGET_RATIO = 0.8
TAKEOVER_RUNS = 5
TAKEOVER_BOUND_S = 10.0


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
def postgres() -> Iterator[PostgresCluster]:
    """A throwaway PostgreSQL server."""
    cluster = pgutil.start_cluster()
    try:
        yield cluster
    finally:
        cluster.stop()


async def takeovers(workdir: Path, db: str, runs: int) -> list[float]:
    """Seconds from each kill -9 of a racing room's owner to the first move accepted on
    the node that took the room over."""
    gaps: list[float] = []
    async with running_cluster(workdir, db) as cluster:
        assert cluster.nginx is not None
        for run in range(runs):
            accepted: list[float] = []

            def seen(_bot: str, way: str, frame: bytes, into: list[float] = accepted) -> None:
                if way != "received":
                    return
                message = codec.decode_server(frame, codec.Encoding.MSGPACK)
                if isinstance(message, m.MoveResult) and message.accepted:
                    into.append(time.monotonic())

            settings = BotSettings(min_players=3, on_frame=seen, reconnect_s=60.0, seed=run)
            race = asyncio.create_task(run_bots(
                cluster.nginx.ws_url, 3, host=True, pace=3.0, settings=settings,
                options=m.RoomOptions(countdown_s=0, undo=m.UndoPolicy.OFF),
            ))
            while len(accepted) < 10:
                if race.done():
                    raise SystemExit(f"the race ended before the kill: {race.result().errors}")
                await asyncio.sleep(0.05)
            owner = max((n for n in cluster.nodes.values() if n.events("race_started")),
                        key=lambda n: n.events("race_started")[-1]["ts"])
            owner.kill()
            killed = time.monotonic()
            results = await asyncio.wait_for(race, 240)
            if not results.ok:
                raise SystemExit(f"a race did not survive the kill: {results.errors}")
            gaps.append(round(min(t for t in accepted if t > killed) - killed, 3))
            await cluster.restart(owner.node_id)
    return gaps


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
    with postgres() as pg:
        with redis_server(workdir) as redis_url:
            single = _single_node(scale, workdir, pg.create_database("bench"), redis_url)
        (workdir / "takeover").mkdir()
        runs = 1 if scale is QUICK else TAKEOVER_RUNS
        gaps = asyncio.run(takeovers(workdir / "takeover", pg.create_database("takeover"), runs))
    return {
        "machine": machine(), **single,
        "takeover": {"runs": len(gaps), "seconds": gaps, "max_s": max(gaps),
                     "p50_s": statistics.median(gaps)},
    }


def _single_node(scale: Scale, workdir: Path, db: str, redis_url: str) -> dict[str, Any]:
    """Saturation in each mode, alternately, and the human pace with cluster mode on."""
    bench = Bench(scale, workdir)
    modes = {
        "off": [],  # the embedded default: SQLite (its input log included)
        "off_postgres": ["--db", db],
        "on": ["--db", db, "--redis-url", redis_url, "--node-id", "bench"],
    }
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for _ in range(2):
        for mode, args in modes.items():
            runs[mode].append(_window(bench, "saturation", args))
    human = _window(bench, "human", modes["on"])
    rates = {mode: [r["accepted_moves_per_s"] for r in found] for mode, found in runs.items()}
    medians = {mode: statistics.median(values) for mode, values in rates.items()}

    def ratio(base: str) -> float | None:
        return round(medians["on"] / medians[base], 3) if medians[base] else None

    return {
        "saturation": {
            **{f"moves_per_s_{mode}": rates[mode] for mode in modes},
            **{f"server_cpu_pct_{mode}": [r.get("server_cpu_pct") for r in runs[mode]]
               for mode in modes},
            "ratio": ratio("off"), "ratio_to_postgres": ratio("off_postgres"),
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
        f"saturation   {sat['players']} players, moves/s off (SQLite) {sat['moves_per_s_off']}"
        f" off (PostgreSQL) {sat['moves_per_s_off_postgres']} on {sat['moves_per_s_on']}",
        f"             on/off ratio (medians) {ratio}  target >= {TARGET_RATIO}: {verdict}"
        f"  (on/off with PostgreSQL {sat['ratio_to_postgres']})",
        f"human (on)   {human['players']} players at 2 moves/s: move RTT ms p50"
        f" {rtt.get('p50_ms')} p99 {rtt.get('p99_ms')} ({rtt.get('count')} moves)",
        f"takeover     kill -9 to first accepted move, s: {figures['takeover']['seconds']}"
        f"  max {figures['takeover']['max_s']}  bound {TAKEOVER_BOUND_S}: "
        + ("MET" if figures["takeover"]["max_s"] <= TAKEOVER_BOUND_S else "MISSED"),
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
