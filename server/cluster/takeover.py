"""Taking over a room whose owner went silent: claim it under a new epoch, replay its log.

A room's lease runs out ``lease_s`` after its owner's last renewal (the node
died, or stalled).  Then any node may take it: a ``hello`` or ``join`` that
finds the lease gone (:mod:`server.cluster.routing`), or the janitor, which
every tick looks for rooms whose lease ran out with a log still in Redis
(:data:`server.cluster.scripts.ORPHANS`).  The claim is one script
(:data:`server.cluster.scripts.TAKEOVER`): of several nodes trying at once,
one wins and raises the epoch, which fences the old owner's appends out.

The winner reads the room's stream, replays it into a fresh room
(:func:`server.recovery.resume.replay`) and takes it back as a restart would
(:func:`server.hub_rooms.restore`): members' sessions wait for their tokens,
races the log saw end are stored again (idempotently, by race id), and the
outage rule is logged as the next input (the race clock pauses for the gap,
every member gets a full reconnect grace).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from protocol.wire.messages import Phase
from server import logs
from server.cluster import keys
from server.cluster.directory import RedisUnavailable
from server.cluster.node import ClusterNode
from server.race.room import Room
from server.race.room_types import RoomTimings
from server.recovery.resume import Rebuilt, ReplayError, replay

#: Phases in which the janitor takes a room over without waiting for its members.
_RACING = frozenset({Phase.COUNTDOWN, Phase.RACING})


class Takeovers:
    """This node's takeovers; at most one at a time per room."""

    def __init__(
        self,
        node: ClusterNode,
        rooms: Callable[[], dict[str, Room]],
        timings: RoomTimings,
        restore: Callable[[Rebuilt], None],
    ) -> None:
        self.node = node
        self._rooms = rooms
        self._timings = timings
        self._restore = restore
        self._running: dict[str, asyncio.Future[bool]] = {}
        #: Rooms taken over, for the logs' and the tests' sake.
        self.taken = 0

    async def take(self, code: str) -> bool:
        """Take room ``code`` over if its lease ran out; True when it is this node's now."""
        if code in self._rooms():
            return True
        task = self._running.get(code)
        if task is None:
            task = self._running[code] = asyncio.ensure_future(self._take(code))
            self.node.taking.add(code)
            task.add_done_callback(lambda _task: self._done(code))
        return await asyncio.shield(task)

    def _done(self, code: str) -> None:
        self._running.pop(code, None)
        self.node.taking.discard(code)

    async def _take(self, code: str) -> bool:
        directory = self.node.directory
        started = asyncio.get_running_loop().time()
        epoch, _holder = await directory.takeover(code, self.node.node_id, self.node.lease_ms)
        if not epoch:
            return False
        self.node.epochs[code] = epoch
        rebuilt = await self._rebuild(code)
        if rebuilt is None:
            # Nothing to resume (a closed room, or no usable log): the lease goes at the
            # next tick, which gives up every code this node holds no room for.
            return False
        self._restore(rebuilt)
        self.taken += 1
        logs.event(
            "room_taken_over", room=code, node=self.node.node_id, epoch=epoch,
            replayed=rebuilt.next_index,
            ms=round((asyncio.get_running_loop().time() - started) * 1000, 1),
        )
        return True

    async def _rebuild(self, code: str) -> Rebuilt | None:
        value = keys.owner_value(self.node.node_id, self.node.epochs[code])
        try:
            entries = await self.node.directory.read_log(code)
            rebuilt = replay([data for _i, _e, data in entries], self._timings) if entries else None
        except ReplayError as exc:
            logs.event("room_not_resumed", level=logging.ERROR, room=code, reason=str(exc))
            rebuilt = None
        if rebuilt is None:
            await self.node.directory.drop_logs({code: value})
        return rebuilt

    def orphans(self, codes: tuple[str, ...], spawn: Callable[[Any], None]) -> None:
        """The janitor found these rooms without an owner: take over, in the background,
        those with a race on (a room between races waits for its members to come back:
        the first one's ``hello`` takes it over)."""
        for code in codes:
            if code not in self._running and code not in self._rooms():
                spawn(self._quietly(code))

    async def _racing(self, code: str) -> bool:
        """Whether room ``code``'s log ends in a countdown or a race (read, not claimed)."""
        entries = await self.node.directory.read_log(code)
        try:
            rebuilt = replay([data for _i, _e, data in entries], self._timings)
        except ReplayError:
            rebuilt = None
        if rebuilt is not None and rebuilt.room.phase in _RACING:
            return True
        # Left to its members: the log goes once no seat in it can be reclaimed.
        await self.node.directory.leave_orphan(code, self._timings.reconnect_grace_ms)
        return False

    async def _quietly(self, code: str) -> None:
        try:
            if await self._racing(code):
                await self.take(code)
        except RedisUnavailable as exc:
            logs.event("takeover_failed", level=logging.WARNING, room=code, reason=str(exc))
        except Exception:
            logs.failure("takeover_failed", room=code)
