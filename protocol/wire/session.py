"""A client's side of the protocol without a socket: :class:`ClientSession`.

The session turns what a client wants to say into frames and the frames the
server sends into events, and keeps what a connection needs across drops:
the reconnect token, the next move number and the moves sent but not yet
answered.  It never touches a socket, a clock or randomness; the terminal
client, the plain mode and the bots drive it from thin asyncio loops::

    session = ClientSession("ann")
    await ws.send(session.hello())
    for event in session.receive(await ws.recv()):
        ...  # a ServerMessage, or MoveAnswered, HelloRefused, Redirected, BadFrame
    seq, frame = session.move(m.MoveAction.DRAW)
    await ws.send(frame)

Frames go out as the methods return them (``hello``, ``send``, ``move``,
``resend``, ``resend_after_resync``): the loop writes each one at once, or
drops it while the socket is down (moves stay in flight and go again after
the ``resync``).

Move numbers follow docs/protocol.md: ``seq`` is 1 for the first move of each
race; answers come in order, so an answer settles its move and every older
one; after a reconnect the server's ``resync`` says which moves it handled
(``last_seq``) and the rest are sent again under their numbers.

:func:`read_move_answer` reads a msgpack ``move_result`` in the codec's own
layout without building the message, for the load generator's hot path.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, NamedTuple

from protocol.rules.cards import RANKS, SUITS
from protocol.rules.game import Status
from protocol.rules.refusals import Reason
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ProtocolError

#: What goes on the wire: ``bytes`` for a binary frame (msgpack), ``str`` for text (JSON).
Frame = bytes | str


class SessionState(enum.Enum):
    """Where a session stands; a method called in the wrong state raises :class:`SessionMisuse`."""

    NEW = "new"  # nothing sent yet
    HELLO_SENT = "hello_sent"  # waiting for ``welcome``
    READY = "ready"  # welcomed: messages and moves go out
    DISCONNECTED = "disconnected"  # the socket is gone; ``hello`` again resumes the seat
    CLOSED = "closed"  # closed for good


class SessionMisuse(RuntimeError):
    """A session method was called in a state where it means nothing (a bug in the loop)."""


@dataclass(frozen=True, slots=True)
class MoveAnswered:
    """The server's first answer to a move in flight (later copies come as plain ``MoveResult``)."""

    result: m.MoveResult
    move: m.MoveRequest


@dataclass(frozen=True, slots=True)
class HelloRefused:
    """The server answered ``hello`` with an ``error``; the session is disconnected."""

    error: m.Error


@dataclass(frozen=True, slots=True)
class Redirected:
    """The server answered ``hello`` with ``moved``: the seat is on another node, at
    :func:`redirect_url`; the session is disconnected, ready to say ``hello`` there."""

    moved: m.Moved


@dataclass(frozen=True, slots=True)
class BadFrame:
    """A frame that does not decode; the frame is dropped and the session goes on."""

    error: ProtocolError


Event = m.ServerMessage | MoveAnswered | HelloRefused | Redirected | BadFrame

#: ``moved`` answers followed in a row before a client gives up (a loop of nodes is a bug).
MAX_REDIRECTS: Final = 3


def redirect_url(current: str, target: str) -> str:
    """Where a ``moved`` sends a client connected to ``current``: ``target`` itself when it
    is a ``ws://`` or ``wss://`` URL, else that path on ``current``'s scheme and host."""
    if target.startswith(("ws://", "wss://")):
        return target
    parts = urllib.parse.urlsplit(current)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, target, "", ""))

_LIVE: Final = frozenset({SessionState.HELLO_SENT, SessionState.READY, SessionState.DISCONNECTED})


class ClientSession:
    """One player's (or spectator's, or bot's) protocol state, across reconnects."""

    def __init__(
        self,
        name: str,
        *,
        bot: bool = False,
        client: str = "",
        token: str | None = None,
        encoding: codec.Encoding = codec.Encoding.MSGPACK,
        key: str | None = None,
        spectator_update: bool = False,
    ) -> None:
        self.name = name
        #: The claimed name's secret key, sent in every ``hello`` (docs/players.md).
        self.key = key
        self.bot = bot
        self.client = client
        #: Asks, in ``hello``, for ``spectator_update`` frames while spectating.
        self.spectator_update = spectator_update
        #: The reconnect token: sent in ``hello``, replaced by each ``welcome``.
        self.token = token
        #: The connection's dialect: the encoding and the protocol version its hello names
        #: (a client that offered several subprotocols sets the one the server chose).
        self.encoding = encoding
        self.state = SessionState.NEW
        self.welcome: m.Welcome | None = None
        #: The ``seq`` the next new move gets.
        self.next_seq = 1
        self._in_flight: list[m.MoveRequest] = []

    def _guard(self, method: str, allowed: Iterable[SessionState]) -> None:
        if self.state not in allowed:
            raise SessionMisuse(f"{method}() cannot be called in state {self.state.name}")

    @property
    def in_flight(self) -> tuple[m.MoveRequest, ...]:
        """The moves sent and not answered yet, oldest first."""
        return tuple(self._in_flight)

    # ---- the connection ---------------------------------------------------------
    def hello(self) -> Frame:
        """The ``hello`` that opens a connection (with the reconnect token, if any)."""
        self._guard("hello", (SessionState.NEW, SessionState.DISCONNECTED))
        self.state = SessionState.HELLO_SENT
        hello = m.Hello(
            name=self.name, version=self.encoding.version, token=self.token, bot=self.bot,
            client=self.client, key=self.key, spectator_update=self.spectator_update,
        )
        return codec.encode(hello, self.encoding)

    def connection_lost(self) -> None:
        """The socket is gone: wait for :meth:`hello` on a new one (moves stay in flight)."""
        self._guard("connection_lost", _LIVE)
        self.state = SessionState.DISCONNECTED

    def close(self) -> None:
        """Closed for good; nothing more is sent or read."""
        self.state = SessionState.CLOSED

    # ---- sending ----------------------------------------------------------------
    def send(self, message: m.ClientMessage) -> Frame:
        """``message`` as a frame; moves go through :meth:`move`, which numbers them."""
        self._guard("send", (SessionState.READY,))
        if isinstance(message, m.MoveRequest):
            raise SessionMisuse("send() does not take moves: move() numbers them")
        return codec.encode(message, self.encoding)

    def move(self, action: m.MoveAction, position: int | None = None) -> tuple[int, Frame]:
        """Number a new move, keep it in flight and return ``(seq, frame)``.

        Allowed while disconnected too: the frame is then not sent, and the
        move goes out after the ``resync`` (:meth:`resend_after_resync`).
        """
        self._guard("move", _LIVE)
        request = m.MoveRequest(self.next_seq, action, position)
        self.next_seq += 1
        self._in_flight.append(request)
        return request.seq, codec.encode(request, self.encoding)

    def resend(self, seq: int) -> Frame:
        """Move ``seq``, still in flight, again under its number (after ``RATE_LIMITED``)."""
        self._guard("resend", (SessionState.READY,))
        for request in self._in_flight:
            if request.seq == seq:
                return codec.encode(request, self.encoding)
        raise SessionMisuse(f"resend(): move {seq} is not in flight")

    def refused(self, seq: int) -> None:
        """Move ``seq`` was refused unhandled: drop it and the later ones; reuse the number."""
        self._guard("refused", _LIVE)
        if any(request.seq == seq for request in self._in_flight):
            self._in_flight = [r for r in self._in_flight if r.seq < seq]
            self.next_seq = seq

    def resend_after_resync(self, last_seq: int) -> list[Frame]:
        """The frames to send after a ``resync`` whose ``last_seq`` is given.

        Moves up to ``last_seq`` are handled (their answers were lost with the
        old socket); the rest go again, numbered on from ``last_seq + 1``.
        Moves in flight are consecutive, so that keeps their numbers whenever
        the server has handled a prefix of them; if it is behind (frames were
        lost before it), they are renumbered so that no gap is left.
        """
        self._guard("resend_after_resync", (SessionState.READY,))
        kept = [r for r in self._in_flight if r.seq > last_seq]
        self._in_flight = [
            dataclasses.replace(r, seq=last_seq + n) for n, r in enumerate(kept, 1)
        ]
        self.next_seq = last_seq + 1 + len(kept)
        return [codec.encode(r, self.encoding) for r in self._in_flight]

    def restart_moves(self, next_seq: int = 1) -> None:
        """Forget every move in flight and number on from ``next_seq`` (a new race, a new seat)."""
        self._guard("restart_moves", _LIVE)
        self._in_flight.clear()
        self.next_seq = next_seq

    # ---- receiving --------------------------------------------------------------
    def receive(self, frame: Frame) -> list[Event]:
        """The events one frame from the server brings (one, as it is).

        A frame that does not decode gives :class:`BadFrame`; nothing else
        is raised for any input.
        """
        self._guard("receive", (SessionState.HELLO_SENT, SessionState.READY))
        try:
            message = codec.decode_server(frame, self.encoding)
        except ProtocolError as err:
            return [BadFrame(err)]
        if self.state is SessionState.HELLO_SENT:
            return [self._before_welcome(message)]
        return [self._on_message(message)]

    def _before_welcome(self, message: m.ServerMessage) -> Event:
        if isinstance(message, m.Welcome):
            self.state = SessionState.READY
            self.welcome = message
            self.token = message.token
            if not message.resumed:
                self.restart_moves()  # a new seat: the old moves belong to nobody
        elif isinstance(message, m.Error):
            self.state = SessionState.DISCONNECTED
            return HelloRefused(message)
        elif isinstance(message, m.Moved):
            self.state = SessionState.DISCONNECTED
            return Redirected(message)
        return message

    def _on_message(self, message: m.ServerMessage) -> Event:
        if isinstance(message, m.MoveResult):
            return self._answer(message)
        if isinstance(message, m.RaceStart):
            self.restart_moves()  # every race numbers its moves from 1
        return message

    def _answer(self, result: m.MoveResult) -> Event:
        for index, request in enumerate(self._in_flight):
            if request.seq == result.seq:
                # Answers come in order: anything older was answered on a lost socket.
                del self._in_flight[: index + 1]
                return MoveAnswered(result, request)
        return result


# ---- the fast reader -----------------------------------------------------------
class MoveAnswer(NamedTuple):
    """What a racing client reads of a ``move_result`` to follow its board."""

    seq: int
    action: m.MoveAction
    accepted: bool
    reason: Reason | None
    position: int | None
    card: str | None
    #: ``(position, card)`` of each card the move turned face up.
    uncovered: tuple[tuple[int, str], ...]
    hidden: tuple[int, ...]
    undone: m.MoveAction | None
    waste_top: str | None
    stock_left: int
    cleared: int
    status: Status


def answer_of(result: m.MoveResult) -> MoveAnswer:
    """The :class:`MoveAnswer` of a decoded ``move_result``."""
    return MoveAnswer(
        result.seq, result.action, result.accepted, result.reason, result.position, result.card,
        tuple((u.position, u.card) for u in result.uncovered), result.hidden, result.undone,
        result.waste_top, result.stock_left, result.cleared, result.status,
    )


def _pack(value: object) -> bytes:
    packed: bytes = codec.pack_wire(value)
    return packed


def _packed(value: object) -> bytes:
    return re.escape(_pack(value))


def _one_of(values: Iterable[object]) -> bytes:
    return b"(" + b"|".join(_packed(v) for v in values) + b")"


#: A card code: every rank with every suit (a class each, cheaper to match than 52 words).
_CODES: Final = b"\xa2[" + re.escape(RANKS.encode()) + b"][" + re.escape(SUITS.encode()) + b"]"
_UINT: Final = rb"(?:[\x00-\x7f]|\xcc.|\xcd..|\xce....)"  # all within MAX_SAFE_INT
#: 1..MAX_SEQ in any unsigned form.
_SEQ: Final = rb"([\x01-\x7f]|\xcc[\x01-\xff]|\xcd(?!\x00\x00)..|\xce(?!\x00{4})[\x00-\x7f]...)"
_POSITION: Final = rb"[\x00-\x1b]"  # a peak position, 0..27
_ITEM: Final = b"\x82" + _packed("position") + _POSITION + _packed("card") + _CODES
#: Bytes of one ``uncovered`` item: its position at offset 10, its card at 17 and 18.
_ITEM_SIZE: Final = 19
_ACTIONS: Final = [a.value for a in m.MoveAction]
_REASON_KEY: Final = _packed("reason")
#: Each field's value as the codec writes it, key included after the first (a group for what
#: :class:`MoveAnswer` reads).  ``accepted`` and ``reason`` go together: the one is true
#: exactly when the other is null.  Arrays are spelled out by length (at most two items).
_VALUE: Final[dict[str, bytes]] = {
    "seq": _SEQ,
    "action": _one_of(_ACTIONS),
    "accepted": b"(?:(\xc3)" + _REASON_KEY + b"\xc0|\xc2" + _REASON_KEY
    + _one_of(int(r) for r in Reason) + b")",
    "reason": b"",
    "position": rb"(\xc0|[\x00-\x7f]|\xcc.)",
    "card": b"(\xc0|" + _CODES + b")",
    "uncovered": b"(\x90|\x91" + _ITEM + b"|\x92" + _ITEM + _ITEM + b")",
    "hidden": b"(\x90|\x91" + _POSITION + b"|\x92" + _POSITION * 2 + b")",
    "undone": _one_of([None, *_ACTIONS]),
    "waste_top": b"(\xc0|" + _CODES + b")",
    "stock_left": rb"([\x00-\x18])",
    "cleared": rb"([\x00-\x1c])",
    "moves": _UINT,
    "draws": _UINT,
    "undos": _UINT,
    "status": _one_of(s.value for s in Status),
    "penalty_ms": _UINT,
    "elapsed_ms": _UINT,
}
_FIELDS: Final = [f.name for f in dataclasses.fields(m.MoveResult)]
assert sorted(_FIELDS) == sorted(_VALUE), "every move_result field has its pattern"
assert _FIELDS.index("reason") == _FIELDS.index("accepted") + 1
#: A whole ``move_result`` frame in the codec's layout: the tag first, then the fields in order.
_ANSWER: Final = re.compile(
    b"\xde" + (len(_FIELDS) + 1).to_bytes(2, "big") + _packed("t") + _packed(m.MoveResult.TAG)
    + b"".join(_packed(name) + _VALUE[name] for name in _FIELDS if name != "reason"),
    re.DOTALL,
)
_ACTION_OF: Final = {_pack(a.value): a for a in m.MoveAction}
_UNDONE_OF: Final = {b"\xc0": None, **_ACTION_OF}
_REASON_OF: Final = {_pack(int(r)): r for r in Reason}
_STATUS_OF: Final = {_pack(s.value): s for s in Status}
#: Packed values to what they mean, so that reading one is a single look-up.
_CARD_OF: Final[dict[bytes, str | None]] = {
    b"\xc0": None, **{_pack(r + s): r + s for r in RANKS for s in SUITS}
}
_POSITION_OF: Final[dict[bytes, int | None]] = {
    b"\xc0": None, **{_pack(p): p for p in range(128)},
    **{b"\xcc" + bytes([p]): p for p in range(256)},
}
#: ``uncovered`` of no or one card, and every ``hidden``, by their packed arrays.
_UNCOVERED_OF: Final[dict[bytes, tuple[tuple[int, str], ...]]] = {
    b"\x90": (),
    **{
        b"\x91" + _pack({"position": p, "card": code}): ((p, code),)
        for p in range(28)
        for code in (r + s for r in RANKS for s in SUITS)
    },
}
_HIDDEN_OF: Final[dict[bytes, tuple[int, ...]]] = {
    b"\x90": (),
    **{bytes([0x91, p]): (p,) for p in range(28)},
    **{bytes([0x92, p, q]): (p, q) for p in range(28) for q in range(28)},
}
_new_answer: Final = tuple.__new__  # MoveAnswer's own __new__ is a Python call: too slow here


def _two_items(packed: bytes) -> tuple[tuple[int, str], ...]:
    """The ``(position, card)`` pairs of an ``uncovered`` of two, array header included."""
    return (packed[11], _CARD_OF[packed[17:20]]), (packed[30], _CARD_OF[packed[36:39]])  # type: ignore[return-value]


def read_move_answer(frame: bytes) -> MoveAnswer | None:
    """A msgpack ``move_result`` frame laid out as the codec writes it, read; else ``None``.

    What it reads is what :func:`codec.decode_server` would give (the layout
    pins every value's type and range; tests/protocol/wire/test_session.py
    holds the two readings together); any other frame, a ``move_result`` in
    another key order included, gives ``None`` and is for the full decoder.
    The load generator reads every answer with it, so it is written for speed.
    """
    found = _ANSWER.fullmatch(frame)
    if found is None:
        return None
    (seq, action, accepted, reason, position, card, uncovered, hidden, undone, top, stock,
     cleared, status) = found.groups()
    return _new_answer(
        MoveAnswer,
        (
            seq[0] if len(seq) == 1 else int.from_bytes(seq[1:]),
            _ACTION_OF[action],
            accepted is not None,
            None if reason is None else _REASON_OF[reason],
            _POSITION_OF[position],
            _CARD_OF[card],
            _UNCOVERED_OF[uncovered] if len(uncovered) <= _ITEM_SIZE + 1 else _two_items(uncovered),
            _HIDDEN_OF[hidden],
            _UNDONE_OF[undone],
            _CARD_OF[top],
            stock[0],
            cleared[0],
            _STATUS_OF[status],
        ),
    )
