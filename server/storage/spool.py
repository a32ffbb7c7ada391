"""The fallback file: finished races the database refused, kept on disk until stored.

One JSON line per race (:meth:`RaceRecord.to_json`), appended and flushed to
disk (``fsync``) before anyone is told the race is over.  Several servers may
share one file: every change holds an exclusive ``flock`` on a lock file next
to it, and :meth:`Spool.forget` rewrites the file (to a temporary file, then a
rename) keeping every line it was not asked to drop.  A line cut short by a
crash was never acknowledged (the append had not returned), so
:meth:`Spool.load` sets it aside, with any line that is not a race, and says
how many it set aside.

Blocking file I/O: call these methods off the event loop (``asyncio.to_thread``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from server.race.records import RaceRecord, RecordError
from server.storage.store import RaceStore, data_dir


class Spool:
    """Race records waiting for the database, in a file at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock_path = path.with_name(path.name + ".lock")

    def append(self, records: Sequence[RaceRecord]) -> None:
        """Add ``records`` durably; raises :class:`OSError` when the file cannot be written."""
        lines = b"".join(_line(record) for record in records)
        with self._locked():
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            size = os.fstat(fd).st_size
            try:
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    lines = b"\n" + lines  # after a torn line: start a line of our own
                _write_all(fd, lines)
                os.fsync(fd)
            except BaseException:
                # A partial line would be skipped on load; better to leave none.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise
            finally:
                os.close(fd)
            _sync_dir(self.path.parent)

    def load(self) -> tuple[list[RaceRecord], int]:
        """The records in the file (the first copy of each race) and the unreadable lines.

        Unreadable lines (cut short by a crash, or not a race) move to a file
        ending ``.unreadable`` next to this one, for a person to look at.
        """
        if not self.path.exists():
            return [], 0  # nothing to read: no need for the lock (or its file)
        with self._locked():
            if not self.path.exists():
                return [], 0
            records: dict[str, RaceRecord] = {}
            good: list[bytes] = []
            bad: list[bytes] = []
            for raw in self._raw_lines():
                try:
                    record = RaceRecord.from_json(json.loads(raw))
                except (ValueError, RecordError):
                    bad.append(raw)
                    continue
                good.append(raw)
                records.setdefault(record.race_id, record)
            if bad:
                self._set_aside(bad)
                self._rewrite(good)
            return list(records.values()), len(bad)

    def forget(self, race_ids: Iterable[str]) -> int:
        """Drop the lines of these races (they are stored now); the number of lines left.

        The file is removed once it holds nothing.
        """
        dropped = set(race_ids)
        with self._locked():
            if not self.path.exists():
                return 0
            kept = [raw for raw in self._raw_lines() if _race_id_of(raw) not in dropped]
            self._rewrite(kept)
            return len(kept)

    def _rewrite(self, lines: list[bytes]) -> None:
        """Replace the file's content with ``lines`` (crash-safe: a new file, then a rename)."""
        if not lines:
            self.path.unlink(missing_ok=True)
            _sync_dir(self.path.parent)
            return
        temporary = self.path.with_name(self.path.name + ".new")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            _write_all(fd, b"".join(lines))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, self.path)
        _sync_dir(self.path.parent)

    def _set_aside(self, lines: list[bytes]) -> None:
        aside = self.path.with_name(self.path.name + ".unreadable")
        fd = os.open(aside, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _write_all(fd, b"".join(lines))
            os.fsync(fd)
        finally:
            os.close(fd)

    def _raw_lines(self) -> list[bytes]:
        with self.path.open("rb") as file:
            return [raw if raw.endswith(b"\n") else raw + b"\n" for raw in file if raw.strip()]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock


def spool_path(store: RaceStore) -> Path:
    """Where the fallback file of ``store`` lives: next to a SQLite file, else (PostgreSQL)
    in the data directory (:func:`~server.storage.store.data_dir`), named after the URL."""
    path = store.sqlite_path
    if path is not None:
        return path.with_name(path.name + ".unsaved.jsonl")
    digest = hashlib.sha256(store.url.encode()).hexdigest()[:12]
    return data_dir() / f"unsaved-{digest}.jsonl"


def _line(record: RaceRecord) -> bytes:
    text = json.dumps(record.to_json(), ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8") + b"\n"


def _race_id_of(raw: bytes) -> str | None:
    try:
        doc = json.loads(raw)
    except ValueError:
        return None  # unreadable: kept, for load() to set aside
    race_id = doc.get("race_id") if isinstance(doc, dict) else None
    return race_id if isinstance(race_id, str) else None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _sync_dir(directory: Path) -> None:
    """Make a created, renamed or removed file's directory entry durable too."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
