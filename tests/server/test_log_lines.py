"""stderr holds JSON lines only, whatever clients send and however the server ends.

The real ``tripeaks-server`` runs as a subprocess; broken requests go over raw
sockets, since no HTTP library sends them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import re
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from protocol.wire import messages as m
from server import logs
from server.app import make_executor, stop_executor
from tests.serverutil import TestClient, connect, open_room

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


#: Seconds stderr may stay open once the server has ended: a deal worker that was
#: still starting (importing, seconds on a busy machine) when the server died then
#: notices and exits.  No more: a worker that waits for work holds stderr for ever.
STDERR_EOF_S = 15.0
#: The environment variable marking every process one test's server starts (a killed
#: server's processes are reparented: their parent no longer finds them).
MARKER = "LOG_LINES_TEST_RUN"


@dataclass
class Proc:
    proc: asyncio.subprocess.Process
    marker: str
    port: int = 0
    lines: list[bytes] = field(default_factory=list)


@asynccontextmanager
async def launched(tmp_path: Path, *flags: str) -> AsyncIterator[Proc]:
    """``python -m server`` on a free port, just started; whatever it and its processes
    leave running at the end is killed (a failing test must not leave them behind)."""
    marker = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": str(ROOT), MARKER: marker}
    args = ["--port", "0", "--db", f"sqlite:///{tmp_path / 'races.db'}", "--deals-ahead", "0"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server", *args, "--deal-workers", "1", *flags,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env, cwd=ROOT,
    )
    try:
        yield Proc(proc, marker)
    finally:
        if proc.returncode is None:
            proc.kill()
        for process in marked(marker):
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        # wait() returns once stderr is closed as well, by every process holding it.
        await asyncio.wait_for(proc.wait(), 30)


async def started(server: Proc) -> None:
    """Read stderr up to the ``server_started`` line, and note the port it names."""
    assert server.proc.stderr is not None
    while True:
        line = await asyncio.wait_for(server.proc.stderr.readline(), 30)
        assert line, b"".join(server.lines)
        server.lines.append(line)
        if b'"server_started"' in line:
            server.port = json.loads(line)["port"]
            return


@asynccontextmanager
async def tripeaks_server(tmp_path: Path, *flags: str) -> AsyncIterator[Proc]:
    """``python -m server`` on a free port, once its ``server_started`` line is out."""
    async with launched(tmp_path, *flags) as server:
        await started(server)
        yield server


def marked(marker: str) -> list[psutil.Process]:
    """The live processes whose environment carries ``marker``."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):  # gone, a zombie, or not ours to read
            if process.environ().get(MARKER) == marker:
                found.append(process)
    return found


def described(processes: list[psutil.Process]) -> str:
    """Each process's pid and command line, for a failure message."""
    lines = []
    for process in processes:
        with contextlib.suppress(psutil.Error):
            lines.append(f"{process.pid}: {' '.join(process.cmdline())[:160]}")
    return "; ".join(lines) or "none found"


async def ended(server: Proc, signum: int = signal.SIGTERM) -> list[bytes]:
    """Signal the server, wait for its exit (status 0 after SIGTERM), and return every
    line of its stderr (see :func:`rest_of_stderr`)."""
    server.proc.send_signal(signum)
    deadline = time.monotonic() + 60  # a loaded machine stops a server slowly
    # Not wait(): it waits for stderr's end as well, which is tested on its own below.
    while server.proc.returncode is None:
        assert time.monotonic() < deadline, f"the server ignored signal {signum} for 60 s"
        await asyncio.sleep(0.05)
    lines = await rest_of_stderr(server)
    await asyncio.wait_for(server.proc.wait(), 10)
    if signum == signal.SIGTERM:
        assert server.proc.returncode == 0, b"".join(lines[-5:])
    return lines


async def rest_of_stderr(proc: Proc) -> list[bytes]:
    """Every line up to the end of stderr (the server's and whatever it started); fails
    naming the processes still holding it :data:`STDERR_EOF_S` seconds on."""
    assert proc.proc.stderr is not None
    try:
        rest = await asyncio.wait_for(proc.proc.stderr.read(), STDERR_EOF_S)
    except TimeoutError:
        raise AssertionError(
            f"stderr still open {STDERR_EOF_S} s after the server ended; "
            f"its processes left: {described(marked(proc.marker))}"
        ) from None
    return proc.lines + rest.splitlines(keepends=True)


def json_objects(lines: list[bytes]) -> list[dict[str, object]]:
    """Each line as a JSON object; fails naming the first line that is not one."""
    docs = []
    for at, line in enumerate(lines):
        try:
            doc = json.loads(line)
        except ValueError:
            rest = b"".join(lines[at:])[:3000].decode(errors="replace")
            raise AssertionError(f"not a JSON line: {line[:200]!r}; from there:\n{rest}") from None
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
        docs = json_objects(await ended(server))
    bad = [doc for doc in docs if doc["event"] == "bad_http_request"]
    windows = elapsed // logs.THROTTLE_WINDOW_S + 1
    assert 1 <= len(bad) <= logs.THROTTLE_LINES * windows, len(bad)
    assert all(doc["level"] == "warning" and "error" not in doc for doc in bad)
    assert all(doc["address"] == "127.0.0.1" and doc["status"] == 400 for doc in bad)
    assert not [doc for doc in docs if doc["event"] == "library_log"]
    assert docs[-1]["event"] == "server_stopped"


async def test_a_server_killed_outright_leaves_only_json_lines_on_stderr(tmp_path: Path) -> None:
    """The deal pool's resource tracker outlives a killed server and used to warn in text."""
    async with tripeaks_server(tmp_path) as server:
        await asyncio.sleep(0.5)
        docs = json_objects(await ended(server, signal.SIGKILL))
    assert docs[-1]["event"] == "server_started"


def pool_processes(server: Proc) -> list[psutil.Process]:
    """The server's children: its deal workers and their resource tracker."""
    children: list[psutil.Process] = []
    with contextlib.suppress(psutil.NoSuchProcess):
        children = psutil.Process(server.proc.pid).children()
    return children


def is_worker(process: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return "spawn_main" in " ".join(process.cmdline())
    return False


def is_ready(process: psutil.Process) -> bool:
    """Whether a deal worker is past its start: its initializer set idle priority."""
    with contextlib.suppress(OSError):
        return os.sched_getscheduler(process.pid) == os.SCHED_IDLE
    return False


async def until(test: Callable[[], bool], what: str) -> None:
    """Poll often, so the moment looked for is caught while it lasts."""
    deadline = time.monotonic() + 60
    while not test():
        assert time.monotonic() < deadline, f"never saw {what}"
        await asyncio.sleep(0.005)


async def pool_made(server: Proc, clients: list[TestClient]) -> None:
    """The pool exists (its queues started the resource tracker), no worker yet."""
    await until(lambda: bool(pool_processes(server)), "the resource tracker")


async def first_worker_starting(server: Proc, clients: list[TestClient]) -> None:
    """A deal worker has just been spawned (for the daily deal): it is importing."""
    await until(lambda: any(map(is_worker, pool_processes(server))), "a deal worker")


async def workers_busy(server: Proc, clients: list[TestClient]) -> None:
    """Claims of names are being hashed (scrypt) by a worker past its start."""
    await started(server)
    url = f"ws://127.0.0.1:{server.port}/ws"
    for n in range(12):
        client = await connect(url, hello=False)
        clients.append(client)
        hello = m.Hello(name=f"keyed{n}", version=client.encoding.version, key="k" * 22 + str(n))
        await client.send(hello)

    def hashing() -> bool:
        workers = [p for p in pool_processes(server) if is_worker(p) and is_ready(p)]
        with contextlib.suppress(psutil.Error):
            return any(p.status() == psutil.STATUS_RUNNING for p in workers)
        return False

    await until(hashing, "a worker hashing a key")


async def races_starting(server: Proc, clients: list[TestClient]) -> None:
    """Races have just started: the pool deals the next ones and computes their pars."""
    await started(server)
    url = f"ws://127.0.0.1:{server.port}/ws"
    for room in range(3):
        players, _ = await open_room(url, [f"host{room}", f"guest{room}"])
        clients.extend(players)
    for host in clients[::2]:
        await host.send(m.Start())
    await clients[0].expect(m.RaceStart)


#: What Python itself prints in a spawned worker whose server was killed between
#: starting it and handing it its start (``multiprocessing.spawn``, before any of the
#: project's code runs in it): the one text a killed server's stderr may carry.
SPAWN_ORPHANED = re.compile(
    rb"Traceback \(most recent call last\):\n"
    rb'(?:  File "(?:<string>|[^"\n]*/multiprocessing/spawn\.py)", line \d+, in [\w<>]+\n'
    rb"(?:    .*\n)*)+"
    rb"EOFError: Ran out of input\n"
)


def without_orphaned_spawn(lines: list[bytes]) -> list[bytes]:
    """``lines`` less the traceback of a worker orphaned in its start (at most one per
    worker), so every other line must still be JSON."""
    text = b"".join(lines)
    rest = SPAWN_ORPHANED.sub(b"", text, count=2)
    return rest.splitlines(keepends=True)


def survivors(server: Proc, before: list[psutil.Process]) -> list[psutil.Process]:
    """The processes of the server's pool still alive: found by the marker, or (one
    exiting has no environment left to read) among those it had at the kill."""
    alive = {p.pid: p for p in marked(server.marker)}
    for process in before:
        with contextlib.suppress(psutil.Error):
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive[process.pid] = process
    return list(alive.values())


@pytest.mark.parametrize(
    "moment", [pool_made, first_worker_starting, workers_busy, races_starting]
)
async def test_no_process_of_a_killed_servers_pool_outlives_it_whenever_it_dies(
    tmp_path: Path, moment: Callable[[Proc, list[TestClient]], Awaitable[None]]
) -> None:
    clients: list[TestClient] = []
    async with launched(tmp_path, "--deal-workers", "2") as server:
        await moment(server, clients)  # clients: kept open until the server is gone
        before = pool_processes(server)
        lines = await ended(server, signal.SIGKILL)
        deadline = time.monotonic() + 5  # stderr is closed as a process exits: let it end
        while (left := survivors(server, before)) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for client in clients:
            await client.close()
    assert before
    assert not left, described(left)
    json_objects(without_orphaned_spawn(lines))


def test_only_an_orphaned_workers_start_traceback_is_let_through() -> None:
    orphaned = (
        b"Traceback (most recent call last):\n"
        b'  File "<string>", line 1, in <module>\n'
        b'  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 122, in spawn_main\n'
        b"    exitcode = _main(fd, parent_sentinel)\n"
        b"               ^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        b'  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 130, in _main\n'
        b"    preparation_data = reduction.pickle.load(from_parent)\n"
        b"EOFError: Ran out of input\n"
    )
    started = b'{"event": "server_started"}\n'
    lines = (started + orphaned + started).splitlines(keepends=True)
    assert json_objects(without_orphaned_spawn(lines)) == [{"event": "server_started"}] * 2
    ours = orphaned.replace(b"multiprocessing/spawn.py", b"server/app.py")
    with pytest.raises(AssertionError, match="not a JSON line"):
        json_objects(without_orphaned_spawn([started, *ours.splitlines(keepends=True)]))
    other = orphaned.replace(b"EOFError: Ran out of input", b"ValueError: bad")
    with pytest.raises(AssertionError, match="not a JSON line"):
        json_objects(without_orphaned_spawn(other.splitlines(keepends=True)))


def test_stopping_the_pool_ends_its_worker_at_once_even_with_a_job_under_way() -> None:
    """Else the server, at exit, waits for the job (idle priority: long on a busy machine)."""
    ours = {p.pid for p in psutil.Process().children()}
    executor = make_executor(1)
    future = executor.submit(time.sleep, 300)
    deadline = time.monotonic() + 60
    while not (workers := [p for p in psutil.Process().children() if p.pid not in ours
                           and is_worker(p)]):
        assert time.monotonic() < deadline, "no worker started"
        time.sleep(0.01)
    try:
        stop_executor(executor)
        with pytest.raises(concurrent.futures.process.BrokenProcessPool):
            future.result(timeout=30)
        assert not [p for p in workers if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    finally:
        for worker in workers:
            with contextlib.suppress(psutil.NoSuchProcess):
                worker.kill()


async def test_a_silent_connection_to_tripeaks_server_is_closed_after_the_request_timeout(
    tmp_path: Path,
) -> None:
    async with tripeaks_server(tmp_path, "--request-timeout-s", "0.5") as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        json_objects(await ended(server))


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
