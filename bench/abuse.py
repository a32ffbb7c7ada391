"""A player's move round trip in another room while one client attacks the server.

A real server (``python -m server``, default limits, pinned to core 0) trusts
127.0.0.1 as a proxy, so the player and the attacker come from addresses of
their own (``X-Forwarded-For``).  A racing player makes 20 moves a second
(draw, undo, ...) and each round trip is timed: first with nobody else on the
server, then while an attacker process (core 1) runs each attack for the
window:

- ``pings``: one client writing WebSocket ping control frames (4 bytes) as
  fast as it can, reconnecting whenever it is closed;
- ``paced``: 30 connections from one address sending ``ping`` messages at
  300 a second each (ten times the credit rate), reconnecting when closed;
- ``list_rooms``: 20 connections from one address sending ``list_rooms`` at
  30 a second each (within their credit), with 100 public rooms open.

Target: the p99 under attack within twice the quiet figure.  Writes
``bench/results/abuse.json``.  ``python -m bench.abuse [--seconds 10]``.
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
from pathlib import Path
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.typing import Subprotocol

from bench import load_procs
from protocol.wire import codec
from protocol.wire import messages as m
from tests.server.transport.rawws import OP_CLOSE, OP_PING, RawClient, client_frame

ATTACKS = ("pings", "paced", "list_rooms")
MOVES_PER_S = 20
PUBLIC_ROOMS = 100
RESULTS = Path(__file__).resolve().parent / "results" / "abuse.json"


# ---- the player who measures ------------------------------------------------------
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


async def _racer(url: str) -> ClientConnection:
    """A player racing alone in a practice room with free undo."""
    ws = await _client(url, "10.9.9.9", "racer")
    options = m.RoomOptions(practice_seed="42", countdown_s=0, undo=m.UndoPolicy.FREE)
    await ws.send(codec.encode_msgpack(m.CreateRoom(options)))
    await _expect(ws, m.RoomState)
    await ws.send(codec.encode_msgpack(m.Start()))
    await _expect(ws, m.RaceStart)
    return ws


async def _measure(ws: ClientConnection, first_seq: int, seconds: float) -> dict[str, Any]:
    """Moves at :data:`MOVES_PER_S` for ``seconds``: round trips in ms and what came back."""
    rtts: list[float] = []
    refused = 0
    seq = first_seq
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        action = m.MoveAction.DRAW if seq % 2 else m.MoveAction.UNDO
        sent = time.perf_counter()
        await ws.send(codec.encode_msgpack(m.MoveRequest(seq, action)))
        while True:
            answer = await _expect(ws, m.MoveResult | m.Error)
            if answer.seq == seq:
                break
        rtts.append((time.perf_counter() - sent) * 1000)
        refused += isinstance(answer, m.Error)
        seq += 1
        pause = started + (seq - first_seq) / MOVES_PER_S - time.perf_counter()
        if pause > 0:
            await asyncio.sleep(pause)
    rtts.sort()
    return {
        "moves": len(rtts), "refused": refused, "next_seq": seq,
        "p50_ms": round(statistics.median(rtts), 2),
        "p99_ms": round(rtts[min(len(rtts) - 1, int(len(rtts) * 0.99))], 2),
        "max_ms": round(rtts[-1], 2),
    }


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


# ---- the run ------------------------------------------------------------------------
def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _run(seconds: float, quick: bool) -> dict[str, Any]:
    port = load_procs.free_port()
    url = f"ws://127.0.0.1:{port}/ws"
    data = Path(tempfile.mkdtemp(prefix="bench-abuse-"))
    server = load_procs.start(
        load_procs.python_module(
            "server", "--port", str(port), "--db", f"sqlite:///{data / 'abuse.db'}",
            "--log-level", "WARNING", "--trusted-proxies", "127.0.0.1/32",
        ),
        core=0, log=data / "server.log",
    )
    try:
        load_procs.wait_healthy(server, port)
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {0})  # the player shares the server's core
        hosts = [await _client(url, f"10.1.{n // 250}.{n % 250 + 1}", f"host{n}")
                 for n in range(10 if quick else PUBLIC_ROOMS)]
        for ws in hosts:
            await ws.send(codec.encode_msgpack(m.CreateRoom(m.RoomOptions(public=True))))
            await _expect(ws, m.RoomState)
        racer = await _racer(url)
        figures: dict[str, Any] = {}
        seq = 1
        for kind in ("quiet", *ATTACKS):
            attacker = None
            if kind != "quiet":
                attacker = subprocess.Popen(
                    load_procs.pinned([sys.executable, "-m", "bench.abuse", "--attack", kind,
                                       "--url", url, "--seconds", str(seconds + 1)], 1),
                    stdout=subprocess.PIPE,
                )
                await asyncio.sleep(0.5)
            cpu = _cpu_s(server.pid)
            result = await _measure(racer, seq, seconds)
            result["server_cpu_pct"] = round(100 * (_cpu_s(server.pid) - cpu) / seconds, 1)
            seq = result.pop("next_seq")
            if attacker is not None:
                out, _ = attacker.communicate(timeout=seconds + 30)
                result["attacker"] = json.loads(out or b"{}")
            figures[kind] = result
            print(kind, json.dumps(result), flush=True)
        quiet = figures["quiet"]["p99_ms"]
        for kind in ATTACKS:
            figures[kind]["p99_over_quiet"] = round(figures[kind]["p99_ms"] / quiet, 2)
        return figures
    finally:
        load_procs.stop(server)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or, with ``--attack``, one attacker)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="window per run")
    parser.add_argument("--quick", action="store_true", help="10 public rooms, 2 s windows")
    parser.add_argument("--attack", choices=ATTACKS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.attack:
        print(json.dumps(asyncio.run(_attack(args.attack, args.url, args.seconds))))
        return 0
    seconds = 2.0 if args.quick else args.seconds
    load_procs.raise_open_file_limit()
    figures = asyncio.run(_run(seconds, args.quick))
    doc = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seconds": seconds,
           "load_average": os.getloadavg(), "runs": figures}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
