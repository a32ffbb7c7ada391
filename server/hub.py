"""The hub: the thin I/O shell around the pure lobby and rooms.

The decisions are the reducers': :mod:`server.race.lobby` (sessions, the
room registry, the life-cycle check) and :mod:`server.race.room` (each
room).  The hub carries out what they return: frames encoded once per
encoding and sent to many, timers set on the event loop, deals computed in
worker processes, races stored, logs and metrics.  It holds each
connection's credit bucket (its player's once it said ``hello``), the
buckets keyed by client address, and the write batch its connections share.

A racing player's plain msgpack ``move`` skips the general path
(:meth:`Hub.fast_move`): the general path's full decode, output list and
schema-walking encoder cost several times the move itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from protocol.deals.dealer import DealtGame, Difficulty, deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode, ProtocolError
from protocol.wire.fast import FRESH, REASON, move_result_msgpack, parse_move
from protocol.wire.lifecycle import MOVE_PHASES
from server import ids, logs
from server.claims import Claims, Held
from server.config import Settings
from server.daily import DailyService, daily_for_room
from server.dealpool import POOL_CEILING, StartRate, deal_later, deal_now, pool_target
from server.ghosts import ghosts_for_room
from server.metrics import Metrics
from server.pars import ParJob, ParJobs, with_par
from server.race import inputs
from server.race.daily import day_end_ms, day_of
from server.race.listing import RoomListing, listing_cost
from server.race.lobby import Limits, Lobby, NewPlayer, Session
from server.race.outputs import (
    CancelTimer,
    CloseRoom,
    DealRequest,
    Detach,
    InRoom,
    LoadGhosts,
    LobbyOutput,
    Output,
    RaceBegan,
    RaceEnded,
    Replace,
    Reply,
    Retune,
    RoomOpened,
    SaveRace,
    Send,
    SetTimer,
    Snapshot,
    ToPlayers,
    ToSpectators,
)
from server.race.ratelimit import AddressLimiter, CreditBucket
from server.race.records import RaceRecord
from server.race.room import Room
from server.race.room_types import Fresh, RoomTimings
from server.race.spectate import UPDATE_PARTS, SpectatorFeed, pack_updates
from server.recovery.journal import Journal
from server.recovery.resume import Rebuilt
from server.storage.players import Players
from server.storage.store import RaceStore
from server.storage.writer import ResultWriter
from server.storing import Storing
from server.transport.connection import Connection, Frame
from server.transport.framing import WriteBatch
from server.transport.heartbeat import keep_alive
from server.turns import TurnSlots

if TYPE_CHECKING:  # cluster mode only: embedded servers never load Redis
    from server.cluster.routing import Router

_FEED_TIMER: Final = "__feed__"
_MOVE_TAG: Final = m.MoveRequest.TAG
_SAMPLE: Final = Metrics.MOVE_SAMPLE
#: The phases in which the life-cycle table lets a seated player move, and anyone else
#: (named here so the move fast path makes no call or dict lookup for them).
_SEATED_MOVES: Final = MOVE_PHASES[m.Role.PLAYER]
_UNSEATED_MOVES: Final = MOVE_PHASES[None]


@dataclass(eq=False, slots=True)
class RoomHandle:
    """A room plus the shell's side of it: timers, the spectator feed, and the frames
    waiting for a race result to be stored."""

    room: Room
    feed: SpectatorFeed[m.ServerMessage]
    timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    #: See :class:`server.storing.HeldRoom`.
    writing: dict[str, bool | None] = field(default_factory=dict)
    held: list[Output] = field(default_factory=list)
    #: The par of the room's latest deal (see :mod:`server.pars`).
    par: ParJob | None = None
    #: Progress and boards sent to the old-style spectators and not yet to those that
    #: asked for ``spectator_update`` (packed at the end of the room's outputs).
    tick: list[m.ServerMessage] = field(default_factory=list)
    #: The spectators that did not ask, while ``tick`` holds anything.
    tick_old: list[Connection] = field(default_factory=list)
    #: Another node holds the room now (cluster mode): nothing of it may go out from here.
    fenced: bool = False


def _fresh() -> Fresh:
    return Fresh(ids.seed(), ids.race_id())


def _news(message: m.ServerMessage, encoding: codec.Encoding) -> Frame:
    """A broadcast's frame in one dialect; ``b""`` when the dialect is not sent it."""
    return codec.encode(message, encoding) if codec.sent_in(message, encoding) else b""


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


class Hub:
    """Every room and connection of one server."""

    def __init__(
        self,
        settings: Settings,
        store: RaceStore,
        executor: concurrent.futures.Executor,
        journal: Journal | None = None,
    ) -> None:
        self.settings = settings
        #: The input log's writer (None: rooms are not logged, and a stop aborts races).
        self.journal = journal
        self.store = store
        self.executor = executor
        self.timings = RoomTimings(
            reconnect_grace_ms=int(settings.reconnect_grace_s * 1000),
            empty_grace_ms=int(settings.empty_room_grace_s * 1000),
            progress_interval_ms=max(1, int(1000 / settings.progress_hz)),
            max_race_ms=int(settings.max_race_s * 1000),
        )
        limits = Limits(settings.rooms_per_connection, settings.max_rooms)
        self.lobby: Lobby[Connection] = Lobby(limits, self.timings)
        self.handles: dict[str, RoomHandle] = {}
        #: Open connections, each with the credit bucket it spends from.
        self.connections: dict[Connection, CreditBucket] = {}
        shared = settings.address_players
        #: The credit all connections from one address share.
        self.address_credit = AddressLimiter(
            settings.player_rate * shared, settings.player_burst * shared
        )
        #: Failed joins (error 106) per address: guessing room codes is expensive.
        self.join_failures = AddressLimiter(
            settings.join_failure_rate, settings.join_failure_burst
        )
        #: The write batch of this hub's connections (see :mod:`server.transport.framing`).
        self.batch = WriteBatch()
        if journal is not None:
            journal.batch = lambda: self.batch  # held frames go out in one write per socket
        self.closing = False
        self.storing: Storing[RoomHandle] = Storing(
            store, self.batch, self.deliver,
            lambda handle: self.handles.get(handle.room.code) is handle,
            lambda ok: (self.metrics.stored_races if ok else self.metrics.storage_errors).inc(),
        )
        self.metrics = Metrics(
            lambda: len(self.connections), self.lobby.rooms_by_state, lambda: self.writer.waiting
        )
        #: Claimed names; the messages of connections whose hello is being checked.
        self.claims = Claims(Players(store), executor)
        self.held: dict[Connection, Held] = {}
        self.move_count = 0  # moves handled, for sampled timing
        self._by_conn = self.lobby.by_conn  # read on every move
        self._tasks: set[asyncio.Task[None]] = set()
        self._conn_ids = itertools.count(1)
        #: The last message broadcast and its frames by dialect (``b""``: not sent in that
        #: one): a flush sends the same ``progress`` to the players and then to the
        #: spectators (holding the message keeps its identity from being reused).
        self._encoded: tuple[object, dict[codec.Encoding, Frame]] = (None, {})
        #: Connections whose hello asked for ``spectator_update`` frames.
        self._ticking: set[Connection] = set()
        self._prepared: dict[tuple[Rules, Difficulty], deque[DealtGame]] = {}
        self._listing = RoomListing(())
        self._preparing: set[tuple[Rules, Difficulty]] = set()
        #: Starts per rule set, which size its pool (:func:`server.dealpool.pool_target`).
        self._start_rates: dict[tuple[Rules, Difficulty], StartRate] = {}
        #: Finished races whose record waits for its par: race id -> (room, record).
        self._awaiting_par: dict[str, tuple[RoomHandle, RaceRecord]] = {}
        #: Deals rooms are waiting for; refills wait until there are none.
        self._urgent = 0
        self._no_urgent = asyncio.Event()
        self._no_urgent.set()
        loop = asyncio.get_running_loop()
        self._start_slots = TurnSlots(loop)
        self.pars = ParJobs(
            loop, executor, max(1, settings.deal_workers - 1), self._no_urgent, self.spawn
        )
        # One clock for everything: unix milliseconds that never go backwards.
        self._clock_offset_ms = time.time() * 1000 - loop.time() * 1000
        self._loop = loop
        #: The daily deal (its clock is this hub's).
        self.daily = DailyService(store, self._deal_in_pool, self.now_ms)
        self._calls = self._message_table()
        self._room_outputs = self._room_output_table()
        self._frames: dict[type[Any], Callable[[RoomHandle, Any], None]] = {
            Send: self._send, ToPlayers: self._to_players,
            ToSpectators: self._to_spectators, Snapshot: self._snapshot,
        }
        self._lobby_outputs = self._lobby_output_table()
        #: Cluster mode's router (:mod:`server.cluster.routing`); None when embedded.
        self.cluster: Router | None = None

    def start(self) -> None:
        """Warm up: fill the deal queue for the default rules; start the heartbeat and
        the result writer."""
        self.writer.start()
        if self.journal is not None:
            self.journal.start()
        self._prepare_ahead((m.RoomOptions().rules, Difficulty.ANY))
        self.spawn(self._warm_daily())
        if self.settings.heartbeat_s > 0:
            self.spawn(keep_alive(lambda: self.connections, self.now_ms, self.settings.heartbeat_s))

    # ---- clock and bookkeeping ------------------------------------------------
    def now_ms(self) -> int:
        """Unix time in ms, driven by the loop's monotonic clock."""
        return int(self._loop.time() * 1000 + self._clock_offset_ms)

    def shift_clock(self, ms: int) -> None:
        """Move this hub's clock by ``ms`` (tests cross midnight without sleeping); timers
        already set fire at the same moment of the loop's clock."""
        self._clock_offset_ms += ms

    @property
    def rooms(self) -> Mapping[str, Room]:
        """The open rooms by code."""
        return self.lobby.rooms

    @property
    def sessions(self) -> Mapping[str, Session[Connection]]:
        """The sessions by reconnect token."""
        return self.lobby.sessions

    def room_listing(self) -> RoomListing:
        """The public rooms (newest first, at most 100), encoded once until one changes."""
        if self.cluster is not None:
            rooms = self.cluster.node.listing(self.lobby.rooms)
        else:
            rooms = tuple(self.lobby.public_rooms())
        if rooms != self._listing.rooms:
            self._listing = RoomListing(rooms)
        return self._listing

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` in the background; shutdown cancels whatever is left."""
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- sending ---------------------------------------------------------------
    def reply(self, conn: Connection, message: m.ServerMessage) -> None:
        """Send ``message`` to ``conn``."""
        self._put(conn, codec.encode(message, conn.encoding))
        self.metrics.hot.frames_sent += 1

    def _put(self, conn: Connection, frame: Frame) -> None:
        """Send ``frame``, or hold it while inputs before it are not logged yet."""
        journal = self.journal
        if journal is not None and journal.holding:
            journal.hold_send(conn, frame)
        else:
            conn.send(frame)

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
        self.reply(conn, codec.error_reply(ProtocolError(code, detail, tag=ref, seq=seq)))

    def count_error(self, code: ErrorCode) -> None:
        """Count an ``error`` reply sent ready-made (see :mod:`server.reader`)."""
        self.metrics.protocol_errors.labels(code=str(int(code))).inc()
        self.metrics.hot.frames_sent += 1

    def broadcast(self, conns: Iterable[Connection], message: m.ServerMessage) -> None:
        """Send one message to many: encoded at most once per dialect (and once for the
        players and spectators of a progress flush, see :attr:`_encoded`).  A message
        newer than a connection's protocol version is news it is not sent
        (:func:`protocol.wire.codec.sent_in`)."""
        journal = self.journal
        if journal is not None and journal.holding:
            journal.hold(functools.partial(self.broadcast, list(conns), message))
            return
        last, frames = self._encoded
        if last is not message:
            frames = {}
            self._encoded = (message, frames)
        sent = 0
        for conn in conns:
            frame = frames.get(conn.encoding)
            if frame is None:
                frame = frames[conn.encoding] = _news(message, conn.encoding)
            if frame:
                conn.send(frame)
                sent += 1
        self.metrics.hot.frames_sent += sent

    def _conns(self, player_ids: Iterable[str]) -> list[Connection]:
        found = []
        for pid in player_ids:
            conn = self.lobby.conn_of(pid)
            if conn is not None and not conn.closed:
                found.append(conn)
        return found

    # ---- the lobby's outputs ------------------------------------------------------
    def _lobby_output_table(self) -> dict[type[Any], Callable[[Connection | None, Any], None]]:
        return {
            Reply: self._reply,
            Replace: self._replace,
            Retune: self._retune,
            RoomOpened: self._room_opened,
            InRoom: self._in_room,
        }

    def apply(self, conn: Connection | None, outputs: Iterable[LobbyOutput[Connection]]) -> None:
        """Carry out the lobby's outputs, in order (``conn``: the connection that asked)."""
        table = self._lobby_outputs
        for out in outputs:
            table[type(out)](conn, out)

    def _reply(self, conn: Connection | None, out: Reply) -> None:
        assert conn is not None, "a reply answers a connection"
        self.reply(conn, out.message)

    def _replace(self, _conn: Connection | None, out: Replace[Connection]) -> None:
        self.connections.pop(out.conn, None)
        self.spawn(out.conn.close(CloseCode.REPLACED))

    def _retune(self, _conn: Connection | None, out: Retune[Connection]) -> None:
        bucket = self.connections.get(out.conn)
        if bucket is None:
            return
        if out.role is m.Role.SPECTATOR:
            bucket.retune(self.settings.spectator_rate, self.settings.spectator_burst)
        else:
            bucket.retune(self.settings.player_rate, self.settings.player_burst)

    def _room_opened(self, _conn: Connection | None, out: RoomOpened) -> None:
        if self.journal is not None and out.logged is not None:
            self.journal.record(out.code, out.logged)
        room = self.lobby.rooms[out.code]
        feed: SpectatorFeed[m.ServerMessage] = SpectatorFeed(room.options.spectator_delay_s * 1000)
        self.handles[out.code] = RoomHandle(room, feed)
        logs.event("room_created", room=out.code, host=out.host, public=out.public)

    def _in_room(self, _conn: Connection | None, out: InRoom) -> None:
        handle = self.handles.get(out.code)
        if handle is not None:
            if self.journal is not None and out.logged is not None:
                self.journal.record(out.code, out.logged)
            self.run(handle, out.outputs)

    # ---- the input hook: every input reaches its room here -----------------------
    def enter(self, handle: RoomHandle, given: inputs.Input) -> list[Output]:
        """Apply ``given`` to its room, log it, and carry out its outputs.

        With a journal, the input is logged before anything it caused is seen:
        every frame sent from now until the commit is held (:meth:`_put`), and so is
        storing a result (a race is stored only once its last input is logged).
        """
        outputs = inputs.apply(handle.room, given)
        if self.journal is not None:
            self.journal.record(handle.room.code, given)
        self.run(handle, outputs)
        return outputs

    def _save(self, handle: RoomHandle, out: SaveRace) -> None:
        journal = self.journal
        if journal is not None and journal.holding:
            journal.hold(functools.partial(self._save_held, handle, out))
        else:
            self._save_held(handle, out)

    def _save_held(self, handle: RoomHandle, out: SaveRace) -> None:
        # A room another node took over meanwhile stores nothing: its log is the other's.
        if not handle.fenced:
            self._save_race(handle, out)

    def restore(self, rebuilt: Rebuilt) -> None:
        """Take back a room rebuilt from its log (:mod:`server.recovery.resume`)."""
        room = rebuilt.room
        self.lobby.restore(room, rebuilt.members)
        feed: SpectatorFeed[m.ServerMessage] = SpectatorFeed(room.options.spectator_delay_s * 1000)
        handle = self.handles[room.code] = RoomHandle(room, feed)
        if self.journal is not None:
            self.journal.open(room.code, rebuilt.next_index)
        for record in rebuilt.records:
            self.storing.save(handle, record)  # idempotent: a stored race stays as it is
        if room.dealt is not None and room.race is not None and room.race.end_ms is None:
            handle.par = self.pars.submit(room.dealt)  # a par computed before the stop is gone
        now = self.now_ms()
        gap = max(0, now - rebuilt.last_ms)
        self.enter(handle, inputs.Resumed(gap, now))
        logs.event("room_resumed", room=room.code, phase=room.phase.value, gap_ms=gap,
                   members=len(rebuilt.members))

    # ---- the rooms' outputs -------------------------------------------------------
    def _room_output_table(self) -> dict[type[Any], Callable[[RoomHandle, Any], None]]:
        return {
            Send: self._frame,
            ToPlayers: self._frame_for_players,
            ToSpectators: self._frame_for_spectators,
            Snapshot: self._frame,
            SetTimer: lambda handle, out: self._set_timer(handle, out.name, out.at_ms),
            CancelTimer: self._cancel_timer,
            DealRequest: lambda handle, out: self.spawn(self._deal(handle, out)),
            LoadGhosts: lambda handle, out: self.spawn(
                self._carry(handle, ghosts_for_room(self.store, self.daily, out, self.now_ms))
            ),
            SaveRace: self._save,
            Detach: lambda handle, out: self.apply(
                None, self.lobby.detach(handle.room.code, out.player_id)
            ),
            RaceBegan: self._race_began,
            RaceEnded: self._race_ended,
            CloseRoom: lambda handle, out: self._forget_room(handle),
        }

    def run(self, handle: RoomHandle, outputs: Iterable[Output]) -> None:
        """Carry out a room's outputs, in order."""
        table = self._room_outputs
        for out in outputs:
            table[type(out)](handle, out)
        if handle.tick:
            self._send_tick(handle)

    def _frame(self, handle: RoomHandle, out: Send | ToPlayers | ToSpectators | Snapshot) -> None:
        """A frame for the room's members: sent now, or held while a result is written."""
        message = getattr(out, "message", None)
        if type(message) is m.RaceOver:
            handle.writing.setdefault(message.race_id, None)
        if handle.writing:
            handle.held.append(out)
            return
        self._frames[type(out)](handle, out)

    def _frame_for_players(self, handle: RoomHandle, out: ToPlayers) -> None:
        """:meth:`_frame` of a frame for the players, one call less for the usual one."""
        if handle.writing or type(out.message) is m.RaceOver:
            self._frame(handle, out)
        else:
            self._to_players(handle, out)

    def _frame_for_spectators(self, handle: RoomHandle, out: ToSpectators) -> None:
        """:meth:`_frame` of a frame for the spectators, one call less for the usual one."""
        if handle.writing or type(out.message) is m.RaceOver:
            self._frame(handle, out)
        else:
            self._to_spectators(handle, out)

    def _send(self, _handle: RoomHandle, out: Send) -> None:
        conns = self._conns((out.player_id,))
        if conns:
            self.reply(conns[0], out.message)

    def _to_players(self, handle: RoomHandle, out: ToPlayers) -> None:
        conn_of = self.lobby.conn_of
        conns = []
        for pid, seat in handle.room.seats.items():
            if seat.connected:
                conn = conn_of(pid)
                if conn is not None and not conn.closed:
                    conns.append(conn)
        self.broadcast(conns, out.message)

    def _to_spectators(self, handle: RoomHandle, out: ToSpectators) -> None:
        room = handle.room
        if out.live:
            if room.spectators:
                self._watch(handle, out.message)
            return
        feed = handle.feed
        # No delay, nothing held back: straight to the spectators (the feed keeps the
        # snapshot); no queue, no release pass.
        sent = feed.release_now(out.message, out.key, out.new_race, out.quiet)
        if sent is not None:
            if sent and room.spectators:
                self._watch(handle, out.message)
            return
        now = self.now_ms()
        feed.push(now, out.message, out.key, new_race=out.new_race, quiet=out.quiet)
        self._release_feed(handle, now)

    def _watch(self, handle: RoomHandle, message: m.ServerMessage) -> None:
        """Send a frame to the room's spectators; for those that asked for
        ``spectator_update``, progress and boards wait in ``handle.tick``."""
        ticking = self._ticking
        if ticking and type(message) in UPDATE_PARTS:
            if handle.tick:  # the same moment: the same spectators
                conns = handle.tick_old
                handle.tick.append(message)
            else:
                every = self._conns(handle.room.spectators)
                conns = [conn for conn in every if conn not in ticking]
                if len(conns) < len(every):
                    handle.tick.append(message)
                    handle.tick_old = conns
        else:
            if handle.tick:
                self._send_tick(handle)  # what came before goes first
            conns = self._conns(handle.room.spectators)
        if conns:
            self.broadcast(conns, message)

    def _send_tick(self, handle: RoomHandle) -> None:
        parts, handle.tick, handle.tick_old = handle.tick, [], []
        ticking = self._ticking
        conns = [c for c in self._conns(handle.room.spectators) if c in ticking]
        for update in pack_updates(parts):
            if type(update) is not m.SpectatorUpdate:
                self.broadcast(conns, update)
                continue
            # The progress in it was just encoded for the players: reused, not redone.
            last, encoded = self._encoded
            ready = encoded if last is update.progress else {}
            frames: dict[codec.Encoding, Frame] = {}
            for conn in conns:
                frame = frames.get(conn.encoding)
                if frame is None:
                    frame = frames[conn.encoding] = codec.encode_update(
                        update, conn.encoding, ready.get(conn.encoding)
                    )
                conn.send(frame)
            self.metrics.hot.frames_sent += len(conns)

    def _snapshot(self, handle: RoomHandle, out: Snapshot) -> None:
        for conn in self._conns((out.player_id,)):
            messages = handle.feed.snapshot()
            for message in pack_updates(messages) if conn in self._ticking else messages:
                self.reply(conn, message)

    def _race_began(self, handle: RoomHandle, out: RaceBegan) -> None:
        self.metrics.races_started.inc()
        logs.event("race_started", room=handle.room.code, race_id=out.race_id, players=out.players)

    def _race_ended(self, handle: RoomHandle, out: RaceEnded) -> None:
        self.metrics.races_finished.inc()
        code, race_id = handle.room.code, out.race_id
        logs.event("race_ended", room=code, race_id=race_id, ended_by=out.ended_by.value)

    def _release_feed(self, handle: RoomHandle, now: int) -> None:
        released = handle.feed.due(now)
        if released and handle.room.spectators:
            for message in released:
                self._watch(handle, message)
            if handle.tick:
                self._send_tick(handle)
        due = handle.feed.next_release_ms()
        if due is not None and _FEED_TIMER not in handle.timers:
            self._set_timer(handle, _FEED_TIMER, due)

    def _set_timer(self, handle: RoomHandle, name: str, at_ms: int) -> None:
        self._cancel_timer(handle, CancelTimer(name))
        if self.closing:
            return  # shutting down: nothing may fire after the rooms were wound up
        when = (at_ms - self._clock_offset_ms) / 1000
        handle.timers[name] = self._loop.call_at(when, self._fire, handle, name)

    def _cancel_timer(self, handle: RoomHandle, out: CancelTimer) -> None:
        timer = handle.timers.pop(out.name, None)
        if timer is not None:
            timer.cancel()

    def _fire(self, handle: RoomHandle, name: str) -> None:
        handle.timers.pop(name, None)
        if handle.room.closed and name != _FEED_TIMER:
            return
        now = self.now_ms()
        try:
            with self.batch:
                if name == _FEED_TIMER:
                    self._release_feed(handle, now)
                else:
                    self.enter(handle, inputs.TimerFired(name, now))
        except Exception:
            logs.failure("timer_failed", room=handle.room.code, timer=name)

    def drop_room(self, code: str) -> list[Connection]:
        """Forget room ``code`` without ending its race: another node holds it now (cluster
        mode).  Its members' connections are returned, to be sent there."""
        handle = self.handles.get(code)
        if handle is None:
            return []
        room = handle.room
        conns = self._conns([*room.seats, *room.spectators])
        handle.fenced = True
        self._forget_room(handle)
        return conns

    def _forget_room(self, handle: RoomHandle) -> None:
        for timer in handle.timers.values():
            timer.cancel()
        handle.timers.clear()
        if self.journal is not None:
            self.journal.forget(handle.room.code)
        self.handles.pop(handle.room.code, None)
        self.lobby.forget_room(handle.room.code)
        logs.event("room_closed", room=handle.room.code)

    # ---- dealing -----------------------------------------------------------------
    async def _deal(self, handle: RoomHandle, request: DealRequest) -> None:
        if request.daily:
            await self._carry(handle, daily_for_room(self.daily, handle.room, request, self.now_ms))
            return
        practice = request.chosen
        dealt: DealtGame | None = None
        key = (request.rules, request.difficulty)
        started = time.perf_counter()
        if not practice:
            self._start_rates.setdefault(key, StartRate()).started(self.now_ms())
        try:
            if not practice and self._prepared.get(key):
                dealt = self._prepared[key].popleft()
            else:
                # A room waits for this one: dealt at normal priority (deal_now), and no
                # refill is handed to the workers meanwhile (see _fill).
                self._urgent += 1
                self._no_urgent.clear()
                try:
                    dealt = await self._loop.run_in_executor(
                        self.executor, deal_now, request.seed, request.rules, request.difficulty
                    )
                finally:
                    self._urgent -= 1
                    if not self._urgent:
                        self._no_urgent.set()
        except Exception as exc:
            logs.event("deal_failed", level=logging.WARNING, room=handle.room.code, reason=str(exc))
            if not handle.room.closed:
                reason = codec.printable_line(f"cannot deal: {exc}")
                self.enter(handle, inputs.DealFailed(request.ticket, reason, self.now_ms()))
            return
        self.metrics.deal_seconds.observe(time.perf_counter() - started)
        if not practice:
            self._prepare_ahead(key)
        await self._start_slots.take()  # a burst of starts is spread over turns of the loop
        if not handle.room.closed and not self.closing:
            with self.batch:  # room_state and race_start: one write per member
                outputs = self.enter(handle, inputs.Dealt(request.ticket, dealt, self.now_ms()))
            if outputs:  # par follows, off the start path (server.pars)
                handle.par = self.pars.submit(dealt)

    async def _carry(
        self, handle: RoomHandle, given: Awaitable[inputs.Input | None]
    ) -> None:
        """Enter a room's input once it is ready, if the room is still open."""
        ready = await given
        if ready is not None and not handle.room.closed and not self.closing:
            with self.batch:
                self.enter(handle, ready)

    async def _deal_in_pool(self, seed: str, rules: Rules, difficulty: Difficulty) -> DealtGame:
        return await self._loop.run_in_executor(
            self.executor, deal_for_seed, seed, rules, difficulty
        )

    async def _warm_daily(self) -> None:
        """Today's daily deal drawn and dealt at start-up and after each midnight (UTC)."""
        while not self.closing:
            try:
                await self.daily.warm()
            except Exception:
                logs.failure("daily_warm_failed")
            now = self.now_ms()
            await asyncio.sleep((day_end_ms(day_of(now)) - now) / 1000 + 0.001)

    def _prepare_ahead(self, key: tuple[Rules, Difficulty]) -> None:
        """Keep deals ready per rule set, so most starts need no solving at all."""
        if self.settings.deals_ahead <= 0 or key in self._preparing or self.closing:
            return
        self._preparing.add(key)
        self.spawn(self._fill(key))

    def pool_target(self, key: tuple[Rules, Difficulty]) -> int:
        """How many deals to keep ready for ``key``, from the starts seen lately."""
        rate = self._start_rates.get(key)
        peak = rate.peak(self.now_ms()) if rate is not None else 0
        return pool_target(peak, self.settings.deals_ahead, POOL_CEILING)

    async def _fill(self, key: tuple[Rules, Difficulty]) -> None:
        queue = self._prepared.setdefault(key, deque())
        # All workers but one at once: a pool emptied by a burst refills in parallel (at
        # idle priority, never at the expense of the loop), and a worker stays free for
        # a room that finds the pool empty.  Refills wait while such a room waits: the
        # workers take jobs in order, and an idle-priority deal may take long to finish.
        workers = max(1, self.settings.deal_workers - 1)
        try:
            while not self.closing:
                await self._no_urgent.wait()
                missing = self.pool_target(key) - len(queue)
                if missing <= 0:
                    break
                batch = [
                    self._loop.run_in_executor(
                        self.executor, deal_later, ids.seed(), key[0], key[1]
                    )
                    for _ in range(min(missing, workers))
                ]
                queue.extend(await asyncio.gather(*batch))
        except Exception:
            logs.failure("prepare_deal_failed")
        finally:
            self._preparing.discard(key)

    # ---- storing -------------------------------------------------------------------
    def _save_race(self, handle: RoomHandle, out: SaveRace) -> None:
        """Store a finished race once its par is known (its frames wait meanwhile)."""
        record, job = out.record, handle.par
        if record.par is not None or job is None or not job.belongs_to(record):
            self.storing.save(handle, record)
        elif job.future.done() or self.closing:
            result = job.future.result() if job.future.done() else None
            self.storing.save(handle, with_par(record, handle.held, result))
        else:
            handle.writing.setdefault(record.race_id, None)
            self._awaiting_par[record.race_id] = (handle, record)
            self.pars.hurry(job)
            self.spawn(self._save_with_par(record.race_id, job))

    async def _save_with_par(self, race_id: str, job: ParJob) -> None:
        result = await job.future
        waiting = self._awaiting_par.pop(race_id, None)
        if waiting is not None:  # (shutdown may have stored it already)
            handle, record = waiting
            self.storing.save(handle, with_par(record, handle.held, result))

    def _save_without_par(self) -> None:
        """Shutting down: races still waiting for their par are stored without it."""
        waiting, self._awaiting_par = self._awaiting_par, {}
        for handle, record in waiting.values():
            self.storing.save(handle, record)

    def deliver(self, handle: RoomHandle, out: Output) -> None:
        """Send a room's frame now, held or not (:mod:`server.storing` releases held ones)."""
        self._frames[type(out)](handle, out)
        if handle.tick:
            self._send_tick(handle)

    @property
    def writer(self) -> ResultWriter:
        """The race result writer."""
        return self.storing.writer

    # ---- connections -----------------------------------------------------------
    def next_conn_id(self) -> int:
        """A fresh connection id (for the logs)."""
        return next(self._conn_ids)

    def connect(self, conn: Connection) -> CreditBucket:
        """Register a freshly opened connection; its credit bucket."""
        now = self.now_ms()
        settings = self.settings
        window_ms = max(1, int(settings.abuse_window_s * 1000))
        bucket = CreditBucket.full(settings.player_rate, settings.player_burst, now, window_ms)
        conn.last_seen_ms = now
        self.connections[conn] = bucket
        self.metrics.connections_opened.inc()
        return bucket

    def connection_lost(self, conn: Connection) -> None:
        """The socket is gone: its player keeps the seat for the grace period."""
        self.connections.pop(conn, None)
        self.held.pop(conn, None)
        self._ticking.discard(conn)
        if self.cluster is not None:
            self.cluster.forget(conn)
        self.apply(conn, self.lobby.connection_lost(conn, self.now_ms()))

    # ---- the move fast path ----------------------------------------------------------
    def fast_move(self, conn: Connection, frame: bytes, now_ms: int) -> bool:
        """Answer ``frame`` if it is a plain msgpack move from a racing player; False to take
        the general path.

        A frame that :func:`protocol.wire.fast.parse_move` accepts, from a member
        the life-cycle table lets move, goes straight to :meth:`Room.answer_move`,
        whose answer :func:`protocol.wire.fast.move_result_msgpack` writes.  Every check
        still happens (the engine's, the sequence number's), and anything else goes the
        general way, so replies and error codes are those of the general path
        (``tests/server/test_fastpath.py`` compares them).  The caller has spent the
        frame's credit and checked the connection speaks msgpack.
        """
        session = self._by_conn.get(conn)
        if session is None or session.room is None or self.closing:
            return False
        handle = self.handles.get(session.room)
        if handle is None:
            return False
        room = handle.room
        pid = session.identity.player_id
        # Only a seated member may move; anyone else takes the general path, which
        # names the refusal.
        if room.phase not in (_SEATED_MOVES if pid in room.seats else _UNSEATED_MOVES):
            return False
        move = parse_move(frame)
        if move is None:
            return False
        seq, action, position = move
        # _move_started, inline: a call per move costs more than the count.
        count = self.move_count = self.move_count + 1
        started = 0.0 if count % _SAMPLE else time.perf_counter()
        try:
            outcome, outputs = room.answer_move(pid, seq, action, position, now_ms)
        except ProtocolError as exc:
            self.error(conn, exc.code, exc.message, ref=_MOVE_TAG, seq=exc.seq or seq)
            return True
        journal = self.journal
        if journal is None:
            conn.send(move_result_msgpack(outcome))
        else:
            if outcome[FRESH]:  # a resend changed nothing: nothing to log
                journal.record_move(room.code, pid, seq, action, position, now_ms)
            self._put(conn, move_result_msgpack(outcome))
        hot = self.metrics.hot
        hot.frames_sent += 1
        reason = outcome[REASON]
        if reason is None:
            hot.moves += 1
        else:
            hot.count_move(reason)
        if outputs:
            self.run(handle, outputs)
        if started:
            self._move_timed(started)
        return True

    def _move_started(self) -> float:
        """Count a move; when it is one of the sampled ones, the time it started (else 0)."""
        count = self.move_count = self.move_count + 1
        return 0.0 if count % _SAMPLE else time.perf_counter()

    def _move_timed(self, started: float) -> None:
        self.metrics.move_seconds.observe(time.perf_counter() - started)

    # ---- messages ----------------------------------------------------------------
    def handle(self, conn: Connection, message: m.ClientMessage) -> CloseCode | None:
        """Check one decoded message against the life cycle and act on it; the close code
        when the connection must go."""
        held = self.held.get(conn)
        if held is not None:  # its hello is being checked: in order, after it
            if not held.add(message):
                self.error(conn, ErrorCode.RATE_LIMITED, ref=message.TAG)
            return None
        if self.cluster is not None and self.cluster.holds(conn, message):
            return None
        refusal = self.lobby.refusal(conn, message.TAG)
        seq = message.seq if isinstance(message, m.MoveRequest) else None
        if refusal is not None:
            self.error(conn, refusal, ref=message.TAG, seq=seq)
            return None
        if self.closing and not isinstance(message, m.Ping):
            self.error(conn, ErrorCode.SHUTTING_DOWN, ref=message.TAG, seq=seq)
            return None
        call = self._calls.get(type(message), self._room_call)
        try:
            return call(conn, message, self.now_ms())
        except ProtocolError as exc:
            self.error(conn, exc.code, exc.message, ref=message.TAG, seq=exc.seq or seq)
            return None

    def _message_table(
        self,
    ) -> dict[type[Any], Callable[[Connection, Any, int], CloseCode | None]]:
        lobby = self.lobby
        return {
            m.Hello: self._hello,
            m.Ping: lambda conn, msg, now: self.reply(conn, m.Pong(msg.client_time_ms, now)),
            m.ListRooms: self._list_rooms,
            m.CreateRoom: self._create,
            m.Join: self._join,
            m.Sync: lambda conn, msg, now: self.apply(conn, lobby.sync(conn, now)),
            m.MoveRequest: self._move,
        }

    def _create(self, conn: Connection, create: m.CreateRoom, now: int) -> None:
        if self.cluster is None or not self.cluster.create(conn, create):
            self.create_here(conn, create, now)

    def create_here(self, conn: Connection, create: m.CreateRoom, now: int) -> None:
        """``create_room`` on this node (in cluster mode, under a code claimed cluster-wide)."""
        if create.options.daily and conn.encoding.version < 2:
            # A daily race_over keeps its seed back (null), which version 1 cannot say.
            raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION, "the daily deal needs version 2")
        codes = self.cluster.node.codes() if self.cluster else iter(ids.room_code, "")
        self.apply(conn, self.lobby.create_room(conn, create.options, codes, now))
        if self.cluster is not None:
            self.cluster.node.nudge()

    def _join(self, conn: Connection, join: m.Join, now: int) -> CloseCode | None:
        code = ids.normalize_room_code(join.code)
        if self.cluster is not None and self.cluster.join(conn, join, code):
            return None
        return self.join_here(conn, join, code, now)

    def join_here(self, conn: Connection, join: m.Join, code: str, now: int) -> CloseCode | None:
        """A ``join`` of room ``code`` on this node; one that names no room spends the
        address's failed-join credit."""
        try:
            self.apply(conn, self.lobby.join(conn, join, code, now))
            if self.cluster is not None:
                self.cluster.node.nudge()
        except ProtocolError as exc:
            if exc.code is not ErrorCode.ROOM_NOT_FOUND or self.join_failures.allow(
                conn.address, now
            ):
                raise
            self.error(conn, exc.code, exc.message, ref=join.TAG)
            logs.event("join_failures_closed", conn=conn.conn_id, address=conn.address)
            return CloseCode.POLICY_VIOLATION
        return None

    def _list_rooms(self, conn: Connection, msg: m.ListRooms, now: int) -> None:
        """``list_rooms``: the cached listing, for the credit its size costs."""
        frame = self.room_listing().frame(conn.encoding)
        bucket = self.connections.get(conn)
        # The frame that asked has spent one credit already.
        extra = listing_cost(len(frame), bucket.burst) - 1 if bucket is not None else 0
        if bucket is not None and extra > 0 and not bucket.spend(now, extra):
            self.error(conn, ErrorCode.RATE_LIMITED, ref=msg.TAG)
            return
        self._put(conn, frame)
        self.metrics.hot.frames_sent += 1

    def _hello(self, conn: Connection, hello: m.Hello, now: int) -> None:
        if self.cluster is None or not self.cluster.hello(conn, hello):
            self.hello_here(conn, hello, now)

    def hello_here(self, conn: Connection, hello: m.Hello, now: int) -> None:
        """``hello`` answered by this node: a session resumed here, or a new one once its
        name is checked against the claims (:mod:`server.claims`)."""
        if hello.token is not None and hello.token in self.lobby.sessions:
            self._welcome(conn, hello, None, now)  # resumed: the session proved its name
            return
        self.held[conn] = Held()
        self.spawn(self._check_hello(conn, hello))

    async def _check_hello(self, conn: Connection, hello: m.Hello) -> None:
        """A new session's name checked against the claims, then welcomed or refused."""
        try:
            account = await self.claims.account_for(hello, conn.address, self.now_ms())
        except ProtocolError as exc:
            self.error(conn, exc.code, exc.message, ref=hello.TAG)
            logs.event("hello_refused", conn=conn.conn_id, code=int(exc.code), address=conn.address)
        except Exception:
            logs.failure("handler_failed", conn=conn.conn_id, message=hello.TAG)
            self.error(conn, ErrorCode.INTERNAL_ERROR, ref=hello.TAG)
        else:
            if conn in self.connections:
                self._welcome(conn, hello, account, self.now_ms())
        finally:
            self._release(conn)

    def _welcome(self, conn: Connection, hello: m.Hello, account: str | None, now: int) -> None:
        new = NewPlayer(ids.player_id(), ids.reconnect_token(), account)
        if hello.spectator_update:
            self._ticking.add(conn)
        self.apply(conn, self.lobby.hello(conn, hello, new, now))
        session = self.lobby.session_of(conn)
        if session is not None and session.credit is None:
            session.credit = self.connections.get(conn)  # as the reader does after a hello
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
            if conn not in self.connections:
                return
            close = self.handle(conn, message)
            if close is not None:
                self.spawn(conn.close(close))
                return

    def _in_room_of(self, conn: Connection) -> tuple[RoomHandle, str]:
        session = self.lobby.session_of(conn)
        handle = self.handles.get(session.room) if session and session.room else None
        if session is None or handle is None:
            raise ProtocolError(ErrorCode.NOT_IN_ROOM)
        return handle, session.identity.player_id

    def _room_call(self, conn: Connection, msg: m.ClientMessage, now: int) -> None:
        handle, pid = self._in_room_of(conn)
        call = _ROOM_CALLS.get(type(msg))
        if call is None:
            raise ProtocolError(ErrorCode.NOT_ALLOWED_NOW)
        self.enter(handle, call(pid, msg, now))
        if isinstance(msg, m.UpdateOptions):
            handle.feed.delay_ms = msg.options.spectator_delay_s * 1000

    def _move(self, conn: Connection, msg: m.MoveRequest, now: int) -> None:
        handle, pid = self._in_room_of(conn)
        started = self._move_started()
        given = inputs.Moved(pid, msg.seq, msg.action, msg.position, now)
        outputs = inputs.apply(handle.room, given)
        if self.journal is not None:
            self.journal.record(handle.room.code, given)
        self.run(handle, outputs)
        first = outputs[0] if outputs else None
        if isinstance(first, Send) and isinstance(first.message, m.MoveResult):
            self.metrics.hot.count_move(first.message.reason)
        if started:
            self._move_timed(started)

    # ---- shutdown ------------------------------------------------------------------
    async def shutdown(self) -> None:
        """Stop: with a journal, log the stop and commit everything, so that the next
        start resumes every room; without one, end running races and store them.  Then
        tell everyone and close."""
        self.closing = True
        now = self.now_ms()
        for handle in list(self.handles.values()):
            try:
                if self.journal is None:
                    self.run(handle, handle.room.abort(now))
                else:
                    self.enter(handle, inputs.Halted(now))
            except Exception:
                logs.failure("abort_failed", room=handle.room.code)
            for timer in handle.timers.values():
                timer.cancel()
            handle.timers.clear()
        self._save_without_par()
        if self.journal is not None:
            await self.journal.close()
        # The aborted races' race_over frames wait for their write, so write first.
        await self.writer.close(self.settings.shutdown_timeout_s)
        closers = [
            conn.close(CloseCode.GOING_AWAY, "server shutting down")
            for conn in list(self.connections)
        ]
        if closers:
            await asyncio.gather(*closers, return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._tasks, return_exceptions=True)
        logs.event("hub_stopped", rooms=len(self.rooms))
