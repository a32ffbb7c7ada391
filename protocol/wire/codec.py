"""One encode/decode path for every wire dialect (docs/protocol.md, "Encoding").

* ``tripeaks.v2.msgpack`` (preferred): one msgpack map per binary frame.
* ``tripeaks.v2.json``: the same map as a JSON object in a text frame.
* ``tripeaks.v1.msgpack`` and ``tripeaks.v1.json``: the same, in protocol
  version 1, for the clients written to it.

A connection's :class:`Encoding` is its dialect: the encoding and the protocol
version.  Every cache of encoded frames is keyed by it, so it is per dialect.
:func:`encode` writes a message as the dialect's version says it: the fields
a later version added (:class:`~protocol.wire.schema.Since`) are left out or
take their older form.  Decoding reads every version's client frames alike,
except that ``hello.version`` must be the dialect's version.

:func:`decode` (client frames, for the server) and :func:`decode_server`
(server frames, for clients) return a valid message or raise
:class:`~protocol.wire.errors.ProtocolError`; nothing else escapes them, whatever
the input.  :func:`encode` does not validate: the server builds its messages
from checked state, and encoding once per broadcast must stay cheap.

Decoding runs in stages, each with its own error code: frame type, frame
size, parse (msgpack extension types, duplicate and non-string keys refused
while parsing), nesting depth, top-level map, type tag, then the message's
fields (:mod:`protocol.wire.schema`) and its cross-field rules.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterable
from typing import Any, Final, Literal

import msgpack

from protocol.rules.game import HIDDEN, Status
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from protocol.wire.schema import StructNode, compile_struct, register_check, since

SUBPROTOCOL_MSGPACK: Final = "tripeaks.v2.msgpack"
SUBPROTOCOL_JSON: Final = "tripeaks.v2.json"
SUBPROTOCOL_MSGPACK_V1: Final = "tripeaks.v1.msgpack"
SUBPROTOCOL_JSON_V1: Final = "tripeaks.v1.json"
#: Every subprotocol this server speaks, in its order of preference.
SUBPROTOCOLS: Final = (
    SUBPROTOCOL_MSGPACK, SUBPROTOCOL_JSON, SUBPROTOCOL_MSGPACK_V1, SUBPROTOCOL_JSON_V1
)


class Encoding(enum.StrEnum):
    """A dialect: ``binary`` (msgpack) or JSON text, in protocol ``version``."""

    binary: bool
    version: int

    def __new__(cls, value: str, binary: bool, version: int) -> Encoding:
        member = str.__new__(cls, value)
        member._value_ = value
        member.binary = binary  # plain attributes: read on every frame
        member.version = version
        return member

    MSGPACK = "msgpack", True, m.PROTOCOL_VERSION
    JSON = "json", False, m.PROTOCOL_VERSION
    MSGPACK_V1 = "msgpack.v1", True, 1
    JSON_V1 = "json.v1", False, 1


ENCODING_FOR_SUBPROTOCOL: Final = {
    SUBPROTOCOL_MSGPACK: Encoding.MSGPACK,
    SUBPROTOCOL_JSON: Encoding.JSON,
    SUBPROTOCOL_MSGPACK_V1: Encoding.MSGPACK_V1,
    SUBPROTOCOL_JSON_V1: Encoding.JSON_V1,
}
SUBPROTOCOL_FOR_ENCODING: Final = {enc: sub for sub, enc in ENCODING_FOR_SUBPROTOCOL.items()}

#: Largest client-to-server frame, in bytes (UTF-8 bytes for JSON text).
MAX_CLIENT_FRAME: Final = 4096
#: Largest server-to-client frame a client should accept (race_over, room_list).
MAX_SERVER_FRAME: Final = 256 * 1024
#: Deepest nesting of maps and lists; the top-level map is depth 1.
MAX_DEPTH: Final = 6

#: A dialect, or an encoding's name for its latest version.
EncodingName = Encoding | Literal["msgpack", "json"]
#: Each dialect by its value (a member is its own value: both look up alike).
_DIALECTS: Final[dict[str, Encoding]] = {enc.value: enc for enc in Encoding}


def dialect(encoding: EncodingName) -> Encoding:
    """The :class:`Encoding` ``encoding`` names (``"json"``: JSON, latest version)."""
    return _DIALECTS[encoding]


def choose_subprotocol(offered: Iterable[str]) -> str | None:
    """The subprotocol to answer for a client's offer, in the client's order.

    An empty offer means the default, msgpack of version 1 (what clients that
    offer nothing were written for); an offer with nothing this server speaks
    gives ``None`` (the server then refuses the upgrade).
    """
    offered = [p.strip() for p in offered if p.strip()]
    if not offered:
        return SUBPROTOCOL_MSGPACK_V1
    for name in offered:
        if name in ENCODING_FOR_SUBPROTOCOL:
            return name
    return None


def encoding_for(subprotocol: str | None) -> Encoding:
    """The dialect a negotiated subprotocol names (none negotiated: msgpack, version 1)."""
    if subprotocol is None:
        return Encoding.MSGPACK_V1
    return ENCODING_FOR_SUBPROTOCOL[subprotocol]


def offer(encoding: EncodingName) -> list[str]:
    """What a client of this code offers for ``encoding``: its subprotocol of the latest
    version first, then version 1's (for servers that speak only version 1)."""
    binary = dialect(encoding).binary
    return [sub for enc, sub in SUBPROTOCOL_FOR_ENCODING.items() if enc.binary == binary]


# ---- encoding -------------------------------------------------------------
def to_wire(
    message: m.ClientMessage | m.ServerMessage, version: int = m.PROTOCOL_VERSION
) -> dict[str, object]:
    """The message as a plain map in protocol ``version``, tag first (what both
    encodings serialise)."""
    build = _HOT_WIRE.get((type(message), version))
    if build is not None:
        return build(message)
    node = _encoder(type(message), version)
    wire: dict[str, object] = {"t": message.TAG}
    wire.update(node.encode(message))
    return wire


def sent_in(message: m.ServerMessage, encoding: Encoding) -> bool:
    """False for a message newer than the dialect's version (a class with ``SINCE``):
    news a client of that version is not sent."""
    return _SINCE.get(type(message), 1) <= encoding.version


# The frames every room sends several times a second, written out by hand: the
# same maps as the schema walk gives (tests/protocol/wire/test_codec_roundtrip.py compares),
# at a fraction of its cost.
def _progress_wire(message: Any) -> dict[str, object]:
    return {
        "t": m.Progress.TAG,
        "elapsed_ms": message.elapsed_ms,
        "players": [
            {
                "player_id": line.player_id,
                "cleared": line.cleared,
                "stock_left": line.stock_left,
                "moves": line.moves,
                "undos": line.undos,
                "status": line.status,
                "elapsed_ms": line.elapsed_ms,
                "connected": line.connected,
            }
            for line in message.players
        ],
    }


#: Each game status as the wire writes it (a look-up, not an enum's ``value`` property).
_STATUS_WIRE: Final = {status: status.value for status in Status}


def _view_wire(view: m.BoardView, top: object) -> dict[str, object]:
    return {
        "board": view.board,
        "waste_top": top,
        "stock_left": view.stock_left,
        "moves": view.moves,
        "draws": view.draws,
        "undos": view.undos,
        "status": _STATUS_WIRE[view.status],
    }


def _board_wire(message: Any) -> dict[str, object]:
    view = message.view
    return {
        "t": m.SpectatorBoard.TAG,
        "player_id": message.player_id,
        "view": _view_wire(view, view.waste_top),
        "elapsed_ms": message.elapsed_ms,
    }


def _board_entry(message: m.SpectatorBoard) -> dict[str, object]:
    """A board inside a ``spectator_update``: :func:`_board_wire` without its tag."""
    view = message.view
    return {
        "player_id": message.player_id,
        "view": _view_wire(view, view.waste_top),
        "elapsed_ms": message.elapsed_ms,
    }


def _update_wire(message: Any) -> dict[str, object]:
    progress = None
    if message.progress is not None:
        progress = _progress_wire(message.progress)
        del progress["t"]
    boards = [_board_entry(board) for board in message.boards]
    return {"t": m.SpectatorUpdate.TAG, "progress": progress, "boards": boards}


def _board_wire_v1(message: Any) -> dict[str, object]:
    top = message.view.waste_top
    return {
        "t": m.SpectatorBoard.TAG,
        "player_id": message.player_id,
        "view": _view_wire(message.view, None if top == HIDDEN else top),
        "elapsed_ms": message.elapsed_ms,
    }


_HOT_WIRE: Final[dict[tuple[type, int], Callable[[Any], dict[str, object]]]] = {
    (m.Progress, 2): _progress_wire,
    (m.Progress, 1): _progress_wire,
    (m.SpectatorBoard, 2): _board_wire,
    (m.SpectatorBoard, 1): _board_wire_v1,
    (m.SpectatorUpdate, 2): _update_wire,
}


def encode(message: m.ClientMessage | m.ServerMessage, encoding: EncodingName) -> bytes | str:
    """One frame in the dialect: ``bytes`` for msgpack (binary frame), ``str`` for JSON
    (text frame)."""
    enc = _DIALECTS[encoding]
    wire = to_wire(message, enc.version)
    if enc.binary:
        return msgpack.packb(wire, use_bin_type=True)  # type: ignore[no-any-return]
    return json.dumps(wire, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode_msgpack(
    message: m.ClientMessage | m.ServerMessage, version: int = m.PROTOCOL_VERSION
) -> bytes:
    """:func:`encode` for msgpack, typed as ``bytes``."""
    return msgpack.packb(to_wire(message, version), use_bin_type=True)  # type: ignore[no-any-return]


def encode_json(
    message: m.ClientMessage | m.ServerMessage, version: int = m.PROTOCOL_VERSION
) -> str:
    """:func:`encode` for JSON, typed as ``str``."""
    wire = to_wire(message, version)
    return json.dumps(wire, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


#: :func:`encode` for msgpack of a map already in wire form (same bytes as ``packb``).
pack_wire: Final = msgpack.Packer(use_bin_type=True).pack

# A progress frame as encode() writes it starts with these bytes: its map header (3
# entries), then "t": "progress"; the rest is the map's other two entries.
_PROGRESS_HEAD_MSGPACK: Final = b"\x83" + pack_wire("t") + pack_wire(m.Progress.TAG)
_PROGRESS_HEAD_JSON: Final = '{"t":"progress",'
_UPDATE_HEAD_MSGPACK: Final = (
    b"\x83" + pack_wire("t") + pack_wire(m.SpectatorUpdate.TAG) + pack_wire("progress")
)
_UPDATE_HEAD_JSON: Final = '{"t":"spectator_update","progress":'


def encode_update(
    update: m.SpectatorUpdate, encoding: EncodingName, progress_frame: bytes | str | None = None
) -> bytes | str:
    """:func:`encode` of ``update``, reusing ``progress_frame`` (its ``progress`` as
    :func:`encode` wrote it for ``encoding``) when given: the same bytes, less work."""
    enc = _DIALECTS[encoding]
    if update.progress is None or progress_frame is None or enc.version < 2:
        return encode(update, encoding)
    boards = [_board_entry(board) for board in update.boards]
    if enc.binary:
        assert isinstance(progress_frame, bytes)
        if not progress_frame.startswith(_PROGRESS_HEAD_MSGPACK):
            return encode(update, encoding)
        packed = b"\x82" + progress_frame[len(_PROGRESS_HEAD_MSGPACK):]
        return b"".join((_UPDATE_HEAD_MSGPACK, packed, pack_wire("boards"), pack_wire(boards)))
    assert isinstance(progress_frame, str)
    if not progress_frame.startswith(_PROGRESS_HEAD_JSON):
        return encode(update, encoding)
    body = "{" + progress_frame[len(_PROGRESS_HEAD_JSON):]
    listed = json.dumps(boards, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return "".join((_UPDATE_HEAD_JSON, body, ',"boards":', listed, "}"))


# ---- decoding -------------------------------------------------------------
def decode(frame: bytes | str, encoding: EncodingName) -> m.ClientMessage:
    """A client-to-server frame as a message, or :class:`ProtocolError` (a ``hello`` of
    another version than the dialect's is error 21)."""
    message: m.ClientMessage = _decode(frame, encoding, m.CLIENT_MESSAGES, MAX_CLIENT_FRAME)
    if type(message) is m.Hello:
        _check_dialect(message, _DIALECTS[encoding])
    return message


def decode_server(frame: bytes | str, encoding: EncodingName) -> m.ServerMessage:
    """A server-to-client frame as a message (for clients), or :class:`ProtocolError`."""
    return _decode(frame, encoding, m.SERVER_MESSAGES, MAX_SERVER_FRAME)  # type: ignore[no-any-return]


def _decode(
    frame: bytes | str, encoding: EncodingName, registry: dict[str, Any], limit: int
) -> Any:
    try:
        wire = parse_frame(frame, encoding, limit)
        return _build(wire, registry)
    except ProtocolError:
        raise
    except RecursionError:
        raise ProtocolError(ErrorCode.TOO_DEEP) from None
    except Exception as exc:  # the contract: nothing but ProtocolError escapes
        raise ProtocolError(ErrorCode.MALFORMED_FRAME, f"cannot decode frame: {exc}") from None


def parse_frame(frame: bytes | str, encoding: EncodingName, limit: int) -> dict[str, Any]:
    """Frame type, size, parse and depth checks; returns the top-level map."""
    enc = _DIALECTS.get(encoding)
    if enc is None:
        raise ProtocolError(ErrorCode.MALFORMED_FRAME, f"unknown encoding {encoding!r}")
    if enc.binary:
        if not isinstance(frame, bytes | bytearray | memoryview):
            raise ProtocolError(ErrorCode.WRONG_FRAME_TYPE, "text frame on the msgpack subprotocol")
        if len(frame) > limit:
            raise ProtocolError(ErrorCode.FRAME_TOO_LARGE, f"frame over {limit} bytes")
        value = _unpack(bytes(frame), limit)
    else:
        if not isinstance(frame, str):
            raise ProtocolError(ErrorCode.WRONG_FRAME_TYPE, "binary frame on the JSON subprotocol")
        if len(frame) > limit or len(frame.encode("utf-8", "surrogatepass")) > limit:
            raise ProtocolError(ErrorCode.FRAME_TOO_LARGE, f"frame over {limit} bytes")
        value = _load_json(frame)
    if not isinstance(value, dict):
        raise ProtocolError(ErrorCode.NOT_A_MAP)
    _check_depth(value)
    return value


class _ExtensionFound(Exception):
    pass


class _DuplicateKey(Exception):
    pass


class _NonStringKey(Exception):
    pass


def _ext_hook(code: int, data: bytes) -> object:
    raise _ExtensionFound(code)


def _pairs_to_dict(pairs: list[tuple[object, object]]) -> dict[object, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _DuplicateKey()
    for key in out:
        if type(key) is not str:
            raise _NonStringKey()
    return out


def _unpack(data: bytes, limit: int) -> object:
    try:
        return msgpack.unpackb(
            data,
            raw=False,
            use_list=True,
            strict_map_key=False,  # non-string keys get their own code below
            ext_hook=_ext_hook,
            object_pairs_hook=_pairs_to_dict,
            max_str_len=limit,
            max_bin_len=limit,
            max_array_len=limit,
            max_map_len=limit,
            max_ext_len=limit,
        )
    except _ExtensionFound:
        raise ProtocolError(ErrorCode.EXTENSION_TYPE) from None
    except _DuplicateKey:
        raise ProtocolError(ErrorCode.DUPLICATE_KEY) from None
    except _NonStringKey:
        raise ProtocolError(ErrorCode.NON_STRING_KEY) from None
    except msgpack.StackError:
        raise ProtocolError(ErrorCode.TOO_DEEP) from None
    except Exception as exc:
        raise ProtocolError(ErrorCode.MALFORMED_FRAME, f"not valid msgpack: {exc}") from None


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not allowed")


def _json_pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _DuplicateKey()
    return out


def _load_json(text: str) -> object:
    try:
        return json.loads(text, object_pairs_hook=_json_pairs, parse_constant=_reject_constant)
    except _DuplicateKey:
        raise ProtocolError(ErrorCode.DUPLICATE_KEY) from None
    except RecursionError:
        raise ProtocolError(ErrorCode.TOO_DEEP) from None
    except Exception as exc:
        raise ProtocolError(ErrorCode.MALFORMED_FRAME, f"not valid JSON: {exc}") from None


def _check_depth(value: object, depth: int = 1) -> None:
    # msgpack turns a timestamp extension into an object without calling ext_hook.
    if isinstance(value, msgpack.Timestamp | msgpack.ExtType):
        raise ProtocolError(ErrorCode.EXTENSION_TYPE)
    if isinstance(value, dict):
        items: Iterable[object] = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return
    if depth > MAX_DEPTH:
        raise ProtocolError(ErrorCode.TOO_DEEP, f"nested deeper than {MAX_DEPTH} levels")
    for item in items:
        _check_depth(item, depth + 1)


def _build(wire: dict[str, Any], registry: dict[str, Any]) -> Any:
    if "t" not in wire:
        raise ProtocolError(ErrorCode.MISSING_FIELD, "the type tag is missing", path="t")
    tag = wire["t"]
    if type(tag) is not str:
        raise ProtocolError(ErrorCode.WRONG_TYPE, "the type tag must be a string", path="t")
    cls = registry.get(tag)
    if cls is None:
        shown = tag if len(tag) <= 32 else tag[:32] + "..."
        raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"unknown message type {shown!r}", path="t")
    seq = wire.get("seq") if tag == m.MoveRequest.TAG else None
    try:
        return _NODES[cls].decode_map(wire, "", skip="t")
    except ProtocolError as err:
        err.tag = tag
        err.seq = seq if type(seq) is int and 1 <= seq <= m.MAX_SEQ else None
        raise


def error_reply(err: ProtocolError) -> m.Error:
    """The ``error`` message that answers ``err``: its message on one printable line of
    at most 200 characters, and its tag (``ref``) cut to 32."""
    text = printable_line(err.message)[:200]
    ref = err.tag[:32] if err.tag else None
    return m.Error(code=int(err.code), message=text or "error", ref=ref, seq=err.seq)


def printable_line(text: str) -> str:
    """``text`` on one printable line (the wire refuses control characters)."""
    return "".join(ch if ch.isprintable() else " " for ch in text).strip()


# ---- cross-field rules ------------------------------------------------------
def _check_hello(hello: m.Hello) -> None:
    if hello.version not in m.SUPPORTED_VERSIONS:
        supported = ", ".join(str(v) for v in sorted(m.SUPPORTED_VERSIONS))
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_VERSION,
            f"protocol version {hello.version} is not supported (this server speaks {supported})",
            path="version",
        )


def _check_dialect(hello: m.Hello, enc: Encoding) -> None:
    """A ``hello`` speaks the version its connection's subprotocol names."""
    if hello.version != enc.version:
        sub = SUBPROTOCOL_FOR_ENCODING[enc]
        wanted = SUBPROTOCOL_FOR_ENCODING[
            next(e for e in Encoding if e.binary == enc.binary and e.version == hello.version)
        ]
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_VERSION,
            f"this connection speaks protocol version {enc.version} ({sub}); "
            f"offer {wanted} for version {hello.version}",
            path="version",
            tag=m.Hello.TAG,
        )


def _check_move(move: m.MoveRequest) -> None:
    if (move.action is m.MoveAction.PLAY) != (move.position is not None):
        raise ProtocolError(
            ErrorCode.INVALID_COMBINATION,
            "position is required for play and must be null or absent for draw and undo",
            path="position",
        )


def _check_move_result(result: m.MoveResult) -> None:
    if result.accepted == (result.reason is not None):
        raise ProtocolError(
            ErrorCode.INVALID_COMBINATION,
            "reason is set exactly when the move was rejected",
            path="reason",
        )


def _check_race_over(race: m.RaceOver) -> None:
    hidden = (race.seed, race.candidate, race.deal, race.solution)
    if race.daily is None and None in hidden:
        raise ProtocolError(
            ErrorCode.INVALID_COMBINATION,
            "seed, candidate, deal and solution are null only in a daily attempt",
            path="seed",
        )
    if race.deal is not None and (race.deal.waste is None) != race.empty_waste:
        raise ProtocolError(
            ErrorCode.INVALID_COMBINATION,
            "deal.waste is null exactly with empty_waste",
            path="deal.waste",
        )


def _check_options(options: m.RoomOptions) -> None:
    if options.open_boards and options.spectator_delay_s < m.OPEN_BOARDS_MIN_DELAY_S:
        raise ProtocolError(
            ErrorCode.INVALID_COMBINATION,
            f"open_boards needs a spectator_delay_s of at least {m.OPEN_BOARDS_MIN_DELAY_S}",
            path="open_boards",
        )
    if options.daily and (options.practice_seed is not None or options.ghosts):
        raise ProtocolError(
            ErrorCode.INVALID_COMBINATION,
            "a daily attempt is dealt the day's deal: no practice_seed and no ghosts",
            path="daily",
        )
    if options.practice_seed is not None and options.ghosts:
        raise ProtocolError(
            ErrorCode.INVALID_COMBINATION,
            "a ghost race is dealt the ghosts' deal: leave practice_seed out",
            path="ghosts",
        )
    if len({(ghost.race_id, ghost.player_id) for ghost in options.ghosts}) < len(options.ghosts):
        raise ProtocolError(ErrorCode.INVALID_COMBINATION, "a run is named twice", path="ghosts")
    if options.max_players + len(options.ghosts) > m.MAX_PLAYERS:
        raise ProtocolError(
            ErrorCode.INVALID_COMBINATION,
            f"max_players and ghosts together exceed {m.MAX_PLAYERS} racers",
            path="ghosts",
        )


register_check(m.Hello, _check_hello)
register_check(m.RoomOptions, _check_options)
register_check(m.MoveRequest, _check_move)
register_check(m.MoveResult, _check_move_result)
register_check(m.RaceOver, _check_race_over)

_NODES: Final[dict[type, StructNode]] = {
    cls: compile_struct(cls) for cls in (*m.CLIENT_MESSAGES.values(), *m.SERVER_MESSAGES.values())
}
#: Each message class's encoder by version (the latest: the decoding node itself).
_ENCODERS: Final[dict[tuple[type, int], StructNode]] = {
    **{(cls, m.PROTOCOL_VERSION): node for cls, node in _NODES.items()},
    **{(cls, m.PROTOCOL_VERSION): compile_struct(cls) for cls in m.SERVER_VARIANTS},
    **{
        (cls, version): compile_struct(cls, version)
        for cls in (*_NODES, *m.SERVER_VARIANTS)
        for version in m.SUPPORTED_VERSIONS - {m.PROTOCOL_VERSION}
    },
}
#: The classes newer than version 1, and the version each is new in.
_SINCE: Final = {cls: since(cls) for cls, _ in _ENCODERS if since(cls) > 1}


def _encoder(cls: type, version: int) -> StructNode:
    node = _ENCODERS.get((cls, version))
    if node is None:
        raise ValueError(f"protocol version {version} has no {cls.__name__}")
    return node


def node_for(cls: type, version: int | None = None) -> StructNode:
    """The compiled schema of a message or nested class (for docs and tests); with
    ``version``, the encoder of that version."""
    return compile_struct(cls, None if version == m.PROTOCOL_VERSION else version)
