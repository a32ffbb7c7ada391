"""Rooms rebuilt from their input logs after a restart.

At start-up, before the server takes connections, :func:`load_rooms` reads
every room's log (:mod:`server.recovery.log`), all at once, and :func:`replay` feeds it,
input by input, through :func:`server.race.inputs.apply` into a fresh room,
discarding the outputs: the reducers are pure, so the room comes back as it
was after its last logged input.  What the shell must then do with a
:class:`Rebuilt` room (:func:`server.hub_rooms.restore`):

* give the lobby the room and its members' sessions (identity and token
  digest), so each member's ``hello`` with the old token resumes the seat;
* store again every race the log saw end (saving is idempotent by race id, so
  a race stored before the stop changes nothing, and one whose write the stop
  cut short is stored now);
* apply the outage rule as one more logged input, :class:`~server.race.inputs.Resumed`
  with the gap since the room's last logged input (:meth:`Room.resume
  <server.race.room.Room.resume>`: the race clock pauses for the gap, every
  member gets a full reconnect grace, every timer is set again).

A log that cannot be replayed (an unreadable entry, an input the room now
refuses) is reported and dropped: that room does not come back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from protocol.wire.errors import ProtocolError
from server import logs
from server.race.inputs import Joined, Opened, apply, open_room
from server.race.outputs import SaveRace
from server.race.records import RaceRecord
from server.race.room import Room
from server.race.room_types import Identity, RoomTimings
from server.recovery import codec


class WholeLog(Protocol):
    """What a restart reads the rooms from: a log that gives every room's entries at
    once (:meth:`server.storage.inputlog.SqlInputLog.read_all`: its tails have no key,
    and reading them room by room would read all of them for each room)."""

    async def read_all(self) -> dict[str, list[tuple[int, int, str]]]:
        """Every room's entries as ``(index, epoch, data)``, each room's in index order."""
        ...

    async def drop(self, rooms: Sequence[str]) -> None:
        """Forget these rooms' logs."""
        ...


class ReplayError(ValueError):
    """A log that does not rebuild a room (the message says where it broke)."""


@dataclass(slots=True)
class Rebuilt:
    """A room rebuilt from its log, and what the shell needs to take it back."""

    room: Room
    #: Every member and spectator now in the room: identity and token digest.
    members: list[tuple[Identity, str]]
    #: Every race the log saw end, to store again (idempotently).
    records: list[RaceRecord] = field(default_factory=list)
    #: Where the room's next entry goes in its log.
    next_index: int = 0
    #: ``now_ms`` of the last logged input: the outage is measured from there.
    last_ms: int = 0


def replay(entries: Sequence[str], timings: RoomTimings) -> Rebuilt | None:
    """The room ``entries`` (one room's log, in order) rebuild; None for a closed room."""
    if not entries:
        raise ReplayError("the log is empty")
    first = _decode(entries[0], 0)
    if not isinstance(first, Opened):
        raise ReplayError(f"the log starts with {type(first).__name__}, not with the room opening")
    room = open_room(first, timings)
    host = first.host
    known: dict[str, tuple[Identity, str]] = {host.player_id: (host, first.token_digest)}
    records: list[RaceRecord] = []
    last_ms = first.now_ms
    for index, text in enumerate(entries[1:], start=1):
        given = _decode(text, index)
        if isinstance(given, Opened):
            raise ReplayError(f"entry {index} opens the room a second time")
        if isinstance(given, Joined):
            known[given.who.player_id] = (given.who, given.token_digest)
        try:
            outputs = apply(room, given)
        except ProtocolError as exc:
            raise ReplayError(f"entry {index} ({type(given).__name__}) is refused: {exc}") from exc
        records += [out.record for out in outputs if isinstance(out, SaveRace)]
        last_ms = max(last_ms, given.now_ms)
    if room.closed:
        return None
    members = [known[pid] for pid in [*room.seats, *room.spectators] if pid in known]
    return Rebuilt(room, members, records, len(entries), last_ms)


def _decode(text: str, index: int) -> codec.LoggedInput:
    try:
        return codec.decode(text)
    except codec.LogDecodeError as exc:
        raise ReplayError(f"entry {index}: {exc}") from exc


async def load_rooms(log: WholeLog, timings: RoomTimings) -> list[Rebuilt]:
    """Every room the log can rebuild, oldest first; closed rooms' and broken logs are
    dropped (a broken one is reported)."""
    rebuilt: list[Rebuilt] = []
    finished: list[str] = []
    for code, logged in (await log.read_all()).items():
        entries = [data for _index, _epoch, data in logged]
        try:
            room = replay(entries, timings)
        except ReplayError as exc:
            logs.event("room_not_resumed", level=logging.ERROR, room=code, reason=str(exc))
            room = None
        if room is None:
            finished.append(code)
        else:
            rebuilt.append(room)
    if finished:
        await log.drop(finished)
    rebuilt.sort(key=lambda r: r.room.created_ms)
    return rebuilt
