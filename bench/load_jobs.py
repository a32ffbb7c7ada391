"""The game-server jobs a generator process can run (see :mod:`bench.load_worker`).

- ``idle``: N connected players that said hello and then do nothing (memory).
- ``race``: R racing rooms of K players and S spectators at a pace, plus
  lobby rooms started during the window at given offsets (room-start latency,
  and the burst of the interference test).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from typing import Any

import aiohttp

from bench.load_game import (
    CONNECT_GATE,
    SETUP_GATE,
    Conn,
    Meters,
    Room,
    gather_bounded,
    make_room,
    open_conn,
)
from bench.load_worker import CpuMeter, Job, emit, wait_for_go

#: How long after the last start of a burst moves still count as "during the burst".
BURST_TAIL_S = 1.0


def _session() -> aiohttp.ClientSession:
    # No pool limit: every WebSocket holds its connection for the whole run.
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))


async def run_idle(job: Job) -> None:
    """Connect ``connections`` players (hello only) and hold them until ``go``."""
    meters = Meters()
    gate = asyncio.Semaphore(CONNECT_GATE)
    async with _session() as session:
        conns = await asyncio.gather(
            *(
                open_conn(session, job["url"], meters, f"i{n}", gate)
                for n in range(int(job["connections"]))
            )
        )
        emit("ready", connections=len(conns))
        await wait_for_go(float(job.get("go_timeout_s", 300)))
        emit("result", hists={}, counts={"connections": len(conns)}, wall_s=0.0,
             generator_cpu_pct=0.0)
        await _close_all(conns)


async def _close_all(conns: list[Conn]) -> None:
    await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)


class RaceLoad:
    """The rooms of one ``race`` job and the tasks that play them."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.meters = Meters()
        self.rng = random.Random(int(job.get("seed", 1)))
        self.interval_s = float(job["interval_s"])
        self.deadline = math.inf
        self.tasks: list[asyncio.Task[None]] = []
        self.racing: list[Room] = []
        self.lobby: list[Room] = []
        self.start_offsets: list[float] = [float(x) for x in job.get("start_offsets_s", [])]
        self.burst_at_s: float | None = job.get("burst_at_s")

    async def setup(self, session: aiohttp.ClientSession) -> None:
        url = self.job["url"]
        gate = asyncio.Semaphore(CONNECT_GATE)
        players, spectators = int(self.job["players"]), int(self.job["spectators"])

        def factory(index: int) -> Any:
            return lambda: make_room(
                session, url, self.meters, index=index, players=players,
                spectators=spectators, gate=gate, rng=self.rng,
            )

        total = int(self.job["rooms"]) + len(self.start_offsets)
        base = int(self.job.get("index_base", 0))
        rooms = await gather_bounded([factory(base + i) for i in range(total)], SETUP_GATE)
        self.racing, self.lobby = rooms[: int(self.job["rooms"])], rooms[int(self.job["rooms"]) :]
        await gather_bounded_starts(self.racing, SETUP_GATE)
        for room in self.racing:
            self._play(room)

    def _play(self, room: Room) -> None:
        for player in room.players:
            self.tasks.append(asyncio.create_task(self._play_until_deadline(player)))

    async def _play_until_deadline(self, player: Any) -> None:
        # The deadline is only known at ``go``; play in slices until it is reached.
        loop = asyncio.get_running_loop()
        while loop.time() < self.deadline:
            await player.play(self.interval_s, min(self.deadline, loop.time() + 1.0))

    async def start_later(self, room: Room, offset_s: float) -> None:
        """Start a lobby room ``offset_s`` into the window, time it, then play it."""
        await asyncio.sleep(offset_s)
        room.in_burst = self.burst_at_s is not None and offset_s == self.burst_at_s
        if room.in_burst:
            self.meters.burst_active = True
        try:
            latency = await room.start()
        except (TimeoutError, RuntimeError):
            self.meters.count("start_failures")
            return
        self.meters.record("room_start", latency)
        self.meters.count("room_starts")
        self._play(room)

    async def window(self) -> dict[str, Any]:
        """The measured window: reset meters, start lobby rooms on schedule, wait."""
        meters = self.meters
        meters.hists.clear()
        meters.counts.clear()
        meters.measuring = True
        cpu = CpuMeter()
        duration = float(self.job["duration_s"])
        loop = asyncio.get_running_loop()
        opened = loop.time()
        self.deadline = opened + duration
        starters = [
            asyncio.create_task(self.start_later(room, offset))
            for room, offset in zip(self.lobby, self.start_offsets, strict=True)
        ]
        offsets = self.start_offsets
        burst = [t for t, o in zip(starters, offsets, strict=True) if o == self.burst_at_s]
        if burst:
            await asyncio.wait(burst, timeout=duration)
            # The pool keeps refilling its prepared deals just after a burst: count that too.
            await asyncio.sleep(BURST_TAIL_S)
            meters.burst_active = False
        await asyncio.sleep(max(0.0, self.deadline - loop.time()))
        wall = loop.time() - opened
        generator_cpu = cpu.pct()
        meters.measuring = False
        for task in starters:
            task.cancel()
        return {
            "hists": {name: h.to_json() for name, h in meters.hists.items()},
            "counts": meters.counts,
            "wall_s": wall,
            "generator_cpu_pct": generator_cpu,
        }

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        conns = [
            conn
            for room in self.racing + self.lobby
            for conn in [*(p.conn for p in room.players), *room.spectators]
        ]
        await _close_all(conns)


async def gather_bounded_starts(rooms: list[Room], limit: int) -> list[float]:
    """Start every room, ``limit`` at a time; the start latencies (set-up, not measured)."""
    gate = asyncio.Semaphore(limit)

    async def one(room: Room) -> float:
        async with gate:
            return await room.start()

    return list(await asyncio.gather(*(one(r) for r in rooms)))


async def run_race(job: Job) -> None:
    """Set up, warm up, then measure one window of racing rooms."""
    load = RaceLoad(job)
    async with _session() as session:
        try:
            started = time.monotonic()
            await load.setup(session)
            setup_s = time.monotonic() - started
            await asyncio.sleep(float(job.get("warmup_s", 2.0)))
            emit("ready", setup_s=round(setup_s, 2), rooms=len(load.racing))
            await wait_for_go(float(job.get("go_timeout_s", 300)))
            result = await load.window()
            emit("result", extra={"setup_s": round(setup_s, 2)}, **result)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(load.close(), 10)


JOBS = {"idle": run_idle, "race": run_race}
