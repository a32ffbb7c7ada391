"""The move fast path's wire work: reading a plain ``move`` and writing its ``move_result``.

Moves are nearly every frame a server reads and answers.  :func:`parse_move`
reads the codec's own ``move`` layout straight from the bytes, and
:func:`move_result_msgpack` writes a :data:`MoveOutcome` (what the race
decided) as the very bytes ``codec.encode_msgpack`` makes of its
:class:`~protocol.wire.messages.MoveResult`, without building the message.
:func:`move_result_message` gives that message for the general path and JSON.
``tests/protocol/wire/test_fast.py`` and ``tests/server/test_fastpath.py`` hold
both to the codec.
"""

from __future__ import annotations

import itertools
from typing import Final

import msgpack

from protocol.rules.cards import ALL_CODES, Card
from protocol.rules.game import Status
from protocol.rules.refusals import Reason
from protocol.wire import messages as m
from protocol.wire.codec import pack_wire

#: ``(waste_top, stock_left, cleared, moves, draws, undos, status)`` after a move: what
#: :meth:`protocol.rules.game.Game.tally` gives.
Tally = tuple[Card | None, int, int, int, int, int, Status]


#: What the race answered to one move: every field of its ``move_result``, and whether
#: the answer is fresh (False: the remembered answer to a resent move).  A plain tuple,
#: read by the indexes below: a tuple subclass (a ``NamedTuple``) costs a tenth of the
#: server's CPU per move in building, unpacking and freeing it.
#:
#: Cards are the engine's card numbers (``ALL_CODES[card]`` is the code); ``uncovered``
#: holds ``(position, card)`` pairs; ``reason`` is ``None`` for an accepted move.
MoveOutcome = tuple[
    int,  # SEQ
    m.MoveAction,  # ACTION
    Reason | None,  # REASON
    int | None,  # POSITION
    Card | None,  # CARD
    tuple[tuple[int, Card], ...],  # UNCOVERED
    tuple[int, ...],  # HIDDEN
    m.MoveAction | None,  # UNDONE
    Tally,  # TALLY
    int,  # PENALTY_MS
    int,  # ELAPSED_MS
    bool,  # FRESH
]
SEQ: Final = 0
ACTION: Final = 1
REASON: Final = 2
POSITION: Final = 3
CARD: Final = 4
UNCOVERED: Final = 5
HIDDEN: Final = 6
UNDONE: Final = 7
TALLY: Final = 8
PENALTY_MS: Final = 9
ELAPSED_MS: Final = 10
FRESH: Final = 11


def resent(outcome: MoveOutcome) -> MoveOutcome:
    """``outcome`` as the answer to a resend of its move (not fresh)."""
    return (*outcome[:FRESH], False)


def move_result_message(outcome: MoveOutcome) -> m.MoveResult:
    """The :class:`~protocol.wire.messages.MoveResult` that answers with ``outcome``."""
    seq, action, reason, position, card, uncovered, hidden, undone, tally, penalty, at, _ = outcome
    top, stock, cleared, moves, draws, undos, status = tally
    return m.MoveResult(
        seq=seq,
        action=action,
        accepted=reason is None,
        reason=reason,
        position=position,
        card=None if card is None else ALL_CODES[card],
        uncovered=tuple(m.Uncovered(p, ALL_CODES[c]) for p, c in uncovered),
        hidden=hidden,
        undone=undone,
        waste_top=None if top is None else ALL_CODES[top],
        stock_left=stock,
        cleared=cleared,
        moves=moves,
        draws=draws,
        undos=undos,
        status=status,
        penalty_ms=penalty,
        elapsed_ms=at,
    )


# ---- the answer frame, from pre-packed pieces ---------------------------------
# An answer is the msgpack map of a MoveResult, keys in the codec's order.  Packing a
# 19-key dict per move costs more than the move, and most of the map is the same from
# one answer to the next: the keys, and per kind of answer most values.  So the frame
# is a byte template (``%b`` where a value goes) filled with ready-packed values.
_PLAY, _DRAW = m.MoveAction.PLAY, m.MoveAction.DRAW
_NIL: Final = b"\xc0"
_SLOT: Final = object()
#: Small non-negative integers, packed (larger ones are packed when needed).
_INTS: Final = tuple(pack_wire(i) for i in range(1 << 14))
_INTS_KNOWN: Final = len(_INTS)
_CARDS: Final = tuple(pack_wire(code) for code in ALL_CODES)
_PLAYING: Final = Status.PLAYING
_PLAYING_BYTES: Final = pack_wire(_PLAYING.value)
_STATUS_BYTES: Final = {status: pack_wire(status.value) for status in Status}

#: Each ``uncovered`` entry (``{"position": p, "card": code}``), packed, by ``(p, card)``.
_UNCOVERED: Final = {
    (p, card): pack_wire({"position": p, "card": code})
    for p in range(28)
    for card, code in enumerate(ALL_CODES)
}
#: Every ``hidden`` list (at most two positions), packed.
_HIDDEN_LISTS: Final = {
    hidden: pack_wire(list(hidden))
    for hidden in ((), *((p,) for p in range(28)), *itertools.product(range(28), repeat=2))
}


def _pieces(keys: tuple[str, ...], values: tuple[object, ...]) -> bytes:
    """Each key packed, followed by its value packed, or by ``%b`` where the value is
    :data:`_SLOT` (filled in per answer)."""
    out = b"".join(
        pack_wire(key) + (b"%b" if value is _SLOT else pack_wire(value))
        for key, value in zip(keys, values, strict=True)
    )
    assert out.count(b"%") == out.count(b"%b"), "a packed constant must not look like a slot"
    return out


_MIDDLE_KEYS: Final = (
    "action", "accepted", "reason", "position", "card", "uncovered", "hidden", "undone"
)
_TAIL_KEYS: Final = (
    "waste_top", "stock_left", "cleared", "moves", "draws", "undos", "status", "penalty_ms",
    "elapsed_ms",
)
#: ``%`` (seq, middle, then the tail's values): the whole frame.
_FRAME: Final[bytes] = (
    msgpack.Packer().pack_map_header(2 + len(_MIDDLE_KEYS) + len(_TAIL_KEYS))
    + _pieces(("t", "seq"), (m.MoveResult.TAG, _SLOT))
    + b"%b"
    + _pieces(_TAIL_KEYS, (_SLOT,) * len(_TAIL_KEYS))
)
# The middles, by kind of answer.  ``hidden`` is an empty list where the codec writes
# the message's empty tuple.
_PLAY_MIDDLE: Final = _pieces(_MIDDLE_KEYS, ("play", True, None, _SLOT, _SLOT, _SLOT, [], None))
_DRAW_MIDDLE: Final = _pieces(_MIDDLE_KEYS, ("draw", True, None, None, _SLOT, [], [], None))
_UNDO_DRAW_MIDDLE: Final = _pieces(_MIDDLE_KEYS, ("undo", True, None, None, None, [], [], "draw"))
_UNDO_PLAY_MIDDLE: Final = _pieces(
    _MIDDLE_KEYS, ("undo", True, None, _SLOT, _SLOT, [], _SLOT, "play")
)
_REFUSED_MIDDLE: Final = _pieces(
    _MIDDLE_KEYS, (_SLOT, False, _SLOT, _SLOT, None, [], [], None)
)


def move_result_msgpack(outcome: MoveOutcome) -> bytes:
    """The ``move_result`` frame of ``outcome``: the bytes of
    ``codec.encode_msgpack(move_result_message(outcome))``."""
    seq, action, reason, position, card, uncovered, hidden, undone, tally, penalty, at, _ = outcome
    top, stock, cleared, moves, draws, undos, status = tally
    ints = _INTS
    if reason is not None:
        middle = _REFUSED_MIDDLE % (pack_wire(action), pack_wire(reason), pack_wire(position))
    elif action is _PLAY:
        # A card lies on at most two others: it turns up none, one or two.
        if not uncovered:
            items = b"\x90"
        elif len(uncovered) == 1:
            items = b"\x91" + _UNCOVERED[uncovered[0]]
        else:
            items = b"\x92" + _UNCOVERED[uncovered[0]] + _UNCOVERED[uncovered[1]]
        middle = _PLAY_MIDDLE % (ints[position], _CARDS[card], items)  # type: ignore[index]
    elif action is _DRAW:
        middle = _DRAW_MIDDLE % _CARDS[card]  # type: ignore[index]
    elif undone is _DRAW:
        middle = _UNDO_DRAW_MIDDLE
    else:
        middle = _UNDO_PLAY_MIDDLE % (
            ints[position], _CARDS[card], _HIDDEN_LISTS[hidden]  # type: ignore[index]
        )
    n = _INTS_KNOWN
    return _FRAME % (
        ints[seq] if seq < n else pack_wire(seq),
        middle,
        _NIL if top is None else _CARDS[top],
        ints[stock],
        ints[cleared],
        ints[moves] if moves < n else pack_wire(moves),
        ints[draws] if draws < n else pack_wire(draws),
        ints[undos] if undos < n else pack_wire(undos),
        _PLAYING_BYTES if status is _PLAYING else _STATUS_BYTES[status],
        ints[penalty] if penalty < n else pack_wire(penalty),
        ints[at] if at < n else pack_wire(at),
    )


# ---- reading a move ------------------------------------------------------------
#: Longest ``move`` frame :func:`parse_move` looks at (the plain ones are 21 to 48 bytes).
_FAST_MOVE_MAX: Final = 64
_MOVE_ACTIONS: Final = {action.value: action for action in m.MoveAction}
_MAX_SEQ: Final = m.MAX_SEQ
#: How the codec (and so every client built on it) writes a ``move``, up to its ``seq``.
_MOVE_HEAD: Final = b"\x84\xa1t\xa4move\xa3seq"
_SEQ_AT: Final = len(_MOVE_HEAD)
#: What follows ``seq`` in the codec's plain moves, and what it means.
_MOVE_TAILS: Final[dict[bytes, tuple[m.MoveAction, int | None]]] = {
    b"\xa6action" + msgpack.packb(action.value) + b"\xa8position" + msgpack.packb(position): (
        action,
        position,
    )
    for action in m.MoveAction
    for position in ([None] if action is not m.MoveAction.PLAY else range(256))
}
#: The shortest frame in that layout: ``seq`` in one byte, the shortest tail.
_SHORTEST_MOVE: Final = _SEQ_AT + 1 + min(len(tail) for tail in _MOVE_TAILS)


def parse_move(frame: bytes) -> tuple[int, m.MoveAction, int | None] | None:
    """``(seq, action, position)`` of a msgpack ``move`` frame in its plain shape, or ``None``.

    The server's hot path.  It accepts only a frame that ``codec.decode`` turns
    into a :class:`~protocol.wire.messages.MoveRequest` with these values: a
    fixmap of string keys, no duplicate (the map's declared size must equal
    the decoded one), no extra key, each value of its exact type and range,
    ``position`` present exactly for ``play``.  Anything else, a bad frame
    included, gives ``None`` and goes through ``codec.decode``, so every
    refusal keeps its error code.

    The codec's own layout (four keys in its order, ``seq`` in its shortest
    form or any unsigned form) is recognised from the bytes; any other layout
    is unpacked and checked key by key.
    """
    if frame[:_SEQ_AT] == _MOVE_HEAD and _SHORTEST_MOVE <= len(frame) <= _FAST_MOVE_MAX:
        # seq: a positive fixint, or uint8, uint16 or uint32 (byte shifts: int.from_bytes
        # costs more than the rest of this function).
        kind = frame[_SEQ_AT]
        if kind < 0x80:
            seq, tail = kind, frame[_SEQ_AT + 1 :]
        elif kind == 0xCD:
            seq, tail = frame[_SEQ_AT + 1] << 8 | frame[_SEQ_AT + 2], frame[_SEQ_AT + 3 :]
        elif kind == 0xCC:
            seq, tail = frame[_SEQ_AT + 1], frame[_SEQ_AT + 2 :]
        elif kind == 0xCE:
            seq, tail = int.from_bytes(frame[_SEQ_AT + 1 : _SEQ_AT + 5]), frame[_SEQ_AT + 5 :]
        else:
            seq, tail = 0, b""
        move = _MOVE_TAILS.get(tail)
        if move is not None and 1 <= seq <= _MAX_SEQ:
            return seq, move[0], move[1]
    return _parse_move_map(frame)


def _parse_move_map(frame: bytes) -> tuple[int, m.MoveAction, int | None] | None:
    """:func:`parse_move` for a frame in any other layout: unpacked, then checked."""
    if len(frame) > _FAST_MOVE_MAX or not frame or frame[0] & 0xF0 != 0x80:
        return None
    try:
        wire = msgpack.unpackb(frame)
    except Exception:
        return None
    if type(wire) is not dict or len(wire) != frame[0] & 0x0F or wire.get("t") != "move":
        return None
    seq, name, position = wire.get("seq"), wire.get("action"), wire.get("position")
    if type(seq) is not int or not 1 <= seq <= m.MAX_SEQ or type(name) is not str:
        return None
    action = _MOVE_ACTIONS.get(name)
    if action is None or len(wire) != (4 if "position" in wire else 3):
        return None
    if position is None:
        return None if action is m.MoveAction.PLAY else (seq, action, None)
    if type(position) is not int or not 0 <= position <= 255 or action is not m.MoveAction.PLAY:
        return None
    return seq, action, position
