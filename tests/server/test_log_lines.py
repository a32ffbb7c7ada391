"""stderr holds JSON lines only, whatever clients send and however the server ends.

The real ``tripeaks-server`` runs as a subprocess; broken requests go over raw
sockets, since no HTTP library sends them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from server import logs

ROOT = Path(__file__).resolve().parents[2]

#: One of each request aiohttp's parser refuses (each wrote an 11-line traceback).
BAD_REQUESTS: tuple[bytes, ...] = (
    b"GET /\xff HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"b" * 9000 + b"\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(300)) + b"\r\n",
    b"POST /api/rooms HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    b"POST /api/rooms HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
)
#: A WebSocket upgrade offering no subprotocol the server knows.
UNKNOWN_SUBPROTOCOL = (
    b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Protocol: nope\r\n\r\n"
)


@dataclass
class Proc:
    proc: asyncio.subprocess.Process
    port: int
    lines: list[bytes]


@asynccontextmanager
async def tripeaks_server(tmp_path: Path, *flags: str) -> AsyncIterator[Proc]:
    """``python -m server`` on a free port, once its ``server_started`` line is out."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = ["--port", "0", "--db", f"sqlite:///{tmp_path / 'races.db'}", "--deals-ahead", "0"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server", *args, "--deal-workers", "1", *flags,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env, cwd=ROOT,
    )
    assert proc.stderr is not None
    lines: list[bytes] = []
    try:
        while True:
            line = await asyncio.wait_for(proc.stderr.readline(), 30)
            assert line, b"".join(lines)
            lines.append(line)
            if b'"server_started"' in line:
                break
        yield Proc(proc, json.loads(line)["port"], lines)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def _exited(processes: list[psutil.Process]) -> None:
    while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in processes):
        await asyncio.sleep(0.1)


async def rest_of_stderr(proc: Proc) -> list[bytes]:
    """Every line up to the end of stderr (the server's and whatever it started)."""
    assert proc.proc.stderr is not None
    rest = await asyncio.wait_for(proc.proc.stderr.read(), 60)
    return proc.lines + rest.splitlines(keepends=True)


def json_objects(lines: list[bytes]) -> list[dict[str, object]]:
    """Each line as a JSON object; fails naming the first line that is not one."""
    docs = []
    for line in lines:
        try:
            doc = json.loads(line)
        except ValueError:
            raise AssertionError(f"not a JSON line: {line[:200]!r}") from None
        assert isinstance(doc, dict), line
        docs.append(doc)
    return docs


async def send_and_read(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    try:
        return await asyncio.wait_for(reader.read(300), 10)
    finally:
        writer.close()


async def test_broken_requests_log_a_json_line_each_at_a_bounded_rate_and_no_traceback(
    tmp_path: Path,
) -> None:
    async with tripeaks_server(tmp_path) as server:
        started = time.monotonic()
        for data in BAD_REQUESTS:
            assert (await send_and_read(server.port, data)).startswith(b"HTTP/1.")
        # Refused before the upgrade (docs/protocol.md, Connecting): no library warning.
        assert b" 400 " in await send_and_read(server.port, UNKNOWN_SUBPROTOCOL)
        for n in range(300):
            await send_and_read(server.port, BAD_REQUESTS[n % len(BAD_REQUESTS)])
        elapsed = time.monotonic() - started
        server.proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(server.proc.wait(), 30) == 0
        docs = json_objects(await rest_of_stderr(server))
    bad = [doc for doc in docs if doc["event"] == "bad_http_request"]
    windows = elapsed // logs.THROTTLE_WINDOW_S + 1
    assert 1 <= len(bad) <= logs.THROTTLE_LINES * windows, len(bad)
    assert all(doc["level"] == "warning" and "error" not in doc for doc in bad)
    assert all(doc["address"] == "127.0.0.1" and doc["status"] == 400 for doc in bad)
    assert not [doc for doc in docs if doc["event"] == "library_log"]
    assert docs[-1]["event"] == "server_stopped"


@pytest.mark.skip(reason="hangs since today's merges: stderr stays open after SIGKILL (a deal "
                  "worker outlives the server); cause not yet found")
async def test_a_server_killed_outright_leaves_only_json_lines_on_stderr(tmp_path: Path) -> None:
    """The deal pool's resource tracker outlives a killed server and used to warn in text."""
    async with tripeaks_server(tmp_path) as server:
        await asyncio.sleep(0.5)
        children = psutil.Process(server.proc.pid).children(recursive=True)
        server.proc.send_signal(signal.SIGKILL)
        await server.proc.wait()
        # The resource tracker says its piece and exits; a deal worker left busy would
        # hold stderr open for as long as its job runs: give them 10 s, then end them.
        _, pending = await asyncio.wait([asyncio.ensure_future(_exited(children))], timeout=10)
        for child in children if pending else ():
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        docs = json_objects(await rest_of_stderr(server))
    assert docs[-1]["event"] == "server_started"


async def test_a_silent_connection_to_tripeaks_server_is_closed_after_the_request_timeout(
    tmp_path: Path,
) -> None:
    async with tripeaks_server(tmp_path, "--request-timeout-s", "0.5") as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        server.proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(server.proc.wait(), 30) == 0


def test_the_throttle_admits_a_few_lines_per_window_and_counts_the_rest() -> None:
    throttle = logs.Throttle(lines=3, window_s=10.0)
    admitted = [throttle.admit("k", 100.0 + n * 0.1) for n in range(10)]
    assert admitted == [0, 0, 0] + [None] * 7
    assert throttle.admit("other", 101.0) == 0  # each source has its own budget
    assert throttle.admit("k", 110.5) == 7  # the next window's first line says what was lost
    assert throttle.admit("k", 110.6) == 0


def test_another_librarys_record_becomes_one_json_line() -> None:
    formatter = logs.JsonFormatter()
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        info = sys.exc_info()
    record = logging.LogRecord("asyncio", logging.ERROR, "x.py", 1, "Task %s\nfailed", ("t",), info)
    line = formatter.format(record)
    assert "\n" not in line
    doc = json.loads(line)
    assert doc["event"] == "library_log" and doc["logger"] == "asyncio"
    assert doc["message"] == "Task t failed"
    assert "ValueError: boom" in doc["error"]
