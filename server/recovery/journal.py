"""Log before acknowledging: group commits of room inputs, and the outputs they hold.

The hub hands every input that changed a room to :meth:`Journal.record`, and
from then on every output it would carry out goes to :meth:`Journal.hold`
instead, until the entries recorded before it are durable.  A background task
takes everything recorded and held since its last commit, appends the
entries to the :class:`~server.recovery.log.InputLog` in one call (one
transaction: the group commit), and then carries out the held outputs in the
order they came.  While one commit runs, the next group gathers, so the log
costs one commit per batch of inputs, not one per input.  A commit starts at
least ``commit_gap_s`` after the one before: an idle server commits at once,
a busy one in larger groups (each costs a transaction and a sync whatever its
size, and the outputs it releases join into fewer writes).

A log that keeps refusing is not allowed to stop the races: after
:data:`RETRIES` the held outputs go out anyway, the rooms of the failed
entries stop being logged (their logs are dropped, so a restart cannot
resume them half-way) and :attr:`Journal.problem` says why until a later
write to the log succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Final, Protocol

from protocol.wire.messages import MoveAction
from server import logs
from server.race.inputs import Opened
from server.race.outputs import Logged
from server.recovery import codec
from server.recovery.log import InputLog, Run

_encode_move: Final = codec.encode_move
_encode: Final = codec.encode
#: Pauses before the tries of a refused append after the first.
RETRIES: Final = (0.05, 0.25, 1.0)
#: In the held outputs, in place of a frame: call the action itself.
_CALL: Final = object()


class Sender(Protocol):
    """Whatever takes frames (a connection)."""

    def send(self, frame: Any, /) -> None: ...


class Journal:
    """Logs rooms' inputs in group commits; see the module docstring.

    ``batch()`` is entered while held outputs are carried out (the hub's write
    batch, so their frames join into as few writes as possible).
    """

    def __init__(
        self,
        log: InputLog,
        epoch: int,
        batch: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
        commit_gap_s: float = 0.0,
    ) -> None:
        self.log = log
        self.epoch = epoch
        self.batch = batch
        self.commit_gap_s = commit_gap_s
        #: Why the last commit failed, until one succeeds.
        self.problem: str | None = None
        #: True when an output must wait (:meth:`hold`) for inputs not yet durable: kept
        #: up to date here rather than worked out, as the hub asks before every frame.
        self.holding = False
        #: Entries committed, and commits made (for the metrics and the benchmark).
        self.entries_written = 0
        self.commits = 0
        #: Called with the seconds each successful append took (its answers waited that
        #: long): the metrics' ``tripeaks_log_commit_seconds``.
        self.on_commit: Callable[[float], None] = lambda seconds: None
        self._next: dict[str, int] = {}
        # Per move, two appends to lists and no object that the garbage collector
        # would track (a tuple, a closure): the objects alive until a commit ends make
        # the collector run more often, and for longer, than the moves themselves.
        #: The input (for a move, its entry's text, encoded at once) and its room.
        self._staged: list[Logged | str] = []
        self._staged_rooms: list[str] = []
        #: Held outputs, two items each: a sender and a frame, or an action and _CALL.
        self._held: list[Any] = []
        self._drops: list[str] = []
        self._busy = False  # a commit is under way
        self._releasing = False
        self._closed = False
        self._wake = asyncio.Event()
        self._woken = False  # _wake is set (an attribute is cheaper to ask, once per move)
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None

    # ---- what the hub calls ------------------------------------------------------
    def start(self) -> None:
        """Start the background committer."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def record(self, room: str, given: Logged) -> None:
        """Log ``given``, an input that changed room ``room``, in the next commit."""
        if self._closed:
            return
        if isinstance(given, Opened):
            self._next[room] = 0
        elif room not in self._next:
            return  # a room that is not logged (its log failed)
        self._staged.append(given)
        self._staged_rooms.append(room)
        self._waiting()

    def record_move(
        self, room: str, player_id: str, seq: int, action: MoveAction, position: int | None,
        now_ms: int,
    ) -> None:
        """:meth:`record` of a :class:`~server.race.inputs.Moved` from its fields (the move
        fast path makes no input object)."""
        if room in self._next and not self._closed:
            self._staged.append(_encode_move(player_id, seq, action, position, now_ms))
            self._staged_rooms.append(room)
            if not self._releasing:
                self.holding = True
            if not self._woken:
                self._kick()

    def open(self, room: str, next_index: int = 0) -> None:
        """Log room ``room`` from now on, its next entry at ``next_index``."""
        self._next[room] = next_index

    def hold(self, action: Callable[[], object]) -> None:
        """Carry out ``action`` once everything recorded so far is durable."""
        self._held += (action, _CALL)
        self._waiting()

    def hold_send(self, target: Sender, frame: object) -> None:
        """:meth:`hold` of ``target.send(frame)``, without a closure (one per move)."""
        held = self._held
        held.append(target)
        held.append(frame)
        if not self._releasing:
            self.holding = True
        if not self._woken:
            self._kick()

    def forget(self, room: str) -> None:
        """Room ``room`` closed: drop its log after what is recorded of it."""
        if self._next.pop(room, None) is not None:
            self._drops.append(room)
            self._kick()

    async def flush(self) -> None:
        """Wait until everything recorded or held so far is committed and carried out."""
        while self._staged or self._held or self._drops or self._busy:
            if self._task is None or self._task.done():
                return  # no committer (never started, or cancelled at shutdown): none will come
            self._idle.clear()
            self._kick()
            await self._idle.wait()

    async def close(self) -> None:
        """Commit what is recorded, carry out what is held, and stop recording."""
        await self.flush()
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # ---- the committer -----------------------------------------------------------
    def _waiting(self) -> None:
        """Something was staged or held: outputs wait, and the committer wakes."""
        if not self._releasing:
            self.holding = True
        self._kick()

    def _kick(self) -> None:
        if not self._woken:  # once per group
            self._woken = True
            self._idle.clear()
            self._wake.set()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        last_start = -self.commit_gap_s
        while True:
            await self._wake.wait()
            pause = last_start + self.commit_gap_s - loop.time()
            if pause > 0:
                await asyncio.sleep(pause)  # what comes meanwhile joins this commit
            last_start = loop.time()
            self._wake.clear()
            self._woken = False
            if not (self._staged or self._held or self._drops):
                self._idle.set()
                continue
            staged, self._staged = self._staged, []
            rooms, self._staged_rooms = self._staged_rooms, []
            held, self._held = self._held, []
            drops, self._drops = self._drops, []
            self._busy = self.holding = True
            try:
                await self._commit(rooms, staged)
                if drops:
                    await self._drop(drops)
            finally:
                self._busy = False
                self._release(held)
            if not (self._staged or self._held or self._drops):
                self._idle.set()

    def _runs(self, rooms: Sequence[str], staged: Sequence[Logged | str]) -> list[Run]:
        """Each room's staged inputs as one run, numbered on from the room's next index;
        inputs of rooms no longer logged are left out."""
        texts: dict[str, list[str]] = {}
        following, encode = self._next, _encode
        for room, given in zip(rooms, staged, strict=True):
            data = texts.get(room)
            if data is None:
                if room not in following:
                    continue
                data = texts[room] = []
            data.append(given if isinstance(given, str) else encode(given))
        runs = []
        for room, data in texts.items():
            first = following[room]
            following[room] = first + len(data)
            runs.append(Run(room, first, self.epoch, data))
        return runs

    async def _commit(self, rooms: Sequence[str], staged: Sequence[Logged | str]) -> None:
        runs = self._runs(rooms, staged)
        if not runs:
            return
        clock = asyncio.get_running_loop().time
        for pause in (*RETRIES, None):
            started = clock()
            try:
                await self.log.append(runs)
            except Exception as exc:  # whatever the back end raises, the races go on
                error = str(exc) or type(exc).__name__
                if pause is not None:
                    await asyncio.sleep(pause)
                    continue
                self._failed(runs, error)
                return
            self.on_commit(clock() - started)
            self.problem = None
            self.entries_written += sum(len(run.data) for run in runs)
            self.commits += 1
            return

    def _failed(self, runs: Sequence[Run], error: str) -> None:
        """The log refused these runs for good: their rooms are no longer logged."""
        rooms = sorted({run.room for run in runs})
        count = sum(len(run.data) for run in runs)
        self.problem = f"the input log refused {count} entries: {error}"
        logs.event("input_log_failed", level=logging.ERROR, rooms=rooms, reason=error)
        for room in rooms:
            self._next.pop(room, None)
        self._drops += rooms

    async def _drop(self, rooms: Sequence[str]) -> None:
        try:
            await self.log.drop(rooms)
            self.problem = None
        except Exception as exc:
            logs.event("input_log_drop_failed", level=logging.WARNING, rooms=list(rooms),
                       reason=str(exc))

    def _release(self, held: list[Any]) -> None:
        self._releasing = True
        self.holding = False
        pairs = iter(held)
        try:
            with self.batch():
                for target, frame in zip(pairs, pairs, strict=True):
                    try:
                        if frame is _CALL:
                            target()
                        else:
                            target.send(frame)
                    except Exception:
                        logs.failure("held_output_failed")
        finally:
            self._releasing = False
            self.holding = bool(self._staged or self._held)

