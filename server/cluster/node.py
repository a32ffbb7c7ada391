"""One node's standing in the cluster: its leases, its codes, its listings and sessions.

Every :attr:`ClusterNode.interval_s` the node sends one pipeline
(:meth:`server.cluster.directory.Directory.tick`): its URL, the renewal of
every lease it holds (each fenced by its epoch), the public rooms that
changed, the sessions that changed, and a read of every node's listings.
Room codes are claimed ahead in a small pool (``SET NX`` in a script), so
creating a room costs no round trip; the claim is what makes codes unique
across the cluster.

When Redis cannot be reached the node carries on with what it has: its
rooms race on, the room list shows its own rooms and the last known others,
and :attr:`ClusterNode.problem` says why (``/healthz`` says ``degraded``).
Once Redis answers again, the next tick takes the leases back and sends
every listing and session again.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import json
import logging
import secrets
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from protocol.wire import codec
from protocol.wire import messages as m
from server import ids, logs
from server.cluster import keys
from server.cluster.directory import Directory, RedisUnavailable, Tick
from server.race.lobby import LISTED_ROOMS, Session
from server.race.room import Room

#: Codes kept claimed ahead, and the level below which more are claimed.
POOL_TARGET: Final = 32
POOL_LOW: Final = 12
#: Rooms whose lease ran out that one node takes over per tick, at most.
TAKEOVERS_PER_TICK: Final = 8
#: The shortest time between two ticks (a nudge waits this long after the last one).
MIN_GAP_S: Final = 0.05
#: Every this many ticks every listing and session is sent again, changed or not
#: (they would also be after a failed tick): a restarted Redis is whole again soon.
FULL_EVERY: Final = 10

_SUMMARY: Final = codec.node_for(m.RoomSummary)


def random_node_id() -> str:
    """A node id for a node started without one."""
    return "n" + secrets.token_hex(4)


@dataclass(frozen=True, slots=True)
class Listed:
    """One public room as the list shows it, with when it was created (for the order)."""

    created_ms: int
    summary: m.RoomSummary


def listing_json(room: Room) -> str:
    """What a node stores about one of its public rooms."""
    return json.dumps({"created_ms": room.created_ms, "room": _SUMMARY.encode(room.summary())},
                      separators=(",", ":"))


def read_listing(text: str) -> Listed | None:
    """A stored listing, or None when it does not read (a newer or broken node wrote it)."""
    try:
        data = json.loads(text)
        return Listed(int(data["created_ms"]), _SUMMARY.decode(data["room"], "room"))
    except Exception:
        return None


class ClusterNode:
    """This node's leases, code pool, published listings and sessions."""

    def __init__(
        self,
        directory: Directory,
        node_id: str,
        lease_s: float,
        rooms: Callable[[], dict[str, Room]],
        sessions: Callable[[], Mapping[str, Session[Any]]],
        clock: Callable[[], int],
    ) -> None:
        self.directory = directory
        self.node_id = node_id
        self.url = ""
        self.lease_ms = int(lease_s * 1000)
        self.interval_s = min(1.0, lease_s / 6)
        self._rooms = rooms
        self._sessions = sessions
        self._clock = clock
        #: The epoch of every code this node holds: its rooms' and the pool's.
        self.epochs: dict[str, int] = {}
        self.pool: deque[str] = deque()
        #: Why Redis is out of reach (None while it answers).
        self.problem: str | None = "not connected yet"
        #: Called with the code of a room another node holds now.
        self.on_lost: Callable[[str], None] = lambda code: None
        #: Called with rooms whose lease ran out with a log left (the janitor's finds).
        self.on_orphans: Callable[[tuple[str, ...]], None] | None = None
        #: Run after each tick that reached Redis.
        self.after_tick: Callable[[], Awaitable[None]] | None = None
        #: Codes being taken over (claimed, their room not rebuilt yet).
        self.taking: set[str] = set()
        self._remote: list[Listed] = []
        self._published: dict[str, m.RoomSummary] = {}
        self._sent_sessions: dict[str, tuple[str, str]] = {}  # token -> (key, room)
        self._full = True
        self._ticks = 0
        self._refill_task: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._nudged = asyncio.Event()

    # ---- life cycle --------------------------------------------------------------
    def start(self, url: str) -> None:
        """Advertise ``url`` to clients and start the periodic work."""
        self.url = url
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop the periodic work and give up every code held (rooms are already closed)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        with contextlib.suppress(RedisUnavailable):
            await self._tick(release_all=True)
        await self.directory.close()

    def nudge(self) -> None:
        """A room or session changed: tick soon, so other nodes learn of it within a
        round trip (a page that reconnects at once finds its seat from any node)."""
        self._nudged.set()

    async def _run(self) -> None:
        while True:
            self._nudged.clear()
            try:
                await self._tick()
                if len(self.pool) < POOL_LOW:
                    await self.refill()
            except RedisUnavailable as exc:
                self._failed(str(exc))
            except Exception:
                logs.failure("cluster_tick_failed", node=self.node_id)
            await asyncio.sleep(MIN_GAP_S)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._nudged.wait(), self.interval_s - MIN_GAP_S)

    def _failed(self, reason: str) -> None:
        if self.problem is None:
            logs.event("cluster_unavailable", level=logging.WARNING, node=self.node_id,
                       reason=reason)
        self.problem = reason
        self._full = True

    # ---- the tick ----------------------------------------------------------------
    async def _tick(self, *, release_all: bool = False) -> None:
        rooms = self._rooms()
        full = self._full or self._ticks % FULL_EVERY == 0
        owned = {code: keys.owner_value(self.node_id, e) for code, e in self.epochs.items()}
        released = {c: v for c, v in owned.items() if release_all or not self._held(c, rooms)}
        for code in released:
            owned.pop(code)
        listed, unlisted = self._listing_changes(rooms, full and not release_all)
        sessions, forgotten = self._session_changes(rooms, full)
        work = Tick(
            self.node_id, self.url, self._clock(), self.lease_ms, owned, released,
            listed, unlisted, sessions, forgotten,
            TAKEOVERS_PER_TICK if self.on_orphans is not None and not release_all else 0,
            [code for code in released if code in rooms and not rooms[code].closed],
        )
        answer = await self.directory.tick(work)
        self._ticks += 1
        for code in released:
            self.epochs.pop(code, None)
        self._remote = [x for x in map(read_listing, answer.listings) if x is not None]
        if answer.listed != len(self._published):
            self._full = True  # Redis lost some of ours (it restarted): send them all again
        elif full:
            self._full = False
        self._recovered()
        for code in answer.lost:
            self._lost(code)
        if answer.orphans and self.on_orphans is not None:
            self.on_orphans(answer.orphans)
        if self.after_tick is not None:
            await self.after_tick()

    def _held(self, code: str, rooms: dict[str, Room]) -> bool:
        return code in rooms or code in self.pool or code in self.taking

    def _recovered(self) -> None:
        if self.problem is not None:
            logs.event("cluster_ready", node=self.node_id, url=self.url,
                       was=self.problem)
            self.problem = None

    def _lost(self, code: str) -> None:
        logs.event("room_fenced", level=logging.WARNING, room=code, node=self.node_id)
        self.give_up(code)
        self.on_lost(code)

    def give_up(self, code: str) -> None:
        """Room ``code`` is another node's now: hold nothing of it here.  Its sessions'
        keys are left as they are: the new owner keeps them under the same names, and a
        delete from here would lose its players' seats to a reconnect."""
        self.epochs.pop(code, None)
        if code in self.pool:
            self.pool.remove(code)
        sent = self._sent_sessions
        for token in [token for token, (_key, room) in sent.items() if room == code]:
            del sent[token]

    def _listing_changes(
        self, rooms: dict[str, Room], full: bool
    ) -> tuple[dict[str, str], list[str]]:
        """The listings to store (changed ones, or all) and the codes to take off the list."""
        newest = itertools.islice(
            (room for room in reversed(rooms.values()) if room.options.public), LISTED_ROOMS
        )
        now = {room.code: room for room in newest}
        listed: dict[str, str] = {}
        for code, room in now.items():
            summary = room.summary()
            if full or self._published.get(code) != summary:
                listed[code] = listing_json(room)
                self._published[code] = summary
        unlisted = [code for code in self._published if code not in now]
        for code in unlisted:
            del self._published[code]
        return listed, unlisted

    def _session_changes(
        self, rooms: dict[str, Room], full: bool
    ) -> tuple[dict[str, str], list[str]]:
        """Sessions in a room here whose key is new or changed, and keys no longer wanted."""
        sent = self._sent_sessions
        current: dict[str, str] = {}
        for token, session in self._sessions().items():
            if session.room is not None and session.room in rooms:
                current[token] = session.room
        changed: dict[str, str] = {}
        for token, code in current.items():
            old = sent.get(token)
            if full or old is None or old[1] != code:
                key = old[0] if old is not None else keys.session(token)
                sent[token] = (key, code)
                changed[key] = code
        gone = [token for token in sent if token not in current]
        return changed, [sent.pop(token)[0] for token in gone]

    # ---- codes -------------------------------------------------------------------
    def codes(self) -> Iterator[str]:
        """Claimed codes for new rooms, each given once; more are claimed when few are left."""
        while self.pool:
            code = self.pool.popleft()
            task = self._refill_task
            if len(self.pool) < POOL_LOW and (task is None or task.done()):
                asyncio.get_running_loop().create_task(self._refill_quietly())
            yield code

    async def refill(self) -> None:
        """Claim codes until the pool holds :data:`POOL_TARGET` (one claim at a time: a
        caller while one runs waits for that one)."""
        task = self._refill_task
        if task is None or task.done():
            task = self._refill_task = asyncio.ensure_future(self._claim_more())
        await asyncio.shield(task)

    async def _claim_more(self) -> None:
        wanted = POOL_TARGET - len(self.pool)
        if wanted > 0:
            taken = set(self._rooms()) | set(self.epochs)
            candidates = list({ids.room_code(taken) for _ in range(wanted)})
            claimed = await self.directory.claim(candidates, self.node_id, self.lease_ms)
            self.epochs.update(claimed)
            self.pool.extend(claimed)

    async def _refill_quietly(self) -> None:
        try:
            await self.refill()
        except RedisUnavailable as exc:
            self._failed(str(exc))

    # ---- the room list ------------------------------------------------------------
    def listing(self, rooms: dict[str, Room]) -> tuple[m.RoomSummary, ...]:
        """Every node's public rooms, newest first, at most :data:`LISTED_ROOMS`: this
        node's as they are now, the others' as of the last tick."""
        local = itertools.islice(
            (Listed(r.created_ms, r.summary()) for r in reversed(rooms.values())
             if r.options.public),
            LISTED_ROOMS,
        )
        mine = list(local)
        others = (
            x for x in self._remote
            if x.summary.code not in rooms and x.summary.code not in self.epochs
        )
        merged = heapq.nlargest(
            LISTED_ROOMS, itertools.chain(mine, others), key=lambda x: x.created_ms
        )
        return tuple(x.summary for x in merged)
