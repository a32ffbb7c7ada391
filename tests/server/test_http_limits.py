"""HTTP against hostile clients: silent and slow connections, connections per address,
the API's rate limit, the room listing's cost and the API's JSON errors.

Each test runs a real server on 127.0.0.1 with the runner ``tripeaks-server`` uses
(:class:`server.transport.httpguard.GuardedRunner`), and talks to it over raw
sockets where an HTTP library would not send the hostile bytes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode
from server.app import HUB, create_app
from server.config import from_env
from server.hub import Hub
from server.transport.httpguard import GuardedRunner
from tests.serverutil import TEST_DEFAULTS, TestClient, connect, shared_deal_pool

#: Generous: only a failing test waits this long.
CLOSE_WITHIN_S = 10.0


@dataclass
class Guarded:
    port: int
    runner: GuardedRunner
    app: web.Application

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def hub(self) -> Hub:
        return self.app[HUB]


@asynccontextmanager
async def guarded_server(tmp_path: Path, **overrides: Any) -> AsyncIterator[Guarded]:
    """A server started the way ``tripeaks-server`` starts it, on an ephemeral port."""
    values = {**TEST_DEFAULTS, "db": f"sqlite:///{tmp_path / 'races.db'}", **overrides}
    settings = from_env({}, **values)
    app = create_app(settings, executor=shared_deal_pool())
    runner = GuardedRunner(app, settings, handle_signals=False, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield Guarded(runner.addresses[0][1], runner, app)
    finally:
        await runner.cleanup()


async def raw(port: int, data: bytes = b"") -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    if data:
        writer.write(data)
        await writer.drain()
    return reader, writer


async def closed_by_server(reader: asyncio.StreamReader, within: float = CLOSE_WITHIN_S) -> bytes:
    """Everything the server sends until it closes the connection (fails if it does not)."""
    return await asyncio.wait_for(reader.read(), within)


def get(path: str, *headers: str) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", *headers, "", ""]
    return "\r\n".join(lines).encode()


# ---- connections that send nothing, or never finish --------------------------------
async def test_connections_that_never_send_a_request_are_closed_after_the_request_timeout(
    tmp_path: Path,
) -> None:
    async with guarded_server(tmp_path, request_timeout_s=0.5) as server:
        started = time.monotonic()
        socks = [await raw(server.port) for _ in range(40)]
        for reader, _writer in socks:
            assert await closed_by_server(reader) == b""
        assert time.monotonic() - started < CLOSE_WITHIN_S
        assert server.runner.guard.open == {}


async def test_a_request_head_that_never_finishes_is_closed(tmp_path: Path) -> None:
    async with guarded_server(tmp_path, request_timeout_s=0.5, keepalive_timeout_s=60) as server:
        reader, writer = await raw(server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        for _ in range(3):  # a byte now and then does not keep it alive
            await asyncio.sleep(0.2)
            writer.write(b"a")
        assert await closed_by_server(reader) == b""


async def test_an_idle_kept_alive_connection_is_closed_after_the_keepalive_timeout(
    tmp_path: Path,
) -> None:
    async with guarded_server(tmp_path, request_timeout_s=60, keepalive_timeout_s=0.5) as server:
        reader, writer = await raw(server.port, get("/healthz"))
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CLOSE_WITHIN_S)
        assert head.startswith(b"HTTP/1.1 200")
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
        # Kept alive, then idle apart from half a request head: closed all the same.
        writer.write(b"GET /healthz HTTP/1.1\r\n")
        assert await closed_by_server(reader) == b""


async def test_a_websocket_outlives_the_request_and_keepalive_timeouts(tmp_path: Path) -> None:
    settings = {"request_timeout_s": 0.3, "keepalive_timeout_s": 0.3, "hello_timeout_s": 60}
    async with guarded_server(tmp_path, **settings) as server:
        client = await connect(server.ws_url, "stays")
        await asyncio.sleep(1.0)
        pong = await client.request(m.Ping(client_time_ms=1), m.Pong)
        assert pong.client_time_ms == 1
        await client.close()


# ---- connections per address ---------------------------------------------------------
async def test_one_address_may_hold_only_connections_per_address_and_gets_a_429_beyond(
    tmp_path: Path,
) -> None:
    async with guarded_server(tmp_path, connections_per_address=5, request_timeout_s=60) as server:
        held = [await raw(server.port) for _ in range(5)]
        await asyncio.sleep(0.1)
        reader, _writer = await raw(server.port)
        answer = await closed_by_server(reader)
        assert answer.startswith(b"HTTP/1.1 429 ")
        assert b"Retry-After: 1\r\n" in answer
        assert answer.endswith(b'{"error": "too many connections from your address"}')
        # The held ones are untouched and still answer.
        reader0, writer0 = held[0]
        writer0.write(get("/healthz", "Connection: close"))
        assert b'"status": "ok"' in await closed_by_server(reader0)
        # A slot freed is a slot for a new connection.
        await asyncio.sleep(0.1)
        reader, _writer = await raw(server.port, get("/healthz", "Connection: close"))
        assert (await closed_by_server(reader)).startswith(b"HTTP/1.1 200")
        for _reader, held_writer in held:
            held_writer.close()
        await _until(lambda: not server.runner.guard.open)


async def test_eight_hundred_silent_connections_leave_at_most_the_cap_open(
    tmp_path: Path,
) -> None:
    """The attack of the issue: 800 connections from one address that send nothing."""
    async with guarded_server(tmp_path, connections_per_address=50, request_timeout_s=3) as server:
        socks = []
        for _ in range(8):
            socks += await asyncio.gather(*(raw(server.port) for _ in range(100)))
        web_server = server.runner.server
        assert web_server is not None
        await _until(lambda: len(web_server.connections) <= 50)
        assert sum(server.runner.guard.open.values()) <= 50
        # And within the request timeout, none at all.
        await _until(lambda: not web_server.connections and not server.runner.guard.open)
        for _reader, writer in socks:
            writer.close()


async def test_a_trusted_proxy_is_not_held_to_the_per_address_cap(tmp_path: Path) -> None:
    limits: dict[str, Any] = {"connections_per_address": 2, "request_timeout_s": 60}
    limits["trusted_proxies"] = "127.0.0.1/32"
    async with guarded_server(tmp_path, **limits) as server:
        held = [await raw(server.port) for _ in range(6)]
        await asyncio.sleep(0.2)
        for reader, writer in held:
            writer.write(get("/healthz", "Connection: close"))
            assert (await closed_by_server(reader)).startswith(b"HTTP/1.1 200")


# ---- the HTTP API's rate limit --------------------------------------------------------
async def test_the_http_api_is_rate_limited_per_address_with_a_json_429(tmp_path: Path) -> None:
    limits = {"http_rate": 0.5, "http_burst": 5, "trusted_proxies": "127.0.0.1/32"}
    async with guarded_server(tmp_path, **limits) as server, aiohttp.ClientSession() as http:
        statuses = []
        for _ in range(8):
            async with http.get(server.url + "/api/rooms") as resp:
                statuses.append(resp.status)
                if resp.status == 429:
                    assert resp.content_type == "application/json"
                    assert "slow down" in (await resp.json())["error"]
                    assert int(resp.headers["Retry-After"]) >= 1
                    assert resp.headers["Connection"] == "close"
        assert statuses == [200] * 5 + [429] * 3
        # Another client behind the trusted proxy has a budget of its own.
        other = {"X-Forwarded-For": "203.0.113.7"}
        async with http.get(server.url + "/healthz", headers=other) as resp:
            assert resp.status == 200
        # WebSocket upgrades keep their own limit (connect_rate), not this one.
        client = await connect(server.ws_url, "still-welcome")
        await client.close()


async def test_a_flood_of_api_requests_over_keep_alive_is_answered_mostly_with_429(
    tmp_path: Path,
) -> None:
    """The issue's flood: connections looping ``GET /api/rooms`` on keep-alive."""
    async with guarded_server(tmp_path, http_rate=20, http_burst=40) as server:
        counts = {200: 0, 429: 0}

        async def loop(http: aiohttp.ClientSession) -> None:
            for _ in range(100):
                async with http.get(server.url + "/api/rooms") as resp:
                    await resp.read()
                    counts[resp.status] += 1

        started = time.monotonic()
        async with aiohttp.ClientSession() as http:
            await asyncio.gather(*(loop(http) for _ in range(8)))
        elapsed = time.monotonic() - started
        assert counts[200] + counts[429] == 800
        assert counts[200] <= 40 + 20 * elapsed + 1


# ---- the room listing -------------------------------------------------------------------
async def _public_rooms(ws_url: str, count: int) -> list[TestClient]:
    hosts = []
    for n in range(count):
        host = await connect(ws_url, f"host-{n:02d}-longer-name")
        await host.request(m.CreateRoom(m.RoomOptions(public=True, max_players=8)), m.RoomState)
        hosts.append(host)
    return hosts


async def test_the_room_listing_is_encoded_once_until_a_listed_room_changes(
    tmp_path: Path,
) -> None:
    async with guarded_server(tmp_path) as server:
        hosts = await _public_rooms(server.ws_url, 3)
        first = server.hub.messages.room_listing()
        assert server.hub.messages.room_listing() is first
        eve = await connect(server.ws_url, "eve")
        seen = await eve.request(m.ListRooms(), m.RoomList)
        assert [room.code for room in seen.rooms] == [room.code for room in first.rooms]
        assert server.hub.messages.room_listing() is first and len(first.frames) == 1
        # A change is listed at once: a new member, then a new room.
        await eve.request(m.Join(first.rooms[0].code), m.RoomState)
        changed = server.hub.messages.room_listing()
        assert changed is not first and changed.rooms[0].players == 2
        hosts += await _public_rooms(server.ws_url, 1)
        assert len((await hosts[0].request(m.ListRooms(), m.RoomList)).rooms) == 4
        for client in [*hosts, eve]:
            await client.close()


async def test_a_large_room_listing_costs_credit_by_its_size(tmp_path: Path) -> None:
    """With ten rooms a listing is several KiB: it costs as many credits, not one."""
    budget = {"player_rate": 0.01, "player_burst": 12}
    async with guarded_server(tmp_path, **budget) as server:
        hosts = await _public_rooms(server.ws_url, 10)
        size = len(server.hub.messages.room_listing().frame(hosts[0].encoding))
        assert size > 2048, size
        eve = await connect(server.ws_url, "eve")
        for _ in range(10):
            await eve.send(m.ListRooms())
        answers = [await eve.recv() for _ in range(10)]  # one answer each
        listed = [f for f in answers if isinstance(f, m.RoomList)]
        refused = [f for f in answers if isinstance(f, m.Error)]
        cost = -(-size // 1024)
        assert len(listed) <= (12 - 1) // cost + 1 < 10
        assert refused and all(f.code == ErrorCode.RATE_LIMITED for f in refused)
        assert {f.ref for f in refused} == {"list_rooms"}
        for client in [*hosts, eve]:
            await client.close()


async def test_a_large_api_rooms_answer_costs_more_http_credit(tmp_path: Path) -> None:
    async with guarded_server(tmp_path, http_rate=0.01, http_burst=20) as server:
        hosts = await _public_rooms(server.ws_url, 10)
        ok = 0
        async with aiohttp.ClientSession() as http:
            for _ in range(20):
                async with http.get(server.url + "/api/rooms") as resp:
                    body = await resp.read()
                    if resp.status == 200:
                        ok += 1
                        assert len(body) > 2048
                        assert len((await resp.json())["rooms"]) == 10
        assert 1 <= ok <= 20 // 3
        for host in hosts:
            await host.close()


# ---- JSON errors on API paths -----------------------------------------------------------
async def test_unknown_api_paths_and_wrong_methods_answer_json_errors(tmp_path: Path) -> None:
    async with guarded_server(tmp_path) as server, aiohttp.ClientSession() as http:
        for method, path, status in [
            ("GET", "/api/nope", 404),
            ("GET", "/api", 404),
            ("GET", "/api/races/x/y", 404),
            ("POST", "/api/rooms", 405),
            ("DELETE", "/api/races/abc", 405),
            ("POST", "/healthz", 405),
            ("PUT", "/metrics", 405),
        ]:
            async with http.request(method, server.url + path) as resp:
                assert resp.status == status, (method, path)
                assert resp.content_type == "application/json", (method, path)
                error = (await resp.json())["error"]
                assert isinstance(error, str) and error, (method, path)
                if status == 405:
                    assert resp.headers["Allow"] == "GET" or "GET" in resp.headers["Allow"]
                    assert method in error
        # The pages keep their own (plain) answers.
        async with http.get(server.url + "/watch/!!") as resp:
            assert resp.status == 404 and resp.content_type == "text/plain"


async def _until(check: Any, within: float = CLOSE_WITHIN_S) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.05)

