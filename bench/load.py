"""``make bench-load``: how many racing players one server core holds.

Runs, each against a fresh server pinned to core 0 with the load generators
pinned to core 1 (this machine only, every run bounded in time):

1. ``echo``: a bare aiohttp WebSocket echo server, closed-loop round trips at
   saturation with the same frame size, connection count and event loop;
2. ``idle``: server RSS with N connected idle players, per player;
3. ``human``: rooms of 4 players and 1 spectator at 2 moves/s per player,
   with rooms started during the window (room-start latency under load);
4. ``saturation``: the same rooms with every player moving as fast as the
   server answers; the ratio against the echo baseline;
5. ``interference``: a burst of 50 room starts, dealing included, while
   other rooms race at human pace;
6. ``capacity``: the largest player count at human pace with p99 move
   round trip under 50 ms: the target (6,000) three times, then the goal
   (10,000), always, then a search between them (or doubling) within a time
   budget of 400 s.

Players connect over the server's Unix socket (``--unix-socket``), the way nginx
on the same host reaches it in the deployment (deploy/nginx.conf): the node's side
of a player's connection.  ``--set transport=tcp`` connects over loopback TCP
instead, where every frame the server writes also costs its core the players'
side of TCP.  ``echo`` and ``saturation`` always run over loopback TCP, where
their ratio's target was set (:data:`RATIO_TRANSPORT`).

A table goes to stdout and every figure to ``bench/results/load.json``.
``--quick`` runs everything at a tiny scale (the smoke test uses it).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.load_procs import (
    free_port,
    players_within,
    python_module,
    raise_open_file_limit,
    sockets_for,
    start,
    stop,
    wait_for_socket,
    wait_healthy,
)
from bench.load_run import GENERATOR_CORE, SERVER_CORE, WindowResult, run_window, split_evenly
from bench.load_stats import CpuWindow
from bench.load_table import print_table
from tools.native import status as native_status

RESULTS = Path(__file__).resolve().parent / "results" / "load.json"
#: How the generators may reach the server (see :class:`Scale`).
TRANSPORTS = ("unix", "tcp")
#: The echo and saturation runs, whose ratio's target (0.6) was set over loopback TCP,
#: stay there: over the Unix socket the bare echo gains much more than the game server
#: (600 connections, 2026-12-05: 112,000 round trips/s against 54,000 moves/s).
RATIO_TRANSPORT = "tcp"
HUMAN_INTERVAL_S = 0.5  # 2 moves/s per player
P99_TARGET_MS = 50.0
BURST_P99_TARGET_MS = 100.0
#: A burst's room starts: the host's ``start`` until every player holds ``race_start``.
BURST_START_P99_TARGET_MS = 500.0
#: Other rooms' move p99 during the burst, against their p99 before it.
BURST_RATIO_TARGET = 2.0
#: Share of the server's core taken by other processes above which a capacity
#: step that missed its target is run once more.
DISTURBED_PCT = 10.0
#: The ratio compares two servers' cost per round trip only while each one is the limit
#: (a server under 90% of its core waited for its load) and nobody else took much of
#: either core (kernel time for loopback traffic, charged to no process, shows up as
#: up to ~8% "others" on the generators' core, hence the same 10% as for capacity).
SATURATED_SERVER_PCT = 90.0
RATIO_DISTURBED_PCT = DISTURBED_PCT
# Every connection comes from 127.0.0.1, so the per-address limits that
# protect a real deployment would throttle the benchmark itself.
SERVER_FLAGS = (
    "--player-rate", "100000", "--player-burst", "100000",
    "--spectator-rate", "100000", "--spectator-burst", "100000",
    "--connect-rate", "100000", "--connect-burst", "100000", "--connections-per-address", "0",
    "--max-rooms", "100000", "--rooms-per-connection", "100",
)


@dataclass
class Scale:
    """How big each run is; ``--quick`` shrinks everything."""

    echo_s: float = 10.0
    idle_players: int = 2000
    human_rooms: int = 500
    human_starts: int = 10
    human_s: float = 20.0
    #: Each answer waits for its group commit (up to the server's 10 ms gap), so 50 rooms
    #: (200 players) left the server half idle; 150 keep it near its whole core.
    saturation_rooms: int = 150
    saturation_s: float = 10.0
    interference_rooms: int = 250
    burst: int = 50
    interference_s: float = 20.0
    #: The target: it must hold in each of ``capacity_target_runs`` windows.
    capacity_start: int = 6000
    capacity_target_runs: int = 3
    #: The goal: always measured, right after the target's runs.
    capacity_goal: int = 10000
    capacity_max: int = 16000
    capacity_steps: int = 6
    capacity_s: float = 12.0
    #: No search step (after the target's and the goal's) starts that would end after
    #: this many seconds of the search (a step's set-up grows with its player count).
    capacity_budget_s: float = 400.0
    generators: int = 1
    warmup_s: float = 2.0
    #: Spectators ask for ``spectator_update`` (one frame per moment), as the shipped
    #: spectator clients do; false: the separate ``progress`` and ``spectator_board``.
    spectator_update: bool = True
    #: How players reach the server: ``unix`` (its Unix socket, as nginx does in the
    #: deployment) or ``tcp`` (loopback TCP).
    transport: str = "unix"


QUICK = Scale(
    echo_s=1.5, idle_players=20, human_rooms=2, human_starts=1, human_s=2.0,
    saturation_rooms=2, saturation_s=1.5, interference_rooms=2, burst=2, interference_s=3.0,
    capacity_start=8, capacity_target_runs=1, capacity_goal=12, capacity_max=16,
    capacity_steps=3, capacity_s=1.5,
    warmup_s=0.5,
)


class Bench:
    """Starts servers, runs windows, keeps every figure."""

    def __init__(self, scale: Scale, workdir: Path) -> None:
        self.scale = scale
        self.workdir = workdir
        self.log = workdir / "bench-load.log"
        self.log.write_text("")
        self.figures: dict[str, Any] = {}
        #: The open files each process may hold (the soft limit, as raised at start).
        self.open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        self._profiled: tuple[str, int] | None = None
        self._profiler: subprocess.Popen[bytes] | None = None
        #: The current server's Unix socket (``unix`` transport), in a directory of its own.
        self.socket: Path | None = None

    @contextlib.contextmanager
    def server(self, kind: str = "game", transport: str = "") -> Iterator[tuple[int, int]]:
        """A fresh server pinned to the server core; yields ``(port, pid)``.

        With the ``unix`` transport (``transport``, else the scale's) it also
        listens on a Unix socket, and :meth:`ws_url` names that socket.
        """
        port = free_port()
        listen = ["--port", str(port)]
        if (transport or self.scale.transport) == "unix":
            # A short path of its own: a socket's path must fit in 107 bytes.
            self.socket = Path(tempfile.mkdtemp(prefix="tpb-", dir="/tmp")) / f"{port}.sock"
            listen += ["--unix-socket", str(self.socket)]
        if kind == "echo":
            cmd = python_module("bench.echo_server", *listen)
        else:
            db = f"sqlite:///{self.workdir / f'bench-{port}.db'}"
            # BENCH_LOAD_SERVER_MODULE lets an experiment run a variant of the server.
            module = os.environ.get("BENCH_LOAD_SERVER_MODULE", "server")
            extra = os.environ.get("BENCH_LOAD_SERVER_ARGS", "").split()
            cmd = python_module(module, *listen, "--db", db, *SERVER_FLAGS, *extra)
        proc = start(cmd, core=SERVER_CORE, log=self.log)
        self._profiled = (kind, proc.pid)
        try:
            wait_healthy(proc, port)
            if self.socket is not None:
                wait_for_socket(proc, self.socket)
            yield port, proc.pid
        finally:
            profiler, self._profiler = self._profiler, None
            if profiler is not None:
                # py-spy writes its output on SIGINT, not on SIGTERM.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(profiler.pid, signal.SIGINT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    profiler.wait(timeout=30.0)
                stop(profiler)
            stop(proc)
            if self.socket is not None:
                shutil.rmtree(self.socket.parent, ignore_errors=True)
                self.socket = None

    def ws_url(self, port: int) -> str:
        """Where the generators connect to the server of :meth:`server` on ``port``."""
        if self.socket is not None:
            return f"ws+unix://{self.socket}:/ws"
        return f"ws://127.0.0.1:{port}/ws"

    def _profile_window(self) -> None:
        """With BENCH_LOAD_PROFILE=DIR, sample the current server with py-spy from the
        window's start (collapsed stacks of the thread holding the GIL): set-up is left out."""
        if self._profiled is None:
            return
        kind, pid = self._profiled
        if where := os.environ.get("BENCH_LOAD_PERF"):
            # Every sample of the server's core, kernel included, with call graphs: by frame
            # pointers, which stop at the first C function built without them, or with
            # BENCH_LOAD_PERF_DWARF=1 from copies of the stack (whole chains, larger files).
            perf = shutil.which("perf") or "perf"
            dwarf = os.environ.get("BENCH_LOAD_PERF_DWARF") == "1"
            graph = ["-F", "300", "--call-graph", "dwarf,32768"] if dwarf else ["-g"]
            cmd = [perf, "record", *graph, "-p", str(pid), "-o",
                   str(Path(where) / f"{kind}-{pid}.perf.data")]
            self._profiler = start(cmd, core=GENERATOR_CORE, log=self.log)
            return
        where = os.environ.get("BENCH_LOAD_PROFILE")
        spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        if not where or not Path(spy).exists():
            return
        out = Path(where) / f"{kind}-{pid}.txt"
        # Without pausing the server, py-spy loses more of the samples taken while
        # Python code runs than of those taken in a system call (the socket writes
        # looked twice their size): BENCH_LOAD_PROFILE_BLOCKING=1 pauses it per sample.
        pause = [] if os.environ.get("BENCH_LOAD_PROFILE_BLOCKING") == "1" else ["--nonblocking"]
        native = ["--native"] if os.environ.get("BENCH_LOAD_PROFILE_NATIVE") == "1" else []
        cmd = [spy, "record", "--pid", str(pid), *pause, *native, "--gil", "--format", "raw",
               "--rate", "200", "--output", str(out)]
        self._profiler = start(cmd, core=GENERATOR_CORE, log=self.log)

    def _jobs(self, base: dict[str, Any], rooms: int, starts: list[float]) -> list[dict[str, Any]]:
        jobs = []
        n = self.scale.generators
        room_shares = split_evenly(rooms, n)
        start_shares = split_evenly(len(starts), n)
        taken = 0
        for i in range(n):
            mine = starts[taken : taken + start_shares[i]]
            taken += start_shares[i]
            jobs.append(
                {**base, "rooms": room_shares[i], "start_offsets_s": mine, "seed": i + 1,
                 "index_base": i * 100_000}
            )
        return jobs

    def race(
        self, rooms: int, interval_s: float, duration_s: float, starts: list[float],
        burst_at_s: float | None = None, transport: str = "",
    ) -> WindowResult:
        """One window of racing rooms on a fresh server (``transport``: see :meth:`server`)."""
        with self.server(transport=transport) as (port, pid):
            base = {
                "kind": "race", "url": self.ws_url(port), "players": 4,
                "spectators": 1, "interval_s": interval_s, "duration_s": duration_s,
                "warmup_s": self.scale.warmup_s, "burst_at_s": burst_at_s,
                "spectator_update": self.scale.spectator_update,
            }
            return run_window(
                self._jobs(base, rooms, starts), server_pid=pid, log=self.log, spread_pool=True,
                metrics_url=f"http://127.0.0.1:{port}/metrics", before_go=self._profile_window,
            )

    # ---- the runs -------------------------------------------------------------
    def run_echo(self, connections: int, frame_bytes: int) -> None:
        with self.server("echo", RATIO_TRANSPORT) as (port, pid):
            shares = split_evenly(connections, self.scale.generators)
            jobs = [
                {"kind": "echo", "url": self.ws_url(port), "connections": share,
                 "frame_bytes": frame_bytes, "duration_s": self.scale.echo_s}
                for share in shares
            ]
            result = run_window(jobs, server_pid=pid, log=self.log,
                                before_go=self._profile_window)
        self.figures["echo"] = {
            "connections": connections,
            "frame_bytes": frame_bytes,
            "round_trips_per_s": result.rate("round_trips"),
            "rtt": result.hists["rtt"].summary(),
            **self._machine_load(result),
        }

    def run_idle(self) -> None:
        n = self.scale.idle_players
        with self.server() as (port, pid):
            url = self.ws_url(port)
            # Warm up allocator and imports with a few connections first, so the
            # delta below is what N more players cost, not first-use costs.
            run_window([{"kind": "idle", "url": url, "connections": 50, "duration_s": 0}],
                       server_pid=pid, log=self.log)
            time.sleep(1.0)
            before = CpuWindow(pid).rss_bytes()
            after: list[int] = []

            def measure() -> None:
                time.sleep(2.0)
                after.append(CpuWindow(pid).rss_bytes())

            shares = split_evenly(n, self.scale.generators)
            jobs = [{"kind": "idle", "url": url, "connections": s, "duration_s": 0} for s in shares]
            run_window(jobs, server_pid=pid, log=self.log, before_go=measure)
        delta = after[0] - before
        self.figures["idle"] = {
            "players": n,
            "rss_before_mib": round(before / 2**20, 1),
            "rss_after_mib": round(after[0] / 2**20, 1),
            "kib_per_player": round(delta / n / 1024, 2),
        }

    def run_human(self) -> None:
        s = self.scale
        starts = [s.human_s * (i + 0.5) / max(1, s.human_starts) for i in range(s.human_starts)]
        result = self.race(s.human_rooms, HUMAN_INTERVAL_S, s.human_s, starts)
        self.figures["human"] = self._race_figures(result, s.human_rooms)

    def run_saturation(self) -> None:
        s = self.scale
        result = self.race(s.saturation_rooms, 0.0, s.saturation_s, [], transport=RATIO_TRANSPORT)
        self.figures["saturation"] = self._race_figures(result, s.saturation_rooms)

    def run_interference(self) -> None:
        s = self.scale
        burst_at = min(5.0, s.interference_s / 3)
        result = self.race(
            s.interference_rooms, HUMAN_INTERVAL_S, s.interference_s, [burst_at] * s.burst,
            burst_at_s=burst_at,
        )
        figures = self._race_figures(result, s.interference_rooms)
        figures.update(burst_figures(result, s.burst))
        self.figures["interference"] = figures

    def run_capacity(self) -> None:
        """Rooms of 4 at human pace: the largest count with p99 RTT under 50 ms.

        The target (``capacity_start``) ``capacity_target_runs`` times, each of which
        must hold; then the goal, always (a goal that could not be measured is said
        so, and the search fails); then, within the time budget, a search between
        the largest count that held and the smallest that did not (two thirds of
        the way up each time; doubling while all held).
        """
        s = self.scale
        steps: list[dict[str, Any]] = []
        began = time.monotonic()
        # The search goes no higher than the machine's open-file limit lets both ends
        # hold every socket (a step beyond it would fail at set-up, saying only that).
        ceiling = min(s.capacity_max, players_within(self.open_files))
        if ceiling < s.capacity_max:
            print(f"[bench-load] capacity: no step above {ceiling} players: each process may"
                  f" open {self.open_files} files, and {s.capacity_max} players with their"
                  f" spectators need {sockets_for(s.capacity_max)} sockets",
                  file=sys.stderr, flush=True)
        target_runs = [self._capacity_step(s.capacity_start, steps)
                       for _ in range(max(1, s.capacity_target_runs))]
        goal = self._capacity_step(s.capacity_goal, steps)
        held = [st["players"] for st in steps if st["ok"]]
        failed = [st["players"] for st in steps if st["ok"] is False]
        good, bad = max(held, default=0), min(failed, default=None)
        players = s.capacity_goal
        for _ in range(max(0, s.capacity_steps - len(steps))):
            if bad is None:
                if players >= ceiling:
                    break
                players = min(players * 2, ceiling)
            else:
                # Two thirds of the way up: the budget allows few steps, and the
                # question is how close to the goal the server holds.
                players = (good + 2 * (bad - good) // 3) // 4 * 4
                if players <= good or bad - good <= max(4, bad // 10):
                    break
            # Only these steps answer to the budget: set-up grows with the player count.
            per_player = (time.monotonic() - began) / max(1, sum(st["players"] for st in steps))
            if time.monotonic() - began + per_player * players > s.capacity_budget_s:
                break
            ok = self._capacity_step(players, steps)
            if ok:
                good = max(good, players)
            elif ok is False:
                bad = players if bad is None else min(bad, players)
        self.figures["capacity"] = {
            "largest_ok_players": good,
            "smallest_failing_players": bad,
            "target_players": s.capacity_start,
            "target_runs": len(target_runs),
            "target_held_every_run": all(ok is True for ok in target_runs),
            "goal_players": s.capacity_goal,
            "goal_measured": goal is not None,
            "goal_ok": goal,
            "steps": steps,
            "target_p99_ms": P99_TARGET_MS,
            "largest_step_by_open_files": ceiling,
            "search_s": round(time.monotonic() - began, 1),
        }

    def _capacity_step(self, players: int, steps: list[dict[str, Any]]) -> bool | None:
        """One capacity window at ``players`` (measured once more when neighbours took the
        server's core and it missed); whether the p99 held, None when it could not be
        measured (the reason is in the step)."""
        rooms = max(1, players // 4)
        ok: bool | None = None
        if rooms * 4 > players_within(self.open_files):
            reason = (f"{sockets_for(rooms * 4)} sockets, and each process may open"
                      f" {self.open_files} files (ulimit -n)")
            steps.append({"players": rooms * 4, "p99_ms": None, "ok": None,
                          "not_measured": reason})
            print(f"[bench-load] capacity: {rooms * 4} players NOT MEASURED: {reason}",
                  file=sys.stderr, flush=True)
            return None
        for attempt in range(2):
            try:
                result = self.race(rooms, HUMAN_INTERVAL_S, self.scale.capacity_s, [])
            except RuntimeError as exc:
                steps.append({"players": rooms * 4, "p99_ms": None, "ok": None,
                              "not_measured": str(exc)})
                print(f"[bench-load] capacity: {rooms * 4} players NOT MEASURED: {exc}",
                      file=sys.stderr, flush=True)
                return None
            figures = self._race_figures(result, rooms)
            p99 = figures["rtt"]["p99_ms"]
            ok = p99 is not None and p99 < P99_TARGET_MS
            others = figures["server_core_busy_by_others_pct"] or 0.0
            steps.append({"players": rooms * 4, "p99_ms": p99, "ok": ok,
                          "moves_per_s": figures["accepted_moves_per_s"],
                          "server_frames_per_s": figures["server_frames_per_s"],
                          "server_cpu_pct": figures["server_cpu_pct"],
                          "server_cpu_system_pct": figures["server_cpu_system_pct"],
                          "log_commits": figures["log_commits"],
                          "log_commits_over_50ms": figures["log_commits_over_50ms"],
                          "log_fold_steps_over_10ms": figures["log_fold_steps_over_10ms"],
                          "server_children_cpu_pct": figures["server_children_cpu_pct"],
                          "core_taken_by_others_pct": others,
                          "generator_cpu_pct": figures["generator_cpu_pct"],
                          "generator_saturated": figures["generator_saturated"],
                          "setup_s": figures["setup_s"],
                          "worst_rtt_ms_by_second": figures["worst_rtt_ms_by_second"]})
            # On the shared machine, a miss while neighbours took the server's
            # core is measured once more before it counts.
            if ok or others <= DISTURBED_PCT or attempt:
                break
        return ok

    # ---- figures ----------------------------------------------------------------
    def _machine_load(self, result: WindowResult) -> dict[str, Any]:
        return {
            "server_cpu_pct": result.server.get("cpu_pct"),
            "server_cpu_system_pct": result.server.get("cpu_system_pct"),
            "log_commits": result.server.get("log_commits"),
            "log_commits_over_50ms": result.server.get("log_commits_over_50ms"),
            "log_fold_steps": result.server.get("log_fold_steps"),
            "log_fold_steps_over_10ms": result.server.get("log_fold_steps_over_10ms"),
            "server_children_cpu_pct": result.server.get("children_cpu_pct"),
            "server_rss_mib": result.server.get("rss_mib"),
            "server_core_busy_by_others_pct": result.server.get("core_busy_by_others_pct"),
            "generator_cpu_pct": result.generator_cpu_pct,
            "generator_saturated": result.generator_saturated,
            "generator_core_busy_by_others_pct": result.generator_core_busy_by_others_pct,
            "window_s": round(result.wall_s, 2),
        }

    def _race_figures(self, result: WindowResult, rooms: int) -> dict[str, Any]:
        def summary(name: str) -> dict[str, Any] | None:
            hist = result.hists.get(name)
            return hist.summary() if hist else None

        return {
            "rooms": rooms,
            "players": rooms * 4,
            "spectators": rooms,
            "rtt": summary("rtt") or {"count": 0, "p50_ms": None, "p99_ms": None,
                                       "p99_9_ms": None, "max_ms": None},
            "accepted_moves_per_s": result.rate("accepted"),
            "rejected_moves": result.counts.get("rejected", 0),
            "accepted_by_action": {
                action: result.counts.get(f"accepted_{action}", 0)
                for action in ("play", "draw", "undo")
            },
            "in_flight_at_end": result.counts.get("unanswered", 0),
            "server_frames_per_s": result.rate("frames_in"),
            "room_start": summary("room_start"),
            "room_starts": result.counts.get("room_starts", 0),
            "start_failures": result.counts.get("start_failures", 0),
            "fanout": summary("fanout"),
            "setup_s": max(result.extra.get("setup_s", [0.0])),
            "worst_rtt_ms_by_second": _worst_by_second(result.extra.get("worst_rtt_ms_by_second")),
            **self._machine_load(result),
        }


def burst_figures(result: WindowResult, burst: int) -> dict[str, Any]:
    """The burst's figures: its starts, the other rooms' moves during it and before it,
    each against its target (``None``: not measured)."""
    summaries = {
        name: result.hists[name].summary() if name in result.hists else None
        for name in ("room_start", "rtt_during_burst", "rtt_before_burst")
    }
    start, during, before = (
        summary["p99_ms"] if summary else None for summary in summaries.values()
    )
    # Judged unrounded: 2.0001 times is not within 2 times.
    ratio = during / before if during is not None and before else None
    return {
        "burst_rooms": burst,
        "rtt_during_burst": summaries["rtt_during_burst"],
        "rtt_before_burst": summaries["rtt_before_burst"],
        "burst_rtt_ratio": None if ratio is None else round(ratio, 3),
        "within_bound": None if during is None else during < BURST_P99_TARGET_MS,
        "burst_start_ok": None if start is None else start < BURST_START_P99_TARGET_MS,
        "burst_ratio_ok": None if ratio is None else ratio <= BURST_RATIO_TARGET,
    }


def _worst_by_second(per_worker: list[list[float]] | None) -> list[float]:
    if not per_worker:
        return []
    width = max(len(series) for series in per_worker)
    return [max((s[i] for s in per_worker if i < len(s)), default=0.0) for i in range(width)]


def move_frame_bytes() -> int:
    """Size of a typical move frame on the msgpack subprotocol."""
    from protocol.wire import codec
    from protocol.wire import messages as m

    return len(codec.encode_msgpack(m.MoveRequest(123, m.MoveAction.PLAY, 17)))


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    try:
        import uvloop  # noqa: F401

        loop = "uvloop"
    except ImportError:
        loop = "asyncio"
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "loop": loop,
        # The server's hot path compiled (tools/native.py) or not: "fresh", "none" or "stale".
        "native": native_status(),
        "platform": platform.platform(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "shared_machine": True,
    }


RUNS = ("echo", "idle", "human", "saturation", "interference", "capacity")


def ratio_per_cpu(echo: dict[str, Any], game: dict[str, Any]) -> float | None:
    """The ratio per second of server CPU: the two servers' costs per round trip compared
    even when neither filled its core."""
    echo_cpu = float(echo.get("server_cpu_pct") or 0.0)
    game_cpu = float(game.get("server_cpu_pct") or 0.0)
    echo_rate = float(echo.get("round_trips_per_s") or 0.0)
    if not (echo_cpu and game_cpu and echo_rate):
        return None
    per_cpu = float(game["accepted_moves_per_s"]) / game_cpu
    return round(per_cpu / (echo_rate / echo_cpu), 3)


def ratio_disturbances(echo: dict[str, Any], game: dict[str, Any]) -> list[str]:
    """Why the ratio may not compare the two servers' costs (empty: it does).

    Both windows must be limited by their server: its core full, nobody else on
    either core, and the generator below its own limit.
    """
    reasons = []
    for name, fig in (("echo", echo), ("saturation", game)):
        cpu = fig.get("server_cpu_pct") or 0.0
        if cpu < SATURATED_SERVER_PCT:
            reasons.append(f"{name}: server at {cpu}% of its core")
        for core, key in ((0, "server_core_busy_by_others_pct"),
                          (1, "generator_core_busy_by_others_pct")):
            others = fig.get(key) or 0.0
            if others > RATIO_DISTURBED_PCT:
                reasons.append(f"{name}: others took {others}% of core {core}")
        if fig.get("generator_saturated"):
            reasons.append(f"{name}: generator saturated")
    return reasons


def main(argv: list[str] | None = None) -> int:
    """Run the load benchmark; 0 when every run completed (targets are reported, not enforced)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny scale (smoke test)")
    parser.add_argument("--only", nargs="+", choices=RUNS, help="run only these")
    parser.add_argument("--generators", type=int, default=1, help="generator processes (core 1)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="JSON output path")
    parser.add_argument(
        "--set", nargs="+", default=[], metavar="FIELD=VALUE",
        help="override a scale field, e.g. --set human_rooms=100 capacity_steps=3",
    )
    args = parser.parse_args(argv)
    scale = dataclasses.replace(QUICK if args.quick else Scale())
    for item in args.set:
        name, _, value = item.partition("=")
        if name not in scale.__dataclass_fields__:
            parser.error(f"no scale field {name!r}; fields: {', '.join(vars(scale))}")
        kind = type(getattr(scale, name))
        if kind is bool and value.lower() not in ("true", "false", "1", "0"):
            parser.error(f"{name} takes true or false, not {value!r}")
        setattr(scale, name, value.lower() in ("true", "1") if kind is bool else kind(value))
    if scale.transport not in TRANSPORTS:
        parser.error(f"transport is one of {', '.join(TRANSPORTS)}, not {scale.transport!r}")
    scale.generators = max(1, args.generators)
    raise_open_file_limit()
    # SIGTERM (a CI timeout, say) must unwind through the finally blocks that
    # stop every server and generator this run started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    runs = args.only or list(RUNS)
    workdir = Path(tempfile.mkdtemp(prefix="tripeaks-bench-"))
    bench = Bench(scale, workdir)
    began = time.time()
    try:
        for name in runs:
            print(f"[bench-load] {name} ...", file=sys.stderr, flush=True)
            run_started = time.monotonic()
            if name == "echo":
                players = scale.saturation_rooms * 4
                bench.run_echo(players, move_frame_bytes())
            else:
                getattr(bench, f"run_{name}")()
            bench.figures.setdefault(name, {})["run_s"] = round(time.monotonic() - run_started, 1)
    except BaseException:
        print(f"[bench-load] stopped; server and generator logs: {bench.log}", file=sys.stderr)
        raise
    if not os.environ.get("BENCH_LOAD_KEEP_LOG"):
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"[bench-load] logs: {bench.log}", file=sys.stderr)
    figures = bench.figures
    echo_rate = figures.get("echo", {}).get("round_trips_per_s")
    game_rate = figures.get("saturation", {}).get("accepted_moves_per_s")
    if echo_rate and game_rate is not None:
        figures["ratio_game_to_echo"] = round(game_rate / echo_rate, 3)
        figures["ratio_per_server_cpu"] = ratio_per_cpu(figures["echo"], figures["saturation"])
        figures["ratio_disturbed_by"] = ratio_disturbances(figures["echo"], figures["saturation"])
    figures["machine"] = machine()
    figures["scale"] = vars(scale)
    figures["started_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began))
    figures["total_s"] = round(time.time() - began, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n")
    print_table(figures)
    print(f"\nall figures: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
