"""One load-generator process: ``python -m bench.load_worker JOB_JSON``.

The orchestrator (:mod:`bench.load`) starts one or more of these pinned to
the generator core.  Talk is line-based JSON on stdin/stdout:

1. the worker sets its load up (connects, creates rooms) and prints
   ``{"event": "ready", ...}``;
2. it waits for a ``go`` line, runs the measured window for ``duration_s``
   seconds and prints ``{"event": "result", ...}`` with its histograms,
   counters and its own CPU use, then closes its sockets and exits.

Every loop in here is bounded by the job's deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time

from bench.echo_server import use_fast_loop
from bench.load_procs import raise_open_file_limit
from bench.load_stats import Samples
from bench.worker_io import CpuMeter, Job, JobRunner, emit, wait_for_go


async def run_echo(job: Job) -> None:
    """Closed-loop round trips on every connection as fast as the server answers.

    Uses the same lean client as the game players, so the two runs cost the
    generator the same per frame: the frame is built once (as the players'
    moves are built ahead), the loop is paced as theirs is, and round trips
    are timed raw and bucketed after the window (as theirs are).
    """
    from bench.load_wire import (
        OP_BINARY,
        SATURATION_CYCLE_S,
        Pacer,
        WireClient,
        connect,
        frame,
        pace_from_env,
    )

    framed = frame(OP_BINARY, b"\x00" * int(job["frame_bytes"]))
    rtt = Samples()
    gate = asyncio.Semaphore(64)

    async def one() -> WireClient:
        async with gate:
            return await connect(job["url"], "tripeaks.v1.msgpack")

    clients = await asyncio.gather(*(one() for _ in range(int(job["connections"]))))
    emit("ready", connections=len(clients))
    await wait_for_go(float(job.get("go_timeout_s", 300)))
    meter = CpuMeter()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + float(job["duration_s"])
    clock = time.perf_counter
    done = loop.create_future()
    running = [len(clients)]

    def pump(client: WireClient) -> None:
        sent = clock()
        add = rtt.add

        def on_message(data: bytes) -> None:
            nonlocal sent
            now = clock()
            add(now - sent)
            if loop.time() < deadline:
                sent = now
                client.write(framed)
            else:
                running[0] -= 1
                if running[0] == 0 and not done.done():
                    done.set_result(None)

        client.on_message = on_message
        client.write(framed)

    for client in clients:
        pump(client)
    Pacer(pace_from_env(SATURATION_CYCLE_S)).start(loop, lambda: loop.time() < deadline)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done, float(job["duration_s"]) + 10)
    cpu = meter.pct()
    wall = time.monotonic() - meter.wall
    counters = {"round_trips": len(rtt), "errors": 0, "frames_in": len(rtt)}
    emit("result", hists={"rtt": rtt.histogram().to_json()}, counts=counters, wall_s=wall,
         generator_cpu_pct=cpu)
    for client in clients:
        client.close()
    await asyncio.sleep(0.2)


def runner_for(kind: str) -> JobRunner:
    """The coroutine function that runs a job of ``kind``."""
    if kind == "echo":
        return run_echo
    from bench.load_jobs import JOBS  # game jobs need the protocol package: echo runs stay lean

    return JOBS[kind]


def main(argv: list[str] | None = None) -> int:
    """Run the job given as one JSON argument."""
    args = sys.argv[1:] if argv is None else argv
    job: Job = json.loads(args[0])
    raise_open_file_limit()
    use_fast_loop()
    asyncio.run(runner_for(job["kind"])(job))
    return 0


if __name__ == "__main__":
    sys.exit(main())
