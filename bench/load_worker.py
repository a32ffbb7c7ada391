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
from collections.abc import Callable, Coroutine
from typing import Any

from bench.echo_server import use_fast_loop
from bench.load_procs import raise_open_file_limit
from bench.load_stats import Histogram

Job = dict[str, Any]


def emit(event: str, **fields: Any) -> None:
    """Print one protocol line for the orchestrator."""
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


async def wait_for_go(timeout_s: float) -> None:
    """Block (off the loop) until the orchestrator writes ``go``."""
    line = await asyncio.wait_for(asyncio.to_thread(sys.stdin.readline), timeout_s)
    if line.strip() != "go":
        raise RuntimeError(f"expected 'go' from the orchestrator, got {line!r}")


class CpuMeter:
    """This process's CPU % of one core over a window."""

    def __init__(self) -> None:
        self.wall = time.monotonic()
        self.cpu = time.process_time()

    def pct(self) -> float:
        """CPU % since construction."""
        wall = max(time.monotonic() - self.wall, 1e-9)
        return round(100 * (time.process_time() - self.cpu) / wall, 1)


async def run_echo(job: Job) -> None:
    """Closed-loop round trips on every connection as fast as the server answers.

    Uses the same lean client as the game players, so the two runs cost the
    generator the same per frame.
    """
    from bench.load_wire import WireClient, connect

    payload = b"\x00" * int(job["frame_bytes"])
    rtt = Histogram()
    counters = {"round_trips": 0, "errors": 0}
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
        sent = [clock()]

        def on_message(data: bytes) -> None:
            now = clock()
            rtt.record(now - sent[0])
            counters["round_trips"] += 1
            if loop.time() < deadline:
                sent[0] = now
                client.send(payload)
            else:
                running[0] -= 1
                if running[0] == 0 and not done.done():
                    done.set_result(None)

        client.on_message = on_message
        client.send(payload)

    for client in clients:
        pump(client)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done, float(job["duration_s"]) + 10)
    cpu = meter.pct()
    wall = time.monotonic() - meter.wall
    counters["frames_in"] = counters["round_trips"]
    emit("result", hists={"rtt": rtt.to_json()}, counts=counters, wall_s=wall,
         generator_cpu_pct=cpu)
    for client in clients:
        client.close()
    await asyncio.sleep(0.2)


JOBS: dict[str, Callable[[Job], Coroutine[Any, Any, None]]] = {"echo": run_echo}


def main(argv: list[str] | None = None) -> int:
    """Run the job given as one JSON argument."""
    args = sys.argv[1:] if argv is None else argv
    job: Job = json.loads(args[0])
    raise_open_file_limit()
    use_fast_loop()
    kind = job["kind"]
    if kind not in JOBS:
        from bench import load_jobs  # game jobs need the protocol package

        JOBS.update(load_jobs.JOBS)
    asyncio.run(JOBS[kind](job))
    return 0


if __name__ == "__main__":
    sys.exit(main())
