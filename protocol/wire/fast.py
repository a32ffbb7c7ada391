"""The fast paths' wire work: moves and their answers, and a progress flush's frames.

Moves are nearly every frame a server reads and answers.  :func:`parse_move`
reads the codec's own ``move`` layout straight from the bytes, and
:func:`move_result_msgpack` writes a :data:`MoveOutcome` (what the race
decided) as the very bytes ``codec.encode_msgpack`` makes of its
:class:`~protocol.wire.messages.MoveResult`, without building the message.
:func:`move_result_message` gives that message for the general path and JSON.

After the answers, the progress flushes send the most frames: a ``progress`` to
every member of a racing room a few times a second, and the boards that changed
to its spectators.  A flush is made as plain rows (:data:`ProgressRow`,
:data:`BoardRow`); :func:`progress_msgpack`, :func:`update_msgpack` and
:func:`board_msgpack` write them as the codec would write their messages
(:func:`progress_message`, :func:`board_message`), which the general path and
the other dialects still build.

``tests/protocol/wire/test_fast.py``, ``tests/server/test_fastpath.py`` and
``tests/server/test_flush_fastpath.py`` hold all of it to the codec.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgpack

from protocol.rules.cards import ALL_CODES, Card
from protocol.rules.game import HIDDEN, Status
from protocol.rules.refusals import Reason
from protocol.wire import messages as m
from protocol.wire.codec import pack_wire

#: What the race answered to one move: every field of its ``move_result``, and whether
#: the answer is fresh (False: the remembered answer to a resent move).  A plain tuple,
#: read by the indexes below: a tuple subclass (a ``NamedTuple``) costs a tenth of the
#: server's CPU per move in building, unpacking and freeing it.
#:
#: The race keeps thousands for resends, so an outcome holds only ints, strs, ``None``
#: and bools: the first garbage collection that meets it untracks it for good.  An enum
#: member would keep it tracked, and so might a nested tuple (a collection may untrack
#: that only after it looked at the outcome).  Hence ``action``, ``undone`` and
#: ``status`` are the wire's strings; ``reason`` is the refusal's number (``None``: the
#: move was made); the tally (:meth:`protocol.rules.game.Game.tally`) has a field per
#: value; ``TURNED`` and ``TURNED_2`` hold the cards a play turned up (:func:`face`
#: numbers) or the positions an undone play turned down again, ``None`` where there is
#: none.  Cards are the engine's card numbers (``ALL_CODES[card]`` is the code).  At most
#: 19 fields: CPython reuses freed tuples up to that size.
MoveOutcome = tuple[
    int,  # SEQ
    str,  # ACTION
    int | None,  # REASON
    int | None,  # POSITION
    Card | None,  # CARD
    int | None,  # TURNED
    int | None,  # TURNED_2
    str | None,  # UNDONE
    Card | None,  # WASTE_TOP
    int,  # STOCK_LEFT
    int,  # CLEARED
    int,  # MOVES
    int,  # DRAWS
    int,  # UNDOS
    str,  # STATUS
    int,  # PENALTY_MS
    int,  # ELAPSED_MS
    bool,  # FRESH
]
#: ``undone`` as the message's type from its wire value.
_UNDONE: Final[dict[str, m.UndoneAction]] = {"play": m.MoveAction.PLAY, "draw": m.MoveAction.DRAW}

SEQ: Final = 0
ACTION: Final = 1
REASON: Final = 2
POSITION: Final = 3
CARD: Final = 4
TURNED: Final = 5
TURNED_2: Final = 6
UNDONE: Final = 7
WASTE_TOP: Final = 8
STOCK_LEFT: Final = 9
CLEARED: Final = 10
MOVES: Final = 11
DRAWS: Final = 12
UNDOS: Final = 13
STATUS: Final = 14
PENALTY_MS: Final = 15
ELAPSED_MS: Final = 16
FRESH: Final = 17


#: How many card numbers there are: the stride of :func:`face`.
_DECK: Final = len(ALL_CODES)


def face(position: int, card: Card) -> int:
    """An ``uncovered`` entry of a :data:`MoveOutcome`: ``card`` face up at ``position``."""
    return position * _DECK + card


def resent(outcome: MoveOutcome) -> MoveOutcome:
    """``outcome`` as the answer to a resend of its move (not fresh)."""
    return (*outcome[:FRESH], False)


def move_result_message(outcome: MoveOutcome) -> m.MoveResult:
    """The :class:`~protocol.wire.messages.MoveResult` that answers with ``outcome``."""
    (seq, action, reason, position, card, turned, turned_2, undone,
     top, stock, cleared, moves, draws, undos, status, penalty, at, _) = outcome
    turns = tuple(t for t in (turned, turned_2) if t is not None)
    return m.MoveResult(
        seq=seq,
        action=m.MoveAction(action),
        accepted=reason is None,
        reason=None if reason is None else Reason(reason),
        position=position,
        card=None if card is None else ALL_CODES[card],
        uncovered=(
            tuple(m.Uncovered(f // _DECK, ALL_CODES[f % _DECK]) for f in turns)
            if undone is None else ()
        ),
        hidden=() if undone is None else turns,
        undone=None if undone is None else _UNDONE[undone],
        waste_top=None if top is None else ALL_CODES[top],
        stock_left=stock,
        cleared=cleared,
        moves=moves,
        draws=draws,
        undos=undos,
        status=Status(status),
        penalty_ms=penalty,
        elapsed_ms=at,
    )


# ---- the answer frame, from pre-packed pieces ---------------------------------
# An answer is the msgpack map of a MoveResult, keys in the codec's order.  Packing a
# 19-key dict per move costs more than the move, and most of the map is the same from
# one answer to the next: the keys, and per kind of answer most values.  So each kind
# has a byte template (``%b`` where a value goes), filled with ready-packed values.
_NIL: Final = b"\xc0"
_SLOT: Final = object()
#: Small non-negative integers, packed (larger ones are packed when needed).
_INTS: Final = tuple(pack_wire(i) for i in range(1 << 14))
_INTS_KNOWN: Final = len(_INTS)
_CARDS: Final = tuple(pack_wire(code) for code in ALL_CODES)
_PLAYING_BYTES: Final = pack_wire(Status.PLAYING.value)
_STATUS_BYTES: Final = {status.value: pack_wire(status.value) for status in Status}
_ACTION_BYTES: Final = {action.value: pack_wire(action.value) for action in m.MoveAction}

#: Each ``uncovered`` entry (``{"position": p, "card": code}``), packed, by its :func:`face`.
_UNCOVERED: Final = tuple(
    pack_wire({"position": p, "card": code}) for p in range(28) for code in ALL_CODES
)


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
_MAP_HEAD: Final[bytes] = msgpack.Packer().pack_map_header(2 + len(_MIDDLE_KEYS) + len(_TAIL_KEYS))


def _frame(*middle: object) -> bytes:
    """The frame of one kind of answer, ``%`` (seq, the middle's slots, the tail's values):
    ``middle`` are the values of :data:`_MIDDLE_KEYS` (:data:`_SLOT` for a slot)."""
    return (
        _MAP_HEAD
        + _pieces(("t", "seq"), (m.MoveResult.TAG, _SLOT))
        + _pieces(_MIDDLE_KEYS, middle)
        + _pieces(_TAIL_KEYS, (_SLOT,) * len(_TAIL_KEYS))
    )


# The frames, by kind of answer.  ``hidden`` is an empty list where the codec writes
# the message's empty tuple.
_PLAY_FRAME: Final = _frame("play", True, None, _SLOT, _SLOT, _SLOT, [], None)
_DRAW_FRAME: Final = _frame("draw", True, None, None, _SLOT, [], [], None)
_UNDO_DRAW_FRAME: Final = _frame("undo", True, None, None, None, [], [], "draw")
_UNDO_PLAY_FRAME: Final = _frame("undo", True, None, _SLOT, _SLOT, [], _SLOT, "play")
_REFUSED_FRAME: Final = _frame(_SLOT, False, _SLOT, _SLOT, None, [], [], None)


def move_result_msgpack(outcome: MoveOutcome) -> bytes:
    """The ``move_result`` frame of ``outcome``: the bytes of
    ``codec.encode_msgpack(move_result_message(outcome))``."""
    (seq, action, reason, position, card, turned, turned_2, undone,
     top, stock, cleared, moves, draws, undos, status, penalty, at, _) = outcome
    # Each kind's frame gets its whole tuple at once (a tuple per piece costs more).
    ints, n = _INTS, _INTS_KNOWN
    s = ints[seq] if seq < n else pack_wire(seq)
    t0 = _NIL if top is None else _CARDS[top]
    t1, t2 = ints[stock], ints[cleared]
    t3 = ints[moves] if moves < n else pack_wire(moves)
    t4 = ints[draws] if draws < n else pack_wire(draws)
    t5 = ints[undos] if undos < n else pack_wire(undos)
    t6 = _PLAYING_BYTES if status == "playing" else _STATUS_BYTES[status]
    t7 = ints[penalty] if penalty < n else pack_wire(penalty)
    t8 = ints[at] if at < n else pack_wire(at)
    if reason is not None:
        p = _NIL if position is None else ints[position]
        return _REFUSED_FRAME % (
            s, _ACTION_BYTES[action], ints[reason], p, t0, t1, t2, t3, t4, t5, t6, t7, t8
        )
    if undone is None and action == "draw":
        c = _CARDS[card]  # type: ignore[index]
        return _DRAW_FRAME % (s, c, t0, t1, t2, t3, t4, t5, t6, t7, t8)
    if undone == "draw":
        return _UNDO_DRAW_FRAME % (s, t0, t1, t2, t3, t4, t5, t6, t7, t8)
    # A card lies on at most two others: a play turns up none, one or two, and its undo
    # turns them down again.
    table = _UNCOVERED if undone is None else ints
    if turned is None:
        items = b"\x90"
    elif turned_2 is None:
        items = b"\x91" + table[turned]
    else:
        items = b"\x92" + table[turned] + table[turned_2]
    frame = _PLAY_FRAME if undone is None else _UNDO_PLAY_FRAME
    p, c = ints[position], _CARDS[card]  # type: ignore[index]
    return frame % (s, p, c, items, t0, t1, t2, t3, t4, t5, t6, t7, t8)


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
        return None if action is _PLAY else (seq, action, None)
    if type(position) is not int or not 0 <= position <= 255 or action is not _PLAY:
        return None
    return seq, action, position


#: Read once: compiled, ``m.MoveAction.PLAY`` in a function is three attribute lookups.
_PLAY: Final = m.MoveAction.PLAY


# ---- a progress flush's frames, from rows ----------------------------------------
#: One racer's line of a ``progress`` frame as plain values, in the order of
#: :class:`~protocol.wire.messages.PlayerProgress`'s fields: ``(player_id, cleared,
#: stock_left, moves, undos, status, elapsed_ms, connected)``.
ProgressRow = tuple[str, int, int, int, int, m.PlayerStatus, int, bool]
#: One racer's board as spectators see it, as plain values: ``(player_id, board,
#: waste_top, stock_left, moves, draws, undos, status, elapsed_ms)`` (the fields of a
#: :class:`~protocol.wire.messages.SpectatorBoard` and its view).
BoardRow = tuple[
    str, tuple[str | None, ...], str | None, int, int, int, int, Status, int
]


def progress_message(elapsed_ms: int, rows: Sequence[ProgressRow]) -> m.Progress:
    """The ``progress`` message of ``rows`` at race time ``elapsed_ms``."""
    return m.Progress(elapsed_ms, tuple([m.PlayerProgress(*row) for row in rows]))


def board_message(row: BoardRow) -> m.SpectatorBoard:
    """The ``spectator_board`` message of ``row``."""
    pid, board, top, stock, moves, draws, undos, status, at = row
    return m.SpectatorBoard(pid, m.BoardView(board, top, stock, moves, draws, undos, status), at)


def _int(value: int) -> bytes:
    """``value`` (not negative) packed."""
    packed: bytes = _INTS[value] if value < _INTS_KNOWN else pack_wire(value)
    return packed


_ARRAYS: Final = tuple(msgpack.Packer().pack_array_header(n) for n in range(64))
_BOOLS: Final = (b"\xc2", b"\xc3")
_GAME_STATUS_BYTES: Final = {status: pack_wire(status.value) for status in Status}
#: Most boards are in play: their status without a lookup, since a plain Enum's hash is a
#: Python function (2.8% of the server's loop at 10,000 players, py-spy).
_PLAYING_STATUS: Final = Status.PLAYING
_PLAYING_STATUS_BYTES: Final = pack_wire(Status.PLAYING.value)
_PLAYER_STATUS_BYTES: Final = {status: pack_wire(status.value) for status in m.PlayerStatus}
_TOPS: Final = {None: _NIL, HIDDEN: pack_wire(HIDDEN)} | {
    code: pack_wire(code) for code in ALL_CODES
}

_LINE_KEYS: Final = (
    "player_id", "cleared", "stock_left", "moves", "undos", "status", "elapsed_ms", "connected"
)
#: A ``progress`` line, ``%`` its eight values packed.
_LINE: Final = b"\x88" + _pieces(_LINE_KEYS, (_SLOT,) * len(_LINE_KEYS))
#: A ``progress`` frame up to its lines, ``%`` (elapsed, the lines' array header).
_PROGRESS: Final = b"\x83" + _pieces(("t", "elapsed_ms", "players"), (m.Progress.TAG, _SLOT, _SLOT))
#: The same, but the ``progress`` inside a ``spectator_update`` (no tag).
_PROGRESS_BODY_AT: Final = len(pack_wire("t") + pack_wire(m.Progress.TAG)) + 1

_VIEW_KEYS: Final = ("board", "waste_top", "stock_left", "moves", "draws", "undos", "status")
#: A board of a ``spectator_update``, ``%`` (player id, view's values, elapsed).
_ENTRY: Final = (
    b"\x83" + _pieces(("player_id", "view"), (_SLOT, _SLOT))[:-2]
    + b"\x87" + _pieces(_VIEW_KEYS, (_SLOT,) * len(_VIEW_KEYS))
    + _pieces(("elapsed_ms",), (_SLOT,))
)
#: A ``spectator_board`` frame: its tag, then what an entry holds.
_BOARD_HEAD: Final = b"\x84" + _pieces(("t",), (m.SpectatorBoard.TAG,))
_UPDATE_HEAD: Final = b"\x83" + _pieces(("t", "progress"), (m.SpectatorUpdate.TAG, _SLOT))[:-2]
_UPDATE_BOARDS: Final = pack_wire("boards")


def progress_msgpack(elapsed_ms: int, rows: Sequence[ProgressRow]) -> bytes:
    """The ``progress`` frame of ``rows``: the bytes of
    ``codec.encode_msgpack(progress_message(elapsed_ms, rows))``."""
    ints, n = _INTS, _INTS_KNOWN
    statuses, line = _PLAYER_STATUS_BYTES, _LINE
    at = _int(elapsed_ms)
    parts = [_PROGRESS % (at, _ARRAYS[len(rows)])]
    for pid, cleared, stock, moves, undos, status, done, connected in rows:
        parts.append(line % (
            pack_wire(pid), ints[cleared], ints[stock],
            ints[moves] if moves < n else pack_wire(moves),
            ints[undos] if undos < n else pack_wire(undos),
            statuses[status], at if done == elapsed_ms else _int(done), _BOOLS[connected],
        ))
    return b"".join(parts)


def _entry(row: BoardRow) -> bytes:
    pid, board, top, stock, moves, draws, undos, status, at = row
    return _ENTRY % (
        pack_wire(pid), pack_wire(board), _TOPS[top], _INTS[stock], _int(moves), _int(draws),
        _int(undos),
        _PLAYING_STATUS_BYTES if status is _PLAYING_STATUS else _GAME_STATUS_BYTES[status],
        _int(at),
    )


def update_msgpack(progress: bytes | None, boards: Sequence[BoardRow]) -> bytes:
    """The ``spectator_update`` frame of a ``progress`` frame (``progress_msgpack``'s
    bytes, or ``None``) and ``boards``: the bytes of ``codec.encode_msgpack`` of the
    update of :func:`progress_message` and the :func:`board_message` of each board."""
    body = _NIL if progress is None else b"\x82" + progress[_PROGRESS_BODY_AT:]
    return b"".join((
        _UPDATE_HEAD, body, _UPDATE_BOARDS, _ARRAYS[len(boards)], *map(_entry, boards)
    ))


def board_msgpack(row: BoardRow) -> bytes:
    """The ``spectator_board`` frame of ``row``: the bytes of
    ``codec.encode_msgpack(board_message(row))``."""
    return _BOARD_HEAD + _entry(row)[1:]
