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
size, and the outputs it releases join into fewer writes).  While the event
loop itself is busy (its thread on a CPU 85% of the time or more,
:class:`LoopLoad`) the gap is ``busy_gap_s``, longer: at 10,000 players on one
core a gap of 20 ms rather than 10 left the server 85-87% of the core against
92-96%, where at 6,000 it saved little and cost 10 ms of the round trips' p99;
made busy from 75% of the time, players who move as soon as they are answered
(the saturation benchmark) were answered later and made fewer moves, 39,600 a
second against 44,000-49,000 (performance-log.md, twenty-ninth part).

A log that can take an append without being awaited
(:class:`~server.recovery.log.Submitting`: a SQLite file) is handed each group
by :meth:`Journal._launch`, and the commits of a busy spell follow each other
from its completion callback (:meth:`Journal._submitted`,
:meth:`Journal._go_on`): the loop turn that learns a commit is on disk carries
out what it held and hands over the next group, or sets a timer for the end of
its gap; the hub also calls :meth:`Journal.poll` after each move it answers, which
does the same at once (a turn of the loop reads every ready socket before any
callback or timer). An awaited append resumes the task one turn of the loop
later, and a busy loop's turns are long: at 6,000 players, in one commit cycle
of six, 15 ms on average passed between the frames of one commit going out and
the next commit's start. The task starts the first chain; one with nothing to
commit is parked, and the next input resumes it at the end of its gap (by the
poll or a timer), not at the task's next turn. The task takes over a group that
must be awaited: one with rooms to drop, one the log would not take so, and one
whose submitted commit failed (the tries again).

A log that keeps refusing is not allowed to stop the races: after
:data:`RETRIES` the held outputs go out anyway, the rooms of the failed
entries stop being logged (their logs are dropped, so a restart cannot
resume them half-way) and :attr:`Journal.problem` says why until a later
write to the log succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import time
from collections.abc import Callable, Sequence, Sized
from contextlib import AbstractContextManager
from typing import Any, Final, Protocol

from protocol.wire.messages import MoveAction
from server import logs
from server.race.inputs import Opened
from server.race.outputs import Logged
from server.recovery import codec
from server.recovery.log import Done, InputLog, Run

_encode: Final = codec.encode
#: Pauses before the tries of a refused append after the first.
#: Typed: compiled (tools/native.py), a tuple constant of an inferred type is never set.
RETRIES: Final[tuple[float, ...]] = (0.05, 0.25, 1.0)
#: In the held outputs, in place of a frame: call the action itself.
_CALL: Final = object()
#: The event loop counts as busy once its thread was on a CPU this share of the wall time
#: or more, over a window of at least :data:`LOAD_WINDOW_S`, and calm again below
#: :data:`CALM_SHARE` (:class:`LoopLoad`).
BUSY_SHARE: Final = 0.85
CALM_SHARE: Final = 0.7
LOAD_WINDOW_S: Final = 0.25


class LoopLoad:
    """Whether the event loop is busy: the share of wall time its thread spent on a CPU
    over the last window, with the two thresholds above between busy and calm (so a
    load near one of them does not flip it at every window).  Pure: the times come in.
    """

    __slots__ = ("_cpu", "_wall", "busy", "share")

    def __init__(self) -> None:
        self.busy = False
        #: The share measured over the last full window.
        self.share = 0.0
        self._wall = -math.inf
        self._cpu = 0.0

    def update(self, wall_s: float, cpu_s: float) -> bool:
        """Note the loop thread's CPU time ``cpu_s`` at wall time ``wall_s`` (seconds, each
        on its own clock); True when this ends a window and :attr:`busy` changed."""
        elapsed = wall_s - self._wall
        if elapsed < LOAD_WINDOW_S:
            return False
        first = self._wall == -math.inf
        self.share = 0.0 if first else (cpu_s - self._cpu) / elapsed
        self._wall, self._cpu = wall_s, cpu_s
        busy = self.share >= (CALM_SHARE if self.busy else BUSY_SHARE)
        changed = busy != self.busy
        self.busy = busy
        return changed


class Sender(Protocol):
    """Whatever takes frames (a connection)."""

    def send(self, frame: Any, /) -> None: ...


#: A group taken for a commit: the rooms and inputs staged, the outputs held, the drops.
_Group = tuple[list[str], list["Logged | str"], list[Any], list[str]]
#: A group the committer task awaits itself: its runs, held outputs, drops, and why its
#: first try (submitted) failed, if it did.
_Handoff = tuple[list[Run], list[Any], list[str], str | None]
Submit = Callable[[Sequence[Run], Done], bool]


class Journal:
    """Logs rooms' inputs in group commits; see the module docstring.

    ``batch()`` is entered while held outputs are carried out (the hub's write
    batch, so their frames join into as few writes as possible).
    """

    _loop: asyncio.AbstractEventLoop  # from start()

    def __init__(
        self,
        log: InputLog,
        epoch: int,
        batch: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
        commit_gap_s: float = 0.0,
        busy_gap_s: float | None = None,
        cpu_clock: Callable[[], float] = time.thread_time,
    ) -> None:
        self.log = log
        self.epoch = epoch
        self.batch = batch
        self.commit_gap_s = commit_gap_s
        #: The gap while the event loop is busy (:class:`LoopLoad`; ``None``: always
        #: ``commit_gap_s``), and the gap now.
        self.busy_gap_s = commit_gap_s if busy_gap_s is None else busy_gap_s
        self.gap_s = commit_gap_s
        #: Called with the gap and the loop's share of a CPU whenever the gap changes.
        self.on_gap: Callable[[float, float], None] = lambda gap_s, share: None
        self._load = LoopLoad()
        #: The CPU time of the thread it is called on: the loop's, at each commit's start.
        self._cpu_clock = cpu_clock
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
        #: The targets of the answers held (:meth:`hold_answer`) since the last commit.
        self._answered: list[Any] = []
        #: Called, inside the batch that carries out a commit's outputs, with the targets
        #: of its answers: the hub writes their sockets before the batch's other ones.
        self.write_first: Callable[[list[Any]], object] = lambda targets: None
        self._drops: list[str] = []
        self._busy = False  # a commit is under way
        self._releasing = False
        self._closed = False
        self._wake = asyncio.Event()
        self._woken = False  # _wake is set (an attribute is cheaper to ask, once per move)
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        # ---- the commits' chain (see _run) ----
        #: The log's append without awaiting, if it has one.
        self._submit: Submit | None = getattr(log, "submit", None)
        #: The submitted appends that ended (:meth:`poll` takes them up), and how.
        self._ended: Sized = getattr(log, "ended", ())
        self._take_ended: Callable[[], object] = getattr(log, "take_ended", lambda: None)
        #: True while a chain has nothing to commit: the next input resumes it.
        self._parked = False
        #: When the last commit began (:func:`time.monotonic`, as every time here: the
        #: loop's own clock may be read once per turn): the next one waits for the gap.
        self._last_start = -math.inf
        #: Resolved when a chain of submitted commits ends: with ``None``, or with the
        #: group the committer task must await itself.
        self._chain_end: asyncio.Future[_Handoff | None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    # ---- what the hub calls ------------------------------------------------------
    def start(self) -> None:
        """Start the background committer."""
        if self._task is None:
            self._loop = asyncio.get_running_loop()
            self._task = self._loop.create_task(self._run())

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
        self.record_move_after(room, codec.move_head(player_id), seq, action, position, now_ms)

    def record_move_after(
        self, room: str, head: str, seq: int, action: MoveAction, position: int | None,
        now_ms: int,
    ) -> None:
        """:meth:`record_move` of the player whose :func:`~server.recovery.codec.move_head`
        is ``head``."""
        if room in self._next and not self._closed:
            self._staged.append(codec.encode_move_after(head, seq, action, position, now_ms))
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

    def hold_answer(self, target: Sender, frame: object) -> None:
        """:meth:`hold_send` of an answer someone waits for: when its commit's outputs go
        out, the sockets of such answers are written first (:attr:`write_first`)."""
        self.hold_send(target, frame)
        self._answered.append(target)

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
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def poll(self) -> None:
        """Carry out now what the loop's next turn would: the outputs of a submitted
        commit that ended, and the next commit once its gap is over.

        The hub calls it after each move it answers.  A turn of the loop reads every
        socket that is ready before it runs a callback or a timer, and under a
        large crowd one turn can read thousands of frames: without this, the
        commits (and so the answers) wait for the end of the turn, the players
        move again all at once when their answers come, and the next turn is as
        long (performance-log.md, twenty-fourth part).
        """
        if self._ended:
            self._take_ended()
        timer = self._timer
        # The timer pending is the next commit's, due at the end of its gap.
        if timer is not None and self._gap_left() <= 0:
            timer.cancel()
            self._go_on()

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
            if self._parked:
                self._resume()
            else:
                self._wake.set()

    def _gap_left(self) -> float:
        """Seconds until the next commit may begin (the gap after the last one's start)."""
        return self._last_start + self.gap_s - time.monotonic()

    def _resume(self) -> None:
        """The parked chain goes on with what just came: at the end of the gap, by its
        timer or at the next :meth:`poll` (the hub's, once the move's answer is held)."""
        self._parked = False
        wait = max(0.0, self._gap_left())
        self._timer = self._loop.call_later(wait, self._go_on)

    async def _run(self) -> None:
        loop = self._loop
        while True:
            await self._wake.wait()
            pause = self._gap_left()
            if pause > 0:
                await asyncio.sleep(pause)  # what comes meanwhile joins this commit
            group = self._take()
            if group is None:
                self._idle.set()
                continue
            self._chain_end = loop.create_future()
            handoff = self._launch(*group)
            if handoff is None:  # submitted: the chain of commits goes on in callbacks
                handoff = await self._chain_end
            if handoff is not None:
                runs, held, drops, error = handoff
                try:
                    try:
                        await self._commit(runs, error)
                    finally:
                        # Out before the drop: what is held waits only for its commit (a
                        # drop reads the whole tail of a SQLite file's log).
                        self._release(held)
                    if drops:
                        await self._drop(drops)
                finally:
                    self._busy = False
            if not (self._staged or self._held or self._drops):
                self._idle.set()
            elif self._woken:  # an input resumed the chain that has now ended: go on
                self._wake.set()

    def _take(self) -> _Group | None:
        """Everything recorded, held and dropped since the last commit began: the next
        commit's group (``None``: nothing)."""
        now = self._last_start = time.monotonic()
        if self.busy_gap_s != self.commit_gap_s:
            self._pace(now)
        self._wake.clear()
        self._woken = False
        if not (self._staged or self._held or self._drops):
            return None
        if self._answered:  # after every other output of the group, inside its batch
            self._held += (functools.partial(self.write_first, self._answered), _CALL)
            self._answered = []
        group = (self._staged_rooms, self._staged, self._held, self._drops)
        self._staged_rooms, self._staged, self._held, self._drops = [], [], [], []
        self._busy = self.holding = True
        return group

    def _pace(self, now: float) -> None:
        """The gap from the loop's load: ``busy_gap_s`` while the loop is busy, else
        ``commit_gap_s`` (the module docstring says why)."""
        load = self._load
        if load.update(now, self._cpu_clock()):
            self.gap_s = self.busy_gap_s if load.busy else self.commit_gap_s
            self.on_gap(self.gap_s, load.share)

    def _launch(
        self, rooms: list[str], staged: list[Logged | str], held: list[Any], drops: list[str]
    ) -> _Handoff | None:
        """Hand a group to the log's :meth:`~server.recovery.log.Submitting.submit` (its
        outputs then go out from :meth:`_submitted`); or, when it cannot go so (drops, no
        entries, a log that must be awaited), what the committer task awaits instead."""
        runs = self._runs(rooms, staged)
        if runs and not drops and self._submit is not None:
            started = time.monotonic()
            if self._submit(runs, lambda error: self._submitted(runs, held, started, error)):
                return None
        return runs, held, drops, None

    def _submitted(
        self, runs: list[Run], held: list[Any], started: float, error: BaseException | None
    ) -> None:
        """A submitted commit ended (on the loop): send what it held, then the next group,
        if it may go the same way, at once or at the end of its gap."""
        try:
            if error is not None:  # the tries again are the committer task's
                self._end_chain((runs, held, [], str(error) or type(error).__name__))
                return
            self._succeeded(runs, time.monotonic() - started)
            self._busy = False
            self._release(held)
            self._go_on()
        except Exception as exc:  # the task must learn of it, or nothing would commit again
            self._end_chain(exc)

    def _go_on(self) -> None:
        """The next group of the chain: at once when the gap since the last commit began
        is over, else at its end.  With nothing to commit the chain is parked, and the
        next input resumes it (:meth:`_resume`) without waiting for the task's turn; it
        ends (the task takes over) when rooms are to be dropped or the journal closes."""
        self._timer = None
        try:
            if self._closed or self._drops:
                self._end_chain(None)
                return
            if not (self._staged or self._held):
                end = self._chain_end
                if end is not None and not end.done():
                    self._parked = True
                    self._idle.set()
                return
            wait = self._gap_left()
            if wait > 0:
                self._timer = self._loop.call_later(wait, self._go_on)
                return
            group = self._take()
            handoff = self._launch(*group) if group is not None else None
            if handoff is not None:
                self._end_chain(handoff)
        except Exception as exc:
            self._end_chain(exc)

    def _end_chain(self, result: _Handoff | Exception | None) -> None:
        end = self._chain_end
        if end is None or end.done():
            return
        if isinstance(result, Exception):
            end.set_exception(result)
        else:
            end.set_result(result)

    def _runs(self, rooms: list[str], staged: list[Logged | str]) -> list[Run]:
        """Each room's staged inputs as one run, numbered on from the room's next index;
        inputs of rooms no longer logged are left out."""
        if len(rooms) != len(staged):
            raise ValueError(f"{len(rooms)} rooms staged for {len(staged)} inputs")
        texts: dict[str, list[str]] = {}
        following, encode = self._next, _encode
        # Indexed: compiled, a loop over a range of two lists' indices is plain C, where
        # zip is a Python iterator making a tuple per input.
        for at in range(len(rooms)):
            room, given = rooms[at], staged[at]
            data = texts.get(room)
            if data is None:
                if room not in following:
                    continue
                data = texts[room] = []
            data.append(given if isinstance(given, str) else encode(given))
        runs = []
        epoch = self.epoch
        for room, data in texts.items():
            first = following[room]
            following[room] = first + len(data)
            runs.append(Run(room, first, epoch, data))
        return runs

    async def _commit(self, runs: Sequence[Run], error: str | None = None) -> None:
        """Append ``runs``, trying again after each pause of :data:`RETRIES`; ``error``:
        the first try was made (submitted) and failed so."""
        clock = time.monotonic
        pauses = list(RETRIES)
        while runs:
            if error is not None:
                if not pauses:
                    self._failed(runs, error)
                    return
                await asyncio.sleep(pauses.pop(0))
            started = clock()
            try:
                await self.log.append(runs)
            except Exception as exc:  # whatever the back end raises, the races go on
                error = str(exc) or type(exc).__name__
                continue
            self._succeeded(runs, clock() - started)
            return

    def _succeeded(self, runs: Sequence[Run], seconds: float) -> None:
        self.on_commit(seconds)
        self.problem = None
        self.entries_written += sum(len(run.data) for run in runs)
        self.commits += 1

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
        try:
            with self.batch():
                # Indexed: compiled, a loop over a range of a list's indices is plain C.
                for at in range(0, len(held), 2):
                    target, frame = held[at], held[at + 1]
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

