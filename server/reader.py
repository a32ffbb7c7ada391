"""The server's side of one connection: what its frames cost, and the hub's answer.

Every frame a client sends, WebSocket pings and pongs included, spends one
credit from two buckets: its player's (before ``hello`` the connection's own;
from then on :attr:`~server.race.lobby.Session.credit`, which follows the
player to every later connection) and the one all connections from its address
share (``address_players`` players' worth).  A frame without credit is refused
at little cost: no handler runs, and its ``error`` 114 is encoded once per
message type.  The abuse rule (:meth:`~server.race.ratelimit.CreditBucket.is_abusive`)
looks at the share of refused frames over the last window or two and closes
with 1008, so a flood is closed whether or not it is paced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode, ProtocolError
from server import logs
from server.config import Settings
from server.hub import Hub, MoveRoute
from server.race.ratelimit import CreditBucket
from server.transport.connection import Connection, Frame

#: Messages that end a player's part are never dropped for lack of credit:
#: losing a ``resign`` would leave a race waiting for a player who has gone.
_ALWAYS_HANDLED: Final = (m.Resign, m.Leave)

#: The ``error`` 114 frames for refusals without a ``seq``, by encoding and message type.
_LIMITED: dict[tuple[codec.Encoding, str | None], Frame] = {}


def _limited_frame(encoding: codec.Encoding, tag: str | None) -> Frame:
    frame = _LIMITED.get((encoding, tag))
    if frame is None:
        reply = codec.error_reply(ProtocolError(ErrorCode.RATE_LIMITED, tag=tag))
        frame = _LIMITED[encoding, tag] = codec.encode(reply, encoding)
    return frame


@dataclass(eq=False, slots=True)
class ConnectionReader:
    """What one connection's frames mean: their credit, bad frames, and the hub's answer."""

    hub: Hub
    conn: Connection
    bucket: CreditBucket
    settings: Settings
    bad_frames: int = 0
    #: What this connection's last move went through (:meth:`Hub.fast_move`).
    route: MoveRoute = field(default_factory=MoveRoute)

    def deadline(self) -> tuple[float, CloseCode] | None:
        """Before ``hello`` and outside a room a silent connection is closed."""
        session = self.hub.lobby.session_of(self.conn)
        if session is None and self.conn not in self.hub.held:
            return self.settings.hello_timeout_s, CloseCode.HELLO_TIMEOUT
        if session is None:  # a hello being checked ends, most likely, in a welcome
            return self.settings.idle_timeout_s, CloseCode.IDLE_TIMEOUT
        if session.room is None:
            return self.settings.idle_timeout_s, CloseCode.IDLE_TIMEOUT
        # In a room, a quiet spectator is normal: the heartbeat finds dead sockets.
        return None

    # ---- credit ------------------------------------------------------------------
    def _spend(self, now: int) -> bool:
        """Spend one frame's credit from the player's and the address's buckets."""
        bucket = self.bucket
        allowed = bucket.spend(now) and self.hub.address_credit.allow(self.conn.address, now)
        bucket.note(now, not allowed)
        return allowed

    def _abuse(self) -> CloseCode | None:
        """1008 once the refused frames make the sender abusive (logged), else None."""
        settings = self.settings
        if not self.bucket.is_abusive(settings.abuse_strikes, settings.abuse_share):
            return None
        self.hub.error(self.conn, ErrorCode.RATE_LIMITED)
        logs.event("abuse_closed", conn=self.conn.conn_id, address=self.conn.address)
        return CloseCode.POLICY_VIOLATION

    def on_control(self) -> bool | CloseCode:
        """A WebSocket ping or pong: True to answer it, False to ignore it, or the close."""
        now = self.conn.last_seen_ms = self.hub.now_ms()
        if self._spend(now):
            return True
        return self._abuse() or False

    def _adopt_credit(self) -> None:
        """After ``hello``: from now on the connection spends its player's credit."""
        hub, conn = self.hub, self.conn
        session = hub.lobby.session_of(conn)
        if session is None:
            return
        if session.credit is None:
            session.credit = self.bucket
            return
        self.bucket = session.credit
        if session.room is None:  # a resumed player outside a room has a player's budget
            self.bucket.retune(self.settings.player_rate, self.settings.player_burst)
        if conn in hub.connections:
            hub.connections[conn] = self.bucket

    # ---- frames ------------------------------------------------------------------
    def on_direct(self, frame: bytes | str) -> bool:
        """A move straight from aiohttp's parser (:mod:`server.transport.direct`); False queues it.

        Only what :meth:`on_frame` would answer on the fast path is taken here, so
        replies are the same either way.  A frame without credit is queued without
        spending, and :meth:`on_frame` then refuses it and counts it.
        """
        conn = self.conn
        if conn.closed:
            return False
        now = self.hub.now_ms()
        address = self.hub.address_credit
        if not (self.bucket.has_credit(now) and address.has_credit(conn.address, now)):
            return False
        if not self._fast_move(frame, now):
            return False
        self._spend(now)
        conn.last_seen_ms = now
        return True

    def _fast_move(self, frame: bytes | str, now: int) -> bool:
        """:meth:`Hub.fast_move` for a msgpack frame; True when it answered (a failure included)."""
        # move_result is the same frame in every version (no field is newer than 1).
        if type(frame) is not bytes or not self.conn.encoding.binary:
            return False
        hub = self.hub
        try:
            if not hub.fast_move(self.conn, frame, now, self.route):
                return False
        except Exception:
            logs.failure("handler_failed", conn=self.conn.conn_id, message=m.MoveRequest.TAG)
            hub.error(self.conn, ErrorCode.INTERNAL_ERROR, ref=m.MoveRequest.TAG)
            return True
        try:
            hub.poll(now)  # the commits and flushes a long turn of the loop would hold
        except Exception:
            logs.failure("poll_failed", conn=self.conn.conn_id)
        return True

    def on_frame(self, frame: bytes | str) -> CloseCode | None:
        """Handle one data frame; returns the close code when the connection must go."""
        conn = self.conn
        now = conn.last_seen_ms = self.hub.now_ms()
        if not self._spend(now):
            return self._refused(frame)
        if self._fast_move(frame, now):
            return None
        try:
            message = codec.decode(frame, conn.encoding)
        except ProtocolError as exc:
            return self._bad_frame(exc)
        return self._handle(message)

    def _refused(self, frame: bytes | str) -> CloseCode | None:
        """A frame without credit: dropped with error 114, unless it ends the player's part."""
        close = self._abuse()
        if close is not None:
            return close
        conn = self.conn
        try:
            message = codec.decode(frame, conn.encoding)
        except ProtocolError:
            message = None
        if isinstance(message, _ALWAYS_HANDLED):
            return self._handle(message)
        if isinstance(message, m.MoveRequest):
            self.hub.error(conn, ErrorCode.RATE_LIMITED, ref=message.TAG, seq=message.seq)
            return None
        conn.send(_limited_frame(conn.encoding, message.TAG if message else None))
        self.hub.count_error(ErrorCode.RATE_LIMITED)
        return None

    def _handle(self, message: m.ClientMessage) -> CloseCode | None:
        hub, conn = self.hub, self.conn
        try:
            close = hub.handle(conn, message)
        except Exception:
            # Nothing a client sends may take the server down: report and carry on.
            logs.failure("handler_failed", conn=conn.conn_id, message=message.TAG)
            hub.error(conn, ErrorCode.INTERNAL_ERROR, ref=message.TAG)
            return None
        if type(message) is m.Hello:
            self._adopt_credit()
        return close

    def _bad_frame(self, exc: ProtocolError) -> CloseCode | None:
        self.bad_frames += 1
        self.hub.error(self.conn, exc.code, exc.message, ref=exc.tag, seq=exc.seq)
        if exc.code is ErrorCode.UNSUPPORTED_VERSION:
            return CloseCode.UNSUPPORTED_VERSION
        if self.bad_frames >= self.settings.bad_frame_limit:
            logs.event("too_many_bad_frames", conn=self.conn.conn_id, address=self.conn.address)
            return CloseCode.TOO_MANY_ERRORS
        return None
