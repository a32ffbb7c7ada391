"""``tripeaks-server``: run the race server until SIGTERM or SIGINT.

On either signal the server stops accepting connections, tells every client
why (a ``closing`` error then close code 1001), stores every race result it
holds, and exits with status 0.  A database that cannot be written stops it
at start-up with status 2 (other start-up failures: 1).
"""

from __future__ import annotations

import asyncio
import gc
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from aiohttp import web

from server import logs
from server.config import Settings, SettingsError, parse


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop when it is installed (about 2.7x the round trips here), else None."""
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


async def serve(settings: Settings, *, stop: asyncio.Event | None = None) -> int:
    """Run the server until ``stop`` is set or a termination signal arrives."""
    # Imported late: parse errors need no aiohttp.
    from server.app import create_app, start_cluster
    from server.storage.store import DatabaseNotWritableError
    from server.transport import unixsocket
    from server.transport.httpguard import GuardedRunner

    loop = asyncio.get_running_loop()
    stop = stop or asyncio.Event()
    # Handlers first: a SIGTERM during start-up still shuts down in order.
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    app = create_app(settings)
    runner = GuardedRunner(
        app,
        settings,
        handle_signals=False,
        shutdown_timeout=settings.shutdown_timeout_s,
        access_log=None,
    )
    try:
        await runner.setup()
    except Exception as exc:
        logs.event("server_failed", level=40, reason=str(exc))
        await runner.cleanup()
        # A database that takes no writes is a setting to fix, like a bad flag.
        return 2 if isinstance(exc, DatabaseNotWritableError) else 1
    site = web.TCPSite(runner, settings.host, settings.port)
    try:
        await site.start()
    except OSError as exc:
        logs.event("server_failed", level=40, reason=f"cannot listen: {exc}")
        await runner.cleanup()
        return 1
    unix: tuple[Path, int] | None = None
    if settings.unix_socket:
        path = Path(settings.unix_socket)
        try:
            unix = path, await unixsocket.listen(runner, path)
        except OSError as exc:
            logs.event("server_failed", level=40, reason=f"cannot listen on {path}: {exc}")
            await runner.cleanup()
            return 1
    _tune_gc()
    addresses = runner.addresses  # the bound sockets' addresses: port 0 names a free port
    port = addresses[0][1] if addresses else settings.port
    start_cluster(app, f"ws://{_reachable(settings.host)}:{port}/ws")
    logs.event(
        "server_started",
        host=settings.host,
        port=port,
        url=f"ws://{settings.host}:{port}/ws",
        http=f"http://{settings.host}:{port}/",  # where players and spectators open the site
        unix_socket=None if unix is None else str(unix[0]),
    )
    await stop.wait()
    logs.event("server_stopping")
    await runner.cleanup()
    if unix is not None:
        unixsocket.remove(*unix)
    logs.event("server_stopped")
    return 0


def _reachable(host: str) -> str:
    """A name clients can use for ``host`` (a wildcard address names this machine)."""
    if host in ("", "0.0.0.0", "::"):
        return socket.gethostname()
    return f"[{host}]" if ":" in host else host


#: The collector's thresholds once the server listens (see :func:`_tune_gc`).
GC_THRESHOLDS: Final = (10_000, 5, 20_000)


def _tune_gc(thresholds: tuple[int, ...] = GC_THRESHOLDS) -> None:
    """Fewer, cheaper full collections, and no long middle ones.

    With thousands of players the heap holds millions of tracked objects, and
    CPython's default thresholds walk them all every few seconds: a 300-400 ms
    stall of every room (docs/performance.md).  Objects alive after start-up are
    frozen out of collection, and the older generations are collected less often.
    A young collection walks what is alive in the young generation (a busy server
    keeps most of it alive), so its threshold stays at 10,000: a burst of room
    starts met 20-47 ms collections with 50,000 (performance-log.md).  What
    survives it waits in the middle generation, and a collection of that one walks
    all of it: after 100 young collections (the threshold until 2026-12-03) a
    server that had just gained 6,000 players stalled for 0.5-0.6 s.  After 5 it
    walks at most five young collections' survivors (50-130 ms measured), and
    full collections come as seldom as before: 10,000 x 5 x 20,000 = 10,000 x
    100 x 1,000 net allocations.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tripeaks-server`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["db"]:
        from server import dbcommand  # imported late: the server's own start needs none of it

        return dbcommand.main(args[1:])
    try:
        settings = parse(args)
    except SettingsError as exc:
        print(f"tripeaks-server: {exc}", file=sys.stderr)
        return 2
    logs.setup(settings.log_level)
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        try:
            return runner.run(serve(settings))
        except KeyboardInterrupt:
            return 130


if __name__ == "__main__":
    sys.exit(main())
