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

This module keeps what runs on every move and every flush: the fast path,
the input hook (:meth:`Hub.enter`), the rooms' outputs (:meth:`Hub.run`),
frames to players and spectators, and timers.  The colder parts live beside
it, each given what it needs of the hub: a room's handle, opened, restored
and closed (:mod:`server.hub_rooms`); connections and their ``hello``
(:mod:`server.hub_hello`); the general path's messages and the lobby's
outputs (:mod:`server.hub_messages`); deals (:mod:`server.hub_deals`);
races counted and stored (:mod:`server.hub_races`); the stop
(:mod:`server.hub_shutdown`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from protocol.deals.dealer import Difficulty
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from protocol.wire.fast import (
    FRESH,
    REASON,
    BoardRow,
    ProgressRow,
    board_message,
    board_msgpack,
    move_result_msgpack,
    parse_move,
    progress_message,
    progress_msgpack,
    update_msgpack,
)
from protocol.wire.lifecycle import MOVE_PHASES
from server import hub_rooms, logs
from server.claims import Claims, Held
from server.config import Settings
from server.daily import DailyService
from server.ghosts import ghosts_for_room
from server.hub_deals import Dealing
from server.hub_flushes import FlushSlots
from server.hub_hello import Hellos
from server.hub_messages import Call, Messages
from server.hub_races import Races
from server.hub_rooms import RoomHandle, in_room_of
from server.metrics import Metrics
from server.metrics_hot import HotCounts
from server.pars import ParJobs
from server.race import inputs
from server.race.lobby import Limits, Lobby, Session
from server.race.outputs import (
    CancelTimer,
    CloseRoom,
    DealRequest,
    Detach,
    FlushDue,
    LoadGhosts,
    LobbyOutput,
    Output,
    RaceBegan,
    RaceEnded,
    SaveRace,
    Send,
    SetTimer,
    Snapshot,
    ToPlayers,
    ToSpectators,
)
from server.race.progress import FlushRows, flush_frames
from server.race.ratelimit import AddressLimiter, CreditBucket
from server.race.room import Room
from server.race.room_types import RoomTimings
from server.race.spectate import UPDATE_PARTS, pack_updates
from server.recovery.codec import move_head
from server.recovery.journal import Journal
from server.storage.inputlog import SqlInputLog
from server.storage.players import Players
from server.storage.store import RaceStore
from server.storage.writer import ResultWriter
from server.storing import Storing
from server.transport.connection import Connection, Frame
from server.transport.framing import WriteBatch
from server.transport.heartbeat import keep_alive

if TYPE_CHECKING:  # cluster mode only: embedded servers never load Redis
    from server.cluster.routing import Router

_FEED_TIMER: Final = "__feed__"
#: The snapshot kinds of a flush's frames (its fast path needs the feed to keep marks).
_FLUSH_KINDS: Final = ("progress", "board")
#: The dialect whose flush frames the fast path writes from rows.
_CURRENT_MSGPACK: Final = codec.Encoding.MSGPACK
_MOVE_TAG: Final = m.MoveRequest.TAG
_SAMPLE: Final = Metrics.MOVE_SAMPLE
#: The phases in which the life-cycle table lets a seated player move, and anyone else
#: (named here so the move fast path makes no call or dict lookup for them).
_SEATED_MOVES: Final = MOVE_PHASES[m.Role.PLAYER]
_UNSEATED_MOVES: Final = MOVE_PHASES[None]


class MoveRoute:
    """What one connection's moves went through last (its reader keeps it): the session,
    the room's handle and the start of the moves' log entries.

    With 10,000 players the registries of sessions by connection and of rooms by code
    are out of the caches: keeping what they gave saves 2.6-2.8% of the server's
    samples in dictionary lookups, about 1.5% net (performance-log.md, twenty-ninth
    part).  :meth:`Hub.fast_move` trusts what is
    kept only while it still holds: the session's ``conn`` is still this connection
    (:class:`~server.race.lobby.Session` says why that is enough), and the handle is
    not :attr:`~server.hub_rooms.RoomHandle.gone` and is of the session's room.
    """

    __slots__ = ("handle", "head", "session")

    def __init__(self) -> None:
        self.session: Session[Connection] | None = None
        self.handle: RoomHandle | None = None
        #: :func:`server.recovery.codec.move_head` of the session's player.
        self.head = ""


def _news(message: m.ServerMessage, encoding: codec.Encoding) -> Frame:
    """A broadcast's frame in one dialect; ``b""`` when the dialect is not sent it."""
    return codec.encode(message, encoding) if codec.sent_in(message, encoding) else b""


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
            journal.write_first = self.batch.write_now  # the answers' sockets first
        self.closing = False
        self.storing: Storing[RoomHandle] = Storing(
            store, self.batch, self.deliver,
            lambda handle: self.handles.get(handle.room.code) is handle,
            lambda ok: (self.metrics.stored_races if ok else self.metrics.storage_errors).inc(),
        )
        self.metrics = Metrics(
            lambda: len(self.connections), self.lobby.rooms_by_state, lambda: self.writer.waiting
        )
        #: The metrics' hot counters, held here: compiled, ``self.hot.moves`` is a native
        #: read, where ``self.metrics`` is a Python object's attribute.
        self.hot: HotCounts = self.metrics.hot
        if journal is not None:
            journal.on_commit = self.metrics.log_commit_seconds.observe
            journal.on_gap = self._commit_gap_changed
            self.metrics.log_commit_gap_seconds.set(journal.gap_s)
            if isinstance(journal.log, SqlInputLog):
                journal.log.on_fold_step(self.metrics.log_fold_step_seconds.observe)
        #: Claimed names; the messages of connections whose hello is being checked.
        self.claims = Claims(Players(store), executor)
        self.held: dict[Connection, Held] = {}
        self.move_count = 0  # moves handled, for sampled timing
        #: False sends every progress flush through :meth:`run` (the reference the
        #: one pass of :meth:`_send_flush` is tested against).
        self.one_pass = True
        #: Progress flushes sent in one pass and through :meth:`run` (for the tests and
        #: for curiosity: a compiled hub's methods cannot be wrapped to count them).
        self.flushes_one_pass = 0
        self.flushes_general = 0
        self._by_conn = self.lobby.by_conn  # read when a move's route changes
        #: Background tasks (:meth:`spawn`); shutdown cancels whatever is left.
        self.tasks: set[asyncio.Task[None]] = set()
        #: The last message broadcast and its frames by dialect (``b""``: not sent in that
        #: one): a flush sends the same ``progress`` to the players and then to the
        #: spectators (holding the message keeps its identity from being reused).
        self._encoded: tuple[object, dict[codec.Encoding, Frame]] = (None, {})
        #: Connections whose hello asked for ``spectator_update`` frames.
        self._ticking: set[Connection] = set()
        loop = asyncio.get_running_loop()
        self.dealing = Dealing(self, loop)
        self.pars = ParJobs(
            loop, executor, max(1, settings.deal_workers - 1), self.dealing.no_urgent, self.spawn,
            closing=lambda: self.closing,
        )
        # One clock for everything: unix milliseconds that never go backwards.
        self._clock_offset_ms = time.time() * 1000 - loop.time() * 1000
        self._loop = loop
        #: The rooms whose progress flush is due, by slot of time.
        self.flushes: FlushSlots[RoomHandle] = FlushSlots(
            loop, lambda at_ms: (at_ms - self._clock_offset_ms) / 1000, self._flush_slot,
            interval_ms=1000 / settings.progress_hz,
        )
        #: The daily deal (its clock is this hub's).
        self.daily = DailyService(store, self.dealing.deal_in_pool, self.now_ms)
        self.races = Races(self)
        self.hellos = Hellos(self, self.claims, self.held, self._ticking)
        more: dict[type[Any], Call] = {m.Hello: self.hellos.hello, m.MoveRequest: self._move}
        self.messages = Messages(self, self.held, self._put, more)
        #: Where a decoded message goes (:meth:`server.hub_messages.Messages.handle`), and
        #: the router's way back to this node (:class:`server.cluster.routing.Shell`).
        self.handle = self.messages.handle
        self.hello_here, self.create_here = self.hellos.here, self.messages.create_here
        self.join_here = self.messages.join_here
        self._room_outputs = self._room_output_table()
        self._frames: dict[type[Any], Callable[[RoomHandle, Any], None]] = {
            Send: self._send, ToPlayers: self._to_players,
            ToSpectators: self._to_spectators, Snapshot: self._snapshot,
        }
        self._lobby_outputs = self.messages.outputs()
        #: Cluster mode's router (:mod:`server.cluster.routing`); None when embedded.
        self.cluster: Router | None = None

    def start(self) -> None:
        """Warm up: fill the deal queue for the default rules; start the heartbeat and
        the result writer."""
        self.writer.start()
        if self.journal is not None:
            self.journal.start()
        self.dealing.prepare_ahead((m.RoomOptions().rules, Difficulty.ANY))
        self.spawn(self.dealing.warm_daily())
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

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` in the background; shutdown cancels whatever is left."""
        task = self._loop.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # ---- sending ---------------------------------------------------------------
    def reply(self, conn: Connection, message: m.ServerMessage) -> None:
        """Send ``message`` to ``conn``."""
        self._put(conn, codec.encode(message, conn.encoding))
        self.hot.frames_sent += 1

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
        self.hot.frames_sent += 1

    def broadcast(self, conns: Iterable[Connection], message: m.ServerMessage) -> None:
        """Send one message to many: encoded at most once per dialect (and once for the
        players and spectators of a progress flush, see :attr:`_encoded`).  A message
        newer than a connection's protocol version is news it is not sent
        (:func:`protocol.wire.codec.sent_in`)."""
        last, frames = self._encoded
        if last is not message:
            frames = {}
            self._encoded = (message, frames)
        # Encoded now even when held (_put): the spectators' update reuses the progress bytes.
        sent = 0
        for conn in conns:
            frame = frames.get(conn.encoding)
            if frame is None:
                frame = frames[conn.encoding] = _news(message, conn.encoding)
            if frame:
                self._put(conn, frame)
                sent += 1
        self.hot.frames_sent += sent

    def _conns(self, player_ids: Iterable[str]) -> list[Connection]:
        found = []
        lobby = self.lobby
        for pid in player_ids:
            conn = lobby.conn_of(pid)
            if conn is not None and not conn.closed:
                found.append(conn)
        return found

    def apply(self, conn: Connection | None, outputs: Iterable[LobbyOutput[Connection]]) -> None:
        """Carry out the lobby's outputs, in order (``conn``: the connection that asked)."""
        table = self._lobby_outputs
        for out in outputs:
            table[type(out)](conn, out)

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

    async def carry(self, handle: RoomHandle, given: Awaitable[inputs.Input | None]) -> None:
        """Enter a room's input once it is ready, if the room is still open."""
        ready = await given
        if ready is not None and not handle.room.closed and not self.closing:
            with self.batch:
                self.enter(handle, ready)

    # ---- the rooms' outputs -------------------------------------------------------
    def _room_output_table(self) -> dict[type[Any], Callable[[RoomHandle, Any], None]]:
        return {
            Send: self._frame,
            ToPlayers: self._frame_for_players,
            ToSpectators: self._frame_for_spectators,
            Snapshot: self._frame,
            SetTimer: lambda handle, out: self._set_timer(handle, out.name, out.at_ms),
            FlushDue: lambda handle, out: self.flushes.add(handle, out.at_ms),
            CancelTimer: self._cancel_timer,
            DealRequest: lambda handle, out: self.spawn(self.dealing.deal(handle, out)),
            LoadGhosts: lambda handle, out: self.spawn(
                self.carry(handle, ghosts_for_room(self.store, self.daily, out, self.now_ms))
            ),
            SaveRace: self.races.save,
            Detach: lambda handle, out: self.apply(
                None, self.lobby.detach(handle.room.code, out.player_id)
            ),
            RaceBegan: self.races.began,
            RaceEnded: self.races.ended,
            CloseRoom: lambda handle, out: hub_rooms.forget(self, handle),
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
        self.broadcast(self._seated_conns(handle.room), out.message)

    def _seated_conns(self, room: Room) -> list[Connection]:
        """The open connections of ``room``'s connected players."""
        lobby = self.lobby  # a method called on it is a native call; held bound, it is not
        conns = []
        for pid, seat in room.seats.items():
            if seat.connected:
                conn = lobby.conn_of(pid)
                if conn is not None and not conn.closed:
                    conns.append(conn)
        return conns

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
            self._send_update(conns, update, encoded if last is update.progress else {})

    def _send_update(
        self,
        conns: list[Connection],
        update: m.SpectatorUpdate,
        ready: dict[codec.Encoding, Frame],
    ) -> None:
        """Send ``update`` to ``conns``, encoded once per encoding on the ``progress``
        bytes ``ready`` holds for that encoding, if any."""
        frames: dict[codec.Encoding, Frame] = {}
        for conn in conns:
            frame = frames.get(conn.encoding)
            if frame is None:
                frame = frames[conn.encoding] = codec.encode_update(
                    update, conn.encoding, ready.get(conn.encoding)
                )
            self._put(conn, frame)  # held, like every frame, while what it shows is not logged
        self.hot.frames_sent += len(conns)

    def _snapshot(self, handle: RoomHandle, out: Snapshot) -> None:
        for conn in self._conns((out.player_id,)):
            messages = self.catch_up(handle)
            for message in pack_updates(messages) if conn in self._ticking else messages:
                self.reply(conn, message)

    def catch_up(self, handle: RoomHandle) -> list[m.ServerMessage]:
        """The race frames a spectator catches up on (:meth:`SpectatorFeed.snapshot`).

        The feed's marks are made afresh only for the race whose start it released:
        a new race's frames held while the last result is written (``handle.held``)
        must not reach a spectator through a catch-up before they reach its players.
        """
        now, room, feed = self.now_ms(), handle.room, handle.feed
        start = feed.latest("race")
        if isinstance(start, m.RaceStart) and start.race_id == room.race_id:
            return feed.snapshot(lambda key: room.catch_up_frame(key, now))
        return feed.snapshot()

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

    def _flush_slot(self, slot_ms: int, handles: list[RoomHandle]) -> None:
        """The progress flushes of one slot (:mod:`server.hub_flushes`), in one batch: not
        inputs, so not logged; a room closed or handed to another node is skipped."""
        if self.closing:
            return
        now = max(self.now_ms(), slot_ms)
        current = self.handles
        with self.batch:
            for handle in handles:
                room = handle.room
                if room.closed or current.get(room.code) is not handle:
                    continue
                try:
                    rows = room.flush_rows(now)
                    if rows is None:
                        continue
                    if self.one_pass and self._send_flush(handle, rows):
                        self.flushes_one_pass += 1
                    else:
                        self.flushes_general += 1
                        self.run(handle, flush_frames(rows))
                except Exception:
                    logs.failure("progress_flush_failed", room=room.code)

    def _send_flush(self, handle: RoomHandle, rows: FlushRows) -> bool:
        """The usual flush written from its rows in one pass: what :meth:`run` of
        :func:`flush_frames` would send, to the same connections, in the same frames
        (``tests/server/test_flush_fastpath.py``).

        The usual flush has a ``progress`` line, in a room whose spectator feed
        releases it at once and keeps only marks (no delay) and whose result is not
        being written.  Frames for the current msgpack dialect are written from the
        rows (:mod:`protocol.wire.fast`); the messages are built only for connections
        of other dialects.  False, and nothing done, for any other flush.
        """
        elapsed, lines, boards = rows
        feed = handle.feed
        if lines is None or handle.writing or handle.tick or not feed.keeps_marks(*_FLUSH_KINDS):
            return False
        progress = progress_msgpack(elapsed, lines)
        self._members(handle)
        players = self._flush_to_players(handle, progress)
        feed.mark("progress")
        for row in boards:
            feed.mark("board:" + row[0])
        spectators = self._flush_to_spectators(handle, progress, boards) if handle.watching else []
        if players or spectators:
            self._flush_as_messages(players, spectators, elapsed, lines, boards)
        return True

    def _members(self, handle: RoomHandle) -> None:
        """Bring ``handle.seated`` and ``handle.watching`` up to date: the open connections
        of the room's connected players and of its spectators, kept while neither the
        room's version (every change of its members moves it) nor the lobby's epoch (every
        change of a player's connection moves it) moves.  A flush then looks up no player."""
        room, epoch = handle.room, self.lobby.epoch
        if handle.members_version != room.version or handle.members_epoch != epoch:
            handle.seated = self._seated_conns(room)
            handle.watching = self._conns(room.spectators)
            handle.members_version, handle.members_epoch = room.version, epoch

    def _flush_to_players(self, handle: RoomHandle, progress: bytes) -> list[Connection]:
        """Send a flush's ``progress`` frame to the room's connected players of the current
        msgpack dialect (``handle.seated``, :meth:`_members`); those of other dialects are
        returned."""
        # Methods are called on self, never held bound: compiled, that is a native call.
        current = _CURRENT_MSGPACK
        others: list[Connection] = []
        sent = 0
        for conn in handle.seated:
            if conn.closed:
                continue
            if conn.encoding is current:
                self._put(conn, progress)
                sent += 1
            else:
                others.append(conn)
        self.hot.frames_sent += sent
        return others

    def _flush_to_spectators(
        self, handle: RoomHandle, progress: bytes, boards: list[BoardRow]
    ) -> list[Connection]:
        """Send a flush to the room's spectators of the current msgpack dialect
        (``handle.watching``, :meth:`_members`): its ``spectator_update`` to those that asked
        for one, else its ``progress`` and each board; those of other dialects are
        returned."""
        current, ticking = _CURRENT_MSGPACK, self._ticking
        update: bytes | None = None
        separate: list[bytes] | None = None  # the progress, then each board
        others: list[Connection] = []
        sent = 0
        for conn in handle.watching:
            if conn.closed:
                continue
            if conn.encoding is not current:
                others.append(conn)
            elif conn in ticking:
                if update is None:
                    update = update_msgpack(progress, boards)
                self._put(conn, update)
                sent += 1
            else:
                if separate is None:
                    separate = [progress, *map(board_msgpack, boards)]
                for frame in separate:
                    self._put(conn, frame)
                sent += len(separate)
        self.hot.frames_sent += sent
        return others

    def _flush_as_messages(
        self,
        players: list[Connection],
        spectators: list[Connection],
        elapsed: int,
        lines: tuple[ProgressRow, ...],
        boards: list[BoardRow],
    ) -> None:
        """Send a flush to ``players`` and ``spectators`` of the other dialects, from its
        messages, encoded once per dialect."""
        progress = progress_message(elapsed, lines)
        if players:
            self.broadcast(players, progress)
        if not spectators:
            return
        shown = [board_message(row) for row in boards]
        ticking = self._ticking
        separate = [conn for conn in spectators if conn not in ticking]
        if separate:
            self.broadcast(separate, progress)
            for board in shown:
                self.broadcast(separate, board)
        updates = [conn for conn in spectators if conn in ticking]
        if updates:
            last, encoded = self._encoded  # the progress, if just encoded
            ready = encoded if last is progress else {}
            self._send_update(updates, m.SpectatorUpdate(progress, tuple(shown)), ready)

    def drop_room(self, code: str) -> list[Connection]:
        """Forget room ``code`` without ending its race: another node holds it now (cluster
        mode).  Its members' connections are returned, to be sent there."""
        handle = self.handles.get(code)
        if handle is None:
            return []
        room = handle.room
        conns = self._conns([*room.seats, *room.spectators])
        handle.fenced = True
        hub_rooms.forget(self, handle)
        return conns

    def deliver(self, handle: RoomHandle, out: Output) -> None:
        """Send a room's frame now, held or not (:mod:`server.storing` releases held ones)."""
        self._frames[type(out)](handle, out)
        if handle.tick:
            self._send_tick(handle)

    @property
    def writer(self) -> ResultWriter:
        """The race result writer."""
        return self.storing.writer

    # ---- the move fast path ----------------------------------------------------------
    def fast_move(
        self, conn: Connection, frame: bytes, now_ms: int, route: MoveRoute | None = None
    ) -> bool:
        """Answer ``frame`` if it is a plain msgpack move from a racing player; False to take
        the general path.

        A frame that :func:`protocol.wire.fast.parse_move` accepts, from a member
        the life-cycle table lets move, goes straight to :meth:`Room.answer_move`,
        whose answer :func:`protocol.wire.fast.move_result_msgpack` writes.  Every check
        still happens (the engine's, the sequence number's), and anything else goes the
        general way, so replies and error codes are those of the general path
        (``tests/server/test_fastpath.py`` compares them).  The caller has spent the
        frame's credit and checked the connection speaks msgpack.  ``route``: what the
        connection's last move went through (:class:`MoveRoute`), checked, then kept up to
        date; without one, everything is looked up.
        """
        if route is None:
            route = MoveRoute()
        session = route.session
        if session is None or session.conn is not conn:
            session = self._by_conn.get(conn)
            if session is None:
                return False
            route.session = session
            route.head = move_head(session.identity.player_id)
        code = session.room
        if code is None or self.closing:
            return False
        handle = route.handle
        if handle is None or handle.gone or handle.room.code != code:
            handle = self.handles.get(code)
            if handle is None:
                return False
            route.handle = handle
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
                journal.record_move_after(code, route.head, seq, action, position, now_ms)
            if journal.holding:
                journal.hold_answer(conn, move_result_msgpack(outcome))
            else:
                conn.send(move_result_msgpack(outcome))
        hot = self.hot
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

    def poll(self, now_ms: int) -> None:
        """Run now what the loop would run after its turn: a commit that ended, the next
        commit once its gap is over (:meth:`Journal.poll`), and the flushes due
        (:meth:`FlushSlots.poll`).  The reader calls it after each move it hands over: a
        turn of the loop reads every ready socket before any callback or timer, and
        under a large crowd one turn can read thousands of frames."""
        if self.journal is not None:
            self.journal.poll()
        self.flushes.poll(now_ms)

    def _commit_gap_changed(self, gap_s: float, share: float) -> None:
        """The input log's commit gap changed with the event loop's load."""
        self.metrics.log_commit_gap_seconds.set(gap_s)
        logs.event(
            "log_commit_gap", gap_ms=round(gap_s * 1000, 1), loop_busy_pct=round(share * 100)
        )

    def _move_started(self) -> float:
        """Count a move; when it is one of the sampled ones, the time it started (else 0)."""
        count = self.move_count = self.move_count + 1
        return 0.0 if count % _SAMPLE else time.perf_counter()

    def _move_timed(self, started: float) -> None:
        self.hot.time_move(time.perf_counter() - started)

    # ---- the general path's move -------------------------------------------------
    def _move(self, conn: Connection, msg: m.MoveRequest, now: int) -> None:
        handle, pid = in_room_of(self, conn)
        started = self._move_started()
        given = inputs.Moved(pid, msg.seq, msg.action, msg.position, now)
        outputs = inputs.apply(handle.room, given)
        if self.journal is not None:
            self.journal.record(handle.room.code, given)
        self.run(handle, outputs)
        first = outputs[0] if outputs else None
        if isinstance(first, Send) and isinstance(first.message, m.MoveResult):
            self.hot.count_move(first.message.reason)
        if started:
            self._move_timed(started)
