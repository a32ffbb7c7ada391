"""Reconnect tokens kept on disk, one file per room, so a new process can reclaim a seat.

The server keeps a seat for its reconnect grace after a connection drops,
but only the token from ``welcome`` reclaims it.  Kept only in memory, the
token died with the process (ctrl+q, a closed terminal), and ``tripeaks join
CODE`` a second later was refused as a newcomer to a running race.  So the
client writes the token of each room it sits in to the user state directory
(``$XDG_STATE_HOME/tripeaks/seats``, else ``~/.local/state/tripeaks/seats``),
readable by its owner only (mode 0600), and forgets it on leaving the room.

A file records the player's name and the process that holds the seat: only
a client with the same name takes a seat back, and never while the process
that holds it still runs (a client that quits releases it), so two people
playing from one machine never steal each other's seats.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

#: The directory mode and file mode: the tokens are the seats' keys.
DIR_MODE: Final = 0o700
FILE_MODE: Final = 0o600


def state_dir() -> Path:
    """The client's state directory (``$XDG_STATE_HOME/tripeaks``)."""
    base = os.environ.get("XDG_STATE_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".local" / "state"
    return root / "tripeaks"


@dataclass(frozen=True, slots=True)
class SavedSeat:
    """A seat this machine held: the room, the token that reclaims it, its holder."""

    code: str
    token: str
    name: str
    pid: int
    saved_at: float


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False  # released by a client that quit
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SeatFiles:
    """The saved seats for one server (a directory per server address)."""

    def __init__(self, server_url: str, root: Path | None = None) -> None:
        parts = urlsplit(server_url)
        where = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{parts.hostname}_{parts.port or 0}")
        self.dir = (root or state_dir()) / "seats" / where

    def _path(self, code: str) -> Path:
        return self.dir / f"{re.sub(r'[^A-Z0-9]', '', code.upper())}.json"

    def save(self, code: str, token: str, name: str, *, held: bool = True) -> None:
        """Keep ``token`` for room ``code`` (held by this process unless ``held`` is false)."""
        record = {"code": code, "token": token, "name": name,
                  "pid": os.getpid() if held else 0, "saved_at": time.time()}
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
            path = self._path(code)
            partial = path.with_suffix(".tmp")
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(record, file)
            os.chmod(partial, FILE_MODE)
            os.replace(partial, path)
        except OSError:
            pass  # no state directory: resuming from a new process just will not work

    def load(self, code: str, name: str) -> SavedSeat | None:
        """``name``'s saved seat in room ``code``, unless a running client holds it."""
        try:
            data = json.loads(self._path(code).read_text(encoding="utf-8"))
            seat = SavedSeat(str(data["code"]), str(data["token"]), str(data.get("name", "")),
                             int(data.get("pid", 0)), float(data.get("saved_at", 0)))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return None if seat.name != name or _alive(seat.pid) else seat

    def latest(self, name: str) -> SavedSeat | None:
        """``name``'s most recently saved seat that no running client holds, if any."""
        try:
            files = sorted(self.dir.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:
            return None
        for path in files:
            seat = self.load(path.stem, name)
            if seat is not None:
                return seat
        return None

    def forget(self, code: str) -> None:
        """The seat in room ``code`` is gone (left, or no longer known to the server)."""
        with contextlib.suppress(OSError):
            self._path(code).unlink()
