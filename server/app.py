"""The aiohttp application: routes, the WebSocket handler and the app's life cycle.

``create_app(settings)`` builds the app; its cleanup context opens the race
store and the deal process pool and resumes every room the input log holds
(:mod:`server.recovery`), and its shutdown hook (run on SIGTERM by
``tripeaks-server``) commits the input log, tells every client why, closes
the sockets with 1001 and waits for the race writes: running races go on
after the next start.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import functools
import json
import math
import multiprocessing
import os
import re
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Final, cast

from aiohttp import web

from protocol.wire import codec
from protocol.wire import messages as m
from server import hub_rooms, logs, metrics
from server.config import IPNetwork, Settings
from server.daily_http import add_daily_routes
from server.hub import Hub
from server.hub_shutdown import shut_down
from server.player_api import add_player_routes
from server.race.listing import RoomListing, listing_cost
from server.race.ratelimit import AddressLimiter
from server.reader import ConnectionReader
from server.recovery.journal import Journal
from server.recovery.resume import load_rooms
from server.storage.inputlog import SqlInputLog
from server.storage.store import RaceStore
from server.transport.clientaddr import client_address
from server.transport.connection import Connection, Transport
from server.transport.direct import DirectResponse
from server.web import add_web_routes

if TYPE_CHECKING:
    from server.cluster.node import ClusterNode
    from server.cluster.redislog import RedisInputLog
    from server.cluster.routing import Router

SETTINGS: Final = web.AppKey("settings", Settings)
HUB: Final = web.AppKey("hub", Hub)
STORE: Final = web.AppKey("store", RaceStore)
_EXECUTOR: Final = web.AppKey("executor", concurrent.futures.Executor)
_CONNECT_LIMITER: Final = web.AppKey("connect_limiter", AddressLimiter)
_HTTP_LIMITER: Final = web.AppKey("http_limiter", AddressLimiter)
_PROXIES: Final = web.AppKey[tuple[IPNetwork, ...]]("trusted_proxies")
CLUSTER: Final[web.AppKey[Router]] = web.AppKey("cluster")

_RACE_ID = re.compile(r"^[0-9A-Za-z_-]{1,64}$")
MAX_LIST_LIMIT: Final = 100
_LIMIT = re.compile(r"[0-9]{1,9}")


def make_executor(workers: int, *, idle: bool = True) -> concurrent.futures.ProcessPoolExecutor:
    """The deal pool.  Spawned workers inherit no event loop, socket or database handle,
    and (unlike a fork server) none of them outlives the server.  ``idle`` runs them
    at idle priority (see :func:`_idle_priority`)."""
    context = multiprocessing.get_context("spawn")
    return concurrent.futures.ProcessPoolExecutor(
        max_workers=max(1, workers),
        mp_context=context,
        initializer=_init_worker,
        initargs=(os.getpid(), idle),
    )


def stop_executor(executor: concurrent.futures.Executor) -> None:
    """Stop the deal pool now: a deal still being solved is of no use any more.

    Waiting for it could take long, since idle-priority workers get no CPU
    while anything else wants it.  (Blocking: call it off the event loop.)
    """
    # Taken first: shutdown() forgets its workers (and then waits for the job at hand,
    # at exit, if they are not killed).  None can start after it.
    processes = getattr(executor, "_processes", None) or {}
    executor.shutdown(wait=False, cancel_futures=True)
    for process in list(processes.values()):
        # Even SIGKILL needs CPU time to end a process: an idle-priority worker on a
        # busy machine would take seconds, so it is given normal priority first.
        with contextlib.suppress(AttributeError, OSError):
            os.sched_setscheduler(process.pid, os.SCHED_OTHER, os.sched_param(0))
        process.kill()
    for process in list(processes.values()):
        process.join(timeout=5)


def _init_worker(server_pid: int, idle: bool) -> None:
    """Prepare a deal worker: it dies with the server (process ``server_pid``), and
    maybe runs at idle priority."""
    _die_with_parent(server_pid)
    # Ctrl-C reaches the terminal's whole process group: the server stops its
    # workers itself, and a worker's own KeyboardInterrupt would only print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if idle:
        _idle_priority()


def _die_with_parent(server_pid: int) -> None:
    """End this worker with the server, or now if the server is gone already."""
    # Linux prctl(PR_SET_PDEATHSIG, SIGKILL): a server killed outright (SIGKILL, OOM)
    # cannot stop its pool, so the kernel does it.  Elsewhere this is skipped.
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    # A worker's start (imports) takes seconds on a busy machine.  A server killed
    # before the prctl above sends no signal, and the worker would wait on its call
    # queue for ever, holding the server's stderr open: checked after the prctl, so
    # one of the two always ends it.  os._exit: an exception would print a traceback.
    if os.getppid() != server_pid:
        os._exit(0)


def _idle_priority() -> None:
    """Run a deal worker only on CPU time the event loop does not want.

    On a shared core a solving worker would otherwise steal time from moves in
    every room; prepared deals (``deals_ahead``) keep starts quick anyway.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        with contextlib.suppress(OSError):
            os.nice(19)


def create_app(
    settings: Settings,
    *,
    store: RaceStore | None = None,
    executor: concurrent.futures.Executor | None = None,
) -> web.Application:
    """The server app.  ``store`` and ``executor`` are opened here when not given."""
    app = web.Application(client_max_size=64 * 1024, middlewares=[_http_limits])
    app[SETTINGS] = settings
    app[_HTTP_LIMITER] = AddressLimiter(settings.http_rate, settings.http_burst)
    app[_PROXIES] = settings.proxy_networks()
    app[_CONNECT_LIMITER] = AddressLimiter(settings.connect_rate, settings.connect_burst)
    if store is not None:
        app[STORE] = store

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        # Each part opened is closed, last opened first, after the last request or at
        # once if start-up fails further on (a broken input log, a database gone).
        async with contextlib.AsyncExitStack() as opened:
            if STORE not in app:
                app[STORE] = await _open_store(settings)
                opened.push_async_callback(app[STORE].close)
            app[_EXECUTOR] = executor or make_executor(settings.deal_workers)
            if executor is None:
                opened.push_async_callback(_stop_off_loop, app[_EXECUTOR])
            await _start(app, settings, opened)
            logs.event("storage_ready", db=app[STORE].url, fallback_file=_fallback_file(app[HUB]))
            yield

    app.cleanup_ctx.append(lifecycle)
    app.on_shutdown.append(_on_shutdown)
    app.router.add_get("/ws", handle_ws)
    app.router.add_get("/healthz", handle_health)
    app.router.add_get("/metrics", handle_metrics)
    app.router.add_get("/api/rooms", handle_rooms)
    app.router.add_get("/api/races", handle_race_list)
    app.router.add_get("/api/races/{race_id}", handle_race)
    add_daily_routes(app, lambda request: request.app[HUB].daily)
    add_player_routes(app, lambda app: app[STORE], lambda app: app[HUB].daily.today())
    add_web_routes(app)
    return app


async def _start(
    app: web.Application, settings: Settings, opened: contextlib.AsyncExitStack
) -> None:
    """The input log, the hub and its rooms: every room the log holds is back (or, in
    cluster mode, ready to be taken over) when this returns.  What must be closed goes
    on ``opened``."""
    gap = settings.log_commit_gap_s
    # A busy gap shorter than the gap (a gap raised, the busy one left as it was) is the gap.
    busy_gap = max(gap, settings.log_commit_gap_busy_s)
    if settings.cluster:
        node, cluster_log = _cluster_node(settings, app)
        opened.push_async_callback(_stop_node, app, node)
        # Each room is fenced by its own lease's epoch.
        journal = Journal(cluster_log, 1, commit_gap_s=gap, busy_gap_s=busy_gap)
    else:
        log = SqlInputLog(app[STORE])
        opened.push_async_callback(log.close)  # after the hub's last commit (on_shutdown)
        journal = Journal(
            log, await log.max_epoch() + 1, commit_gap_s=gap, busy_gap_s=busy_gap
        )
    app[HUB] = Hub(settings, app[STORE], app[_EXECUTOR], journal)
    # First of all after a failed start; after a stop, on_shutdown has stopped the hub.
    opened.push_async_callback(shut_down, app[HUB])
    await _replay(app[HUB])
    app[HUB].start()
    if settings.cluster:
        # No rooms are taken back at start: a room whose lease ran out is taken over
        # by whichever node a client (or the janitor) reaches first.
        app[CLUSTER] = _wire_cluster(node, cluster_log, app[HUB])
    else:
        await _resume(app[HUB], log)


async def _stop_node(app: web.Application, node: ClusterNode) -> None:
    """Stop a node's periodic work, or only close its Redis client if start-up failed
    before the node was wired to the hub."""
    if CLUSTER in app:
        await node.stop()
    else:
        await node.directory.close()


async def _stop_off_loop(executor: concurrent.futures.Executor) -> None:
    """:func:`stop_executor`, which blocks, in a thread."""
    await asyncio.get_running_loop().run_in_executor(
        None, functools.partial(stop_executor, executor)
    )


def _cluster_node(
    settings: Settings, app: web.Application
) -> tuple[ClusterNode, RedisInputLog]:
    """Cluster mode's node and input log (the hub comes next); the node starts once its
    URL is known (:func:`start_cluster`).  Imported here: an embedded server never loads
    Redis."""
    from server.cluster.directory import Directory
    from server.cluster.node import ClusterNode, random_node_id
    from server.cluster.redislog import RedisInputLog

    node = ClusterNode(
        Directory.connect(settings.redis_url), settings.node_id or random_node_id(),
        settings.lease_s, lambda: app[HUB].lobby.rooms, lambda: app[HUB].lobby.sessions,
        lambda: app[HUB].now_ms(),
    )
    return node, RedisInputLog(node)


def _wire_cluster(node: ClusterNode, log: RedisInputLog, hub: Hub) -> Router:
    """The router and the takeovers, wired to the hub and the log."""
    from server.cluster.routing import Router
    from server.cluster.takeover import Takeovers

    restore = functools.partial(hub_rooms.restore, hub)
    takeovers = Takeovers(node, lambda: hub.lobby.rooms, hub.timings, restore)
    hub.cluster = Router(node, hub, takeovers)
    log.on_fenced = hub.cluster.fenced
    node.after_tick = log.repair
    return hub.cluster


def start_cluster(app: web.Application, url: str) -> None:
    """Start cluster mode's periodic work, telling clients to reach this node at ``url``
    (``--node-url`` when set).  Nothing happens when embedded."""
    if CLUSTER in app:
        settings = app[SETTINGS]
        node = app[CLUSTER].node
        node.start(settings.node_url or url)
        logs.event("cluster_started", node=node.node_id, url=node.url,
                   redis=_redacted(settings.redis_url), lease_s=settings.lease_s)


def _redacted(url: str) -> str:
    """A Redis URL without its password."""
    return re.sub(r"//([^:/@]*):[^@/]*@", r"//\1:***@", url)


async def _open_store(settings: Settings) -> RaceStore:
    """Open and migrate the database, and make sure it takes writes (else raise)."""
    store = await RaceStore.connect(settings.db or None)
    before, after = store.upgraded
    if before != after:
        logs.event("schema_upgraded", database=store.url, before=before, after=after)
    try:
        await store.check_writable()
    except BaseException:
        await store.close()
        raise
    return store


async def _replay(hub: Hub) -> None:
    """Store what an earlier run left in the fallback file, before serving anyone."""
    found, unreadable = await hub.writer.replay()
    if found or unreadable:
        logs.event(
            "races_replayed", found=found, unreadable=unreadable,
            waiting=hub.writer.waiting, file=_fallback_file(hub),
        )


async def _resume(hub: Hub, log: SqlInputLog) -> None:
    """Take back every room the input log holds, before serving anyone."""
    rebuilt = await load_rooms(log, hub.timings)
    for room in rebuilt:
        hub_rooms.restore(hub, room)
    if rebuilt:
        logs.event("rooms_resumed", rooms=len(rebuilt))


def _fallback_file(hub: Hub) -> str | None:
    path = hub.writer.fallback_file
    return str(path) if path is not None else None


async def _on_shutdown(app: web.Application) -> None:
    if HUB in app:
        await shut_down(app[HUB])


# ---- HTTP ------------------------------------------------------------------------
def _json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def handle_health(request: web.Request) -> web.Response:
    """``GET /healthz``: ok while the server accepts connections and stores results;
    ``degraded`` (still 200) while results wait for the database."""
    hub = request.app[HUB]
    problem = hub.writer.problem
    cluster = hub.cluster.node if hub.cluster is not None else None
    degraded = problem or (cluster is not None and cluster.problem)
    status = "closing" if hub.closing else "degraded" if degraded else "ok"
    body: dict[str, object] = {
        "status": status, "rooms": len(hub.rooms), "connections": len(hub.connections)
    }
    if problem:
        body["storage"] = {
            "reason": problem,
            "waiting": hub.writer.waiting,
            "fallback_file": _fallback_file(hub),
        }
    if cluster is not None:
        body["cluster"] = {
            "node": cluster.node_id, "url": cluster.url,
            "redis": "unavailable" if cluster.problem else "ok",
            **({"reason": cluster.problem} if cluster.problem else {}),
        }
    if hub.journal is not None:
        # Races go on; only rooms whose inputs could not be logged cannot be resumed.
        log_problems = {"reason": hub.journal.problem}
        if isinstance(hub.journal.log, SqlInputLog):
            log_problems["fold"] = hub.journal.log.fold_problem
        said = {key: value for key, value in log_problems.items() if value}
        if said:
            body["input_log"] = said
    return web.json_response(body, status=503 if hub.closing else 200)


async def handle_metrics(request: web.Request) -> web.Response:
    """``GET /metrics`` in the Prometheus text format."""
    body = request.app[HUB].metrics.render()
    return web.Response(body=body, headers={"Content-Type": metrics.CONTENT_TYPE})


async def handle_rooms(request: web.Request) -> web.Response:
    """``GET /api/rooms``: the public rooms (the body is made once per change)."""
    body = _rooms_body(request.app[HUB].messages.room_listing())
    return web.Response(body=body, content_type="application/json", charset="utf-8")


def _rooms_body(listing: RoomListing) -> bytes:
    if listing.http_body is None:
        node = codec.node_for(m.RoomSummary)
        response = web.json_response({"rooms": [node.encode(room) for room in listing.rooms]})
        listing.http_body = cast(bytes, response.body)
    return listing.http_body


async def handle_race(request: web.Request) -> web.Response:
    """``GET /api/races/{id}``: one stored race with every move log."""
    race_id = request.match_info["race_id"]
    if not _RACE_ID.match(race_id):
        return _json_error(400, "a race id is 1 to 64 letters, digits, '-' or '_'")
    hidden = await request.app[HUB].daily.race_hidden(race_id)
    if hidden is not None:
        return _json_error(403, f"this race is an attempt at the daily deal of {hidden}; "
                                "it is shown once that day is over (UTC)")
    record = await request.app[STORE].get_race(race_id)
    if record is None:
        return _json_error(404, f"no stored race has the id {race_id!r}")
    return web.json_response(record.to_json())


async def handle_race_list(request: web.Request) -> web.Response:
    """``GET /api/races?player=NAME&limit=N``: recent races, newest first, without logs."""
    player = request.query.get("player") or None
    raw_limit = request.query.get("limit", "20")
    # Only ASCII digits: int() would also take " 5", "+5", "1_0" and other scripts' digits.
    if not _LIMIT.fullmatch(raw_limit) or not 1 <= int(raw_limit) <= MAX_LIST_LIMIT:
        return _json_error(400, f"limit must be a number from 1 to {MAX_LIST_LIMIT} in digits 0-9")
    limit = int(raw_limit)
    if player is not None and len(player) > 64:
        return _json_error(400, "player names are at most 64 characters")
    hide = request.app[HUB].daily.today()
    records = await request.app[STORE].list_races(
        player, limit, with_logs=False, hide_daily_from=hide
    )
    return web.json_response({"races": [record.summary_json() for record in records]})


# ---- HTTP limits and errors ---------------------------------------------------------
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _is_api(path: str) -> bool:
    """Paths whose errors are JSON ``{"error": ...}``, as docs/server.md promises."""
    return path in ("/api", "/healthz", "/metrics") or path.startswith("/api/")


@web.middleware
async def _http_limits(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every HTTP request but ``/ws`` (which has its own limit) spends its address's credit;
    an API path's errors are JSON."""
    if request.path == "/ws":
        return await handler(request)
    refused = _rate_limited(request)
    if refused is not None:
        return refused
    if not _is_api(request.path):
        return await handler(request)
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _api_error(request, exc)
    except Exception:
        logs.failure("http_handler_failed", path=request.path[:200])
        return _json_error(500, "the server failed to answer; the failure is logged")


def _rate_limited(request: web.Request) -> web.Response | None:
    """None when the request's address has the credit, else the 429 answer."""
    app = request.app
    settings = app[SETTINGS]
    proxies = app[_PROXIES]
    address = client_address(request.remote, request.headers.get("X-Forwarded-For"), proxies)
    cost = 1.0
    if request.path == "/api/rooms":
        cost = listing_cost(len(_rooms_body(app[HUB].messages.room_listing())), settings.http_burst)
    if app[_HTTP_LIMITER].allow(address, app[HUB].now_ms(), cost):
        return None
    logs.throttled("http_rate_limited", address=address, path=request.path[:200])
    response = _json_error(429, "too many requests from your address; slow down")
    response.headers["Retry-After"] = str(max(1, math.ceil(cost / settings.http_rate)))
    # A flood on kept-alive connections would be answered as fast as it comes:
    # each refusal ends its connection, so the next request pays for a new one.
    response.force_close()
    return response


def _api_error(request: web.Request, exc: web.HTTPException) -> web.Response:
    path = request.path[:200]
    if exc.status == 404:
        message = f"no API endpoint is at {path}"
    elif exc.status == 405:
        allowed = exc.headers.get("Allow", "")
        message = f"{request.method} is not allowed on {path}; allowed: {allowed}"
    else:
        message = exc.text if exc.text and exc.content_type == "text/plain" else exc.reason
    response = _json_error(exc.status, message.strip())
    for name in ("Allow", "Retry-After"):
        if name in exc.headers:
            response.headers[name] = exc.headers[name]
    return response


# ---- WebSocket -------------------------------------------------------------------
_CONNECT_LIMITED: Final = json.dumps(
    {"error": "too many connections from your address; slow down"}
).encode()


async def handle_ws(request: web.Request) -> web.StreamResponse:
    """``GET /ws``: one client connection, until it closes."""
    app = request.app
    hub, settings = app[HUB], app[SETTINGS]
    if hub.closing:
        return _json_error(503, "the server is shutting down")
    proxies = app[_PROXIES]
    address = client_address(request.remote, request.headers.get("X-Forwarded-For"), proxies)
    if not app[_CONNECT_LIMITER].allow(address, hub.now_ms()):
        # A client reconnecting at will must not cost a log line or a JSON encoding each time.
        logs.throttled("connect_rate_limited", address=address)
        return web.Response(
            body=_CONNECT_LIMITED, status=429, content_type="application/json", charset="utf-8"
        )
    offered = request.headers.get("Sec-WebSocket-Protocol", "").split(",")
    chosen = codec.choose_subprotocol(offered)
    if chosen is None:
        return _no_subprotocol(address)
    ws = DirectResponse(
        protocols=(chosen,),
        compress=False,  # permessage-deflate costs ~100 KiB per connection; frames are tiny
        max_msg_size=settings.max_frame_bytes + 1,  # aiohttp refuses a frame of its limit
        # The hub's heartbeat (server.transport.heartbeat) pings; pongs reach the loop.
        autoping=False,
    )
    await ws.prepare(request)
    # The transport is uvloop's (or asyncio's) socket transport; see Connection.send.
    transport = cast("Transport | None", request.transport)
    encoding = codec.encoding_for(chosen)
    conn = Connection(ws, encoding, address, hub.hellos.next_conn_id(), hub.batch, transport)
    reader = ConnectionReader(hub, conn, hub.hellos.connect(conn), settings)
    logs.event("connected", conn=conn.conn_id, address=address, subprotocol=chosen)
    try:
        await conn.serve(reader, hub.now_ms)
    except Exception:
        logs.failure("connection_failed", conn=conn.conn_id)
    finally:
        hub.hellos.connection_lost(conn)
        logs.event("disconnected", conn=conn.conn_id, close_code=conn.close_code)
    return ws


def _no_subprotocol(address: str) -> web.Response:
    """Refuse, before the upgrade, an offer of only subprotocols this server does not speak.

    Answering 101 without the header would make browsers and most libraries drop
    the connection themselves (1006), so the client would never learn why.
    """
    logs.event("no_subprotocol", address=address)
    supported = list(codec.SUBPROTOCOLS)
    message = "none of the offered subprotocols is supported; offer one of " + ", ".join(supported)
    return web.json_response({"error": message, "subprotocols": supported}, status=400)
