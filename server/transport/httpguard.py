"""Limits on TCP connections, below any request: how many, and how long without one.

aiohttp holds a connection that never sends a request until its keep-alive
timer fires (an hour by default), and counts no connections per address.
:class:`GuardedRunner` is the app's runner with both bounded: a connection must
complete its first request head within ``request_timeout_s``, an idle kept-alive
one is closed after ``keepalive_timeout_s`` (aiohttp's own timer, which a partial
request head does not reset), and one client address may hold at most
``connections_per_address`` connections (trusted proxies are not counted: they
carry many clients).  A connection over the cap gets a 429 and is closed.
"""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any, Final

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from server import logs
from server.config import IPNetwork, Settings

_TOO_MANY_BODY: Final = b'{"error": "too many connections from your address"}'
_TOO_MANY: Final = (
    b"HTTP/1.1 429 Too Many Requests\r\n"
    b"Content-Type: application/json; charset=utf-8\r\n"
    b"Content-Length: %d\r\n"
    b"Retry-After: 1\r\n"
    b"Connection: close\r\n\r\n" % len(_TOO_MANY_BODY)
) + _TOO_MANY_BODY


#: Peers whose counted address is remembered (then forgotten all at once).
COUNTED_PEERS: Final = 4096


class ConnectionGuard:
    """Counts each address's open connections and closes those that send no request."""

    def __init__(self, request_timeout_s: float, per_address: int, trusted: tuple[IPNetwork, ...]):
        self.request_timeout_s = request_timeout_s
        self.per_address = per_address
        self.trusted = trusted
        #: Open connections per counted address (only addresses with one open).
        self.open: dict[str, int] = {}
        self._conns: dict[RequestHandler, tuple[str | None, asyncio.TimerHandle]] = {}
        #: Each peer's counted address (None: not counted), so that a client that
        #: reconnects at will is not parsed and matched against the proxies each time.
        self.counted_peers: dict[str, str | None] = {}

    def install(self, server: web.Server) -> None:
        """Watch every connection ``server`` (aiohttp's protocol factory) accepts."""
        made, lost = server.connection_made, server.connection_lost

        # The server is the handlers' manager: they report to it as they open and close.
        def connection_made(handler: RequestHandler, transport: asyncio.Transport) -> None:
            made(handler, transport)
            self.opened(handler, transport)

        def connection_lost(handler: RequestHandler, exc: BaseException | None = None) -> None:
            self.closed(handler)
            lost(handler, exc)

        server.connection_made = connection_made  # type: ignore[method-assign]
        server.connection_lost = connection_lost  # type: ignore[method-assign]

    def opened(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        """A new connection: count it, refuse it over the cap, start its request timer."""
        address = self._counted_address(transport.get_extra_info("peername"))
        loop = asyncio.get_running_loop()
        timer = loop.call_later(self.request_timeout_s, self._no_request, handler)
        self._conns[handler] = (address, timer)
        if address is None:
            return
        count = self.open[address] = self.open.get(address, 0) + 1
        if self.per_address and count > self.per_address:
            logs.throttled("connections_limited", address=address, limit=self.per_address)
            transport.write(_TOO_MANY)
            handler.force_close()

    def closed(self, handler: RequestHandler) -> None:
        """A connection has gone: uncount it."""
        entry = self._conns.pop(handler, None)
        if entry is None:
            return
        address, timer = entry
        timer.cancel()
        if address is not None:
            left = self.open.get(address, 1) - 1
            if left > 0:
                self.open[address] = left
            else:
                self.open.pop(address, None)

    def _no_request(self, handler: RequestHandler) -> None:
        # aiohttp counts a request once its head is parsed (a refused head included).
        if getattr(handler, "_request_count", 1) == 0:
            logs.event("request_timeout", level=10, peer=str(handler.peername))
            handler.force_close()

    def _counted_address(self, peer: Any) -> str | None:
        if not isinstance(peer, tuple) or not peer:
            return None  # a Unix socket: no address to count
        address = str(peer[0])
        if address not in self.counted_peers:
            if len(self.counted_peers) >= COUNTED_PEERS:
                self.counted_peers.clear()
            self.counted_peers[address] = self._count_as(address)
        return self.counted_peers[address]

    def _count_as(self, address: str) -> str | None:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return address
        if any(ip in network for network in self.trusted):
            return None
        return address


class GuardedRunner(web.AppRunner):
    """aiohttp's app runner with the connection limits of ``settings``."""

    __slots__ = ("guard",)

    def __init__(self, app: web.Application, settings: Settings, **kwargs: Any) -> None:
        kwargs.setdefault("keepalive_timeout", settings.keepalive_timeout_s)
        super().__init__(app, **kwargs)
        self.guard = ConnectionGuard(
            settings.request_timeout_s, settings.connections_per_address, settings.proxy_networks()
        )

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        self.guard.install(server)
        return server
