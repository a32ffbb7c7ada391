"""Experiments: the real server with named hot-path changes patched in.

``BENCH_LOAD_SERVER_MODULE=bench.load_variants BENCH_VARIANT=pool_idle,gc_tuned
python -m bench.load ...`` runs ``tripeaks-server`` with only those changes, so
that docs/performance.md can say what each recommended change buys before
anyone edits the server.  The patches reach into server internals on purpose
and may need updating when those change; nothing but the benchmark uses them.

Variants:

- ``pool_idle``: deal-pool workers run under ``SCHED_IDLE`` (CPU only when the
  event loop does not want it);
- ``no_metrics``: the per-frame and per-move Prometheus updates become no-ops;
- ``gc_tuned``: the server's collector thresholds of before ea90423,
  ``(50_000, 50, 1000)``, instead of its own;
- ``no_gc``: the cyclic garbage collector is off (an upper bound, not a fix);
- ``gc_log``: every collection of generation 1 or 2, and every one over 5 ms, is
  written to stderr with its duration (kept with ``BENCH_LOAD_KEEP_LOG=1``);
- ``gc_thresholds``: the server's collector thresholds are ``$BENCH_GC_THRESHOLDS``
  (three integers, comma-separated) instead of its own;
- ``gc_types``: at most every 3 s, the commonest types among the young generation's
  objects as a collection of it starts, and its commonest tuple and list lengths (to
  stderr): what the collector walks;
- ``log_unsynced``: the input log's SQLite connection commits with
  ``synchronous=NORMAL`` (no sync per commit: what a power cut would cost);
- ``log_no_checkpoint``: the input log's SQLite connection never checkpoints the WAL
  (``wal_autocheckpoint=0``; the file grows for the run);
- ``log_per_row``: the input log inserts a statement per row in a transaction, as
  it did before 2026-12-02 (the server: a statement per 64 rows);
- ``log_slow``: every input log commit over 20 ms is written to stderr with its
  length and rows;
- ``log_keyed``: the input log appends straight into ``room_inputs``, keyed by room,
  as it did before 2026-12-03 (no tails, no folds);
- ``log_off``: the input log's commits write nothing (its thread still answers each
  one), an upper bound on what the log's disk writes cost;
- ``switch_interval``: the interpreter's switch interval (how long a thread waiting
  for the GIL waits at most) is ``$BENCH_SWITCH_INTERVAL`` seconds instead of 5 ms;
- ``starts_per_turn``: at most ``$BENCH_STARTS_PER_TURN`` room starts per turn of the
  event loop instead of the server's 4 (:mod:`server.turns`);
- ``lag_log``: every stall of the event loop over 20 ms is written to stderr with
  its length (a 5 ms ticker that is late);
- ``stall_stacks``: ``lag_log``, and with each stall the loop thread's stacks a
  sampler thread saw during it (one sample a millisecond, commonest first);
- ``commit_timing``: where each input-log commit's time goes, every 2 s on stderr: from
  the journal's hand-over to the append's end (``handed``: the appender's queue and the
  append), the append itself, and from the append's end to its completion running on the
  loop (``turn``), each as count, mean and max;
- ``loop_turns``: the event loop's turns, every 2 s on stderr: how many there were,
  their mean, p50, p99 and longest length (a 1 ms timer's turn to turn), the frames
  read per turn (mean and most), and the input-log commits taken up, with the time
  their outputs took (count, mean, longest, total): whether the loop reads in long
  bursts;
- ``cprofile``: the server runs under :mod:`cProfile`, its statistics written at exit
  to ``$BENCH_PROFILE_DIR/server-PID.prof`` (default: the working directory); the
  profiler slows every call, so read shares, not times.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from typing import Any


def idle_priority() -> None:
    """Pool initializer: this process only gets CPU nobody else wants."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)


class _NoOp:
    def inc(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def observe(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def labels(self, *_args: Any, **_kwargs: Any) -> _NoOp:
        return self


def apply(variants: set[str]) -> None:
    """Patch the server modules for ``variants``; unknown names are an error."""
    known = {
        "pool_idle", "no_metrics", "gc_tuned", "no_gc", "gc_log", "cprofile",
        "log_unsynced", "log_off", "log_no_checkpoint", "log_slow", "log_keyed",
        "lag_log",
        "gc_types", "gc_thresholds", "stall_stacks", "switch_interval", "log_per_row",
        "starts_per_turn", "commit_timing", "loop_turns",
    }
    if variants - known:
        raise SystemExit(f"unknown variants {sorted(variants - known)}; known: {sorted(known)}")
    import server.app as app  # imported here: the patches must precede create_app()
    import server.metrics as metrics

    if "pool_idle" in variants:
        original = app.make_executor

        def make_executor(workers: int, **kwargs: Any) -> Any:
            executor = original(workers, **kwargs)
            # Workers are spawned lazily with the pool's stored initializer.
            executor._initializer = idle_priority
            executor._initargs = ()
            return executor

        app.make_executor = make_executor
    if "no_metrics" in variants:
        init = metrics.Metrics.__init__

        def quiet_init(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            for name in ("frames_sent", "moves", "move_seconds", "rejected_moves"):
                setattr(self, name, _NoOp())

        metrics.Metrics.__init__ = quiet_init  # type: ignore[method-assign]
    if "no_gc" in variants:
        gc.disable()
    if "gc_log" in variants:
        gc.callbacks.append(_log_collection)
    if "gc_types" in variants:
        gc.callbacks.append(_young_types)
    if variants & {"gc_thresholds", "gc_tuned"}:
        import functools

        import server.__main__ as entry

        wanted: tuple[int, ...] = (50_000, 50, 1000)
        if "gc_thresholds" in variants:
            given = os.environ.get("BENCH_GC_THRESHOLDS", "")
            try:
                wanted = tuple(int(n) for n in given.split(","))
            except ValueError:
                raise SystemExit(
                    f"gc_thresholds needs BENCH_GC_THRESHOLDS=G0,G1,G2 (integers), not {given!r}"
                ) from None
        entry._tune_gc = functools.partial(entry._tune_gc, wanted)
    if variants & {"log_unsynced", "log_off", "log_no_checkpoint", "log_slow", "log_keyed",
                   "log_per_row"}:
        _patch_log(variants)
    if "switch_interval" in variants:
        given = os.environ.get("BENCH_SWITCH_INTERVAL", "")
        try:
            sys.setswitchinterval(float(given))
        except ValueError:
            raise SystemExit(
                f"switch_interval needs BENCH_SWITCH_INTERVAL=SECONDS, not {given!r}"
            ) from None
    if "starts_per_turn" in variants:
        given = os.environ.get("BENCH_STARTS_PER_TURN", "")
        if not given.isdigit() or int(given) < 1:
            raise SystemExit(
                f"starts_per_turn needs BENCH_STARTS_PER_TURN=N (N >= 1), not {given!r}"
            )
        from server import turns

        turns.TurnSlots.__init__.__defaults__ = (int(given),)
    if variants & {"lag_log", "stall_stacks"}:
        _patch_lag_log(app, stacks="stall_stacks" in variants)
    if "commit_timing" in variants:
        _patch_commit_timing()
    if "loop_turns" in variants:
        _patch_loop_turns(app)


def _patch_commit_timing() -> None:
    import threading

    import server.storage.sqlite_inputlog as sqlite_inputlog

    spans: dict[str, list[float]] = {"handed": [], "append": [], "turn": []}
    lock = threading.Lock()

    def note(name: str, seconds: float) -> None:
        with lock:
            spans[name].append(seconds)

    def report() -> None:
        while True:
            time.sleep(2.0)
            with lock:
                taken = {name: list(values) for name, values in spans.items()}
                for values in spans.values():
                    values.clear()
            parts = [
                f"{name} n={len(v)} mean={1000 * sum(v) / len(v):.1f} max={1000 * max(v):.1f} ms"
                for name, v in taken.items() if v
            ]
            print(f"commit timing at {time.time():.1f}: " + "; ".join(parts),
                  file=sys.stderr, flush=True)

    threading.Thread(target=report, name="commit-timing", daemon=True).start()
    submit = sqlite_inputlog.SqliteAppender.submit
    append = sqlite_inputlog.SqliteAppender._append
    finish = sqlite_inputlog.SqliteAppender._finish
    settle = sqlite_inputlog._settle

    def timed_submit(self: Any, rows: Any, done: Any) -> None:
        handed = time.perf_counter()

        def first(error: Any) -> None:
            done(error)

        first.handed = handed  # type: ignore[attr-defined]
        submit(self, rows, first)

    def timed_append(self: Any, conn: Any, rows: Any) -> Any:
        began = time.perf_counter()
        try:
            return append(self, conn, rows)
        finally:
            note("append", time.perf_counter() - began)

    def timed(done: Any) -> Any:
        """``done``, noting how long after now it runs (the loop's take-up)."""
        ended = time.perf_counter()
        handed = getattr(done, "handed", None)
        if handed is not None:
            note("handed", max(0.0, ended - handed))  # the queue and the append

        def run(err: Any) -> None:
            note("turn", time.perf_counter() - ended)
            done(err)

        return run

    def timed_finish(self: Any, loop: Any, done: Any, error: Any) -> None:
        finish(self, loop, timed(done), error)

    def timed_settle(loop: Any, done: Any, error: Any) -> None:  # the close's
        settle(loop, timed(done), error)

    sqlite_inputlog.SqliteAppender.submit = timed_submit  # type: ignore[method-assign]
    sqlite_inputlog.SqliteAppender._append = timed_append  # type: ignore[method-assign]
    sqlite_inputlog.SqliteAppender._finish = timed_finish  # type: ignore[method-assign]
    sqlite_inputlog._settle = timed_settle


def _patch_loop_turns(app: Any) -> None:
    """``loop_turns``: the loop's turns, the frames read in each, and the commits' take-up."""
    import asyncio
    import threading

    import server.storage.sqlite_inputlog as sqlite_inputlog
    import server.transport.direct as direct

    lock = threading.Lock()
    turns: list[float] = []
    reads: list[int] = []
    taken: list[float] = []
    read = [0]
    last = [0.0]

    def tick() -> None:
        # A 1 ms timer: the loop runs timers once per turn, after the turn's reads.
        now = time.perf_counter()
        with lock:
            if last[0]:
                turns.append(now - last[0])
                reads.append(read[0])
            read[0] = 0
        last[0] = now
        asyncio.get_running_loop().call_later(0.001, tick)

    feed = direct.DirectQueue.feed_data

    def feed_data(self: Any, data: Any, size: int) -> None:
        read[0] += 1
        feed(self, data, size)

    take = sqlite_inputlog.SqliteAppender.take_ended

    def timed_take(self: Any) -> None:
        if not self.ended:
            take(self)
            return
        began = time.perf_counter()
        take(self)
        with lock:
            taken.append(time.perf_counter() - began)

    def report() -> None:
        while True:
            time.sleep(2.0)
            with lock:
                lengths, counts, took = sorted(turns), list(reads), list(taken)
                turns.clear()
                reads.clear()
                taken.clear()
            if not lengths:
                continue
            n = len(lengths)
            line = (
                f"loop turns at {time.time():.1f}: n={n} mean={1000 * sum(lengths) / n:.2f}"
                f" p50={1000 * lengths[n // 2]:.2f} p99={1000 * lengths[n * 99 // 100]:.1f}"
                f" max={1000 * lengths[-1]:.1f} ms; frames per turn mean={sum(counts) / n:.1f}"
                f" max={max(counts)}; commits taken n={len(took)}"
            )
            if took:
                line += (f" mean={1000 * sum(took) / len(took):.2f} max={1000 * max(took):.1f}"
                         f" ms sum={sum(took):.2f} s")
            print(line, file=sys.stderr, flush=True)

    direct.DirectQueue.feed_data = feed_data  # type: ignore[method-assign]
    sqlite_inputlog.SqliteAppender.take_ended = timed_take  # type: ignore[method-assign]
    threading.Thread(target=report, name="loop-turns", daemon=True).start()
    create = app.create_app

    def create_app(*args: Any, **kwargs: Any) -> Any:
        web_app = create(*args, **kwargs)

        async def begin(_app: Any) -> None:
            asyncio.get_running_loop().call_later(0.001, tick)

        web_app.on_startup.append(begin)
        return web_app

    app.create_app = create_app


def _patch_log(variants: set[str]) -> None:
    import server.storage.sqlite_inputlog as sqlite_inputlog

    if "log_off" in variants:
        sqlite_inputlog._insert = lambda conn, rows, table: None
    if "log_unsynced" in variants:
        _after_open(sqlite_inputlog, "PRAGMA synchronous=NORMAL")
    if "log_no_checkpoint" in variants:
        _after_open(sqlite_inputlog, "PRAGMA wal_autocheckpoint=0")
    if "log_per_row" in variants:
        sqlite_inputlog._insert = insert_per_row
    if "log_keyed" in variants:
        plain = sqlite_inputlog._insert
        sqlite_inputlog._insert = lambda conn, rows, table: plain(conn, rows, "room_inputs")
        # The folding thread never finds a fold due.
        sqlite_inputlog.SqliteAppender._fold_wait = (  # type: ignore[method-assign]
            lambda self: None
        )
    if "log_slow" in variants:
        insert = sqlite_inputlog._insert

        def timed_insert(conn: Any, rows: Any, table: str) -> None:
            started = time.perf_counter()
            insert(conn, rows, table)
            ms = (time.perf_counter() - started) * 1000
            if ms > 20:
                print(f"log commit {ms:.1f} ms rows {len(rows)} at {time.time():.3f}",
                      file=sys.stderr, flush=True)

        sqlite_inputlog._insert = timed_insert


def insert_per_row(conn: Any, rows: Any, table: str = "room_inputs") -> None:
    """``log_per_row``: the input log's insert before 2026-12-02, a transaction with one
    statement per row (each a wait for the GIL behind a busy event loop)."""
    from server.storage.sqlite_inputlog import insert_sql

    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(insert_sql(1, table), rows)
    conn.execute("COMMIT")


def _after_open(sqlite_inputlog: Any, statement: str) -> None:
    """The input log's connection runs ``statement`` once it is opened (on top of any
    variant's before it)."""
    opened = sqlite_inputlog.SqliteAppender._open

    def open_then(self: Any) -> Any:
        conn = opened(self)
        conn.execute(statement)
        return conn

    sqlite_inputlog.SqliteAppender._open = open_then


def _patch_lag_log(app: Any, stacks: bool = False) -> None:
    import asyncio

    create = app.create_app
    sampler = _StackSampler() if stacks else None

    async def ticker() -> None:
        due = time.perf_counter() + 0.005
        while True:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            if now - due > 0.02:
                print(f"loop stall {(now - due) * 1000:.1f} ms at {time.time():.3f}",
                      file=sys.stderr, flush=True)
                if sampler is not None:
                    sampler.report(due, now)
            due = now + 0.005

    def create_app(*args: Any, **kwargs: Any) -> Any:
        web_app = create(*args, **kwargs)

        async def start(_app: Any) -> None:
            if sampler is not None:
                sampler.start()
            _app["lag_ticker"] = asyncio.get_running_loop().create_task(ticker())

        web_app.on_startup.append(start)
        return web_app

    app.create_app = create_app


class _StackSampler:
    """``stall_stacks``: a thread notes the loop thread's stack every millisecond (the
    last two seconds kept); a stall is reported as its samples' stacks, commonest first."""

    def __init__(self) -> None:
        import collections
        import threading

        self._main = threading.get_ident()
        self._samples: collections.deque[tuple[float, str]] = collections.deque(maxlen=2000)
        self._thread = threading.Thread(target=self._run, name="stall-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(0.001)
            frame = sys._current_frames().get(self._main)
            stack: list[str] = []
            while frame is not None and len(stack) < 12:
                code = frame.f_code
                where = code.co_filename.rsplit("/", 2)[-1]
                stack.append(f"{where}:{code.co_name}:{frame.f_lineno}")
                frame = frame.f_back
            self._samples.append((time.perf_counter(), " < ".join(stack)))

    def report(self, since: float, until: float) -> None:
        import collections

        counts = collections.Counter(st for at, st in list(self._samples) if since <= at <= until)
        for stack, n in counts.most_common(8):
            print(f"  {n:3d} {stack}", file=sys.stderr, flush=True)


_started = [0.0]


def _log_collection(phase: str, info: dict[str, int]) -> None:
    now = time.perf_counter()
    if phase == "start":
        _started[0] = now
        return
    ms = (now - _started[0]) * 1000
    if info["generation"] or ms > 5:
        print(f"gc gen {info['generation']} {ms:.1f} ms collected {info['collected']}"
              f" at {time.time():.3f}",
              file=sys.stderr, flush=True)


_sampled = [0.0]


def _young_types(phase: str, info: dict[str, int]) -> None:
    import collections

    now = time.monotonic()
    if phase != "start" or info["generation"] or now - _sampled[0] < 3:
        return
    _sampled[0] = now
    young = gc.get_objects(generation=0)
    common = collections.Counter(type(obj).__qualname__ for obj in young).most_common(10)
    print(f"gc young {len(young)}: {common}", file=sys.stderr, flush=True)
    # The commonest tuples and lists by length.  Not their items: a collection can start
    # while C code fills a new tuple, whose empty slots reading would crash the server.
    shapes = collections.Counter(
        (type(obj).__qualname__, len(obj)) for obj in young if type(obj) in (tuple, list)
    ).most_common(8)
    print(f"gc young shapes: {shapes}", file=sys.stderr, flush=True)


def main() -> int:
    """Apply ``$BENCH_VARIANT`` and run the server with the remaining arguments."""
    variants = set(filter(None, os.environ.get("BENCH_VARIANT", "").split(",")))
    apply(variants)
    from server.__main__ import main as server_main

    print(f"server variant: {sorted(variants) or 'unchanged'}", file=sys.stderr, flush=True)
    if "cprofile" not in variants:
        return server_main(sys.argv[1:])
    import cProfile

    profile = cProfile.Profile()
    try:
        return profile.runcall(server_main, sys.argv[1:])
    finally:
        where = os.environ.get("BENCH_PROFILE_DIR", ".")
        profile.dump_stats(os.path.join(where, f"server-{os.getpid()}.prof"))


if __name__ == "__main__":
    sys.exit(main())
