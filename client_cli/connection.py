"""The terminal client's socket, driven by a :class:`~protocol.wire.session.ClientSession`.

The session decides what goes on the wire and what the frames mean; this
module only opens the socket, writes the session's frames and hands it the
frames that arrive.  The bots (:mod:`client_cli.bot`) open sockets here too.
"""

from __future__ import annotations

import contextlib
from typing import Final

import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from client_cli.board import UNDO, Action
from client_cli.net import (
    CLIENT_NAME,
    ClientError,
    ConnectionLost,
    ServerRefused,
    close_text,
    normalise_url,
)
from protocol.rules.game import DRAW
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.session import (
    MAX_REDIRECTS,
    BadFrame,
    ClientSession,
    Event,
    Frame,
    HelloRefused,
    Redirected,
    SessionState,
    redirect_url,
)

OPEN_TIMEOUT_S: Final = 10.0
_CONNECTED: Final = (SessionState.HELLO_SENT, SessionState.READY)


class Connection:
    """One connection at a time for ``session``: ``open`` says hello, then frames go both ways.

    In a cluster the socket may be on another node than the one first asked
    (:attr:`home_url`, usually nginx's ``/ws``): a ``moved`` sends :attr:`url` there.
    """

    def __init__(self, url: str, session: ClientSession) -> None:
        self.url = url
        #: The address given: where to start again when the node at :attr:`url` is gone.
        self.home_url = url
        self.session = session
        self.ws: ClientConnection | None = None

    async def open(self) -> m.Welcome:
        """Connect and say hello (with the reconnect token if there is one), following
        ``moved`` to the node that holds the seat."""
        for _ in range(MAX_REDIRECTS + 1):
            await self.close()
            self.ws = await open_socket(self.url, self.session.encoding)
            # The server picked the newest version both speak; the session speaks it too.
            self.session.encoding = codec.encoding_for(self.ws.subprotocol)
            await self.write(self.session.hello())
            moved = await self._welcome()
            if isinstance(moved, m.Welcome):
                return moved
            self.url = redirect_url(self.url, moved.url)
        await self.close()
        raise ClientError("the servers sent this client from node to node too many times")

    def move_to(self, target: str) -> None:
        """Use the node at ``target`` (a ``moved`` URL) from the next :meth:`open` on."""
        self.url = redirect_url(self.url, target)

    async def _welcome(self) -> m.Welcome | m.Moved:
        while True:
            for event in await self.receive():
                if isinstance(event, m.Welcome):
                    return event
                if isinstance(event, Redirected):
                    return event.moved
                if isinstance(event, HelloRefused):
                    await self.close()
                    raise ServerRefused(event.error)
                if isinstance(event, BadFrame):
                    raise unreadable(event)

    async def send(self, message: m.ClientMessage) -> None:
        """Send one message; a closed socket raises :class:`ConnectionLost`."""
        await self.write(self.session.send(message))

    async def write(self, frame: Frame) -> None:
        """Write a frame the session made; a closed socket raises :class:`ConnectionLost`."""
        if self.ws is None:
            raise ConnectionLost("not connected")
        try:
            await self.ws.send(frame)
        except websockets.ConnectionClosed as exc:
            raise self._lost(exc) from None

    async def receive(self) -> list[Event]:
        """The events of the next frame (a bad frame is a :class:`BadFrame` event)."""
        if self.ws is None:
            raise ConnectionLost("not connected")
        try:
            frame = await self.ws.recv()
        except websockets.ConnectionClosed as exc:
            raise self._lost(exc) from None
        return self.session.receive(frame)

    async def close(self) -> None:
        """Close the socket politely (never raises); the session waits for a new hello."""
        ws, self.ws = self.ws, None
        if self.session.state in _CONNECTED:
            self.session.connection_lost()
        if ws is not None:
            # Already gone means nothing is left to tidy.
            with contextlib.suppress(Exception):
                await ws.close()

    def drop(self) -> None:
        """Cut the connection abruptly, as a network failure would (tests use it)."""
        if self.ws is not None:
            self.ws.transport.abort()

    def _lost(self, exc: websockets.ConnectionClosed) -> ConnectionLost:
        if self.session.state in _CONNECTED:
            self.session.connection_lost()
        received = exc.rcvd
        if received is None:
            return ConnectionLost("the connection to the server was lost")
        return ConnectionLost(close_text(received.code, received.reason), received.code)


def unreadable(event: BadFrame) -> ClientError:
    """A frame the client cannot read, in words."""
    return ClientError(f"the server sent a frame this client cannot read: {event.error}")


def wire_move(action: Action) -> tuple[m.MoveAction, int | None]:
    """A board action as the ``move`` message says it: ``(action, position)``."""
    if action == DRAW:
        return m.MoveAction.DRAW, None
    if action == UNDO:
        return m.MoveAction.UNDO, None
    assert isinstance(action, int)
    return m.MoveAction.PLAY, action


async def open_socket(url: str, encoding: codec.Encoding) -> ClientConnection:
    """Open the WebSocket offering ``encoding``'s subprotocols, newest version first (the
    answer's ``subprotocol`` names the dialect to speak); errors in words."""
    address = normalise_url(url)
    try:
        return await connect(
            address,
            subprotocols=[Subprotocol(sub) for sub in codec.offer(encoding)],
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
