"""Where a client message is handled (the general path), and the lobby's outputs carried out.

Each decoded message is checked against the life cycle (the lobby's
refusal) and goes to its handler: ``create_room``, ``join``, ``list_rooms``,
``ping``, ``sync`` and the room calls (``leave``, ``ready``, ``start``,
``kick``, ``resign``, ``rematch``, ``update_options``) here, to the
reducers (:mod:`server.race.lobby`, :mod:`server.race.inputs`); ``hello``
to :mod:`server.hub_hello`; ``move`` to the hub (:mod:`server.hub`, whose
fast path takes most moves before they are even decoded).  What the lobby
returns (replies, a replaced or retuned connection, a room opened, a room's
outputs) is carried out here too.  In cluster mode the router
(:mod:`server.cluster.routing`) may first hold a message, or send a
``create_room`` or a ``join`` to another node.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode, ProtocolError
from server import hub_rooms, ids, logs
from server.claims import Held
from server.config import Settings
from server.hub_rooms import RoomHandle, in_room_of
from server.metrics import Metrics
from server.race import inputs
from server.race.listing import RoomListing, listing_cost
from server.race.outputs import InRoom, LobbyOutput, Output, Replace, Reply, Retune, RoomOpened
from server.race.ratelimit import AddressLimiter, CreditBucket
from server.race.room_types import Fresh
from server.transport.connection import Connection, Frame

if TYPE_CHECKING:  # cluster mode only: embedded servers never load Redis
    from server.cluster.routing import Router


def _fresh() -> Fresh:
    return Fresh(ids.seed(), ids.race_id())


#: Client messages that are plain room inputs: (sender, message, now) -> the input.
_ROOM_CALLS: Final[dict[type[Any], Callable[[str, Any, int], inputs.Input]]] = {
    m.Leave: lambda pid, msg, now: inputs.Left(pid, now),
    m.Ready: lambda pid, msg, now: inputs.ReadySet(pid, msg.ready, now),
    m.Start: lambda pid, msg, now: inputs.Started(pid, _fresh(), now),
    m.Kick: lambda pid, msg, now: inputs.Kicked(pid, msg.player_id, now),
    m.Resign: lambda pid, msg, now: inputs.Resigned(pid, now),
    m.Rematch: lambda pid, msg, now: inputs.Rematched(pid, _fresh(), now),
    m.UpdateOptions: lambda pid, msg, now: inputs.OptionsSet(pid, msg.options, now),
}

#: A handler of a client message: (connection, message, now) -> the close code, if any.
Call = Callable[[Connection, Any, int], CloseCode | None]


class Shell(hub_rooms.Shell, Protocol):
    """What this module needs of the hub."""

    settings: Settings
    connections: dict[Connection, CreditBucket]
    join_failures: AddressLimiter
    cluster: Router | None
    closing: bool
    metrics: Metrics

    def reply(self, conn: Connection, message: m.ServerMessage) -> None: ...

    def error(
        self, conn: Connection, code: ErrorCode, detail: str = "", *,
        ref: str | None = None, seq: int | None = None,
    ) -> None: ...

    def apply(
        self, conn: Connection | None, outputs: Iterable[LobbyOutput[Connection]]
    ) -> None: ...

    def run(self, handle: RoomHandle, outputs: Iterable[Output]) -> None: ...

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None: ...


class Messages:
    """The client messages of one hub.  ``held`` holds the messages of each connection
    whose hello is being checked; ``put`` sends a ready frame (held while the inputs
    before it are not logged); ``more`` are the handlers of the hub's own messages."""

    def __init__(
        self, hub: Shell, held: dict[Connection, Held],
        put: Callable[[Connection, Frame], None], more: Mapping[type[Any], Call],
    ) -> None:
        self.hub, self.held, self._put = hub, held, put
        self._listing = RoomListing(())
        lobby = hub.lobby
        self._calls: dict[type[Any], Call] = {
            m.Ping: lambda conn, msg, now: hub.reply(conn, m.Pong(msg.client_time_ms, now)),
            m.ListRooms: self.list_rooms,
            m.CreateRoom: self.create,
            m.Join: self.join,
            m.Sync: lambda conn, msg, now: hub.apply(conn, lobby.sync(conn, now)),
            **more,
        }

    def handle(self, conn: Connection, message: m.ClientMessage) -> CloseCode | None:
        """Check one decoded message against the life cycle and act on it; the close code
        when the connection must go."""
        hub = self.hub
        held = self.held.get(conn)
        if held is not None:  # its hello is being checked: in order, after it
            if not held.add(message):
                hub.error(conn, ErrorCode.RATE_LIMITED, ref=message.TAG)
            return None
        if hub.cluster is not None and hub.cluster.holds(conn, message):
            return None
        refusal = hub.lobby.refusal(conn, message.TAG)
        seq = message.seq if isinstance(message, m.MoveRequest) else None
        if refusal is not None:
            hub.error(conn, refusal, ref=message.TAG, seq=seq)
            return None
        if hub.closing and not isinstance(message, m.Ping):
            hub.error(conn, ErrorCode.SHUTTING_DOWN, ref=message.TAG, seq=seq)
            return None
        call = self._calls.get(type(message), self.room_call)
        try:
            return call(conn, message, hub.now_ms())
        except ProtocolError as exc:
            hub.error(conn, exc.code, exc.message, ref=message.TAG, seq=exc.seq or seq)
            return None

    def outputs(self) -> dict[type[Any], Callable[[Connection | None, Any], None]]:
        """The handlers of the lobby's outputs, by output type (``conn``: who asked)."""
        return {
            Reply: self._reply,
            Replace: self._replace,
            Retune: self._retune,
            RoomOpened: lambda _conn, out: hub_rooms.opened(self.hub, out),
            InRoom: self._in_room,
        }

    def room_listing(self) -> RoomListing:
        """The public rooms (newest first, at most 100), encoded once until one changes."""
        hub = self.hub
        if hub.cluster is not None:
            rooms = hub.cluster.node.listing(hub.lobby.rooms)
        else:
            rooms = tuple(hub.lobby.public_rooms())
        if rooms != self._listing.rooms:
            self._listing = RoomListing(rooms)
        return self._listing

    def list_rooms(self, conn: Connection, msg: m.ListRooms, now: int) -> None:
        """``list_rooms``: the cached listing, for the credit its size costs."""
        frame = self.room_listing().frame(conn.encoding)
        bucket = self.hub.connections.get(conn)
        # The frame that asked has spent one credit already.
        extra = listing_cost(len(frame), bucket.burst) - 1 if bucket is not None else 0
        if bucket is not None and extra > 0 and not bucket.spend(now, extra):
            self.hub.error(conn, ErrorCode.RATE_LIMITED, ref=msg.TAG)
            return
        self._put(conn, frame)
        self.hub.metrics.hot.frames_sent += 1

    def create(self, conn: Connection, create: m.CreateRoom, now: int) -> None:
        """``create_room``: here, unless the router claims a code cluster-wide first."""
        cluster = self.hub.cluster
        if cluster is None or not cluster.create(conn, create):
            self.create_here(conn, create, now)

    def create_here(self, conn: Connection, create: m.CreateRoom, now: int) -> None:
        """``create_room`` on this node (in cluster mode, under a code claimed cluster-wide)."""
        if create.options.daily and conn.encoding.version < 2:
            # A daily race_over keeps its seed back (null), which version 1 cannot say.
            raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION, "the daily deal needs version 2")
        hub, cluster = self.hub, self.hub.cluster
        codes = cluster.node.codes() if cluster else iter(ids.room_code, "")
        hub.apply(conn, hub.lobby.create_room(conn, create.options, codes, now))
        if cluster is not None:
            cluster.node.nudge()

    def join(self, conn: Connection, join: m.Join, now: int) -> CloseCode | None:
        """``join``: here, unless the router finds the room on another node."""
        code = ids.normalize_room_code(join.code)
        cluster = self.hub.cluster
        if cluster is not None and cluster.join(conn, join, code):
            return None
        return self.join_here(conn, join, code, now)

    def join_here(self, conn: Connection, join: m.Join, code: str, now: int) -> CloseCode | None:
        """A ``join`` of room ``code`` on this node; one that names no room spends the
        address's failed-join credit."""
        hub = self.hub
        try:
            hub.apply(conn, hub.lobby.join(conn, join, code, now))
            if hub.cluster is not None:
                hub.cluster.node.nudge()
        except ProtocolError as exc:
            if exc.code is not ErrorCode.ROOM_NOT_FOUND or hub.join_failures.allow(
                conn.address, now
            ):
                raise
            hub.error(conn, exc.code, exc.message, ref=join.TAG)
            logs.event("join_failures_closed", conn=conn.conn_id, address=conn.address)
            return CloseCode.POLICY_VIOLATION
        return None

    def room_call(self, conn: Connection, msg: m.ClientMessage, now: int) -> None:
        """A message that is a plain input of the sender's room."""
        handle, pid = in_room_of(self.hub, conn)
        call = _ROOM_CALLS.get(type(msg))
        if call is None:
            raise ProtocolError(ErrorCode.NOT_ALLOWED_NOW)
        self.hub.enter(handle, call(pid, msg, now))
        if isinstance(msg, m.UpdateOptions):
            handle.feed.delay_ms = msg.options.spectator_delay_s * 1000

    def _reply(self, conn: Connection | None, out: Reply) -> None:
        assert conn is not None, "a reply answers a connection"
        self.hub.reply(conn, out.message)

    def _replace(self, _conn: Connection | None, out: Replace[Connection]) -> None:
        self.hub.connections.pop(out.conn, None)
        self.hub.spawn(out.conn.close(CloseCode.REPLACED))

    def _retune(self, _conn: Connection | None, out: Retune[Connection]) -> None:
        bucket = self.hub.connections.get(out.conn)
        if bucket is None:
            return
        settings = self.hub.settings
        if out.role is m.Role.SPECTATOR:
            bucket.retune(settings.spectator_rate, settings.spectator_burst)
        else:
            bucket.retune(settings.player_rate, settings.player_burst)

    def _in_room(self, _conn: Connection | None, out: InRoom) -> None:
        hub = self.hub
        handle = hub.handles.get(out.code)
        if handle is not None:
            if hub.journal is not None and out.logged is not None:
                hub.journal.record(out.code, out.logged)
            hub.run(handle, out.outputs)
