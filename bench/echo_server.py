"""A bare aiohttp WebSocket echo server: the load benchmark's baseline.

It is set up like the game server (aiohttp, uvloop when installed, no
permessage-deflate, the same frame size cap) but does no work per frame beyond
sending it back, so ``game moves/s ÷ echo round trips/s`` shows how much of the
WebSocket budget the game logic leaves on the table.

Run: ``python -m bench.echo_server --port 9001``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from aiohttp import WSMsgType, web

#: The game server's subprotocols, so the same clients connect to both.
SUBPROTOCOLS = ("tripeaks.v1.msgpack", "tripeaks.v1.json")


def use_fast_loop() -> str:
    """Install uvloop's policy when it is importable, as the game server does."""
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


async def echo(request: web.Request) -> web.WebSocketResponse:
    """Send every data frame straight back, binary as binary and text as text."""
    ws = web.WebSocketResponse(protocols=SUBPROTOCOLS, compress=False, max_msg_size=65536)
    await ws.prepare(request)
    async for msg in ws:
        if msg.type == WSMsgType.BINARY:
            await ws.send_bytes(msg.data)
        elif msg.type == WSMsgType.TEXT:
            await ws.send_str(msg.data)
    return ws


async def healthz(_request: web.Request) -> web.Response:
    """Liveness for the benchmark's start-up wait."""
    return web.Response(text="ok")


def make_app() -> web.Application:
    """The echo application: ``/ws`` echoes, ``/healthz`` answers ok."""
    app = web.Application()
    app.router.add_get("/ws", echo)
    app.router.add_get("/healthz", healthz)
    return app


def main(argv: list[str] | None = None) -> int:
    """Serve until killed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9001)
    parser.add_argument("--unix-socket", help="also listen on a Unix socket at this path")
    args = parser.parse_args(argv)
    loop_name = use_fast_loop()
    print(f"echo server on {args.host}:{args.port} ({loop_name})", file=sys.stderr, flush=True)
    web.run_app(
        make_app(), host=args.host, port=args.port, path=args.unix_socket, print=None,
        access_log=None, backlog=4096,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
