"""What a load-generator job shares with the process that runs it.

A job talks to the orchestrator (:mod:`bench.load`) in JSON lines on
stdout and waits for its ``go`` on stdin; :mod:`bench.load_worker` runs the
echo job and :mod:`bench.load_jobs` the game jobs, both through these.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any

Job = dict[str, Any]
#: A job's coroutine function: it emits ``ready``, waits for ``go``, emits ``result``.
JobRunner = Callable[[Job], Coroutine[Any, Any, None]]


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
