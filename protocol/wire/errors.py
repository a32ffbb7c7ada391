"""Wire error codes, WebSocket close codes and the one exception the codec raises.

::

    Exception
     └── ProtocolError          a frame or message broke the protocol (carries an ErrorCode)

Every value here goes on the wire and is documented in ``docs/protocol.md``;
the numbers are stable within protocol version 1 (codes are only ever added).

* ``ErrorCode`` 1..99 are raised by :func:`protocol.wire.codec.decode` while reading
  one frame; 100..199 are session and room errors the server sends in an
  ``error`` message; 200..299 are server-side failures.
* ``CloseCode`` are the WebSocket close codes (RFC 6455 section 7.4) the server
  closes a connection with; 4000..4999 are this application's own.
"""

from __future__ import annotations

import enum
from typing import Final


class ErrorCode(enum.IntEnum):
    """Why a frame or request was refused.  Sent in the ``error`` message."""

    # -- decoding one frame (raised by protocol.wire.codec) --------------------
    MALFORMED_FRAME = 1
    FRAME_TOO_LARGE = 2
    WRONG_FRAME_TYPE = 3
    NOT_A_MAP = 4
    EXTENSION_TYPE = 5
    TOO_DEEP = 6
    NON_STRING_KEY = 7
    DUPLICATE_KEY = 8
    UNKNOWN_TYPE = 9
    MISSING_FIELD = 10
    EXTRA_FIELD = 11
    WRONG_TYPE = 12
    INT_OUT_OF_RANGE = 13
    STRING_TOO_LONG = 14
    STRING_TOO_SHORT = 15
    STRING_NOT_PRINTABLE = 16
    BAD_CHOICE = 17
    LIST_TOO_LONG = 18
    LIST_WRONG_LENGTH = 19
    INVALID_COMBINATION = 20
    UNSUPPORTED_VERSION = 21

    # -- session and room rules (sent by the server) ----------------------
    HELLO_REQUIRED = 100
    ALREADY_HELLO = 101
    NOT_ALLOWED_NOW = 102
    NOT_IN_ROOM = 103
    ALREADY_IN_ROOM = 104
    NOT_HOST = 105
    ROOM_NOT_FOUND = 106
    ROOM_FULL = 107
    SPECTATORS_NOT_ALLOWED = 108
    NO_SUCH_MEMBER = 109
    CANNOT_KICK_SELF = 110
    NOT_ENOUGH_PLAYERS = 111
    PLAYERS_NOT_READY = 112
    SEQ_OUT_OF_ORDER = 113
    RATE_LIMITED = 114
    TOO_MANY_ROOMS = 115
    BAD_SEED = 116
    ALREADY_RACING = 117
    KICKED = 118
    NAME_CLAIMED = 119
    WRONG_KEY = 120
    TOO_MANY_GUESSES = 121
    DAILY_PLAYED = 130
    DAILY_SOLO = 131
    GHOST_UNAVAILABLE = 132
    DAILY_UNAVAILABLE = 133
    ROOM_ELSEWHERE = 134

    # -- server failures -------------------------------------------------
    INTERNAL_ERROR = 200
    SERVER_BUSY = 201
    SHUTTING_DOWN = 202
    CLUSTER_UNAVAILABLE = 203


ERROR_TEXT: Final[dict[ErrorCode, str]] = {
    ErrorCode.MALFORMED_FRAME: "the frame is not valid msgpack or JSON",
    ErrorCode.FRAME_TOO_LARGE: "the frame is larger than the size limit",
    ErrorCode.WRONG_FRAME_TYPE: "text frame on the msgpack subprotocol, or binary frame on JSON",
    ErrorCode.NOT_A_MAP: "a frame must hold one map (object) at the top",
    ErrorCode.EXTENSION_TYPE: "msgpack extension types are not allowed",
    ErrorCode.TOO_DEEP: "the message is nested too deeply",
    ErrorCode.NON_STRING_KEY: "map keys must be strings",
    ErrorCode.DUPLICATE_KEY: "a map holds the same key twice",
    ErrorCode.UNKNOWN_TYPE: "unknown message type",
    ErrorCode.MISSING_FIELD: "a required field is missing",
    ErrorCode.EXTRA_FIELD: "the message has a field its type does not define",
    ErrorCode.WRONG_TYPE: "a field has the wrong type",
    ErrorCode.INT_OUT_OF_RANGE: "an integer is out of its range",
    ErrorCode.STRING_TOO_LONG: "a string is too long",
    ErrorCode.STRING_TOO_SHORT: "a string is too short",
    ErrorCode.STRING_NOT_PRINTABLE: "a string holds characters that are not printable",
    ErrorCode.BAD_CHOICE: "a string is not one of the allowed values",
    ErrorCode.LIST_TOO_LONG: "a list is too long",
    ErrorCode.LIST_WRONG_LENGTH: "a list does not have the required length",
    ErrorCode.INVALID_COMBINATION: "fields that are fine alone do not fit together",
    ErrorCode.UNSUPPORTED_VERSION: "this server does not speak that protocol version",
    ErrorCode.HELLO_REQUIRED: "send hello first",
    ErrorCode.ALREADY_HELLO: "hello was already sent on this connection",
    ErrorCode.NOT_ALLOWED_NOW: "that message is not allowed in this phase or role",
    ErrorCode.NOT_IN_ROOM: "join or create a room first",
    ErrorCode.ALREADY_IN_ROOM: "leave the current room first",
    ErrorCode.NOT_HOST: "only the host may do that",
    ErrorCode.ROOM_NOT_FOUND: "no room has that code",
    ErrorCode.ROOM_FULL: "the room is full",
    ErrorCode.SPECTATORS_NOT_ALLOWED: "this room does not allow spectators",
    ErrorCode.NO_SUCH_MEMBER: "no member of this room has that player id",
    ErrorCode.CANNOT_KICK_SELF: "the host cannot kick themselves",
    ErrorCode.NOT_ENOUGH_PLAYERS: "not enough players to start",
    ErrorCode.PLAYERS_NOT_READY: "not every player is ready",
    ErrorCode.SEQ_OUT_OF_ORDER: "move sequence number out of order",
    ErrorCode.RATE_LIMITED: "too many messages; slow down",
    ErrorCode.TOO_MANY_ROOMS: "this connection has created too many rooms",
    ErrorCode.BAD_SEED: "the practice seed cannot be dealt with these options",
    ErrorCode.ALREADY_RACING: "that player is racing in this room and cannot spectate it",
    ErrorCode.KICKED: "the host removed you from this room; you may take a seat again once "
    "its next race has started",
    ErrorCode.NAME_CLAIMED: "that name is claimed: send its key in hello, or choose another "
    "name",
    ErrorCode.WRONG_KEY: "that key is not the key of this claimed name",
    ErrorCode.TOO_MANY_GUESSES: "too many wrong keys for this name or from your address; "
    "wait a minute",
    ErrorCode.DAILY_PLAYED: "you have played today's daily deal already; it opens again tomorrow "
    "(UTC)",
    ErrorCode.DAILY_SOLO: "a daily attempt is solo and fixed: nobody can join it, its options "
    "cannot change and it has no rematch",
    ErrorCode.GHOST_UNAVAILABLE: "that run cannot be raced: no stored race has that player, or "
    "it is a daily attempt whose day is not over",
    ErrorCode.DAILY_UNAVAILABLE: "the daily deal cannot be dealt right now; try again shortly",
    ErrorCode.ROOM_ELSEWHERE: "this room is on another node of the cluster; a version-2 client "
    "is sent there with moved, a version-1 client connects to the address this error names",
    ErrorCode.INTERNAL_ERROR: "internal server error",
    ErrorCode.SERVER_BUSY: "the server is busy; try again later",
    ErrorCode.SHUTTING_DOWN: "the server is shutting down",
    ErrorCode.CLUSTER_UNAVAILABLE: "this node cannot reach the cluster's directory (Redis) now; "
    "rooms on this node go on, try again in a few seconds",
}


class CloseCode(enum.IntEnum):
    """WebSocket close codes the server uses (RFC 6455 section 7.4.1, then 4000+)."""

    NORMAL = 1000
    GOING_AWAY = 1001
    PROTOCOL_ERROR = 1002
    UNSUPPORTED_DATA = 1003
    INVALID_PAYLOAD = 1007
    POLICY_VIOLATION = 1008
    MESSAGE_TOO_BIG = 1009
    INTERNAL_ERROR = 1011
    TRY_AGAIN_LATER = 1013
    UNSUPPORTED_VERSION = 4000
    HELLO_TIMEOUT = 4001
    IDLE_TIMEOUT = 4002
    REPLACED = 4003
    TOO_MANY_ERRORS = 4004
    NO_SUBPROTOCOL = 4005


CLOSE_TEXT: Final[dict[CloseCode, str]] = {
    CloseCode.NORMAL: "normal closure",
    CloseCode.GOING_AWAY: "server shutting down",
    CloseCode.PROTOCOL_ERROR: "protocol error",
    CloseCode.UNSUPPORTED_DATA: "wrong frame type for the subprotocol",
    CloseCode.INVALID_PAYLOAD: "a text frame that is not valid UTF-8",
    CloseCode.POLICY_VIOLATION: "abuse or repeated rate-limit violations",
    CloseCode.MESSAGE_TOO_BIG: "frame over the size limit",
    CloseCode.INTERNAL_ERROR: "internal server error",
    CloseCode.TRY_AGAIN_LATER: "server overloaded",
    CloseCode.UNSUPPORTED_VERSION: "unsupported protocol version",
    CloseCode.HELLO_TIMEOUT: "no hello in time",
    CloseCode.IDLE_TIMEOUT: "idle timeout",
    CloseCode.REPLACED: "replaced by a newer connection with the same token",
    CloseCode.TOO_MANY_ERRORS: "too many bad frames",
    CloseCode.NO_SUBPROTOCOL: "none of the offered subprotocols is supported",
}

#: The close code to use when the server decides a decode error ends the
#: connection (for most codes it replies with ``error`` and keeps going).
CLOSE_FOR_ERROR: Final[dict[ErrorCode, CloseCode]] = {
    ErrorCode.FRAME_TOO_LARGE: CloseCode.MESSAGE_TOO_BIG,
    ErrorCode.WRONG_FRAME_TYPE: CloseCode.UNSUPPORTED_DATA,
    ErrorCode.UNSUPPORTED_VERSION: CloseCode.UNSUPPORTED_VERSION,
    ErrorCode.RATE_LIMITED: CloseCode.POLICY_VIOLATION,
    ErrorCode.INTERNAL_ERROR: CloseCode.INTERNAL_ERROR,
    ErrorCode.SHUTTING_DOWN: CloseCode.GOING_AWAY,
}


class ProtocolError(Exception):
    """A frame or message that breaks the protocol.

    ``code`` is the stable :class:`ErrorCode`; ``detail`` says what exactly
    was wrong and ``path`` where (``"options.max_players"``), for the human
    ``message`` of the ``error`` reply.  ``tag`` is the message type when it
    was known, and ``seq`` the move's sequence number when there was one.
    """

    def __init__(
        self,
        code: ErrorCode,
        detail: str = "",
        *,
        path: str = "",
        tag: str | None = None,
        seq: int | None = None,
    ) -> None:
        self.code = code
        self.detail = detail or ERROR_TEXT[code]
        self.path = path
        self.tag = tag
        self.seq = seq
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """A one-line human explanation, naming the field when known."""
        where = f"{self.path}: " if self.path else ""
        return f"{where}{self.detail}"

    @property
    def close_code(self) -> CloseCode:
        """The close code to use if the server closes the connection for this error."""
        return CLOSE_FOR_ERROR.get(self.code, CloseCode.PROTOCOL_ERROR)
