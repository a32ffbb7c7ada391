"""The name a player races under: ``--name``, else the one saved on the first run,
else the login name.

The login name was the only default, so two friends on one machine both sat
as ``root`` (the server seats the second as ``root (2)``) and neither was
told.  Now the full-screen app asks once, on the first run, and keeps the
answer in the user config directory (``$XDG_CONFIG_HOME/tripeaks/client.json``,
else ``~/.config/tripeaks/client.json``); plain mode never asks (it may be a
pipe) but says which name it used and why.  ``--name`` is for one run and
is not saved.  Deleting the file asks again.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from protocol.wire.messages import MAX_NAME_LENGTH

#: Where a name came from (:attr:`NameChoice.source`).
OPTION: Final = "option"
SAVED: Final = "saved"
LOGIN: Final = "login"


class BadName(ValueError):
    """A name the server would refuse, or a name file that cannot be read or written."""


def config_dir() -> Path:
    """The client's config directory (``$XDG_CONFIG_HOME/tripeaks``)."""
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".config"
    return root / "tripeaks"


def config_file() -> Path:
    """The file that keeps the saved name."""
    return config_dir() / "client.json"


def check_name(text: str) -> str:
    """``text`` stripped, or :class:`BadName` saying why the server would refuse it."""
    name = text.strip()
    if not name:
        raise BadName("a name needs at least one character")
    if len(name) > MAX_NAME_LENGTH:
        raise BadName(f"a name has at most {MAX_NAME_LENGTH} characters")
    if not name.isprintable():
        raise BadName("a name has printable characters only")
    return name


def login_name() -> str:
    """The login name, trimmed to what the server accepts (``player`` when there is none)."""
    try:
        name = getpass.getuser()
    except Exception:  # no login name in some containers
        name = "player"
    name = "".join(ch for ch in name if ch.isprintable()).strip()[:MAX_NAME_LENGTH]
    return name or "player"


def saved_name() -> str | None:
    """The name saved on an earlier run; ``None`` when there is none.

    Raises :class:`BadName` when the file exists but cannot be used (it is
    left as it is: the caller says so and falls back to the login name).
    """
    path = config_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadName(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
        return check_name(data["name"]) if isinstance(data, dict) and "name" in data else None
    except (ValueError, TypeError, AttributeError) as exc:
        why = f"{path} does not hold a usable name ({exc}); delete it to be asked again"
        raise BadName(why) from None


def save_name(name: str) -> Path:
    """Keep ``name`` for the next runs (other settings in the file are kept); the file."""
    name = check_name(name)
    path = config_file()
    data: dict[str, object] = {}
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            data = loaded
    data["name"] = name
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole then renamed: a crash never leaves half a file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".client-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, ensure_ascii=False, indent=2)
            out.write("\n")
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise BadName(f"cannot save the name in {path}: {exc.strerror or exc}") from None
    return path


@dataclass(frozen=True, slots=True)
class NameChoice:
    """The name to race under, where it came from, and a problem worth telling."""

    name: str
    source: str
    warning: str = ""

    @property
    def ask(self) -> bool:
        """True when nobody chose this name: the full-screen app asks once."""
        return self.source == LOGIN

    def explained(self) -> str:
        """Why this name, in words, for the line that says who you are."""
        if self.source == OPTION:
            return "from --name"
        if self.source == SAVED:
            return f"your saved name, in {config_file()}"
        return "your login name; others on this machine may have it too: --name NAME for another"


def choose_name(option: str | None) -> NameChoice:
    """``--name`` if given (checked), else the saved name, else the login name."""
    if option is not None:
        return NameChoice(check_name(option), OPTION)
    try:
        saved = saved_name()
    except BadName as exc:
        return NameChoice(login_name(), LOGIN, str(exc))
    if saved is not None:
        return NameChoice(saved, SAVED)
    return NameChoice(login_name(), LOGIN)
