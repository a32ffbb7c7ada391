"""The game-server jobs a generator process can run (:mod:`bench.load_worker` runs them).

- ``idle``: N connected players that said hello and then do nothing (memory).
- ``race``: R racing rooms of K players and S spectators at a pace, plus
  lobby rooms started during the window at given offsets (room-start latency,
  and the burst of the interference test).
"""

from __future__ import annotations

import asyncio
import gc
import random
import time
from typing import Any

from bench.load_game import (
    CONNECT_GATE,
    SETUP_GATE,
    Clock,
    Conn,
    Meters,
    Room,
    gather_bounded,
    make_room,
    open_conn,
)
from bench.worker_io import CpuMeter, Job, JobRunner, emit, wait_for_go

#: How long after the last start of a burst moves still count as "during the burst".
BURST_TAIL_S = 1.0


async def run_idle(job: Job) -> None:
    """Connect ``connections`` players (hello only) and hold them until ``go``."""
    meters = Meters()
    gate = asyncio.Semaphore(CONNECT_GATE)
    count = int(job["connections"])
    conns = await asyncio.gather(
        *(open_conn(job["url"], meters, f"i{n}", gate) for n in range(count))
    )
    emit("ready", connections=len(conns))
    await wait_for_go(float(job.get("go_timeout_s", 300)))
    emit("result", hists={}, counts={"connections": len(conns)}, wall_s=0.0,
         generator_cpu_pct=0.0)
    _close_all(conns)
    await asyncio.sleep(0.2)


def _close_all(conns: list[Conn]) -> None:
    for conn in conns:
        conn.close()


class RaceLoad:
    """The rooms of one ``race`` job and the tasks that play them."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.meters = Meters()
        self.rng = random.Random(int(job.get("seed", 1)))
        self.interval_s = float(job["interval_s"])
        self.clock = Clock()
        self.racing: list[Room] = []
        self.lobby: list[Room] = []
        self.start_offsets: list[float] = [float(x) for x in job.get("start_offsets_s", [])]
        self.burst_at_s: float | None = job.get("burst_at_s")
        #: Seconds the set-up took to seat every room, then to start the racing ones.
        self.setup_phases: dict[str, float] = {}

    async def setup(self) -> None:
        url = self.job["url"]
        gate = asyncio.Semaphore(CONNECT_GATE)
        players, spectators = int(self.job["players"]), int(self.job["spectators"])

        def factory(index: int) -> Any:
            return lambda: make_room(
                url, self.meters, index=index, players=players,
                spectators=spectators, gate=gate, rng=self.rng,
            )

        total = int(self.job["rooms"]) + len(self.start_offsets)
        base = int(self.job.get("index_base", 0))
        began = time.monotonic()
        rooms = await gather_bounded([factory(base + i) for i in range(total)], SETUP_GATE)
        self.racing, self.lobby = rooms[: int(self.job["rooms"])], rooms[int(self.job["rooms"]) :]
        seated = time.monotonic()
        await gather_bounded_starts(self.racing, SETUP_GATE)
        self.setup_phases = {"rooms_s": round(seated - began, 2),
                             "starts_s": round(time.monotonic() - seated, 2)}
        for room in self.racing:
            self._play(room)

    def _play(self, room: Room) -> None:
        for player in room.players:
            player.play(self.interval_s, self.clock)

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
        meters.worst_by_second.clear()
        meters.opened = time.perf_counter()
        meters.measuring = True
        cpu = CpuMeter()
        duration = float(self.job["duration_s"])
        loop = asyncio.get_running_loop()
        opened = loop.time()
        self.clock.deadline = opened + duration
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
        await asyncio.sleep(max(0.0, self.clock.deadline - loop.time()))
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
            "extra": {"worst_rtt_ms_by_second": [round(x * 1000, 1) for x in meters.worst_by_second]},  # noqa: E501
        }

    def close(self) -> None:
        conns = []
        for room in self.racing + self.lobby:
            for player in room.players:
                player.stop()
                conns.append(player.conn)
            conns += room.spectators
        _close_all(conns)


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
    try:
        started = time.monotonic()
        await load.setup()
        setup_s = time.monotonic() - started
        # The generator's own pauses would show up as server latency: move every
        # object made so far out of the collector's sight, and collect rarely.
        gc.collect()
        gc.freeze()
        gc.set_threshold(100_000, 50, 1000)
        await asyncio.sleep(float(job.get("warmup_s", 2.0)))
        emit("ready", setup_s=round(setup_s, 2), rooms=len(load.racing), **load.setup_phases)
        await wait_for_go(float(job.get("go_timeout_s", 300)))
        result = await load.window()
        result["extra"]["setup_s"] = round(setup_s, 2)
        result["counts"]["unanswered"] = sum(
            p.awaiting for room in load.racing + load.lobby for p in room.players
        )
        emit("result", **result)
    finally:
        load.close()
        await asyncio.sleep(0.2)


JOBS: dict[str, JobRunner] = {"idle": run_idle, "race": run_race}
