"""The secret keys of the names this user claimed, kept in one file only they can read.

``$XDG_CONFIG_HOME/tripeaks/keys.json`` (else ``~/.config/tripeaks/keys.json``),
mode 0600 in a 0700 directory: ``{"version": 1, "names": {ACCOUNT: {"name":
NAME, "key": KEY}}}``, one entry per claimed name, found by the name as the
server compares names (:func:`protocol.wire.names.account_of`).  The key is
the only proof of the name: losing the file loses the name (docs/players.md).
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from protocol.wire.names import account_of

DIR_MODE: Final = 0o700
FILE_MODE: Final = 0o600
#: Random bytes in a new key (43 URL-safe base64 characters).
KEY_BYTES: Final = 32


class KeyFileError(Exception):
    """The key file cannot be read or written; the message says why."""


def config_dir() -> Path:
    """The client's configuration directory (``$XDG_CONFIG_HOME/tripeaks``)."""
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".config"
    return root / "tripeaks"


def new_key() -> str:
    """A fresh secret key from the operating system's CSPRNG."""
    return secrets.token_urlsafe(KEY_BYTES)


def stored_key(name: str) -> str | None:
    """The key kept for ``name``, if any: a name claimed with ``tripeaks claim`` is proved
    by it in every hello.  An unreadable file gives None (the server then says the name
    is claimed, which points here)."""
    try:
        stored = KeyFile().get(name)
    except KeyFileError:
        return None
    return stored.key if stored is not None else None


@dataclass(frozen=True, slots=True)
class StoredKey:
    """A claimed name as typed when claiming it, and its key."""

    name: str
    key: str


class KeyFile:
    """The key file; read on demand, written whole and atomically."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else config_dir() / "keys.json"

    def get(self, name: str) -> StoredKey | None:
        """The stored key of ``name`` (any spelling the server takes as the same name)."""
        entry = self._names().get(account_of(name))
        if not isinstance(entry, dict):
            return None
        stored, key = entry.get("name"), entry.get("key")
        if not isinstance(stored, str) or not isinstance(key, str):
            return None
        return StoredKey(stored, key)

    def put(self, name: str, key: str) -> None:
        """Keep ``key`` for ``name``, replacing any key it had."""
        names = self._names()
        names[account_of(name)] = {"name": name, "key": key}
        self._write({"version": 1, "names": names})

    def all(self) -> list[StoredKey]:
        """Every stored name, in the order they were claimed."""
        found = [self.get(str(entry.get("name", ""))) for entry in self._names().values()
                 if isinstance(entry, dict)]
        return [key for key in found if key is not None]

    def _names(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise KeyFileError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        try:
            doc = json.loads(text)
        except ValueError:
            raise KeyFileError(f"{self.path} is not valid JSON; fix or move it") from None
        names = doc.get("names") if isinstance(doc, dict) else None
        return dict(names) if isinstance(names, dict) else {}

    def _write(self, doc: dict[str, Any]) -> None:
        directory = self.path.parent
        try:
            directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=directory, prefix=".keys-", text=True)
            try:
                os.fchmod(handle, FILE_MODE)
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    json.dump(doc, out, indent=2, ensure_ascii=False)
                    out.write("\n")
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise KeyFileError(f"cannot write {self.path}: {exc.strerror or exc}") from None
