"""What the client says about the network in words, and the server's addresses.

Every failure the user can meet (server down, wrong URL, closed socket, a
frame the client cannot read) becomes a :class:`ClientError` with a sentence
in it, so the screens and the CLI never show a traceback.  The socket itself
is in :mod:`client_cli.connection`.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from protocol.wire import messages as m
from protocol.wire.errors import CLOSE_TEXT, ERROR_TEXT, CloseCode, ErrorCode

DEFAULT_SERVER: Final = "ws://127.0.0.1:8765/ws"
CLIENT_NAME: Final = "tripeaks-cli"


class ClientError(Exception):
    """Something went wrong that the user should read about, in words."""


class ConnectionLost(ClientError):
    """The socket closed; ``code`` is the close code when the server sent one."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code

    @property
    def final(self) -> bool:
        """True when reconnecting cannot help (a newer connection, a bad version, abuse)."""
        return self.code in (
            CloseCode.REPLACED,
            CloseCode.UNSUPPORTED_VERSION,
            CloseCode.POLICY_VIOLATION,
            CloseCode.NO_SUBPROTOCOL,
        )


class ServerRefused(ClientError):
    """The server answered with an ``error`` message."""

    def __init__(self, error: m.Error) -> None:
        super().__init__(error_text(error))
        self.error = error

    @property
    def code(self) -> int:
        """The :class:`~protocol.wire.errors.ErrorCode` value."""
        return self.error.code


def error_text(error: m.Error) -> str:
    """A server error in words: its own message, or the meaning of its code if it has none."""
    try:
        known = ERROR_TEXT[ErrorCode(error.code)]
    except ValueError:
        known = f"error {error.code}"
    message = error.message.strip().rstrip(".") or known
    return f"{message[:1].upper()}{message[1:]}."


def close_text(code: int | None, reason: str = "") -> str:
    """Why the server closed the connection, in words."""
    if reason:
        return f"the server closed the connection: {reason}"
    try:
        meaning = CLOSE_TEXT[CloseCode(code)] if code is not None else "no reason given"
    except ValueError:
        meaning = f"close code {code}"
    return f"the server closed the connection ({meaning})"


def normalise_url(server: str) -> str:
    """``ws://host:port/ws`` from a ws(s) URL, an http(s) URL or a bare ``host:port``."""
    text = server.strip()
    if "://" not in text:
        text = "ws://" + text
    parts = urlsplit(text)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    if scheme not in ("ws", "wss") or not parts.hostname:
        raise ClientError(f"not a server address: {server!r} (try ws://127.0.0.1:8765/ws)")
    path = parts.path if parts.path not in ("", "/") else "/ws"
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


def http_base(server: str) -> str:
    """The server's HTTP root for the JSON API, from its WebSocket URL."""
    parts = urlsplit(normalise_url(server))
    scheme = "https" if parts.scheme == "wss" else "http"
    return urlunsplit((scheme, parts.netloc, "", "", ""))


def fetch_json(server: str, path: str, timeout: float = 5.0) -> Any:
    """GET a JSON API path (blocking: call it from a worker thread)."""
    url = http_base(server) + path
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        # The API answers its errors as {"error": "..."}: say what it said.
        try:
            said = json.loads(exc.read().decode("utf-8"))["error"]
        except (ValueError, KeyError, TypeError, OSError):
            said = exc.reason
        raise ClientError(f"{url}: {exc.code} {said}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        detail = reason.strerror if isinstance(reason, OSError) and reason.strerror else reason
        raise ClientError(f"cannot reach {url}: {detail}") from None
    except OSError as exc:
        raise ClientError(f"cannot reach {url}: {exc.strerror or exc}") from None
    except ValueError:
        raise ClientError(f"{url} did not answer with JSON") from None
