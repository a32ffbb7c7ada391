"""The benchmark's server variants patch what they say they patch.

Each check runs in a fresh interpreter: the variants change module globals of
the server, which must not leak into other tests.  Nothing here is timed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def _run(code: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, **env},
    )


#: Script text: ``log_file(name)``, a new SQLite file in WAL mode with the server's
#: ``room_inputs`` table (the scripts below begin with it).
_LOG_FILE = textwrap.dedent("""
    from pathlib import Path
    from bench.log_convoy import fresh_log
    def log_file(name):
        return fresh_log(Path(name).parent, Path(name).stem)
""")

_APPEND = _LOG_FILE + textwrap.dedent("""
    import asyncio, sqlite3, sys
    from pathlib import Path
    import time
    import server.storage.sqlite_inputlog as sqlite_inputlog
    if len(sys.argv) > 3:  # a commit that takes 30 ms, as a slow disk's would
        plain = sqlite_inputlog._insert
        sqlite_inputlog._insert = lambda conn, rows, table: (
            time.sleep(0.03), plain(conn, rows, table)
        )
    from bench import load_variants
    load_variants.apply(set(sys.argv[2].split(",")) if len(sys.argv) > 2 and sys.argv[2] else set())
    from server.storage.sqlite_inputlog import SqliteAppender
    path = log_file(sys.argv[1])
    async def main():
        appender = SqliteAppender(path, "sqlite:///" + str(path))
        seen = []
        appender.prepare = lambda conn: seen.append((
            conn.execute("PRAGMA synchronous").fetchone()[0],
            conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0],
        ))
        await appender.append([("ROOM01", 0, 1, '{"t":"x"}')])
        await appender.close()
        with sqlite3.connect(path) as conn:
            counts = [
                conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("room_inputs", *sqlite_inputlog.TAILS)
            ]
        print(sum(counts), *seen[0], counts[0])
    asyncio.run(main())
""")


def _append(tmp_path: Path, variants: str, *, slow: bool = False) -> tuple[int, int, int]:
    """Rows written, the connection's ``synchronous`` and its ``wal_autocheckpoint`` (and
    where the row went checked: ``room_inputs`` itself with ``log_keyed``, a tail else)."""
    (tmp_path / "log.db").unlink(missing_ok=True)
    args = [str(tmp_path / "log.db"), variants] + (["slow"] if slow else [])
    done = _run(_APPEND, *args)
    assert done.returncode == 0, done.stderr
    rows, sync, checkpoint, keyed = done.stdout.split()
    assert keyed == ("1" if "log_keyed" in variants and rows == "1" else "0")
    return int(rows), int(sync), int(checkpoint)


def test_the_unchanged_log_writes_its_rows_with_a_full_sync(tmp_path: Path) -> None:
    assert _append(tmp_path, "") == (1, 2, 1000)  # synchronous=FULL is 2


def test_log_off_writes_nothing_and_log_unsynced_commits_without_a_sync(tmp_path: Path) -> None:
    assert _append(tmp_path, "log_off") == (0, 2, 1000)
    assert _append(tmp_path, "log_unsynced") == (1, 1, 1000)  # synchronous=NORMAL is 1


def test_log_no_checkpoint_turns_the_logs_checkpoints_off(tmp_path: Path) -> None:
    assert _append(tmp_path, "log_no_checkpoint") == (1, 2, 0)
    assert _append(tmp_path, "log_unsynced,log_no_checkpoint") == (1, 1, 0)


def test_log_keyed_appends_into_room_inputs_itself(tmp_path: Path) -> None:
    assert _append(tmp_path, "log_keyed") == (1, 2, 1000)
    assert _append(tmp_path, "log_keyed,log_per_row") == (1, 2, 1000)


def test_log_slow_reports_a_slow_commit_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    done = _run(_APPEND, str(path), "log_slow", "slow")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "1"
    line = r"^log commit \d+\.\d ms rows 1 at \d+\.\d{3}$"
    assert re.search(line, done.stderr, re.M), done.stderr
    quick = _run(_APPEND, str(tmp_path / "quick.db"), "log_slow")
    assert quick.returncode == 0 and "log commit" not in quick.stderr


def test_loop_turns_reports_the_turns_the_frames_read_in_each_and_the_commits(
    tmp_path: Path,
) -> None:
    done = _run(
        _LOG_FILE + textwrap.dedent("""
        import asyncio, sys
        from aiohttp import WSMessage, WSMsgType
        import server.app as app

        class Stub:  # what the variant needs of the server's application
            def __init__(self):
                self.on_startup = []

        app.create_app = lambda *args, **kwargs: Stub()
        from bench import load_variants
        load_variants.apply({"loop_turns"})
        from server.storage.sqlite_inputlog import SqliteAppender
        from server.transport.direct import DirectQueue

        class Protocol:
            def pause_reading(self): pass
            def resume_reading(self): pass

        async def main():
            web_app = app.create_app()
            for began in web_app.on_startup:
                await began(web_app)
            path = log_file(sys.argv[1])
            appender = SqliteAppender(path, "sqlite:///" + str(path))
            await appender.append([("ROOM01", 0, 1, '{"t":"x"}')])
            queue = DirectQueue(Protocol(), 1 << 16, loop=asyncio.get_running_loop())
            queue.hook = lambda data: True
            for _ in range(3):  # three frames read in one turn
                queue.feed_data(WSMessage(WSMsgType.BINARY, b"move", None), 4)
            await asyncio.sleep(2.3)  # the report comes every 2 s
            await appender.close()
        asyncio.run(main())
        """),
        str(tmp_path / "log.db"),
    )
    assert done.returncode == 0, done.stderr
    line = (r"^loop turns at \d+\.\d: n=(\d+) mean=\d+\.\d\d p50=\d+\.\d\d p99=\d+\.\d "
            r"max=\d+\.\d ms; frames per turn mean=\d+\.\d max=3; commits taken n=1 "
            r"mean=\d+\.\d\d max=\d+\.\d ms sum=\d+\.\d\d s$")
    found = re.search(line, done.stderr, re.M)
    assert found, done.stderr
    assert int(found.group(1)) > 100  # a 1 ms timer on an idle loop: most of 2,000 turns


def test_commit_timing_reports_each_part_of_a_commit(tmp_path: Path) -> None:
    done = _run(
        _LOG_FILE + textwrap.dedent("""
        import asyncio, sys, time
        from bench import load_variants
        load_variants.apply({"commit_timing"})
        from server.storage.sqlite_inputlog import SqliteAppender
        path = log_file(sys.argv[1])
        async def main():
            appender = SqliteAppender(path, "sqlite:///" + str(path))
            await appender.append([("ROOM01", 0, 1, '{"t":"x"}')])
            await appender.close()
        asyncio.run(main())
        time.sleep(2.5)  # the report comes every 2 s
        """),
        str(tmp_path / "log.db"),
    )
    assert done.returncode == 0, done.stderr
    # The append and the close each end on the loop; only the append was handed over.
    line = (r"^commit timing at \d+\.\d: handed n=1 mean=\d+\.\d max=\d+\.\d ms; "
            r"append n=1 mean=\d+\.\d max=\d+\.\d ms; turn n=2 mean=\d+\.\d max=\d+\.\d ms$")
    assert re.search(line, done.stderr, re.M), done.stderr


@pytest.mark.parametrize(
    ("variant", "env", "expected"),
    [
        ("gc_thresholds", {"BENCH_GC_THRESHOLDS": "7000,60,900"}, "(7000, 60, 900)"),
        ("gc_tuned", {}, "(50000, 50, 1000)"),
    ],
    ids=["from the environment", "those of before"],
)
def test_the_collector_variants_replace_the_servers_thresholds(
    variant: str, env: dict[str, str], expected: str
) -> None:
    done = _run(
        f"""
        import gc
        from bench import load_variants
        load_variants.apply({{"{variant}"}})
        import server.__main__ as entry
        entry._tune_gc()
        print(gc.get_threshold())
        """,
        **env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


def test_the_server_sets_its_own_thresholds_without_a_variant() -> None:
    done = _run(
        """
        import gc
        import server.__main__ as entry
        entry._tune_gc()
        print(gc.get_threshold() == entry.GC_THRESHOLDS)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_an_unknown_variant_is_refused_with_the_known_ones() -> None:
    done = _run(
        """
        from bench import load_variants
        load_variants.apply({"log_of"})
        """
    )
    assert done.returncode != 0
    assert "unknown variants ['log_of']" in done.stderr
    assert "log_off" in done.stderr


@pytest.mark.parametrize(
    ("given", "expected"), [("0.0005", "0.0005"), ("soon", "needs BENCH_SWITCH_INTERVAL")],
    ids=["set", "refused"],
)
def test_switch_interval_sets_the_interpreters_switch_interval(given: str, expected: str) -> None:
    done = _run(
        """
        import sys
        from bench import load_variants
        load_variants.apply({"switch_interval"})
        print(sys.getswitchinterval())
        """,
        BENCH_SWITCH_INTERVAL=given,
    )
    assert expected in (done.stdout if done.returncode == 0 else done.stderr), done.stderr


def test_stall_stacks_names_what_held_the_loop_thread_during_a_stall() -> None:
    done = _run(
        """
        import time
        from bench.load_variants import _StackSampler
        sampler = _StackSampler()
        sampler.start()
        time.sleep(0.05)

        def hold_the_loop_thread():
            until = time.perf_counter() + 0.1
            while time.perf_counter() < until:
                pass

        since = time.perf_counter()
        hold_the_loop_thread()
        sampler.report(since, time.perf_counter())
        """
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines and "hold_the_loop_thread" in lines[0], done.stderr
    assert int(lines[0].split()[0]) >= 5  # samples of the 100 ms, one a millisecond at most


@pytest.mark.parametrize(("variants", "inserts"), [("", 1), ("log_per_row", 3)])
def test_log_per_row_inserts_a_statement_per_row(
    tmp_path: Path, variants: str, inserts: int
) -> None:
    done = _run(
        _LOG_FILE + textwrap.dedent("""
        import asyncio, sqlite3, sys
        from bench import load_variants
        load_variants.apply(set(sys.argv[2].split(",")) - {""})
        from server.storage.sqlite_inputlog import TAILS, SqliteAppender
        path = log_file(sys.argv[1])
        async def main():
            appender = SqliteAppender(path, "log")
            ran = []
            appender.prepare = lambda conn: conn.set_trace_callback(ran.append)
            await appender.append([(f"R{i}", 0, 1, "{}") for i in range(3)])
            await appender.close()
            with sqlite3.connect(path) as conn:
                rows = sum(
                    conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                    for table in ("room_inputs", *TAILS)  # a fold may have run
                )
            print(rows, sum(text.startswith("INSERT") for text in ran))
        asyncio.run(main())
        """),
        str(tmp_path / "log.db"), variants,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", str(inserts)]


@pytest.mark.parametrize(
    ("given", "expected"), [("1", "1"), ("0", "needs BENCH_STARTS_PER_TURN")],
    ids=["set", "refused"],
)
def test_starts_per_turn_sets_how_many_starts_a_turn_of_the_loop_carries(
    given: str, expected: str
) -> None:
    done = _run(
        """
        import asyncio
        from bench import load_variants
        load_variants.apply({"starts_per_turn"})
        from server.turns import TurnSlots
        print(TurnSlots(asyncio.new_event_loop())._per_turn)
        """,
        BENCH_STARTS_PER_TURN=given,
    )
    assert expected in (done.stdout if done.returncode == 0 else done.stderr), done.stderr
