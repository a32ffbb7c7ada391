"""The lobby: who is who, and which rooms exist, as a pure reducer.

It holds the sessions (a player's identity and reconnect token, found by
token, by player id and by connection) and the room registry, and decides
what the hub used to decide itself: whether a ``hello`` resumes a session and
which older connection it replaces, whether a room may be created (the
limits) and under which code, which room a ``join`` names, who gets the
spectator feed's snapshot, and what a lost connection or a player leaving a
room means for the session.

Like the rooms, it does no I/O and reads no clock or randomness: the time,
fresh ids and candidate room codes come in as arguments, and every decision
comes back as outputs (:mod:`server.race.outputs`) that the shell
(:mod:`server.hub`) carries out.  Connections are opaque keys (``C``): the
lobby only compares them.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Generic

from protocol.wire import lifecycle
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from server.race.daily import daily_options
from server.race.inputs import Dropped, Joined, Opened, Returned, apply, open_room
from server.race.listing import Summaries
from server.race.outputs import (
    C,
    InRoom,
    LobbyOutput,
    Replace,
    Reply,
    Retune,
    RoomOpened,
    Send,
    Snapshot,
)
from server.race.ratelimit import CreditBucket
from server.race.room import Room
from server.race.room_types import Identity, RoomTimings

SERVER_VERSION: Final = "tripeaks-race 0.1.0"
#: Public rooms listed at most.
LISTED_ROOMS: Final = 100


class Session(Generic[C]):
    """A player's identity across connections (reclaimed with the token).

    A plain class, not a dataclass: mypyc compiles no generic dataclass (tools/native.py).
    ``conn`` is the connection :attr:`Lobby.by_conn` maps to this session, and ``None``
    when none does: the hub's move fast path trusts a session it kept for a connection
    while its ``conn`` is still that connection (:class:`server.hub.MoveRoute`).
    """

    __slots__ = ("conn", "credit", "digest", "identity", "room", "token")

    def __init__(
        self, identity: Identity, token: str, conn: C | None = None, room: str | None = None,
        credit: CreditBucket | None = None, digest: str | None = None,
    ) -> None:
        self.identity = identity
        self.token = token
        self.conn = conn
        self.room = room
        #: The player's credit (set by the shell at the first ``hello``): it follows the
        #: player across connections, so reconnecting never refills it.
        self.credit = credit
        #: For a session rebuilt after a restart and not reclaimed yet: its token's digest
        #: (the token itself was never stored).
        self.digest = digest

    def __repr__(self) -> str:
        return f"Session({self.identity!r}, room={self.room!r})"


def token_digest(token: str) -> str:
    """What is stored of a reconnect token: its SHA-256, in hex.

    Tokens are 192 random bits, so no salt or slow hash is needed: nobody can
    guess a token from its digest, and a copy of the database hands out no seat.
    """
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class NewPlayer:
    """The ids a ``hello`` gets if it starts a new session (drawn by the shell)."""

    player_id: str
    token: str
    #: The claimed name the hello proved (checked by the shell); None for a guest.
    account: str | None = None


@dataclass(frozen=True, slots=True)
class Limits:
    """How many rooms one connection may create, and the server may hold."""

    rooms_per_connection: int
    max_rooms: int


class Lobby(Generic[C]):
    """Every session and room of one server."""

    def __init__(self, limits: Limits, timings: RoomTimings) -> None:
        self.limits = limits
        self.timings = timings
        self.rooms: dict[str, Room] = {}
        self.sessions: dict[str, Session[C]] = {}  # by token
        self.by_player: dict[str, Session[C]] = {}
        self.by_conn: dict[C, Session[C]] = {}
        #: Sessions rebuilt after a restart, by token digest, until their token comes back.
        self.restored: dict[str, Session[C]] = {}
        #: Moves on whenever the connection a player speaks through may have changed (a
        #: session made, resumed, dropped or forgotten): the hub keeps each room's
        #: connections (:meth:`conn_of` of its members) until it moves or the room changes.
        self.epoch = 0
        self._created: Counter[C] = Counter()
        self._summaries = Summaries(LISTED_ROOMS)

    # ---- queries ---------------------------------------------------------------
    def session_of(self, conn: C) -> Session[C] | None:
        """The session ``conn`` speaks for (``None`` before its ``hello``)."""
        return self.by_conn.get(conn)

    def room_of(self, conn: C) -> Room | None:
        """The room ``conn``'s player is in, if any."""
        session = self.by_conn.get(conn)
        return self.rooms.get(session.room) if session and session.room else None

    def conn_of(self, player_id: str) -> C | None:
        """The connection ``player_id`` speaks through now, if any."""
        session = self.by_player.get(player_id)
        return session.conn if session is not None else None

    def refusal(self, conn: C, tag: str) -> ErrorCode | None:
        """Why ``conn`` may not send message ``tag`` now (the life-cycle table), or None."""
        session = self.by_conn.get(conn)
        room = self.rooms.get(session.room) if session and session.room else None
        pid = session.identity.player_id if session else ""
        role = room.role_of(pid) if room else None
        phase = room.phase if room and role else None
        is_host = room.is_host(pid) if room else False
        return lifecycle.refusal(tag, session is not None, phase, role, is_host)

    def public_rooms(self) -> list[m.RoomSummary]:
        """Public rooms, newest first (at most :data:`LISTED_ROOMS`)."""
        # Rooms are only ever added as they are created, so the registry is in creation
        # order: the newest are read from its end, without sorting every room.
        public = (room for room in reversed(self.rooms.values()) if room.options.public)
        return self._summaries.listed(itertools.islice(public, LISTED_ROOMS))

    def rooms_by_state(self) -> dict[str, int]:
        """How many rooms are in each phase (every phase named)."""
        counts = Counter(room.phase.value for room in self.rooms.values())
        return {phase.value: counts.get(phase.value, 0) for phase in m.Phase}

    # ---- sessions --------------------------------------------------------------
    def hello(
        self, conn: C, hello: m.Hello, new: NewPlayer, now_ms: int
    ) -> list[LobbyOutput[C]]:
        """``conn`` says who it is: a session resumed by token, or a new one with ``new``."""
        session = self._by_token(hello.token) if hello.token else None
        resumed = session is not None
        outputs: list[LobbyOutput[C]] = []
        if session is None:
            who = Identity(new.player_id, hello.name, hello.bot, new.account)
            session = Session(who, new.token)
            self.sessions[session.token] = session
            self.by_player[new.player_id] = session
        elif session.conn is not None and session.conn is not conn:
            self.by_conn.pop(session.conn, None)
            outputs.append(Replace(session.conn))
        session.conn = conn
        self.by_conn[conn] = session
        self.epoch += 1
        who = session.identity
        welcome = m.Welcome(
            who.player_id, who.name, session.token, resumed, hello.version, SERVER_VERSION
        )
        outputs.append(Reply(welcome))
        room = self.rooms.get(session.room) if session.room else None
        if room is None or room.role_of(who.player_id) is None:
            session.room = None
            return outputs
        if who.player_id in room.spectators:
            outputs.append(Retune(conn, m.Role.SPECTATOR))
        back = Returned(who.player_id, now_ms)
        outputs.append(InRoom(room.code, apply(room, back), back))
        return outputs

    def _by_token(self, token: str) -> Session[C] | None:
        """The session of ``token``, a rebuilt one included (it takes its token back)."""
        session = self.sessions.get(token)
        if session is not None:
            return session
        session = self.restored.pop(token_digest(token), None)
        if session is not None:
            session.token, session.digest = token, None
            self.sessions[token] = session
        return session

    def connection_lost(self, conn: C, now_ms: int) -> list[LobbyOutput[C]]:
        """``conn`` is gone: its player keeps the seat for the grace period."""
        self._created.pop(conn, None)
        session = self.by_conn.pop(conn, None)
        if session is None or session.conn is not conn:
            return []
        session.conn = None
        self.epoch += 1
        room = self.rooms.get(session.room) if session.room else None
        if room is None:
            self._forget_session(session)
            return []
        dropped = Dropped(session.identity.player_id, now_ms)
        return [InRoom(room.code, apply(room, dropped), dropped)]

    def detach(self, code: str, player_id: str) -> list[LobbyOutput[C]]:
        """Room ``code`` says ``player_id`` is no longer in it."""
        session = self.by_player.get(player_id)
        if session is None or session.room != code:
            return []
        session.room = None
        if session.conn is None:
            self._forget_session(session)
            return []
        return [Retune(session.conn, m.Role.PLAYER)]

    def _forget_session(self, session: Session[C]) -> None:
        self.epoch += 1
        self.sessions.pop(session.token, None)
        if session.digest is not None:
            self.restored.pop(session.digest, None)
        if self.by_player.get(session.identity.player_id) is session:
            del self.by_player[session.identity.player_id]

    # ---- rooms -------------------------------------------------------------------
    def create_room(
        self, conn: C, options: m.RoomOptions, codes: Iterable[str], now_ms: int
    ) -> list[LobbyOutput[C]]:
        """``conn``'s player opens a room, under the first of ``codes`` not in use."""
        session = self._session(conn)
        if self._created[conn] >= self.limits.rooms_per_connection:
            raise ProtocolError(ErrorCode.TOO_MANY_ROOMS)
        if len(self.rooms) >= self.limits.max_rooms:
            raise ProtocolError(ErrorCode.SERVER_BUSY, "too many rooms are open; try again later")
        if options.practice_seed is not None and not options.practice_seed.isprintable():
            raise ProtocolError(ErrorCode.BAD_SEED)
        if options.daily:
            options = daily_options(options)
        code = next(code for code in codes if code not in self.rooms)
        given = Opened(code, options, session.identity, token_digest(session.token), now_ms)
        room = open_room(given, self.timings)
        self.rooms[code] = room
        self._created[conn] += 1
        session.room = code
        opened = RoomOpened(code, session.identity.player_id, options.public, given)
        return [opened, Reply(room.state(m.Role.PLAYER))]

    def join(self, conn: C, join: m.Join, code: str, now_ms: int) -> list[LobbyOutput[C]]:
        """``conn``'s player joins room ``code`` (``join.code`` in canonical form)."""
        session = self._session(conn)
        room = self.rooms.get(code)
        if room is None or room.closed:
            raise ProtocolError(ErrorCode.ROOM_NOT_FOUND, f"no room has the code {join.code!r}")
        pid = session.identity.player_id
        given = Joined(session.identity, token_digest(session.token), join.role, now_ms)
        outputs = apply(room, given)
        session.room = room.code
        if join.role is not m.Role.SPECTATOR:
            return [InRoom(room.code, outputs, given)]
        return [
            Retune(conn, m.Role.SPECTATOR), InRoom(room.code, [*outputs, Snapshot(pid)], given)
        ]

    def sync(self, conn: C, now_ms: int) -> list[LobbyOutput[C]]:
        """Everything ``conn``'s member needs to catch up with its room."""
        session = self._session(conn)
        room = self.rooms.get(session.room) if session.room else None
        if room is None:
            raise ProtocolError(ErrorCode.NOT_IN_ROOM)
        pid = session.identity.player_id
        if pid in room.spectators:
            return [InRoom(room.code, room.spectator_sync(pid))]
        state, resync = room.state(m.Role.PLAYER), room.resync(pid, now_ms)
        return [InRoom(room.code, [Send(pid, state), Send(pid, resync)])]

    def restore(self, room: Room, members: Iterable[tuple[Identity, str]]) -> None:
        """Take back ``room``, rebuilt after a restart, with its members' sessions
        (identity and token digest), each waiting for its token in a ``hello``."""
        self.rooms[room.code] = room
        for identity, digest in members:
            session: Session[C] = Session(identity, "", room=room.code, digest=digest)
            self.restored[digest] = session
            self.by_player[identity.player_id] = session
        self.epoch += 1

    def forget_room(self, code: str) -> None:
        """Room ``code`` closed: its code is free again."""
        self.rooms.pop(code, None)

    def drop_sessions(self, code: str) -> None:
        """Forget the sessions of room ``code``'s members, rebuilt ones included (another
        node holds the room now: they reconnect there)."""
        for token, session in list(self.sessions.items()):
            if session.room == code:
                del self.sessions[token]
                self.by_player.pop(session.identity.player_id, None)
                if session.conn is not None:
                    self.by_conn.pop(session.conn, None)
                    session.conn = None
        for digest, session in list(self.restored.items()):
            if session.room == code:
                del self.restored[digest]
                self.by_player.pop(session.identity.player_id, None)
        self.epoch += 1

    def _session(self, conn: C) -> Session[C]:
        session = self.by_conn.get(conn)
        if session is None:
            raise ProtocolError(ErrorCode.HELLO_REQUIRED)
        return session
