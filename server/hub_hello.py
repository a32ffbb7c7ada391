"""Where a ``hello`` is checked, and where a connection is registered and forgotten.

A ``hello`` whose token names a session of this node resumes it at once (the
session proved its name when it began).  Any other is checked against the
claimed names (:mod:`server.claims`) off the loop; meanwhile the
connection's later messages wait, in order (:class:`server.claims.Held`),
and are handled once the hello is answered.  In cluster mode the router
(:mod:`server.cluster.routing`) may first send the hello to another node.

A connection is registered when it opens, with the credit bucket it spends
from, and forgotten when its socket goes (its player keeps the seat for the
grace period), with what its hello left behind.
"""

from __future__ import annotations

import itertools
from collections.abc import Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode, ProtocolError
from server import ids, logs
from server.claims import Claims, Held
from server.config import Settings
from server.metrics import Metrics
from server.race.lobby import Lobby, NewPlayer
from server.race.outputs import LobbyOutput
from server.race.ratelimit import CreditBucket
from server.transport.connection import Connection

if TYPE_CHECKING:  # cluster mode only: embedded servers never load Redis
    from server.cluster.routing import Router


class Shell(Protocol):
    """What this module needs of the hub."""

    settings: Settings
    metrics: Metrics
    lobby: Lobby[Connection]
    connections: dict[Connection, CreditBucket]
    cluster: Router | None

    def error(
        self, conn: Connection, code: ErrorCode, detail: str = "", *,
        ref: str | None = None, seq: int | None = None,
    ) -> None: ...

    def apply(
        self, conn: Connection | None, outputs: Iterable[LobbyOutput[Connection]]
    ) -> None: ...

    def handle(self, conn: Connection, message: m.ClientMessage) -> CloseCode | None: ...

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None: ...

    def now_ms(self) -> int: ...


class Hellos:
    """The connections and ``hello``s of one hub.  ``held`` holds the messages of each
    connection whose hello is being checked; a connection in ``ticking`` asked for
    ``spectator_update``."""

    def __init__(
        self, hub: Shell, claims: Claims, held: dict[Connection, Held], ticking: set[Connection]
    ) -> None:
        self.hub, self.claims, self.held, self.ticking = hub, claims, held, ticking
        self._conn_ids = itertools.count(1)

    def next_conn_id(self) -> int:
        """A fresh connection id (for the logs)."""
        return next(self._conn_ids)

    def connect(self, conn: Connection) -> CreditBucket:
        """Register a freshly opened connection; its credit bucket."""
        hub = self.hub
        now = hub.now_ms()
        settings = hub.settings
        window_ms = max(1, int(settings.abuse_window_s * 1000))
        bucket = CreditBucket.full(settings.player_rate, settings.player_burst, now, window_ms)
        conn.last_seen_ms = now
        hub.connections[conn] = bucket
        hub.metrics.connections_opened.inc()
        return bucket

    def connection_lost(self, conn: Connection) -> None:
        """The socket is gone: its player keeps the seat for the grace period."""
        hub = self.hub
        hub.connections.pop(conn, None)
        self.held.pop(conn, None)
        self.ticking.discard(conn)
        if hub.cluster is not None:
            hub.cluster.forget(conn)
        hub.apply(conn, hub.lobby.connection_lost(conn, hub.now_ms()))

    def hello(self, conn: Connection, hello: m.Hello, now: int) -> None:
        """``hello``: answered here, unless the router sends it to another node."""
        cluster = self.hub.cluster
        if cluster is None or not cluster.hello(conn, hello):
            self.here(conn, hello, now)

    def here(self, conn: Connection, hello: m.Hello, now: int) -> None:
        """``hello`` answered by this node: a session resumed here, or a new one once its
        name is checked against the claims (:mod:`server.claims`)."""
        if hello.token is not None and hello.token in self.hub.lobby.sessions:
            self._welcome(conn, hello, None, now)  # resumed: the session proved its name
            return
        self.held[conn] = Held()
        self.hub.spawn(self._check(conn, hello))

    async def _check(self, conn: Connection, hello: m.Hello) -> None:
        """A new session's name checked against the claims, then welcomed or refused."""
        hub = self.hub
        try:
            account = await self.claims.account_for(hello, conn.address, hub.now_ms())
        except ProtocolError as exc:
            hub.error(conn, exc.code, exc.message, ref=hello.TAG)
            logs.event("hello_refused", conn=conn.conn_id, code=int(exc.code), address=conn.address)
        except Exception:
            logs.failure("handler_failed", conn=conn.conn_id, message=hello.TAG)
            hub.error(conn, ErrorCode.INTERNAL_ERROR, ref=hello.TAG)
        else:
            if conn in hub.connections:
                self._welcome(conn, hello, account, hub.now_ms())
        finally:
            self._release(conn)

    def _welcome(self, conn: Connection, hello: m.Hello, account: str | None, now: int) -> None:
        hub = self.hub
        new = NewPlayer(ids.player_id(), ids.reconnect_token(), account)
        if hello.spectator_update:
            self.ticking.add(conn)
        hub.apply(conn, hub.lobby.hello(conn, hello, new, now))
        session = hub.lobby.session_of(conn)
        if session is not None and session.credit is None:
            session.credit = hub.connections.get(conn)  # as the reader does after a hello
        player = session.identity.player_id if session else new.player_id
        guest = session.identity.account is None if session else True
        resumed = player != new.player_id
        logs.event(
            "hello", conn=conn.conn_id, player=player, resumed=resumed, guest=guest,
            address=conn.address,
        )

    def _release(self, conn: Connection) -> None:
        """Handle what ``conn`` sent while its hello was checked (a second hello holds again)."""
        held = self.held.pop(conn, None)
        for message in held.messages if held is not None else ():
            if conn not in self.hub.connections:
                return
            close = self.hub.handle(conn, message)
            if close is not None:
                self.hub.spawn(conn.close(close))
                return
