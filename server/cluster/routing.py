"""Which node answers: ``moved`` for what lives elsewhere, found in Redis.

A ``join`` for a code this node does not hold, a ``hello`` with a token it
does not know, and a ``create_room`` while no claimed code is at hand need a
round trip to Redis.  While it runs, the connection's later messages wait in
order (:meth:`Router.holds`), so a client sees its answers in the order it
asked.  The answer is ``moved`` to the owner's URL, or the local path
(``room not found``, a new session, the created room), or error 203 when
Redis cannot be reached.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final, Protocol

from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode, ProtocolError
from server import logs
from server.cluster.directory import Located, RedisUnavailable
from server.cluster.node import ClusterNode
from server.cluster.takeover import Takeovers
from server.race.lobby import Lobby, token_digest
from server.race.ratelimit import CreditBucket
from server.transport.connection import Connection
from server.transport.framing import WriteBatch

#: Messages one connection may send while a look-up of its runs (more: closed 1008).
MAX_HELD: Final = 64
#: Claims a ``create_room`` waits for, at most, while others take the codes first.
CLAIM_TRIES: Final = 20
#: Seconds between look-ups while a room's node is silent but its lease runs.
SETTLE_POLL_S: Final = 0.25


class Shell(Protocol):
    """What the router needs of the hub."""

    lobby: Lobby[Connection]
    connections: dict[Connection, CreditBucket]
    batch: WriteBatch

    def reply(self, conn: Connection, message: m.ServerMessage) -> None: ...

    def error(
        self, conn: Connection, code: ErrorCode, detail: str = "", *,
        ref: str | None = None, seq: int | None = None,
    ) -> None: ...

    def handle(self, conn: Connection, message: m.ClientMessage) -> CloseCode | None: ...

    def hello_here(self, conn: Connection, hello: m.Hello, now: int) -> None: ...

    def join_here(self, conn: Connection, join: m.Join, code: str, now: int) -> CloseCode | None:
        ...

    def create_here(self, conn: Connection, create: m.CreateRoom, now: int) -> None: ...

    def drop_room(self, code: str) -> list[Connection]: ...

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None: ...

    def now_ms(self) -> int: ...


class Router:
    """Sends clients to the node that holds their room."""

    def __init__(self, node: ClusterNode, shell: Shell, takeovers: Takeovers) -> None:
        self.node = node
        self.shell = shell
        self.takeovers = takeovers
        self._held: dict[Connection, list[m.ClientMessage]] = {}
        node.on_lost = self.lost
        node.on_orphans = lambda codes: takeovers.orphans(codes, shell.spawn)

    def lost(self, code: str) -> None:
        """Room ``code`` is another node's now: forget it and its sessions here, and close
        its members' connections (they reconnect, and are sent to the new owner)."""
        conns = self.shell.drop_room(code)
        self.shell.lobby.drop_sessions(code)
        for conn in conns:
            # At once: nothing held for this room may reach them from here any more.
            conn.give_up(CloseCode.TRY_AGAIN_LATER, "the room moved to another node", linger_s=0.2)

    def fenced(self, codes: list[str]) -> None:
        """The input log refused these rooms' entries: another node holds them now."""
        for code in codes:
            self.node.give_up(code)
            self.lost(code)

    def holds(self, conn: Connection, message: m.ClientMessage) -> bool:
        """True when ``conn`` waits on a look-up: ``message`` then waits too, in order."""
        queue = self._held.get(conn)
        if queue is None:
            return False
        if len(queue) >= MAX_HELD:
            self.shell.spawn(conn.close(CloseCode.POLICY_VIOLATION, "too many messages"))
        else:
            queue.append(message)
        return True

    # ---- the three questions --------------------------------------------------------
    def hello(self, conn: Connection, hello: m.Hello) -> bool:
        """True when ``hello``'s token is not known here: it is looked up first."""
        lobby = self.shell.lobby
        if not hello.token or hello.token in lobby.sessions:
            return False
        if token_digest(hello.token) in lobby.restored:
            return False
        self._defer(conn, self._hello(conn, hello))
        return True

    def join(self, conn: Connection, join: m.Join, code: str) -> bool:
        """True when room ``code`` is not here: its owner is looked up first."""
        room = self.shell.lobby.rooms.get(code)
        if room is not None and not room.closed:
            return False
        self._defer(conn, self._join(conn, join, code))
        return True

    def create(self, conn: Connection, create: m.CreateRoom) -> bool:
        """True when no claimed code is at hand: some are claimed first."""
        if self.node.pool:
            return False
        self._defer(conn, self._create(conn, create))
        return True

    # ---- look-ups ----------------------------------------------------------------
    async def _hello(self, conn: Connection, hello: m.Hello) -> None:
        token = hello.token or ""
        found = await self._settled(lambda: self.node.directory.locate_session(token))
        if conn.closed:
            return
        if found is None:
            self._unavailable(conn, m.Hello.TAG, "cannot look up your seat")
        elif self._elsewhere(found):
            self._moved(conn, found, m.Hello.TAG)
        else:
            self.shell.hello_here(conn, hello, self.shell.now_ms())
            session = self.shell.lobby.session_of(conn)
            if session is not None and session.credit is None:
                session.credit = self.shell.connections.get(conn)

    async def _join(self, conn: Connection, join: m.Join, code: str) -> None:
        found = await self._settled(lambda: self.node.directory.locate_room(code))
        if conn.closed:
            return
        if found is None:
            self._unavailable(conn, m.Join.TAG, f"cannot find room {code}")
        elif self._elsewhere(found):
            self._moved(conn, found, m.Join.TAG)
        else:
            close = self.shell.join_here(conn, join, code, self.shell.now_ms())
            if close is not None:
                self.shell.spawn(conn.close(close))

    async def _settled(self, locate: Callable[[], Awaitable[Located]]) -> Located | None:
        """Where the room is once that is settled (None: Redis out of reach, or no node
        answers for it in time).  A room whose lease ran out is taken over here; while
        its owner's address is gone but its lease runs, this waits for one or the other."""
        deadline = asyncio.get_running_loop().time() + 2 * self.node.lease_ms / 1000
        try:
            while True:
                found = await locate()
                if found.code is not None and found.code in self.node.taking:
                    await self.takeovers.take(found.code)  # this node's janitor is at it
                    continue
                if found.code is None or found.node == self.node.node_id or found.url:
                    return found
                if found.node is None and await self.takeovers.take(found.code):
                    return Located(found.code, self.node.node_id)
                if asyncio.get_running_loop().time() > deadline:
                    return None
                await asyncio.sleep(SETTLE_POLL_S)
        except RedisUnavailable:
            return None

    async def _create(self, conn: Connection, create: m.CreateRoom) -> None:
        # Many creates at once share each claim: try until one leaves a code for this one.
        for _ in range(CLAIM_TRIES):
            if self.node.pool or conn.closed:
                break
            try:
                await self.node.refill()
            except RedisUnavailable:
                break
        if conn.closed:
            return
        if not self.node.pool:
            self._unavailable(conn, m.CreateRoom.TAG, "cannot claim a room code")
            return
        self.shell.create_here(conn, create, self.shell.now_ms())

    def _elsewhere(self, found: Located) -> bool:
        return found.node is not None and found.node != self.node.node_id and bool(found.url)

    def _moved(self, conn: Connection, found: Located, ref: str) -> None:
        assert found.url is not None
        logs.event("moved", conn=conn.conn_id, room=found.code, node=found.node, ref=ref)
        if conn.encoding.version < 2:  # version 1 has no moved: the address in words
            message = f"room {found.code} is on another node: connect to {found.url}"
            self.shell.error(conn, ErrorCode.ROOM_ELSEWHERE, message, ref=ref)
            return
        self.shell.reply(conn, m.Moved(found.url, ref, found.code))

    def _unavailable(self, conn: Connection, ref: str, what: str) -> None:
        problem = self.node.problem or "redis does not answer"
        detail = f"{what}: the cluster directory is out of reach ({problem}); try again soon"
        self.shell.error(conn, ErrorCode.CLUSTER_UNAVAILABLE, detail[:200], ref=ref)

    # ---- waiting in order ------------------------------------------------------------
    def _defer(self, conn: Connection, lookup: Coroutine[Any, Any, None]) -> None:
        self._held[conn] = []
        self.shell.spawn(self._settle(conn, lookup))

    async def _settle(self, conn: Connection, lookup: Coroutine[Any, Any, None]) -> None:
        try:
            await self._answer(conn, lookup)
        finally:
            self._release(conn)

    async def _answer(self, conn: Connection, lookup: Coroutine[Any, Any, None]) -> None:
        try:
            await lookup
        except ProtocolError as exc:
            self.shell.error(conn, exc.code, exc.message)
        except Exception:
            logs.failure("cluster_lookup_failed", conn=conn.conn_id)
            self.shell.error(conn, ErrorCode.INTERNAL_ERROR)

    def _release(self, conn: Connection) -> None:
        """Handle what waited, in order, until one of them has to wait again."""
        queue = self._held.pop(conn, [])
        with self.shell.batch:
            for index, message in enumerate(queue):
                if conn.closed:
                    return
                close = self.shell.handle(conn, message)
                if close is not None:
                    self.shell.spawn(conn.close(close))
                    return
                if conn in self._held:
                    self._held[conn][:0] = queue[index + 1:]
                    return

    def forget(self, conn: Connection) -> None:
        """``conn`` closed: nothing of it waits any more."""
        self._held.pop(conn, None)
