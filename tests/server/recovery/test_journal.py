"""The journal on a real SQLite file: a held frame goes out only once every input recorded
before it is on disk, in the order held; a log that keeps refusing lets the races go on."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import cast

import pytest

from protocol.wire.messages import MoveAction
from server.recovery.journal import RETRIES, Journal, LoopLoad
from server.storage.inputlog import LogRun, SqlInputLog
from server.storage.sqlite import SQLITE_BUSY_TIMEOUT_S
from server.storage.store import RaceStore
from tests.server.storage.test_inputlog import stored_rows, write_locked


class Socket:
    """A connection that notes each frame and how many entries the file held as it came."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sent: list[tuple[object, int]] = []

    def send(self, frame: object) -> None:
        durable = sum(len(row[3].split("\n")) for row in stored_rows(self.path))
        self.sent.append((frame, durable))


def path_of(store: RaceStore) -> Path:
    path = store.sqlite_path
    assert path is not None
    return path


@contextlib.asynccontextmanager
async def started(
    store: RaceStore, epoch: int, *, busy_timeout_s: float = SQLITE_BUSY_TIMEOUT_S,
    commit_gap_s: float = 0.0, log: SqlInputLog | None = None,
    busy_gap_s: float | None = None, cpu_clock: Callable[[], float] = time.thread_time,
) -> AsyncIterator[tuple[SqlInputLog, Journal]]:
    """A started journal on ``store``'s input log (``log``, if given), closed (journal,
    then log) at the end."""
    if log is None:
        log = SqlInputLog(store, busy_timeout_s=busy_timeout_s)
    journal = Journal(
        log, epoch, commit_gap_s=commit_gap_s, busy_gap_s=busy_gap_s, cpu_clock=cpu_clock
    )
    journal.start()
    try:
        yield log, journal
    finally:
        await journal.close()
        await log.close()


async def test_held_frames_go_out_in_order_once_the_moves_before_them_are_on_disk(
    file_store: RaceStore,
) -> None:
    async with started(file_store, 4) as (log, journal):
        socket = Socket(path_of(file_store))
        journal.open("A", next_index=5)
        assert not journal.holding
        for seq in range(1, 31):
            journal.record_move("A", "p1", seq, MoveAction.DRAW, None, 1_000 + seq)
            assert journal.holding
            journal.hold_send(socket, seq)
            if seq == 10:
                journal.hold(lambda: socket.send("after ten"))
                await journal.flush()  # a commit of its own: the next run goes on from 15
        await journal.flush()
        assert not journal.holding
        frames = [frame for frame, _durable in socket.sent]
        assert frames == [*range(1, 11), "after ten", *range(11, 31)]
        for frame, durable in socket.sent:
            assert durable >= (frame if isinstance(frame, int) else 10)
        entries = await log.read("A")
        assert [index for index, _epoch, _data in entries] == list(range(5, 35))
        moves = [json.loads(data) for _index, epoch, data in entries if epoch == 4]
        assert [move["seq"] for move in moves] == list(range(1, 31))
        assert moves[0] == {"t": "moved", "player_id": "p1", "seq": 1, "action": "draw",
                            "position": None, "now_ms": 1_001}
        assert journal.entries_written == 30 and journal.commits == 2


async def test_a_log_that_keeps_refusing_lets_the_frames_out_and_stops_logging_the_room(
    file_store: RaceStore,
) -> None:
    path = path_of(file_store)
    async with started(file_store, 1, busy_timeout_s=0.05) as (log, journal):
        socket = Socket(path)
        journal.open("A")
        journal.open("B")
        with write_locked(path):
            journal.record_move("A", "p1", 1, MoveAction.PLAY, 3, 1_000)
            journal.hold_send(socket, "a1")
            async with asyncio.timeout(sum(RETRIES) + 10):
                while not socket.sent:  # every try refused, then the frame goes out anyway
                    await asyncio.sleep(0.02)
            assert socket.sent == [("a1", 0)]
            assert journal.problem is not None and "database is locked" in journal.problem
        journal.record_move("A", "p1", 2, MoveAction.DRAW, None, 1_100)
        assert not journal.holding  # room A is no longer logged: nothing waits for it
        journal.record_move("B", "p2", 1, MoveAction.DRAW, None, 1_200)
        journal.hold_send(socket, "b1")
        await journal.flush()
        assert socket.sent[-1] == ("b1", 1)
        assert journal.problem is None  # a later write worked
        assert await log.rooms() == ["B"] and await log.read("A") == []


async def test_closing_commits_what_is_recorded_and_records_nothing_after(
    file_store: RaceStore,
) -> None:
    log = SqlInputLog(file_store)
    journal = Journal(log, 1)
    socket = Socket(path_of(file_store))
    journal.start()
    journal.open("A")
    journal.record_move("A", "p1", 1, MoveAction.DRAW, None, 1_000)
    journal.hold_send(socket, "answer")
    await journal.close()
    await log.close()
    assert socket.sent == [("answer", 1)]
    journal.record_move("A", "p1", 2, MoveAction.DRAW, None, 1_100)
    assert not journal.holding
    assert len(await log.read("A")) == 1


async def test_a_busy_journal_waits_its_gap_and_commits_what_came_meanwhile_together(
    file_store: RaceStore,
) -> None:
    async with started(file_store, 1, commit_gap_s=0.2) as (_log, journal):
        socket = Socket(path_of(file_store))
        loop = asyncio.get_running_loop()
        journal.open("A")
        # After a quiet spell an input is committed at once, well within the gap.
        began = loop.time()
        journal.record_move("A", "p1", 1, MoveAction.DRAW, None, 1)
        journal.hold_send(socket, 1)
        await journal.flush()
        assert loop.time() - began < 0.15 and journal.commits == 1
        # Inputs right after it wait for the gap, and share one commit.
        for seq in (2, 3, 4):
            journal.record_move("A", "p1", seq, MoveAction.DRAW, None, seq)
            journal.hold_send(socket, seq)
            await asyncio.sleep(0.02)
        assert [frame for frame, _ in socket.sent] == [1]  # still held: the gap is not over
        await journal.flush()
        assert loop.time() - began >= 0.2
        assert journal.commits == 2 and journal.entries_written == 4
        assert socket.sent == [(1, 1), (2, 4), (3, 4), (4, 4)]


class CountingLog(SqlInputLog):
    """The real input log, counting the appends that were submitted and those awaited."""

    def __init__(self, store: RaceStore, **kwargs: float) -> None:
        super().__init__(store, **kwargs)
        self.submitted = 0
        self.awaited = 0

    def submit(
        self, runs: Sequence[LogRun], done: Callable[[BaseException | None], object]
    ) -> bool:
        went = super().submit(runs, done)
        self.submitted += went
        return went

    async def append(self, runs: Sequence[LogRun]) -> None:
        self.awaited += 1
        await super().append(runs)


@contextlib.asynccontextmanager
async def counted(
    store: RaceStore, *, commit_gap_s: float = 0.0, busy_timeout_s: float = SQLITE_BUSY_TIMEOUT_S
) -> AsyncIterator[tuple[CountingLog, Journal]]:
    log = CountingLog(store, busy_timeout_s=busy_timeout_s)
    async with started(store, 1, commit_gap_s=commit_gap_s, log=log) as (_log, journal):
        yield log, journal


async def test_busy_commits_follow_each_other_from_the_log_s_callbacks_not_the_task(
    file_store: RaceStore,
) -> None:
    """Moves that keep coming are committed one group after another, each submitted from
    the completion of the one before (the committer task wakes only at the start and the
    end), every frame after its moves are on disk, and every group a gap apart."""
    async with counted(file_store, commit_gap_s=0.005) as (log, journal):
        socket = Socket(path_of(file_store))
        loop = asyncio.get_running_loop()
        journal.open("A")
        journal.open("B")
        began = loop.time()
        for seq in range(1, 121):
            journal.record_move("A" if seq % 2 else "B", "p1", seq, MoveAction.DRAW, None, seq)
            journal.hold_send(socket, seq)
            await asyncio.sleep(0.001)
        await journal.flush()
        took = loop.time() - began
        assert [frame for frame, _ in socket.sent] == list(range(1, 121))
        assert all(durable >= cast(int, frame) for frame, durable in socket.sent)
        assert log.awaited == 0 and log.submitted == journal.commits
        assert 5 <= journal.commits <= took / 0.005 + 1  # never two within a gap
        assert journal.entries_written == 120
        assert [index for index, _e, _d in await log.read("A")] == list(range(60))


@pytest.mark.parametrize("polled", [True, False], ids=["polled", "not polled"])
async def test_a_long_turn_of_the_loop_commits_and_sends_when_the_journal_is_polled(
    file_store: RaceStore, polled: bool
) -> None:
    """A loop busy for 300 ms without turning (reading frames, as under a large crowd)
    while a commit is under way: polled at each move, the journal takes up each commit
    that ended and starts the next once its gap is over, so the answers go out during
    the turn, each after its move is on disk; not polled, nothing goes out before the
    turn ends."""
    async with counted(file_store, commit_gap_s=0.01) as (log, journal):
        socket = Socket(path_of(file_store))
        journal.open("A")
        journal.record_move("A", "p1", 1, MoveAction.DRAW, None, 1)
        journal.hold_send(socket, 1)
        await asyncio.sleep(0)  # the committer task hands the first group over: a chain
        began, seq = time.perf_counter(), 1
        while time.perf_counter() - began < 0.3:  # one turn of the loop
            seq += 1
            journal.record_move("A", "p1", seq, MoveAction.DRAW, None, seq)
            journal.hold_send(socket, seq)
            if polled:
                journal.poll()
            time.sleep(0.001)
        during = list(socket.sent)
        commits = journal.commits
        await journal.flush()
        assert [frame for frame, _ in socket.sent] == list(range(1, seq + 1))
        assert all(durable >= cast(int, frame) for frame, durable in socket.sent)
        if polled:
            assert len(during) >= seq // 2 and 5 <= commits <= 0.3 / 0.01 + 2
        else:
            assert during == [] and commits <= 1
        assert log.awaited == 0


async def test_a_chain_with_nothing_left_is_parked_and_the_next_move_resumes_it_in_the_turn(
    file_store: RaceStore,
) -> None:
    """After a quiet spell the next move is committed within the turn that brought it
    (polled), not at the committer task's next turn; a room forgotten while the chain is
    parked is dropped by the task all the same."""
    async with counted(file_store, commit_gap_s=0.01) as (log, journal):
        socket = Socket(path_of(file_store))
        journal.open("A")
        journal.open("B")
        journal.record_move("A", "p1", 1, MoveAction.DRAW, None, 1)
        journal.record_move("B", "p2", 1, MoveAction.DRAW, None, 1)
        journal.hold_send(socket, 1)
        await journal.flush()
        assert await log.rooms() == ["A", "B"]
        await asyncio.sleep(0.03)  # quiet: the chain has nothing to commit, past its gap
        journal.record_move("A", "p1", 2, MoveAction.DRAW, None, 2)
        journal.hold_send(socket, 2)
        began = time.perf_counter()
        while len(socket.sent) < 2 and time.perf_counter() - began < 2.0:  # one turn
            journal.poll()
            time.sleep(0.001)
        assert socket.sent == [(1, 2), (2, 3)]
        assert log.awaited == 0 and log.submitted == journal.commits == 2
        journal.forget("B")
        await journal.flush()
        assert await log.rooms() == ["A"]
        journal.record_move("A", "p1", 3, MoveAction.DRAW, None, 3)
        journal.hold_send(socket, 3)
        await journal.flush()
        assert socket.sent[-1] == (3, 3)  # B's entry is gone
        assert [index for index, _e, _d in await log.read("A")] == [0, 1, 2]


async def test_a_store_writer_s_turn_makes_the_commit_wait_for_it(file_store: RaceStore) -> None:
    """While one of the store's own writers has its turn the journal does not submit: it
    awaits the append, which waits behind the writer; nothing goes out before."""
    async with counted(file_store) as (log, journal):
        socket = Socket(path_of(file_store))
        journal.open("A")
        async with file_store.writer_turn:
            journal.record_move("A", "p1", 1, MoveAction.DRAW, None, 1)
            journal.hold_send(socket, "answer")
            await asyncio.sleep(0.1)
            assert socket.sent == [] and journal.holding
        await journal.flush()
        assert socket.sent == [("answer", 1)]
        assert log.awaited == 1 and log.submitted == 0
        # With the turn free again, the next commit is submitted.
        journal.record_move("A", "p1", 2, MoveAction.DRAW, None, 2)
        journal.hold_send(socket, "next")
        await journal.flush()
        assert socket.sent[-1] == ("next", 2) and log.submitted == 1


async def test_a_submitted_commit_refused_once_is_tried_again_and_then_goes_out(
    file_store: RaceStore,
) -> None:
    """A submitted commit that meets another writer's lock is tried again by the task after
    the first pause; its frames go out once it is on disk, and the chain goes on."""
    path = path_of(file_store)
    async with counted(file_store, busy_timeout_s=0.02) as (log, journal):
        socket = Socket(path)
        journal.open("A")
        with write_locked(path):
            journal.record_move("A", "p1", 1, MoveAction.DRAW, None, 1)
            journal.hold_send(socket, 1)
            async with asyncio.timeout(10):
                while log.awaited == 0:  # the submitted try met the lock; the task tries again
                    await asyncio.sleep(0.005)
            assert socket.sent == [] and log.submitted == 1
        await journal.flush()
        assert socket.sent == [(1, 1)] and journal.problem is None
        assert log.submitted == 1 and log.awaited >= 1  # the tries again are awaited
        journal.record_move("A", "p1", 2, MoveAction.DRAW, None, 2)
        journal.hold_send(socket, 2)
        await journal.flush()
        assert socket.sent[-1] == (2, 2) and log.submitted == 2


async def test_rooms_forgotten_while_commits_follow_each_other_are_dropped_after_them(
    file_store: RaceStore,
) -> None:
    """A drop ends the chain of submitted commits: the task commits what came before it,
    drops the room, and later commits are submitted again."""
    async with counted(file_store, commit_gap_s=0.002) as (log, journal):
        socket = Socket(path_of(file_store))
        journal.open("A")
        journal.open("B")
        for seq in range(1, 41):
            journal.record_move("A", "p1", seq, MoveAction.DRAW, None, seq)
            journal.record_move("B", "p2", seq, MoveAction.DRAW, None, seq)
            journal.hold_send(socket, seq)
            if seq == 20:
                journal.forget("A")
            await asyncio.sleep(0.001)
        await journal.flush()
        assert [frame for frame, _ in socket.sent] == list(range(1, 41))
        assert await log.rooms() == ["B"]
        assert [index for index, _e, _d in await log.read("B")] == list(range(40))
        assert log.awaited >= 1 and log.submitted >= 2


class GatedDrop(SqlInputLog):
    """The real input log, whose drops wait for :attr:`go` once they began."""

    def __init__(self, store: RaceStore) -> None:
        super().__init__(store)
        self.dropping = asyncio.Event()
        self.go = asyncio.Event()

    async def drop(self, rooms: Sequence[str]) -> None:
        self.dropping.set()
        await self.go.wait()
        await super().drop(rooms)


async def test_what_a_commit_holds_goes_out_without_waiting_for_the_drop_after_it(
    file_store: RaceStore,
) -> None:
    """A drop reads the whole tail of the log: the answers of the commit before it go out
    once that commit is on disk, and the drop follows."""
    log = GatedDrop(file_store)
    async with started(file_store, 1, log=log) as (_log, journal):
        socket = Socket(path_of(file_store))
        journal.open("A")
        journal.open("B")
        journal.record_move("B", "p2", 1, MoveAction.DRAW, None, 1)
        await journal.flush()
        journal.record_move("A", "p1", 1, MoveAction.DRAW, None, 2)
        journal.hold_send(socket, "answer")
        journal.forget("B")
        try:
            async with asyncio.timeout(10):
                await log.dropping.wait()
            assert socket.sent == [("answer", 2)]  # out, and on disk before it went
            assert await log.rooms() == ["A", "B"]  # the drop is still under way
        finally:
            log.go.set()
        await journal.flush()
        assert await log.rooms() == ["A"]


async def test_closing_while_the_next_commit_waits_for_its_gap_commits_it_first(
    file_store: RaceStore,
) -> None:
    """Moves that come while a submitted commit is under way wait for the gap after it
    (a timer of the chain, not the task); closing meanwhile commits them first."""
    log = CountingLog(file_store)
    journal = Journal(log, 1, commit_gap_s=0.3)
    socket = Socket(path_of(file_store))
    loop = asyncio.get_running_loop()
    journal.start()
    journal.open("A")
    began = loop.time()
    journal.record_move("A", "p1", 1, MoveAction.DRAW, None, 1)
    journal.hold_send(socket, 1)
    async with asyncio.timeout(5):
        while log.submitted == 0:
            await asyncio.sleep(0)
    journal.record_move("A", "p1", 2, MoveAction.DRAW, None, 2)
    journal.hold_send(socket, 2)
    async with asyncio.timeout(5):
        while not socket.sent:
            await asyncio.sleep(0.005)
    assert socket.sent == [(1, 1)]
    await journal.close()
    await log.close()
    assert loop.time() - began >= 0.3
    assert socket.sent == [(1, 1), (2, 2)]
    assert log.submitted == 2 and log.awaited == 0


def test_the_loops_load_is_busy_from_85_percent_and_calm_again_under_70() -> None:
    load = LoopLoad()
    assert not load.update(0.0, 0.0) and not load.busy  # the first look starts a window
    assert not load.update(0.1, 0.1) and not load.busy  # a window is a quarter second
    assert load.update(0.3, 0.255) and load.busy and load.share == pytest.approx(0.85)
    assert not load.update(0.6, 0.48) and load.busy  # 75%: between the two, still busy
    assert load.update(0.9, 0.66) and not load.busy and load.share == pytest.approx(0.6)
    assert not load.update(1.2, 0.9) and not load.busy  # 80%: not yet busy again
    assert not load.update(3.2, 0.91) and load.share == pytest.approx(0.005)  # a quiet spell


async def test_a_busy_loops_commits_come_the_busy_gap_apart_and_a_calm_ones_the_gap(
    file_store: RaceStore,
) -> None:
    """The loop's thread kept on the CPU (a long turn reading frames, the journal polled
    after each) makes the gap the busy one; awaiting between moves, it comes back."""
    async with started(file_store, 1, commit_gap_s=0.01, busy_gap_s=0.08) as (_log, journal):
        changes: list[tuple[float, float]] = []
        journal.on_gap = lambda gap, share: changes.append((gap, share))
        socket = Socket(path_of(file_store))
        journal.open("A")
        seq = 0

        def move() -> None:
            """A move, then a fifth of a millisecond on the CPU (reading the next)."""
            nonlocal seq
            seq += 1
            journal.record_move("A", "p1", seq, MoveAction.DRAW, None, seq)
            journal.hold_send(socket, seq)
            journal.poll()
            until = time.perf_counter() + 0.0002
            while time.perf_counter() < until:
                pass

        move()
        await asyncio.sleep(0)  # the committer task hands the first group over: a chain
        began = time.perf_counter()
        while journal.gap_s == 0.01:  # on the CPU without a pause
            move()
            assert time.perf_counter() - began < 2.0, "the loop never counted as busy"
        assert changes == [(0.08, pytest.approx(1.0, abs=0.25))]
        commits, began = journal.commits, time.perf_counter()
        while time.perf_counter() - began < 0.8:
            move()
        assert journal.commits - commits <= 0.8 / 0.08 + 1
        commits, began = journal.commits, time.perf_counter()
        while journal.gap_s == 0.08:  # calm: each move awaited
            move()
            await asyncio.sleep(0.002)
            assert time.perf_counter() - began < 3.0, "the loop never counted as calm again"
        assert [gap for gap, _share in changes] == [0.08, 0.01] and changes[1][1] < 0.6
        commits, began = journal.commits, time.perf_counter()
        while time.perf_counter() - began < 0.5:
            move()
            await asyncio.sleep(0.002)
        assert journal.commits - commits >= 0.5 / 0.08 + 2  # the short gap again
        await journal.flush()
        assert [frame for frame, _ in socket.sent] == list(range(1, seq + 1))
        assert all(durable >= cast(int, frame) for frame, durable in socket.sent)


async def test_a_journal_without_a_busy_gap_never_reads_the_loops_cpu_time(
    file_store: RaceStore,
) -> None:
    def unread() -> float:
        raise AssertionError("read")

    async with started(file_store, 1, commit_gap_s=0.005, cpu_clock=unread) as (_log, journal):
        journal.open("A")
        for seq in range(1, 40):
            journal.record_move("A", "p1", seq, MoveAction.DRAW, None, seq)
            journal.poll()
            await asyncio.sleep(0.003)
        await journal.flush()
        assert journal.commits >= 5 and journal.gap_s == 0.005
