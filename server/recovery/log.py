"""The input log's interface: what a back end must do to keep rooms recoverable.

Every input of a room's reducer is appended, as one encoded entry, to that
room's log before the outputs it caused go out (:mod:`server.recovery.journal`
batches them into group commits).  After a restart :mod:`server.recovery.resume`
reads each room's log back and replays it into a fresh room.  A back end sees
only opaque entries: it never decodes them.  Entries come to it in runs, each
room's consecutive entries of one group commit together (:class:`Run`): a
commit of thousands of moves makes a few objects, not one per move.

Back ends:

* :class:`server.storage.inputlog.SqlInputLog` keeps the log in the server's own
  database (SQLite by default; PostgreSQL works the same), for one node.
* A cluster back end keeps it in a Redis stream per room, each append fenced
  by the room owner's ``epoch``: an append whose epoch is older than the
  room's current one raises :class:`FencedError` and changes nothing.

Contract (every back end):

* :meth:`InputLog.append` makes all of its runs' entries durable together (one
  transaction, one pipeline) or raises; after it returns they survive a crash.
* Entries of one room come back from :meth:`InputLog.read` in ``index`` order
  (0, 1, 2, ...).  The one writer of a room (its journal) numbers them without
  gaps or repeats; a back end may rely on that and need not check it.
* An entry's data is one line of JSON text (it holds no newline).
* :meth:`InputLog.drop` forgets rooms whose logs are no longer needed (closed
  rooms); dropping an unknown room does nothing.
* :meth:`InputLog.rooms` names every room that has a log.
* A back end may also offer :meth:`Submitting.submit`, :meth:`InputLog.append`
  without being awaited (the SQLite file's does): the journal then commits a
  busy server's groups one after another from its completion callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Sized
from typing import Protocol


class Run:
    """Consecutive logged inputs of room ``room``: the first one's index in that room's
    log, the epoch of the writer, and the inputs, each encoded by
    :mod:`server.recovery.codec` (one line of JSON), ``data[i]`` at index ``first + i``.

    A plain class, not a dataclass: compiled, a dataclass keeps the ``__init__`` the
    dataclasses module writes, which runs as Python, and the journal makes one run per
    room per commit (about one per move)."""

    __slots__ = ("data", "epoch", "first", "room")

    def __init__(self, room: str, first: int, epoch: int, data: list[str]) -> None:
        self.room = room
        self.first = first
        self.epoch = epoch
        self.data = data

    def __repr__(self) -> str:
        return f"Run({self.room!r}, {self.first!r}, {self.epoch!r}, {self.data!r})"


class LogError(Exception):
    """The log could not take or give entries (the message says why)."""


class FencedError(LogError):
    """An append carried an epoch older than the room's: another owner has the room."""


class InputLog(Protocol):
    """Where rooms' inputs are kept until the rooms close."""

    async def append(self, runs: Sequence[Run]) -> None:
        """Make every entry of ``runs`` durable, all together; raise :class:`LogError` if
        not."""
        ...

    async def read(self, room: str) -> list[tuple[int, int, str]]:
        """Room ``room``'s entries as ``(index, epoch, data)``, in index order (empty
        when it has none)."""
        ...

    async def rooms(self) -> list[str]:
        """Every room that has a log."""
        ...

    async def drop(self, rooms: Sequence[str]) -> None:
        """Forget these rooms' logs."""
        ...


#: Called on the event loop once a submitted append is durable (``None``) or refused.
Done = Callable[[BaseException | None], object]


class Submitting(InputLog, Protocol):
    """A log that can also take an append without being awaited, so the event loop's
    turn that learns of a commit can carry out what the commit held (an awaited append
    resumes its caller one turn of the loop later, and a busy server's turns are
    long)."""

    #: The submitted appends that ended and whose ``done`` is not called yet: while it
    #: is not empty, :meth:`take_ended` has work.
    ended: Sized

    def submit(self, runs: Sequence[Run], done: Done) -> bool:
        """:meth:`append` without awaiting: ``done`` is called on the event loop with
        ``None`` once every entry is durable, or with the error that refused them.  False
        (nothing done) when it cannot take this one so: await :meth:`append` instead."""
        ...

    def take_ended(self) -> None:
        """Call now, on the event loop, the ``done`` of every submitted append that has
        ended, rather than at the loop's next turn (:meth:`Journal.poll
        <server.recovery.journal.Journal.poll>`)."""
        ...
