"""Players' move round trips in other rooms while one client attacks the server.

A real server (``python -m server``, default limits, pinned to core 0) trusts
127.0.0.1 as a proxy, so the players and the attacker come from addresses of
their own (``X-Forwarded-For``).  :data:`RACERS` players race alone in
practice rooms, each making 20 moves a second (draw, undo, ...), and each
round trip is timed, in windows that alternate between nobody else on the
server and an attacker process (core 1) running one attack:

- ``pings``: one client writing WebSocket ping control frames (4 bytes) as
  fast as it can, reconnecting whenever it is closed;
- ``paced``: 30 connections from one address sending ``ping`` messages at
  300 a second each (ten times the credit rate), reconnecting when closed;
- ``list_rooms``: 20 connections from one address sending ``list_rooms`` at
  30 a second each (within their credit), with 100 public rooms open.

The windows run quiet, pings, quiet, paced, quiet, list_rooms, ... for
``--rounds`` rounds and end quiet, so every attack window has a quiet window
on either side.  Each attack window's p99 is compared with the p99 of its two
neighbours' round trips pooled (a pair); an attack's figure is the median of
its pairs' ratios.  Target: every attack's median within twice the quiet
figure (the last line says MET or MISSED).  Each window also has the server's
CPU (its deal pool's included), and each pair what the attack itself cost:
the attack window's CPU less the mean of its neighbours' (CPU seconds are
less disturbed by a busy machine than round trips are).

The machine may be shared: for every window the run reports what others took
of core 0 (busy time, interrupts aside, that was neither the server's nor the
players') and, in attack windows, of the attacker's core 1.  A window where
others took more than :data:`DISTURBED_PCT` is flagged, and its pairs count
towards an attack's median only when that attack has no undisturbed pair.
Writes ``bench/results/abuse.json``.  ``python -m bench.abuse [--seconds 6]
[--rounds 3]``, under 3 minutes; ``--quick``: one round of 2 s windows with
10 public rooms, about 30 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.typing import Subprotocol

from bench import load_procs
from protocol.wire import codec
from protocol.wire import messages as m
from tests.server.transport.rawws import OP_CLOSE, OP_PING, RawClient, client_frame

ATTACKS = ("pings", "paced", "list_rooms")
MOVES_PER_S = 20
#: Players racing at once, each in a room of its own: more round trips per window.
RACERS = 4
PUBLIC_ROOMS = 100
#: Share of a core (percent) others may take before a window counts as disturbed.
DISTURBED_PCT = 10.0
#: The attacked p99 may be at most this many times the quiet one.
TARGET_RATIO = 2.0
#: Before every window: the last attacker's connections close, the next one connects.
SETTLE_S = 0.7
SERVER_CORE, ATTACKER_CORE = 0, 1
RESULTS = Path(__file__).resolve().parent / "results" / "abuse.json"


# ---- the players who measure --------------------------------------------------------
async def _client(url: str, address: str, name: str) -> ClientConnection:
    ws = await websockets.connect(
        url, subprotocols=[Subprotocol(codec.SUBPROTOCOL_MSGPACK)],
        additional_headers={"X-Forwarded-For": address}, compression=None, max_size=2**22,
    )
    await ws.send(codec.encode_msgpack(m.Hello(name=name, version=m.PROTOCOL_VERSION)))
    await _expect(ws, m.Welcome)
    return ws


async def _expect(ws: ClientConnection, kind: Any, timeout: float = 30.0) -> Any:
    while True:
        message = codec.decode_server(await asyncio.wait_for(ws.recv(), timeout), "msgpack")
        if isinstance(message, kind):
            return message


@dataclass(slots=True)
class _Racer:
    """A player racing alone in a practice room with free undo."""

    ws: ClientConnection
    seq: int = 1

    @classmethod
    async def start(cls, url: str, n: int) -> _Racer:
        ws = await _client(url, f"10.9.9.{n + 1}", f"racer{n}")
        options = m.RoomOptions(practice_seed=str(42 + n), countdown_s=0, undo=m.UndoPolicy.FREE)
        await ws.send(codec.encode_msgpack(m.CreateRoom(options)))
        await _expect(ws, m.RoomState)
        await ws.send(codec.encode_msgpack(m.Start()))
        await _expect(ws, m.RaceStart)
        return cls(ws)

    async def measure(self, seconds: float, delay: float, rtts: list[float]) -> int:
        """Moves at :data:`MOVES_PER_S` for ``seconds`` after ``delay``: round trips (ms)
        into ``rtts``; returns how many were refused."""
        await asyncio.sleep(delay)
        refused, first = 0, self.seq
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            action = m.MoveAction.DRAW if self.seq % 2 else m.MoveAction.UNDO
            sent = time.perf_counter()
            await self.ws.send(codec.encode_msgpack(m.MoveRequest(self.seq, action)))
            while True:
                answer = await _expect(self.ws, m.MoveResult | m.Error)
                if answer.seq == self.seq:
                    break
            rtts.append((time.perf_counter() - sent) * 1000)
            refused += isinstance(answer, m.Error)
            self.seq += 1
            pause = started + (self.seq - first) / MOVES_PER_S - time.perf_counter()
            if pause > 0:
                await asyncio.sleep(pause)
        return refused


def _p99(rtts: list[float]) -> float:
    ordered = sorted(rtts)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2)


def _summary(rtts: list[float]) -> dict[str, Any]:
    return {
        "moves": len(rtts), "p50_ms": round(statistics.median(rtts), 2),
        "p99_ms": _p99(rtts), "max_ms": round(max(rtts), 2),
    }


# ---- what the window cost, and who else took the cores ------------------------------
@dataclass(frozen=True, slots=True)
class _Reading:
    """CPU seconds so far: the server's (children included), the players', the attacker's,
    and each benchmark core's (busy, interrupts, total)."""

    server_s: float
    players_s: float
    attacker_s: float
    cores: tuple[tuple[float, float, float], ...]
    wall_s: float


def _process_s(proc: psutil.Process | None, children: bool = False) -> float:
    if proc is None:
        return 0.0
    try:
        procs = [proc, *proc.children(recursive=True)] if children else [proc]
        total = 0.0
        for one in procs:
            times = one.cpu_times()
            total += times.user + times.system
        return total
    except psutil.Error:  # the attacker may just have finished
        return 0.0


def _core_times(core: int) -> tuple[float, float, float]:
    times = psutil.cpu_times(percpu=True)
    if core >= len(times):
        return 0.0, 0.0, 0.0
    one = times[core]
    total = sum(one) - one.guest - one.guest_nice  # guest time is inside user time already
    idle = one.idle + one.iowait
    return total - idle, one.irq + one.softirq, total


def _reading(server: psutil.Process, attacker: psutil.Process | None) -> _Reading:
    return _Reading(
        _process_s(server, children=True), _process_s(psutil.Process()), _process_s(attacker),
        (_core_times(SERVER_CORE), _core_times(ATTACKER_CORE)), time.monotonic(),
    )


def _costs(before: _Reading, after: _Reading, attacked: bool) -> dict[str, Any]:
    """The server's CPU over the window and the share of each core others took."""
    wall = max(after.wall_s - before.wall_s, 1e-9)
    ours = (
        after.server_s - before.server_s + after.players_s - before.players_s,
        after.attacker_s - before.attacker_s,
    )
    out: dict[str, Any] = {
        "server_cpu_s": round(after.server_s - before.server_s, 2),
        "server_cpu_pct": round(100 * (after.server_s - before.server_s) / wall, 1),
        "players_cpu_pct": round(100 * (after.players_s - before.players_s) / wall, 1),
    }
    disturbed = []
    for core, (start, end) in enumerate(zip(before.cores, after.cores, strict=True)):
        total = max(end[2] - start[2], 1e-9)
        # Loopback packets are handled in softirq time, which no process is charged for.
        others = end[0] - start[0] - (end[1] - start[1]) - ours[core]
        out[f"core{core}_others_pct"] = pct = round(max(0.0, 100 * others / total), 1)
        out[f"core{core}_irq_pct"] = round(100 * (end[1] - start[1]) / total, 1)
        if pct > DISTURBED_PCT and (core == SERVER_CORE or attacked):
            disturbed.append(f"others took {pct}% of core {core}")
    out["disturbed"] = disturbed
    return out


# ---- the attacker (its own process) -------------------------------------------------
async def _read_all(raw: RawClient, counts: Counter[str]) -> None:
    try:
        while True:
            opcode, payload = await raw.read_frame(timeout=60)
            counts[f"opcode_{opcode}"] += 1
            counts["bytes_in"] += len(payload)
            if opcode == OP_CLOSE:
                counts[f"closed_{int.from_bytes(payload[:2]) if payload else 1005}"] += 1
                return
    except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
        counts["cut"] += 1


async def _connected(url: str, address: str, counts: Counter[str]) -> RawClient | None:
    try:
        raw = await RawClient.open(url, forwarded_for=address)
        await raw.hello("attacker")
    except (ConnectionError, asyncio.IncompleteReadError, TimeoutError, AssertionError):
        counts["connect_refused"] += 1
        await asyncio.sleep(0.05)
        return None
    counts["connections"] += 1
    return raw


async def _keep_attacking(
    url: str, address: str, until: float, counts: Counter[str],
    burst: Callable[[RawClient], Awaitable[None]],
) -> None:
    """Run ``burst`` over and over on one connection, a new one whenever it is closed."""
    loop = asyncio.get_running_loop()
    while loop.time() < until:
        raw = await _connected(url, address, counts)
        if raw is None:
            continue
        reader = asyncio.ensure_future(_read_all(raw, counts))
        try:
            while not reader.done() and loop.time() < until:
                await burst(raw)
        except ConnectionError:
            pass
        raw.close()
        await asyncio.wait([reader], timeout=1)
        reader.cancel()


async def _attack(kind: str, url: str, seconds: float) -> Counter[str]:
    counts: Counter[str] = Counter()
    until = asyncio.get_running_loop().time() + seconds
    pings = client_frame(b"ping", OP_PING) * 200

    async def flood(raw: RawClient) -> None:
        raw.write(pings)
        counts["sent"] += 200
        await raw.writer.drain()

    def paced(message: m.ClientMessage, per_s: float) -> Callable[[RawClient], Awaitable[None]]:
        async def send(raw: RawClient) -> None:
            for _ in range(max(1, int(per_s / 100))):
                raw.send(message)
            counts["sent"] += max(1, int(per_s / 100))
            await raw.writer.drain()
            await asyncio.sleep(max(0.01, 1 / per_s))
        return send

    plans: list[Callable[[RawClient], Awaitable[None]]]
    if kind == "pings":
        plans = [flood]
    elif kind == "paced":
        plans = [paced(m.Ping(1), 300)] * 30
    else:
        plans = [paced(m.ListRooms(), 30)] * 20
    await asyncio.gather(*(
        _keep_attacking(url, "10.6.6.6", until, counts, plan) for plan in plans
    ))
    return counts


async def _attacker_main(kind: str, url: str, seconds: float) -> None:
    """In the attacker's process: say ready once the imports are done, wait for the word,
    attack, report."""
    print("ready", flush=True)
    if sys.stdin.readline().strip() == "go":
        print(json.dumps(await _attack(kind, url, seconds)), flush=True)


# ---- the run ------------------------------------------------------------------------
def schedule(rounds: int) -> list[str]:
    """The windows in order: quiet between every two attacks, and at both ends."""
    kinds = []
    for _ in range(rounds):
        for attack in ATTACKS:
            kinds += ["quiet", attack]
    return [*kinds, "quiet"]


def _spawn_attacker(kind: str, url: str, seconds: float) -> subprocess.Popen[bytes]:
    """The attacker's process, started a window early so that its start-up (on its own
    core) does not eat into its window; it waits for :func:`_unleash`."""
    return subprocess.Popen(
        load_procs.pinned([sys.executable, "-m", "bench.abuse", "--attack", kind,
                           "--url", url, "--seconds", str(seconds)], ATTACKER_CORE),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )


async def _unleash(attacker: subprocess.Popen[bytes]) -> None:
    assert attacker.stdin is not None and attacker.stdout is not None
    ready = await asyncio.to_thread(attacker.stdout.readline)
    if ready.strip() != b"ready":
        raise RuntimeError(f"an attacker did not start: {ready!r}")
    attacker.stdin.write(b"go\n")
    attacker.stdin.flush()


async def _window(
    kind: str, attacker: subprocess.Popen[bytes] | None, server: psutil.Process,
    racers: list[_Racer], seconds: float,
) -> dict[str, Any]:
    """One window of the players' round trips, with ``attacker`` attacking (if any)."""
    if attacker is not None:
        await _unleash(attacker)
    await asyncio.sleep(SETTLE_S)
    watched = psutil.Process(attacker.pid) if attacker is not None else None
    before = _reading(server, watched)
    rtts: list[float] = []
    refused = await asyncio.gather(*(
        racer.measure(seconds, n / (len(racers) * MOVES_PER_S), rtts)
        for n, racer in enumerate(racers)
    ))
    result: dict[str, Any] = {"kind": kind, **_summary(rtts), "refused": sum(refused)}
    result.update(_costs(before, _reading(server, watched), attacker is not None))
    if attacker is not None:
        out, _ = await asyncio.to_thread(attacker.communicate, timeout=seconds + 30)
        result["attacker"] = json.loads(out or b"{}")
    result["rtts"] = rtts
    return result


async def _windows(
    url: str, server: psutil.Process, racers: list[_Racer], seconds: float, rounds: int,
) -> list[dict[str, Any]]:
    """Every window of :func:`schedule`, each attacker started during the window before."""
    kinds = schedule(rounds)
    windows: list[dict[str, Any]] = []
    spawned = None
    try:
        for i, kind in enumerate(kinds):
            attacker, spawned = spawned, None
            following = kinds[i + 1] if i + 1 < len(kinds) else "quiet"
            if following != "quiet":
                spawned = _spawn_attacker(following, url, SETTLE_S + seconds + 0.5)
            window = await _window(kind, attacker, server, racers, seconds)
            print(json.dumps({k: v for k, v in window.items() if k != "rtts"}), flush=True)
            windows.append(window)
    finally:
        if spawned is not None:
            spawned.kill()
            spawned.wait()
    return windows


def _pairs(windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each attack window against the quiet windows on either side, pooled."""
    pairs = []
    for i, window in enumerate(windows):
        if window["kind"] == "quiet":
            continue
        before, after = windows[i - 1], windows[i + 1]
        quiet = _p99(before["rtts"] + after["rtts"])
        pairs.append({
            "attack": window["kind"], "window": i, "p99_ms": window["p99_ms"],
            "quiet_p99_ms": quiet, "ratio": round(window["p99_ms"] / quiet, 2),
            "server_cpu_pct": window["server_cpu_pct"],
            # What the attack itself cost the server, over what the players cost it.
            "attack_cpu_pct": round(
                window["server_cpu_pct"] - (before["server_cpu_pct"] + after["server_cpu_pct"]) / 2,
                1),
            "disturbed": bool(before["disturbed"] or window["disturbed"] or after["disturbed"]),
        })
    return pairs


def verdict(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per attack: its pairs' ratios and their median (undisturbed pairs when there are
    any); MET when every median is within :data:`TARGET_RATIO`."""
    attacks: dict[str, Any] = {}
    for kind in ATTACKS:
        mine = [p for p in pairs if p["attack"] == kind]
        if not mine:
            continue
        clean = [p for p in mine if not p["disturbed"]]
        counted = clean or mine
        attacks[kind] = {
            "ratios": [p["ratio"] for p in mine],
            "median_ratio": round(statistics.median(p["ratio"] for p in counted), 2),
            "disturbed_pairs": len(mine) - len(clean),
            "only_disturbed": not clean,
            "server_cpu_pct": round(statistics.median(p["server_cpu_pct"] for p in mine), 1),
            "attack_cpu_pct": round(statistics.median(p["attack_cpu_pct"] for p in mine), 1),
        }
    met = bool(attacks) and all(a["median_ratio"] <= TARGET_RATIO for a in attacks.values())
    return {"target_ratio": TARGET_RATIO, "met": met, "attacks": attacks}


def _verdict_lines(result: dict[str, Any], quiet_cpu: float) -> list[str]:
    lines = []
    for kind, fig in result["attacks"].items():
        note = f", {fig['disturbed_pairs']} disturbed" if fig["disturbed_pairs"] else ""
        if fig["only_disturbed"]:
            note += " (every pair: the median counts them)"
        ratios = " ".join(f"{r:.2f}" for r in fig["ratios"])
        lines.append(f"{kind}: p99/quiet {ratios}, median {fig['median_ratio']:.2f}{note};"
                     f" server CPU {fig['server_cpu_pct']}% (quiet {quiet_cpu:.1f}%;"
                     f" the attack's own {fig['attack_cpu_pct']}%)")
    word = "MET" if result["met"] else "MISSED"
    medians = ", ".join(f"{k} {f['median_ratio']:.2f}" for k, f in result["attacks"].items())
    lines.append(f"{word}: p99 under attack within {TARGET_RATIO:g}x of quiet ({medians})")
    return lines


async def _setup(url: str, rooms: int) -> list[_Racer]:
    hosts = [await _client(url, f"10.1.{n // 250}.{n % 250 + 1}", f"host{n}")
             for n in range(rooms)]
    for ws in hosts:
        await ws.send(codec.encode_msgpack(m.CreateRoom(m.RoomOptions(public=True))))
        await _expect(ws, m.RoomState)
    return [await _Racer.start(url, n) for n in range(RACERS)]


async def _run(seconds: float, rounds: int, rooms: int) -> dict[str, Any]:
    port = load_procs.free_port()
    url = f"ws://127.0.0.1:{port}/ws"
    data = Path(tempfile.mkdtemp(prefix="bench-abuse-"))
    server = load_procs.start(
        load_procs.python_module(
            "server", "--port", str(port), "--db", f"sqlite:///{data / 'abuse.db'}",
            "--log-level", "WARNING", "--trusted-proxies", "127.0.0.1/32",
        ),
        core=SERVER_CORE, log=data / "server.log",
    )
    try:
        load_procs.wait_healthy(server, port)
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {SERVER_CORE})  # the players share the server's core
        racers = await _setup(url, rooms)
        windows = await _windows(url, psutil.Process(server.pid), racers, seconds, rounds)
        pairs = _pairs(windows)
        for window in windows:
            del window["rtts"]
        return {"windows": windows, "pairs": pairs, **verdict(pairs)}
    finally:
        load_procs.stop(server)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or, with ``--attack``, one attacker)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="length of each window")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three attacks")
    parser.add_argument("--quick", action="store_true",
                        help="one round of 2 s windows, 10 public rooms")
    parser.add_argument("--attack", choices=ATTACKS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.attack:
        asyncio.run(_attacker_main(args.attack, args.url, args.seconds))
        return 0
    seconds, rounds = (2.0, 1) if args.quick else (args.seconds, args.rounds)
    load_procs.raise_open_file_limit()
    figures = asyncio.run(_run(seconds, rounds, 10 if args.quick else PUBLIC_ROOMS))
    quiet_cpu = statistics.median(
        w["server_cpu_pct"] for w in figures["windows"] if w["kind"] == "quiet")
    for line in _verdict_lines(figures, quiet_cpu):
        print(line, flush=True)
    doc = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seconds": seconds,
           "rounds": rounds, "racers": RACERS, "load_average": os.getloadavg(),
           "quiet_server_cpu_pct": quiet_cpu, **figures}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
