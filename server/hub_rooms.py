"""The shell's side of each room: its handle, opened, taken back after a restart, closed.

:class:`RoomHandle` is what the hub (:mod:`server.hub`) keeps beside each room
of the lobby: its timers, its spectator feed, the frames waiting for a race
result to be stored.  A room's handle is made when the lobby opens the room
(:func:`opened`) or when a room is rebuilt from its input log
(:func:`restore`), and goes when the room closes (:func:`forget`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol

from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from server import logs
from server.pars import ParJob, ParJobs
from server.race import inputs
from server.race.lobby import Lobby
from server.race.outputs import Output, RoomOpened
from server.race.room import Room
from server.race.spectate import LIVE_KINDS, SpectatorFeed
from server.recovery.journal import Journal
from server.recovery.resume import Rebuilt
from server.storing import Storing
from server.transport.connection import Connection


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
    #: The connections of the room's connected players and of its spectators, as they
    #: were at the room's ``version`` and the lobby's ``epoch`` noted (``Hub._members``);
    #: one may have closed since.
    seated: list[Connection] = field(default_factory=list)
    watching: list[Connection] = field(default_factory=list)
    members_version: int = -1
    members_epoch: int = -1
    #: The hub no longer holds the room by this handle (:func:`forget`, or a handle put in
    #: its place): a move fast path that kept it (:class:`server.hub.MoveRoute`) looks again.
    gone: bool = False


class Shell(Protocol):
    """What this module needs of the hub."""

    lobby: Lobby[Connection]
    handles: dict[str, RoomHandle]
    journal: Journal | None
    storing: Storing[RoomHandle]
    pars: ParJobs

    def enter(self, handle: RoomHandle, given: inputs.Input) -> list[Output]: ...

    def now_ms(self) -> int: ...


def _handle(room: Room) -> RoomHandle:
    feed: SpectatorFeed[m.ServerMessage] = SpectatorFeed(
        room.options.spectator_delay_s * 1000, live=LIVE_KINDS
    )
    return RoomHandle(room, feed)


def in_room_of(hub: Shell, conn: Connection) -> tuple[RoomHandle, str]:
    """The handle of the room ``conn``'s player is in, and the player's id."""
    session = hub.lobby.session_of(conn)
    handle = hub.handles.get(session.room) if session and session.room else None
    if session is None or handle is None:
        raise ProtocolError(ErrorCode.NOT_IN_ROOM)
    return handle, session.identity.player_id


def opened(hub: Shell, out: RoomOpened) -> None:
    """The lobby opened a room: its handle, and its first input logged."""
    if hub.journal is not None and out.logged is not None:
        hub.journal.record(out.code, out.logged)
    _replace(hub, _handle(hub.lobby.rooms[out.code]))
    logs.event("room_created", room=out.code, host=out.host, public=out.public)


def restore(hub: Shell, rebuilt: Rebuilt) -> None:
    """Take back a room rebuilt from its log (:mod:`server.recovery.resume`)."""
    room = rebuilt.room
    hub.lobby.restore(room, rebuilt.members)
    handle = _replace(hub, _handle(room))
    if hub.journal is not None:
        hub.journal.open(room.code, rebuilt.next_index)
    for record in rebuilt.records:
        hub.storing.save(handle, record)  # idempotent: a stored race stays as it is
    if room.dealt is not None and room.race is not None and room.race.end_ms is None:
        handle.par = hub.pars.submit(room.dealt)  # a par computed before the stop is gone
    now = hub.now_ms()
    gap = max(0, now - rebuilt.last_ms)
    hub.enter(handle, inputs.Resumed(gap, now))
    logs.event("room_resumed", room=room.code, phase=room.phase.value, gap_ms=gap,
               members=len(rebuilt.members))


def _replace(hub: Shell, handle: RoomHandle) -> RoomHandle:
    """``handle`` is the hub's for its room from now on; one it held before is gone."""
    before = hub.handles.get(handle.room.code)
    if before is not None:
        before.gone = True
    hub.handles[handle.room.code] = handle
    return handle


def forget(hub: Shell, handle: RoomHandle) -> None:
    """The room is closed (or another node holds it now): its timers, log and handle go."""
    for timer in handle.timers.values():
        timer.cancel()
    handle.timers.clear()
    if hub.journal is not None:
        hub.journal.forget(handle.room.code)
    if hub.handles.get(handle.room.code) is handle:
        del hub.handles[handle.room.code]
    handle.gone = True
    hub.lobby.forget_room(handle.room.code)
    logs.event("room_closed", room=handle.room.code)
