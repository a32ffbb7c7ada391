"""The input log in Redis: a stream per room, every append fenced by the room's epoch.

:class:`RedisInputLog` is :class:`server.recovery.log.InputLog` for cluster
mode.  The journal's group commit (:mod:`server.recovery.journal`) hands it
every entry gathered since the last commit, across all of the node's rooms;
they go to Redis in one script (:data:`server.cluster.scripts.APPEND`), so a
commit costs one round trip however many rooms it covers.

The script writes a room's entries only while the room's owner key still
holds this node's ``node:epoch``.  A room another node has taken over is
*fenced*: nothing of it is written, the refusal is logged
(``input_log_fenced``), and the node drops the room at once, before the
commit's held outputs are released (:attr:`RedisInputLog.on_fenced`): its
members' connections are closed, so no answer to an unlogged input ever goes
out, and no result of it is stored.

Entries of rooms refused because Redis could not be reached make those
rooms' logs incomplete; the journal stops logging them, and their logs are
deleted as soon as Redis answers again (:meth:`RedisInputLog.repair`), so a
later takeover can never replay half a room.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from server import logs
from server.cluster import keys
from server.cluster.directory import RedisUnavailable
from server.cluster.node import ClusterNode
from server.recovery.log import Run


class RedisInputLog:
    """The rooms' input logs of one node, in Redis."""

    def __init__(self, node: ClusterNode) -> None:
        self.node = node
        #: Called (synchronously, within the append) with the codes of fenced rooms.
        self.on_fenced: Callable[[list[str]], None] = lambda rooms: None
        #: Entries refused because another node holds their room (for tests and metrics).
        self.refused = 0
        #: Rooms whose log in Redis misses entries (an append failed): to delete.
        self.stale: set[str] = set()

    def _value(self, room: str) -> str | None:
        epoch = self.node.epochs.get(room)
        return keys.owner_value(self.node.node_id, epoch) if epoch is not None else None

    async def append(self, runs: Sequence[Run]) -> None:
        """Write every entry of a room this node still holds; fence out the others."""
        held: list[tuple[str, str, int, int, Sequence[str]]] = []
        fenced: list[str] = []
        entries: dict[str, int] = {}
        for run in runs:
            room = run.room
            entries[room] = entries.get(room, 0) + len(run.data)
            value = self._value(room)
            if value is None:
                if room not in fenced:
                    fenced.append(room)
            else:
                held.append((room, value, self.node.epochs[room], run.first, run.data))
        if held:
            rooms = {room for room, _value, _epoch, _first, _data in held}
            try:
                refused = await self.node.directory.append(held)
            except RedisUnavailable:
                self.stale.update(rooms)
                raise
            fenced += [room for room in refused if room not in fenced]
            self.stale.difference_update(rooms)
        if fenced:
            count = sum(entries[room] for room in fenced)
            self.refused += count
            logs.event("input_log_fenced", level=logging.WARNING, rooms=sorted(fenced),
                       entries=count)
            self.on_fenced(fenced)

    async def read(self, room: str) -> list[tuple[int, int, str]]:
        """Room ``room``'s entries, in order."""
        return await self.node.directory.read_log(room)

    async def rooms(self) -> list[str]:
        """Every room with a log in Redis (every node's)."""
        return await self.node.directory.log_rooms()

    async def drop(self, rooms: Sequence[str]) -> None:
        """Delete these rooms' logs, unless another node holds a room now."""
        if rooms:
            await self.node.directory.drop_logs({room: self._value(room) or "" for room in rooms})
            self.stale.difference_update(rooms)

    async def repair(self) -> None:
        """Delete the logs that miss entries (called once Redis answers again)."""
        if self.stale:
            rooms = sorted(self.stale)
            await self.drop(rooms)
            logs.event("input_logs_dropped", rooms=rooms, reason="entries lost with redis away")
