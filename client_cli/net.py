"""The client's side of the socket: connect, say hello, send and receive typed messages.

Every failure the user can meet (server down, wrong URL, closed socket, a
frame the client cannot read) becomes a :class:`ClientError` with a sentence
in it, so the screens and the CLI never show a traceback.
"""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import CLOSE_TEXT, ERROR_TEXT, CloseCode, ErrorCode, ProtocolError

DEFAULT_SERVER: Final = "ws://127.0.0.1:8765/ws"
CLIENT_NAME: Final = "tripeaks-cli"
OPEN_TIMEOUT_S: Final = 10.0


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
    except urllib.error.URLError as exc:
        reason = exc.reason
        detail = reason.strerror if isinstance(reason, OSError) and reason.strerror else reason
        raise ClientError(f"cannot reach {url}: {detail}") from None
    except OSError as exc:
        raise ClientError(f"cannot reach {url}: {exc.strerror or exc}") from None
    except ValueError:
        raise ClientError(f"{url} did not answer with JSON") from None


@dataclass(slots=True)
class Session:
    """One connection to the server: ``open`` says hello, then ``send``/``recv`` messages."""

    url: str
    name: str
    bot: bool = False
    token: str | None = None
    encoding: codec.Encoding = codec.Encoding.MSGPACK
    client: str = CLIENT_NAME
    ws: ClientConnection | None = None
    welcome: m.Welcome | None = None

    async def open(self) -> m.Welcome:
        """Connect and say hello (with the reconnect token if there is one)."""
        self.ws = await open_socket(self.url, self.encoding)
        hello = m.Hello(
            name=self.name, version=m.PROTOCOL_VERSION, token=self.token, bot=self.bot,
            client=self.client,
        )
        await self.send(hello)
        while True:
            message = await self.recv()
            if isinstance(message, m.Welcome):
                self.welcome = message
                self.token = message.token
                return message
            if isinstance(message, m.Error):
                await self.close()
                raise ServerRefused(message)

    async def send(self, message: m.ClientMessage) -> None:
        """Send one message; a closed socket raises :class:`ConnectionLost`."""
        if self.ws is None:
            raise ConnectionLost("not connected")
        try:
            await self.ws.send(codec.encode(message, self.encoding))
        except websockets.ConnectionClosed as exc:
            raise _lost(exc) from None

    async def recv(self) -> m.ServerMessage:
        """The next message from the server (a ``closing`` notice is returned like any other)."""
        if self.ws is None:
            raise ConnectionLost("not connected")
        try:
            frame = await self.ws.recv()
        except websockets.ConnectionClosed as exc:
            raise _lost(exc) from None
        try:
            return codec.decode_server(frame, self.encoding)
        except ProtocolError as exc:
            raise ClientError(f"the server sent a frame this client cannot read: {exc}") from None

    async def close(self) -> None:
        """Close the socket politely (never raises)."""
        ws, self.ws = self.ws, None
        if ws is not None:
            # Already gone means nothing is left to tidy.
            with contextlib.suppress(Exception):
                await ws.close()

    def drop(self) -> None:
        """Cut the connection abruptly, as a network failure would (tests use it)."""
        if self.ws is not None:
            self.ws.transport.abort()


def _lost(exc: websockets.ConnectionClosed) -> ConnectionLost:
    received = exc.rcvd
    if received is None:
        return ConnectionLost("the connection to the server was lost")
    return ConnectionLost(close_text(received.code, received.reason), received.code)


async def open_socket(url: str, encoding: codec.Encoding) -> ClientConnection:
    """Open the WebSocket with the subprotocol for ``encoding``; errors in words."""
    address = normalise_url(url)
    json_wanted = encoding is codec.Encoding.JSON
    sub = codec.SUBPROTOCOL_JSON if json_wanted else codec.SUBPROTOCOL_MSGPACK
    try:
        return await connect(
            address,
            subprotocols=[Subprotocol(sub)],
            compression=None,  # frames are tiny; deflate costs memory on both ends
            proxy=None,  # the game server is reached directly, never through a proxy
            max_size=codec.MAX_SERVER_FRAME,
            open_timeout=OPEN_TIMEOUT_S,
            user_agent_header=CLIENT_NAME,
        )
    except websockets.InvalidURI:
        raise ClientError(f"not a server address: {url!r}") from None
    except websockets.InvalidStatus as exc:
        status = exc.response.status_code
        raise ClientError(f"{address} is not a TriPeaks server (HTTP {status})") from None
    except websockets.InvalidHandshake as exc:
        raise ClientError(f"{address} refused the WebSocket handshake: {exc}") from None
    except (TimeoutError, OSError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else "timed out"
        raise ClientError(f"cannot connect to {address}: {detail}") from None
