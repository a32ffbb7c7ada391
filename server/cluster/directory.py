"""The cluster's Redis: one client with a small blocking pool, and a method per round trip.

redis-py's asyncio pool raises once more than ``max_connections`` commands
wait at once instead of queueing them; a :class:`redis.asyncio.BlockingConnectionPool`
makes the extra callers wait (for at most :data:`POOL_TIMEOUT_S`).  Each node
sends its periodic work as one pipeline (:meth:`Directory.tick`), so the pool
serves only that and the occasional look-up.  Every failure to reach Redis is
raised as :class:`RedisUnavailable`, with the reason in words.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from server.cluster import keys, scripts

#: Connections one node keeps to Redis: the tick's pipeline and a few look-ups at once.
POOL_SIZE: Final = 8
#: How long a command may wait for a pooled connection, or for Redis to answer.
POOL_TIMEOUT_S: Final = 2.0
#: A node's listings outlive its last refresh by this much (then its rooms leave every list).
LISTING_TTL_MS: Final = 8000
#: How long a session's room is remembered without a refresh.
SESSION_TTL_MS: Final = 24 * 3600 * 1000


class RedisUnavailable(Exception):
    """Redis could not be reached or failed; the message says why."""


@dataclass(frozen=True, slots=True)
class Located:
    """Where a room (or a session's room) is: its code, owner node and epoch, owner's URL."""

    code: str | None = None
    node: str | None = None
    epoch: int = 0
    url: str | None = None


@dataclass(slots=True)
class Tick:
    """One node's periodic work, sent as one pipeline."""

    node: str
    url: str
    now_ms: int
    lease_ms: int
    #: Owner key values to renew, by room code.
    owned: Mapping[str, str]
    #: Owner key values of codes this node gives up.
    released: Mapping[str, str] = field(default_factory=dict)
    listed: Mapping[str, str] = field(default_factory=dict)
    unlisted: Sequence[str] = ()
    #: Session keys to set (to a room code) and to delete.
    sessions: Mapping[str, str] = field(default_factory=dict)
    forgotten: Sequence[str] = ()
    #: Orphaned rooms this node would take over now (0: none).
    takeovers: int = 0
    #: Released rooms that still run (the node stops): another node takes them over.
    handed_over: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class TickAnswer:
    """What a tick found: codes fenced out, how many listings this node has, every listing,
    and rooms whose lease ran out with their log still there (to take over)."""

    lost: tuple[str, ...]
    listed: int
    listings: tuple[str, ...]
    orphans: tuple[str, ...] = ()


class Directory:
    """The Redis operations of one node."""

    def __init__(self, client: aioredis.Redis) -> None:
        self.redis = client
        self._claim = client.register_script(scripts.CLAIM)
        self._renew = client.register_script(scripts.RENEW)
        self._release = client.register_script(scripts.RELEASE)
        self._takeover = client.register_script(scripts.TAKEOVER)
        self._listing = client.register_script(scripts.LISTING)
        self._locate_session = client.register_script(scripts.LOCATE_SESSION)
        self._locate_room = client.register_script(scripts.LOCATE_ROOM)
        self._leases = client.register_script(scripts.LEASES)
        self._orphans = client.register_script(scripts.ORPHANS)
        self._append = client.register_script(scripts.APPEND)
        self._drop_logs = client.register_script(scripts.DROP_LOGS)
        self._leave_orphan = client.register_script(scripts.LEAVE_ORPHAN)

    @classmethod
    def connect(cls, url: str) -> Directory:
        """A directory on the Redis at ``url`` (nothing is sent until the first command)."""
        pool = aioredis.BlockingConnectionPool.from_url(
            url,
            max_connections=POOL_SIZE,
            timeout=POOL_TIMEOUT_S,
            socket_timeout=POOL_TIMEOUT_S,
            socket_connect_timeout=POOL_TIMEOUT_S,
            decode_responses=True,
        )
        return cls(aioredis.Redis(connection_pool=pool))

    async def close(self) -> None:
        """Close every pooled connection."""
        with contextlib.suppress(RedisError, OSError):
            await self.redis.aclose()

    async def _run(self, call: Any) -> Any:
        try:
            return await call
        except (RedisError, OSError) as exc:
            raise RedisUnavailable(f"redis: {exc}" if str(exc) else "redis: no answer") from None

    # ---- the periodic work --------------------------------------------------------
    async def tick(self, work: Tick) -> TickAnswer:
        """Refresh the node, its leases, listings and sessions; read every listing."""
        pipe = self.redis.pipeline(transaction=False)
        # The URL goes before the leases do: a dead node is not sent clients for long.
        pipe.set(keys.node(work.node), work.url, px=max(1000, work.lease_ms // 2))
        pipe.zadd(keys.NODES, {work.node: work.now_ms})
        rooms_key = keys.node_rooms(work.node)
        if work.listed:
            pipe.hset(rooms_key, mapping=dict(work.listed))  # type: ignore[arg-type]
        if work.unlisted:
            pipe.hdel(rooms_key, *work.unlisted)
        pipe.pexpire(rooms_key, LISTING_TTL_MS)
        hlen_at = len(pipe)
        pipe.hlen(rooms_key)
        codes = list(work.owned)
        renew_at = len(pipe)
        if codes:
            await self._renew(
                keys=[k for code in codes for k in (keys.owner(code), keys.epoch(code))],
                args=[work.lease_ms, *(work.owned[code] for code in codes)],
                client=pipe,
            )
        if codes:
            await self._leases(
                keys=[keys.LEASES], args=[work.now_ms + work.lease_ms, *codes], client=pipe
            )
        if work.released:
            await self._release(
                keys=[keys.owner(code) for code in work.released],
                args=list(work.released.values()),
                client=pipe,
            )
            gone = [code for code in work.released if code not in work.handed_over]
            if gone:
                pipe.zrem(keys.LEASES, *gone)
        if work.handed_over:
            # Rooms given up running (a stop): due now, for any node's janitor.
            pipe.zadd(keys.LEASES, dict.fromkeys(work.handed_over, 0))
        for key, code in work.sessions.items():
            pipe.set(key, code, px=SESSION_TTL_MS)
        if work.forgotten:
            pipe.delete(*work.forgotten)
        await self._orphans(
            keys=[keys.LEASES], args=[work.now_ms, keys.PREFIX, work.takeovers], client=pipe
        )
        await self._listing(
            keys=[keys.NODES], args=[work.now_ms - LISTING_TTL_MS, keys.PREFIX], client=pipe
        )
        results = await self._run(pipe.execute())
        lost = tuple(codes[i - 1] for i in results[renew_at]) if codes else ()
        orphans = tuple(str(code) for code in results[-2])
        return TickAnswer(lost, int(results[hlen_at]), tuple(results[-1]), orphans)

    async def claim(self, codes: Sequence[str], node: str, lease_ms: int) -> dict[str, int]:
        """Claim the free ones of ``codes`` for ``node``: their epochs, by code."""
        epochs = await self._run(self._claim(
            keys=[k for code in codes for k in (keys.owner(code), keys.epoch(code))],
            args=[node, lease_ms],
        ))
        return {code: int(e) for code, e in zip(codes, epochs, strict=True) if int(e)}

    async def takeover(self, code: str, node: str, lease_ms: int) -> tuple[int, str]:
        """Take room ``code`` if its lease ran out: ``(new epoch, value)``, epoch 0 if held."""
        epoch, value = await self._run(self._takeover(
            keys=[keys.owner(code), keys.epoch(code), keys.log(code)], args=[node, lease_ms]
        ))
        return int(epoch), str(value)

    async def leave_orphan(self, code: str, keep_ms: int) -> None:
        """The janitor leaves room ``code`` for its members (its log goes in ``keep_ms``)."""
        await self._run(self._leave_orphan(
            keys=[keys.LEASES, keys.log(code)], args=[code, keep_ms]
        ))

    # ---- input logs ---------------------------------------------------------------
    async def append(self, runs: Sequence[tuple[str, str, int, int, Sequence[str]]]) -> list[str]:
        """Append each run ``(room, owner value, epoch, first index, entries' data)`` whose
        room is still held as expected, in one script; the codes of the rooms fenced out
        (nothing of theirs is written)."""
        blob = json.dumps([[code, value, epoch, first, list(data)]
                           for code, value, epoch, first, data in runs],
                          ensure_ascii=False, separators=(",", ":"))
        return [str(code) for code in await self._run(self._append(args=[keys.PREFIX, blob]))]

    async def read_log(self, code: str) -> list[tuple[int, int, str]]:
        """Room ``code``'s log: ``(index, epoch, data)`` in order."""
        found = await self._run(self.redis.xrange(keys.log(code)))
        return [(int(f["i"]), int(f["e"]), str(f["d"])) for _id, f in found]

    async def log_rooms(self) -> list[str]:
        """Every room that has a log."""
        return sorted(await self._run(self.redis.smembers(keys.LOGS)))

    async def drop_logs(self, rooms: Mapping[str, str]) -> None:
        """Delete these rooms' logs (room -> this node's owner value), unless another node
        holds the room now."""
        args: list[str] = [keys.PREFIX]
        for code, value in rooms.items():
            args += [code, value]
        await self._run(self._drop_logs(args=args))

    # ---- look-ups -----------------------------------------------------------------
    async def locate_room(self, code: str) -> Located:
        """Who holds room ``code`` (an empty :class:`Located` when nobody does)."""
        found = await self._run(self._locate_room(keys=[keys.owner(code)], args=[keys.PREFIX]))
        if not found:
            return Located()
        node, epoch = keys.parse_owner(found[0])
        return Located(code, node, epoch, found[1] if len(found) > 1 else None)

    async def locate_session(self, token: str) -> Located:
        """The room of the session with reconnect ``token``, and who holds it."""
        found = await self._run(
            self._locate_session(keys=[keys.session(token)], args=[keys.PREFIX])
        )
        if not found:
            return Located()
        if len(found) < 2 or not found[1]:
            return Located(found[0])
        node, epoch = keys.parse_owner(found[1])
        return Located(found[0], node, epoch, found[2] if len(found) > 2 else None)

    async def ping(self) -> None:
        """Raise :class:`RedisUnavailable` unless Redis answers."""
        await self._run(self.redis.ping())
