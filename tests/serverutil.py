"""Start a real TriPeaks server in-process on 127.0.0.1 with an ephemeral port.

For every test suite that needs a server::

    from tests.serverutil import running_server

    async def test_something(tmp_path):
        async with running_server(tmp_path) as server:
            async with websockets.connect(server.ws_url, subprotocols=["tripeaks.v1.json"]) as ws:
                ...

``running_server(tmp_path, **settings)`` takes any :class:`server.config.Settings`
field as a keyword (``reconnect_grace_s=0.5``, ``progress_hz=50``, ...).  The
database defaults to a fresh SQLite file under ``tmp_path`` (pass ``db=URL``
to choose; reuse the same URL to "restart" a server on the same data).  All
servers in one test process share one small deal process pool.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import json
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import websockets
from aiohttp import web
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import InvalidStatus
from websockets.typing import Subprotocol

from protocol.rules.game import DRAW, Move
from protocol.wire import codec
from protocol.wire import messages as m
from server.app import HUB, STORE, create_app, make_executor
from server.config import Settings, from_env
from server.hub import Hub
from server.storage.store import RaceStore
from server.transport import unixsocket

_POOL: concurrent.futures.ProcessPoolExecutor | None = None

#: Settings that keep tests quick unless a test asks otherwise.
TEST_DEFAULTS: dict[str, Any] = {
    "host": "127.0.0.1",
    "port": 0,
    "empty_room_grace_s": 5.0,
    "deals_ahead": 0,
    "log_level": "WARNING",
    "connect_burst": 1000.0,
    "connect_rate": 1000.0,
    "http_burst": 1000.0,
    "http_rate": 1000.0,
}


def shared_deal_pool() -> concurrent.futures.ProcessPoolExecutor:
    """One deal pool for every server this process starts (worker start-up is slow)."""
    global _POOL
    if _POOL is None:
        # Normal priority: tests must not wait on whatever else this machine is running.
        _POOL = make_executor(2, idle=False)
        atexit.register(_POOL.shutdown, wait=False, cancel_futures=True)
    return _POOL


@dataclass
class RunningServer:
    """A started server: where it listens and handles on its insides."""

    url: str  # http://127.0.0.1:PORT
    ws_url: str  # ws://127.0.0.1:PORT/ws
    port: int
    db_url: str
    settings: Settings
    app: web.Application
    runner: web.AppRunner
    #: The Unix socket made for the ``unix_socket`` setting, and its inode.
    unix_socket: tuple[Path, int] | None = None

    @property
    def hub(self) -> Hub:
        return self.app[HUB]

    @property
    def store(self) -> RaceStore:
        return self.app[STORE]

    async def stop(self) -> None:
        """Shut down as on SIGTERM: clients told, races stored, sockets closed (and the
        Unix socket's file removed)."""
        await self.runner.cleanup()
        if self.unix_socket is not None:
            unixsocket.remove(*self.unix_socket)


async def start_server(
    tmp_path: Path | str | None = None,
    *,
    executor: concurrent.futures.Executor | None = None,
    **overrides: Any,
) -> RunningServer:
    """Start a server (its deal workers: ``executor``, else the shared pool), also on a
    Unix socket when ``unix_socket`` is set, as ``--unix-socket`` makes it; the caller
    must ``await server.stop()``."""
    base = Path(tmp_path) if tmp_path is not None else Path(tempfile.mkdtemp(prefix="tripeaks-"))
    values = {**TEST_DEFAULTS, **overrides}
    values.setdefault("db", f"sqlite:///{base / 'races.db'}")
    settings = from_env({}, **values)
    app = create_app(settings, executor=executor or shared_deal_pool())
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=5.0)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    await site.start()
    port = runner.addresses[0][1]
    unix: tuple[Path, int] | None = None
    if settings.unix_socket:
        path = Path(settings.unix_socket)
        try:
            unix = path, await unixsocket.listen(runner, path)
        except BaseException:
            await runner.cleanup()
            raise
    return RunningServer(
        url=f"http://127.0.0.1:{port}",
        ws_url=f"ws://127.0.0.1:{port}/ws",
        port=port,
        db_url=settings.db,
        settings=settings,
        app=app,
        runner=runner,
        unix_socket=unix,
    )


@asynccontextmanager
async def running_server(
    tmp_path: Path | str | None = None, **overrides: Any
) -> AsyncIterator[RunningServer]:
    """A server for the duration of the ``async with`` block."""
    server = await start_server(tmp_path, **overrides)
    try:
        yield server
    finally:
        await server.stop()


async def upgrade_statuses(
    connect: Callable[[dict[str, str]], Awaitable[ClientConnection]],
    forwarded: Sequence[str | None],
) -> list[int]:
    """One WebSocket upgrade per entry of ``forwarded`` (its ``X-Forwarded-For``, ``None``:
    no header), each opened with ``connect(headers)`` and closed: 101 or the refusal's
    HTTP status, in order."""
    statuses = []
    for address in forwarded:
        headers = {} if address is None else {"X-Forwarded-For": address}
        try:
            ws = await connect(headers)
        except InvalidStatus as refused:
            statuses.append(refused.response.status_code)
        else:
            statuses.append(101)
            await ws.close()
    return statuses


# ---- a small protocol client for tests ---------------------------------------
M = TypeVar("M")

#: Seconds a test waits for a frame.  Generous: only a failing test ever waits
#: this long, and a loaded CI machine can take seconds to start deal workers.
DEFAULT_TIMEOUT = 30.0


class TestClient:
    """A raw protocol client: sends messages, decodes and keeps every frame it receives."""

    __test__ = False  # not a pytest test class

    def __init__(self, ws: ClientConnection, encoding: codec.Encoding) -> None:
        self.ws = ws
        self.encoding = encoding
        self.frames: list[m.ServerMessage] = []
        self.welcome: m.Welcome | None = None
        self._unread: list[m.ServerMessage] = []

    @property
    def player_id(self) -> str:
        assert self.welcome is not None
        return self.welcome.player_id

    async def send(self, message: m.ClientMessage) -> None:
        await self.ws.send(codec.encode(message, self.encoding))

    async def send_raw(self, frame: bytes | str) -> None:
        await self.ws.send(frame)

    async def recv(self, timeout: float = DEFAULT_TIMEOUT) -> m.ServerMessage:
        """The next frame, decoded (strictly: a bad server frame fails the test)."""
        if self._unread:
            return self._unread.pop(0)
        raw = await asyncio.wait_for(self.ws.recv(), timeout)
        message = codec.decode_server(raw, self.encoding)
        self.frames.append(message)
        return message

    async def expect(self, kind: type[M], timeout: float = DEFAULT_TIMEOUT) -> M:
        """Skip frames until one of type ``kind`` arrives; skipped frames stay readable."""
        skipped: list[m.ServerMessage] = []
        deadline = asyncio.get_running_loop().time() + timeout
        try:
            while True:
                left = deadline - asyncio.get_running_loop().time()
                message = await self.recv(max(0.01, left))
                if isinstance(message, kind):
                    return message
                skipped.append(message)
        finally:
            self._unread = skipped + self._unread

    def drop_unread(self) -> None:
        self._unread.clear()

    async def request(
        self, message: m.ClientMessage, kind: type[M], timeout: float = DEFAULT_TIMEOUT
    ) -> M:
        """Send ``message`` and wait for the first reply of type ``kind``."""
        await self.send(message)
        return await self.expect(kind, timeout)

    async def close(self) -> None:
        await self.ws.close()


async def connect(
    ws_url: str,
    name: str = "player",
    *,
    encoding: str = "msgpack",
    token: str | None = None,
    bot: bool = False,
    hello: bool = True,
) -> TestClient:
    """Open a connection, say hello and wait for ``welcome``; ``encoding`` names the dialect
    (``"json.v1"``: JSON of protocol version 1)."""
    enc = codec.dialect(encoding)  # type: ignore[arg-type]
    protocol = codec.SUBPROTOCOL_FOR_ENCODING[enc]
    ws = await websockets.connect(
        ws_url, subprotocols=[Subprotocol(protocol)], compression=None, max_size=2**20
    )
    client = TestClient(ws, enc)
    if hello:
        client.welcome = await client.request(
            m.Hello(name=name, version=enc.version, token=token, bot=bot), m.Welcome
        )
    return client


async def spawn_server(
    env: Mapping[str, str], *, timeout: float = 30, own_group: bool = False
) -> tuple[asyncio.subprocess.Process, dict[str, Any]]:
    """``tripeaks-server`` run with ``env``, once its ``server_started`` line is out: the
    process and that line.  Its stdout goes nowhere (nothing it starts may hold a test pipe
    open); its stderr is a pipe, every line of it JSON.  ``own_group`` starts it in a process
    group of its own, as a terminal does.  A server whose start fails the test is killed
    first, so none is left running."""
    exe = Path(sys.executable).with_name("tripeaks-server")
    proc = await asyncio.create_subprocess_exec(
        str(exe), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env,
        process_group=0 if own_group else None,
    )
    assert proc.stderr is not None
    try:
        while True:
            line = await asyncio.wait_for(proc.stderr.readline(), timeout)
            assert line, "tripeaks-server exited before it started"
            event: dict[str, Any] = json.loads(line)
            if event["event"] == "server_started":
                return proc, event
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise


# ---- race helpers --------------------------------------------------------------
def move_request(seq: int, step: Move) -> m.MoveRequest:
    """The move message for one step of a line (a position or ``"draw"``)."""
    if step == DRAW:
        return m.MoveRequest(seq, m.MoveAction.DRAW)
    assert isinstance(step, int)
    return m.MoveRequest(seq, m.MoveAction.PLAY, step)


async def open_room(
    ws_url: str, names: list[str], *, encoding: str = "msgpack", **options: Any
) -> tuple[list[TestClient], m.RoomState]:
    """Connect one client per name; the first hosts a room with ``options``, the rest join
    and get ready.  Returns the clients (host first) and the host's latest room state."""
    options.setdefault("countdown_s", 0)
    if isinstance(options.get("undo"), str):
        options["undo"] = m.UndoPolicy(options["undo"])
    host = await connect(ws_url, names[0], encoding=encoding)
    state = await host.request(m.CreateRoom(m.RoomOptions(**options)), m.RoomState)
    clients = [host]
    for name in names[1:]:
        client = await connect(ws_url, name, encoding=encoding)
        await client.request(m.Join(state.code), m.RoomState)
        await client.send(m.Ready(True))
        clients.append(client)
    want = len(names)
    while True:
        others_ready = all(mb.ready for mb in state.members if mb.player_id != host.player_id)
        if len(state.members) == want and others_ready:
            return clients, state
        state = await host.expect(m.RoomState)
