"""The hub: the thin I/O shell around the pure rooms.

It owns the sessions (who is who, with reconnect tokens), the rooms, their
timers and spectator feeds, the deal process pool and the pending database
writes.  A decoded client message is checked against the life-cycle table
(:mod:`protocol.wire.lifecycle`), handed to its room, and the room's outputs are
carried out here: frames encoded once per encoding and sent to many, timers
set on the event loop, deals computed in worker processes, races stored.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import logging
import time
from collections import Counter, deque
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from aiohttp import web

from protocol.deals.dealer import DealtGame, Difficulty, deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import codec, lifecycle
from protocol.wire import messages as m
from protocol.wire.errors import ERROR_TEXT, CloseCode, ErrorCode, ProtocolError
from server import ids, logs
from server.config import Settings
from server.metrics import Metrics
from server.race.outputs import (
    CancelTimer,
    CloseRoom,
    DealRequest,
    Detach,
    Output,
    RaceBegan,
    RaceEnded,
    SaveRace,
    Send,
    SetTimer,
    ToPlayers,
    ToSpectators,
)
from server.race.ratelimit import CreditBucket
from server.race.records import RaceRecord
from server.race.room import Room
from server.race.room_types import Fresh, Identity, RoomTimings
from server.race.spectate import SpectatorFeed
from server.storage.store import RaceStore
from server.transport.connection import BATCH, Connection, Frame, Transport
from server.transport.heartbeat import keep_alive

SERVER_VERSION: Final = "tripeaks-race 0.1.0"
_FEED_TIMER: Final = "__feed__"


@dataclass(eq=False, slots=True)
class Session:
    """A player's identity across connections (reclaimed with the token)."""

    identity: Identity
    token: str
    conn: Connection | None = None
    room: str | None = None


@dataclass(eq=False, slots=True)
class RoomHandle:
    """A room plus the shell's side of it: timers and the spectator feed."""

    room: Room
    feed: SpectatorFeed[m.ServerMessage]
    timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)


class Hub:
    """Every room and session of one server."""

    def __init__(
        self,
        settings: Settings,
        store: RaceStore,
        executor: concurrent.futures.Executor,
    ) -> None:
        self.settings = settings
        self.store = store
        self.executor = executor
        self.rooms: dict[str, RoomHandle] = {}
        self.sessions: dict[str, Session] = {}  # by token
        self.by_player: dict[str, Session] = {}
        self.connections: set[Connection] = set()
        self.closing = False
        self.metrics = Metrics(lambda: len(self.connections), self.rooms_by_state)
        self.timings = RoomTimings(
            reconnect_grace_ms=int(settings.reconnect_grace_s * 1000),
            empty_grace_ms=int(settings.empty_room_grace_s * 1000),
            progress_interval_ms=max(1, int(1000 / settings.progress_hz)),
            max_race_ms=int(settings.max_race_s * 1000),
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self._saves: set[asyncio.Task[None]] = set()
        self._conn_ids = itertools.count(1)
        self.move_count = 0  # moves handled, for sampled timing
        self._prepared: dict[tuple[Rules, Difficulty], deque[DealtGame]] = {}
        self._preparing: set[tuple[Rules, Difficulty]] = set()
        loop = asyncio.get_running_loop()
        # One clock for everything: unix milliseconds that never go backwards.
        self._clock_offset_ms = time.time() * 1000 - loop.time() * 1000
        self._loop = loop

    def start(self) -> None:
        """Warm up: fill the deal queue for the default rules; start the heartbeat."""
        self._prepare_ahead((m.RoomOptions().rules, Difficulty.ANY))
        if self.settings.heartbeat_s > 0:
            self.spawn(keep_alive(lambda: self.connections, self.now_ms, self.settings.heartbeat_s))

    # ---- clock and bookkeeping ------------------------------------------------
    def now_ms(self) -> int:
        """Unix time in ms, driven by the loop's monotonic clock."""
        return int(self._loop.time() * 1000 + self._clock_offset_ms)

    def rooms_by_state(self) -> dict[str, int]:
        counts = Counter(handle.room.phase.value for handle in self.rooms.values())
        return {phase.value: counts.get(phase.value, 0) for phase in m.Phase}

    def public_rooms(self) -> list[m.RoomSummary]:
        """Public rooms, newest first (at most 100)."""
        rooms = [h.room for h in self.rooms.values() if h.room.options.public]
        rooms.sort(key=lambda room: room.created_ms, reverse=True)
        return [room.summary() for room in rooms[:100]]

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` in the background; shutdown cancels whatever is left."""
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- sending ---------------------------------------------------------------
    def reply(self, conn: Connection, message: m.ServerMessage) -> None:
        conn.send(codec.encode(message, conn.encoding))
        self.metrics.hot.frames_sent += 1

    def error(
        self,
        conn: Connection,
        code: ErrorCode,
        detail: str = "",
        *,
        ref: str | None = None,
        seq: int | None = None,
    ) -> None:
        """Send an ``error`` reply and count it."""
        self.metrics.protocol_errors.labels(code=str(int(code))).inc()
        text = _printable(detail or ERROR_TEXT.get(code, "error"))[:200] or "error"
        self.reply(conn, m.Error(int(code), text, ref[:32] if ref else None, seq))

    def broadcast(self, conns: Iterable[Connection], message: m.ServerMessage) -> None:
        """Send one message to many: encoded at most once per encoding."""
        frames: dict[codec.Encoding, Frame] = {}
        sent = 0
        for conn in conns:
            frame = frames.get(conn.encoding)
            if frame is None:
                frame = frames[conn.encoding] = codec.encode(message, conn.encoding)
            conn.send(frame)
            sent += 1
        self.metrics.hot.frames_sent += sent

    def _conns(self, player_ids: Iterable[str]) -> list[Connection]:
        found = []
        for pid in player_ids:
            session = self.by_player.get(pid)
            if session is not None and session.conn is not None and not session.conn.closed:
                found.append(session.conn)
        return found

    # ---- outputs of the rooms -------------------------------------------------
    def run(self, handle: RoomHandle, outputs: Iterable[Output]) -> None:
        """Carry out a room's outputs, in order."""
        room = handle.room
        for out in outputs:
            if isinstance(out, Send):
                conns = self._conns((out.player_id,))
                if conns:
                    self.reply(conns[0], out.message)
            elif isinstance(out, ToPlayers):
                self.broadcast(self._conns(room.connected_players()), out.message)
            elif isinstance(out, ToSpectators):
                self._to_spectators(handle, out)
            elif isinstance(out, SetTimer):
                self._set_timer(handle, out.name, out.at_ms)
            elif isinstance(out, CancelTimer):
                timer = handle.timers.pop(out.name, None)
                if timer is not None:
                    timer.cancel()
            elif isinstance(out, DealRequest):
                self.spawn(self._deal(handle, out))
            elif isinstance(out, SaveRace):
                self._save(out.record)
            elif isinstance(out, Detach):
                self._detach(room, out.player_id)
            elif isinstance(out, RaceBegan):
                self.metrics.races_started.inc()
                logs.event("race_started", room=room.code, race_id=out.race_id, players=out.players)
            elif isinstance(out, RaceEnded):
                self.metrics.races_finished.inc()
                logs.event(
                    "race_ended", room=room.code, race_id=out.race_id, ended_by=out.ended_by.value
                )
            elif isinstance(out, CloseRoom):
                self._forget_room(handle)

    def _to_spectators(self, handle: RoomHandle, out: ToSpectators) -> None:
        room = handle.room
        if out.live:
            if room.spectators:
                self.broadcast(self._conns(room.spectators), out.message)
            return
        now = self.now_ms()
        handle.feed.push(now, out.message, out.key, new_race=out.new_race)
        self._release_feed(handle, now)

    def _release_feed(self, handle: RoomHandle, now: int) -> None:
        for message in handle.feed.due(now):
            if handle.room.spectators:
                self.broadcast(self._conns(handle.room.spectators), message)
        due = handle.feed.next_release_ms()
        if due is not None and _FEED_TIMER not in handle.timers:
            self._set_timer(handle, _FEED_TIMER, due)

    def _set_timer(self, handle: RoomHandle, name: str, at_ms: int) -> None:
        old = handle.timers.pop(name, None)
        if old is not None:
            old.cancel()
        if self.closing:
            return  # shutting down: nothing may fire after the rooms were wound up
        when = (at_ms - self._clock_offset_ms) / 1000
        handle.timers[name] = self._loop.call_at(when, self._fire, handle, name)

    def _fire(self, handle: RoomHandle, name: str) -> None:
        handle.timers.pop(name, None)
        if handle.room.closed and name != _FEED_TIMER:
            return
        now = self.now_ms()
        try:
            with BATCH:
                if name == _FEED_TIMER:
                    self._release_feed(handle, now)
                else:
                    self.run(handle, handle.room.on_timer(name, now))
        except Exception:
            logs.failure("timer_failed", room=handle.room.code, timer=name)

    def _detach(self, room: Room, player_id: str) -> None:
        session = self.by_player.get(player_id)
        if session is None or session.room != room.code:
            return
        session.room = None
        conn = session.conn
        if conn is not None:
            conn.bucket.retune(self.settings.player_rate, self.settings.player_burst)
        else:
            self._forget_session(session)

    def _forget_room(self, handle: RoomHandle) -> None:
        for timer in handle.timers.values():
            timer.cancel()
        handle.timers.clear()
        self.rooms.pop(handle.room.code, None)
        logs.event("room_closed", room=handle.room.code)

    def _forget_session(self, session: Session) -> None:
        self.sessions.pop(session.token, None)
        if self.by_player.get(session.identity.player_id) is session:
            del self.by_player[session.identity.player_id]

    # ---- dealing -----------------------------------------------------------------
    async def _deal(self, handle: RoomHandle, request: DealRequest) -> None:
        practice = handle.room.options.practice_seed is not None
        dealt: DealtGame | None = None
        key = (request.rules, request.difficulty)
        started = time.perf_counter()
        try:
            if not practice and self._prepared.get(key):
                dealt = self._prepared[key].popleft()
            else:
                dealt = await self._loop.run_in_executor(
                    self.executor, deal_for_seed, request.seed, request.rules, request.difficulty
                )
        except Exception as exc:
            logs.event("deal_failed", level=logging.WARNING, room=handle.room.code, reason=str(exc))
            if not handle.room.closed:
                reason = _printable(f"cannot deal: {exc}")
                self.run(handle, handle.room.deal_failed(request.ticket, reason))
            return
        self.metrics.deal_seconds.observe(time.perf_counter() - started)
        if not practice:
            self._prepare_ahead(key)
        if not handle.room.closed and not self.closing:
            self.run(handle, handle.room.deal_ready(request.ticket, dealt, self.now_ms()))

    def _prepare_ahead(self, key: tuple[Rules, Difficulty]) -> None:
        """Keep a few deals ready per rule set, so most starts need no solving at all."""
        if self.settings.deals_ahead <= 0 or key in self._preparing or self.closing:
            return
        self._preparing.add(key)
        self.spawn(self._fill(key))

    async def _fill(self, key: tuple[Rules, Difficulty]) -> None:
        queue = self._prepared.setdefault(key, deque())
        try:
            while len(queue) < self.settings.deals_ahead and not self.closing:
                dealt = await self._loop.run_in_executor(
                    self.executor, deal_for_seed, ids.seed(), key[0], key[1]
                )
                queue.append(dealt)
        except Exception:
            logs.failure("prepare_deal_failed")
        finally:
            self._preparing.discard(key)

    # ---- storing -------------------------------------------------------------------
    def _save(self, record: RaceRecord) -> None:
        task = self._loop.create_task(self._save_now(record))
        self._saves.add(task)
        task.add_done_callback(self._saves.discard)

    async def _save_now(self, record: RaceRecord) -> None:
        try:
            await self.store.save_race(record)
        except Exception:
            self.metrics.storage_errors.inc()
            logs.failure("race_save_failed", race_id=record.race_id)
            return
        self.metrics.stored_races.inc()
        logs.event("race_saved", race_id=record.race_id, room=record.room_code)

    async def wait_saved(self, timeout: float) -> None:
        """Wait for every pending race write (at most ``timeout`` seconds)."""
        if self._saves:
            await asyncio.wait(list(self._saves), timeout=timeout)

    # ---- connections -----------------------------------------------------------
    def new_connection(
        self,
        ws: web.WebSocketResponse,
        encoding: codec.Encoding,
        address: str,
        transport: Transport | None = None,
    ) -> Connection:
        """Register a freshly opened WebSocket (``transport``: its socket, for direct writes)."""
        bucket = CreditBucket.full(
            self.settings.player_rate, self.settings.player_burst, self.now_ms()
        )
        conn = Connection(ws, encoding, address, bucket, next(self._conn_ids))
        conn.transport = transport
        conn.last_seen_ms = self.now_ms()
        self.connections.add(conn)
        self.metrics.connections_opened.inc()
        return conn

    def connection_lost(self, conn: Connection) -> None:
        """The socket is gone: keep the seat for the grace period."""
        conn.closed = True
        self.connections.discard(conn)
        session = conn.session
        if session is None or session.conn is not conn:
            return
        session.conn = None
        if session.room is None:
            self._forget_session(session)
            return
        handle = self.rooms.get(session.room)
        if handle is None:
            self._forget_session(session)
            return
        self.run(handle, handle.room.disconnect(session.identity.player_id, self.now_ms()))

    # ---- messages ----------------------------------------------------------------
    def handle(self, conn: Connection, message: m.ClientMessage) -> None:
        """Check one decoded message against the life cycle and act on it."""
        session = conn.session
        handle = self.rooms.get(session.room) if session and session.room else None
        room = handle.room if handle else None
        pid = session.identity.player_id if session else ""
        role = room.role_of(pid) if room else None
        phase = room.phase if room and role else None
        refusal = lifecycle.refusal(
            message.TAG, session is not None, phase, role, room.is_host(pid) if room else False
        )
        seq = message.seq if isinstance(message, m.MoveRequest) else None
        if refusal is not None:
            self.error(conn, refusal, ref=message.TAG, seq=seq)
            return
        if self.closing and not isinstance(message, m.Ping):
            self.error(conn, ErrorCode.SHUTTING_DOWN, ref=message.TAG, seq=seq)
            return
        try:
            self._dispatch(conn, message, handle)
        except ProtocolError as exc:
            self.error(conn, exc.code, exc.message, ref=message.TAG, seq=exc.seq or seq)

    def _dispatch(self, conn: Connection, msg: m.ClientMessage, handle: RoomHandle | None) -> None:
        now = self.now_ms()
        if isinstance(msg, m.Hello):
            self._hello(conn, msg)
            return
        if isinstance(msg, m.Ping):
            self.reply(conn, m.Pong(msg.client_time_ms, now))
            return
        if isinstance(msg, m.ListRooms):
            self.reply(conn, m.RoomList(tuple(self.public_rooms())))
            return
        session = conn.session
        assert session is not None
        pid = session.identity.player_id
        if isinstance(msg, m.CreateRoom):
            self._create_room(conn, session, msg.options)
        elif isinstance(msg, m.Join):
            self._join(conn, session, msg)
        elif handle is None:
            raise ProtocolError(ErrorCode.NOT_IN_ROOM)
        elif isinstance(msg, m.MoveRequest):
            self.move_count += 1
            timed = self.move_count % Metrics.MOVE_SAMPLE == 0
            started = time.perf_counter() if timed else 0.0
            outputs = handle.room.move(pid, msg, now)
            self.run(handle, outputs)
            self._count_move(outputs)
            if timed:
                self.metrics.move_seconds.observe(time.perf_counter() - started)
        else:
            self.run(handle, self._room_call(handle, pid, msg, now))

    def _count_move(self, outputs: list[Output]) -> None:
        first = outputs[0] if outputs else None
        if isinstance(first, Send) and isinstance(first.message, m.MoveResult):
            self.metrics.hot.count_move(first.message.reason)

    def _room_call(
        self, handle: RoomHandle, pid: str, msg: m.ClientMessage, now: int
    ) -> list[Output]:
        room = handle.room
        if isinstance(msg, m.Leave):
            return room.leave(pid, now)
        if isinstance(msg, m.Ready):
            return room.set_ready(pid, msg.ready)
        if isinstance(msg, m.Start):
            return room.start(pid, now, Fresh(ids.seed(), ids.race_id()))
        if isinstance(msg, m.Kick):
            return room.kick(pid, msg.player_id, now)
        if isinstance(msg, m.UpdateOptions):
            outputs = room.update_options(pid, msg.options)
            handle.feed.delay_ms = msg.options.spectator_delay_s * 1000
            return outputs
        if isinstance(msg, m.Resign):
            return room.resign(pid, now)
        if isinstance(msg, m.Rematch):
            return room.rematch(pid, now, Fresh(ids.seed(), ids.race_id()))
        if isinstance(msg, m.Sync):
            return self._sync(handle, pid, now)
        raise ProtocolError(ErrorCode.NOT_ALLOWED_NOW)

    def _sync(self, handle: RoomHandle, pid: str, now: int) -> list[Output]:
        room = handle.room
        if pid in room.spectators:
            conns = self._conns((pid,))
            if conns:
                self.reply(conns[0], room.state(m.Role.SPECTATOR))
                for message in handle.feed.snapshot():
                    self.reply(conns[0], message)
            return []
        return [Send(pid, room.state(m.Role.PLAYER)), Send(pid, room.resync(pid, now))]

    def _hello(self, conn: Connection, hello: m.Hello) -> None:
        session = self.sessions.get(hello.token) if hello.token else None
        resumed = session is not None
        if session is None:
            identity = Identity(ids.player_id(), hello.name, hello.bot)
            session = Session(identity, ids.reconnect_token())
            self.sessions[session.token] = session
            self.by_player[identity.player_id] = session
        elif session.conn is not None and session.conn is not conn:
            old = session.conn
            old.session = None
            self.connections.discard(old)
            self.spawn(old.close(CloseCode.REPLACED))
        session.conn = conn
        conn.session = session
        who = session.identity
        self.reply(
            conn,
            m.Welcome(
                who.player_id, who.name, session.token, resumed, m.PROTOCOL_VERSION, SERVER_VERSION
            ),
        )
        logs.event(
            "hello", conn=conn.conn_id, player=who.player_id, resumed=resumed, address=conn.address
        )
        handle = self.rooms.get(session.room) if session.room else None
        if handle is None:
            session.room = None
            return
        room = handle.room
        if who.player_id in room.seats:
            self.run(handle, room.reconnect(who.player_id, self.now_ms()))
        else:
            session.room = None

    def _create_room(self, conn: Connection, session: Session, options: m.RoomOptions) -> None:
        if conn.rooms_created >= self.settings.rooms_per_connection:
            raise ProtocolError(ErrorCode.TOO_MANY_ROOMS)
        if len(self.rooms) >= self.settings.max_rooms:
            raise ProtocolError(ErrorCode.SERVER_BUSY, "too many rooms are open; try again later")
        if options.practice_seed is not None and not options.practice_seed.isprintable():
            raise ProtocolError(ErrorCode.BAD_SEED)
        code = ids.room_code(self.rooms)
        now = self.now_ms()
        room = Room(code, options, session.identity, now, self.timings)
        handle = RoomHandle(room, SpectatorFeed(options.spectator_delay_s * 1000))
        self.rooms[code] = handle
        conn.rooms_created += 1
        session.room = code
        logs.event(
            "room_created", room=code, host=session.identity.player_id, public=options.public
        )
        room.version += 1
        self.reply(conn, room.state(m.Role.PLAYER))

    def _join(self, conn: Connection, session: Session, join: m.Join) -> None:
        code = ids.normalize_room_code(join.code)
        handle = self.rooms.get(code)
        if handle is None or handle.room.closed:
            raise ProtocolError(ErrorCode.ROOM_NOT_FOUND, f"no room has the code {join.code!r}")
        outputs = handle.room.join(session.identity, join.role, self.now_ms())
        session.room = code
        if join.role is m.Role.SPECTATOR:
            conn.bucket.retune(self.settings.spectator_rate, self.settings.spectator_burst)
        self.run(handle, outputs)
        if join.role is m.Role.SPECTATOR:
            for message in handle.feed.snapshot():
                self.reply(conn, message)

    # ---- shutdown ------------------------------------------------------------------
    async def shutdown(self) -> None:
        """Stop: end running races (stored as they stand), tell everyone, close, flush."""
        self.closing = True
        now = self.now_ms()
        for handle in list(self.rooms.values()):
            try:
                self.run(handle, handle.room.abort(now))
            except Exception:
                logs.failure("abort_failed", room=handle.room.code)
            for timer in handle.timers.values():
                timer.cancel()
            handle.timers.clear()
        closers = [
            conn.close(CloseCode.GOING_AWAY, "server shutting down")
            for conn in list(self.connections)
        ]
        if closers:
            await asyncio.gather(*closers, return_exceptions=True)
        await self.wait_saved(self.settings.shutdown_timeout_s)
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._tasks, return_exceptions=True)
        logs.event("hub_stopped", rooms=len(self.rooms))


def _printable(text: str) -> str:
    """``text`` on one printable line (the wire refuses control characters)."""
    return "".join(ch if ch.isprintable() else " " for ch in text).strip()
