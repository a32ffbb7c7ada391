"""A lean load-generator client for the race server, on :mod:`bench.load_wire` and msgpack.

The terminal client's bots (:mod:`client_cli.bot`) are built for play, not
for timing each move; this client is built to be cheap and to time things:

- every frame is counted; a ``move_result`` is read with
  :func:`protocol.wire.session.read_move_answer` (one pattern match over the
  frame, no message built; a frame it does not know goes through
  :func:`protocol.wire.codec.decode_server`), the rest, which the server
  sends far less often, are unpacked with plain ``msgpack.unpackb`` (the
  server's frames are trusted here; the codec validates them in the tests);
- a move goes out as a WebSocket frame built ahead, with its seq spliced in
  (:func:`move_wire_frame`; a test checks it against the codec);
- what happens per move is counted in plain attributes and timed into raw
  arrays (:class:`Meters`); histograms are made when the window closes;
- a player times each move from send to its ``move_result`` (``rtt``);
- the room's spectator times each move from send until a ``spectator_board``
  showing it arrives (``fanout``);
- a host times each start from ``start`` until all its players hold
  ``race_start`` (``room_start``, dealing included).

Players play only from what they see (face-up cards, waste top, stock
count).  For sustained load a race must not end, so rooms allow free undo
and a player that is stuck, or about to win, undoes a few moves and plays on.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Final

import msgpack
from mypy_extensions import mypyc_attr

from bench.load_stats import Meters as Meters  # re-exported: the jobs import it from here
from bench.load_wire import OP_BINARY, SATURATION_CYCLE_S, Pacer, WireClient, connect, pace_from_env
from bench.load_wire import frame as ws_frame
from protocol.rules.cards import ALL_CODES, RANKS, is_adjacent
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.session import MoveAnswer, answer_of, read_move_answer

RANK_OF: dict[str, int] = {code: RANKS.index(code[0]) for code in ALL_CODES}
HIDDEN = "??"
#: The card codes that fit on each waste top (rank wrap on, as in the benchmark's rooms).
FITS: dict[str, frozenset[str]] = {
    top: frozenset(c for c in ALL_CODES if is_adjacent(RANK_OF[c], RANK_OF[top], True))
    for top in ALL_CODES
}
#: The ranks that fit on each waste top; any rank fits on an empty waste.
FIT_RANKS: dict[str | None, tuple[int, ...]] = {
    top: tuple(r for r in range(len(RANKS)) if is_adjacent(r, RANK_OF[top], True))
    for top in ALL_CODES
}
FIT_RANKS[None] = tuple(range(len(RANKS)))
#: Undos a stuck (or about to win) player makes before playing forward again.
UNDO_RUN = 6
CONNECT_GATE = 64
SETUP_GATE = 64
#: Move actions by the index the players use for them.
PLAY, DRAW, UNDO = 0, 1, 2
ACTIONS: Final = (m.MoveAction.PLAY, m.MoveAction.DRAW, m.MoveAction.UNDO)
_PLAY: Final = m.MoveAction.PLAY
_UNDO: Final = m.MoveAction.UNDO
def room_options(**overrides: Any) -> m.RoomOptions:
    """Private rooms of 4 with one spectator seat, no delay, no countdown, free undo."""
    base: dict[str, Any] = {
        "name": "load",
        "max_players": 4,
        "spectator_delay_s": 0,
        "undo": m.UndoPolicy.FREE,
        "undo_penalty_s": 0,
        "countdown_s": 0,
    }
    base.update(overrides)
    return m.RoomOptions(**base)


#: The bytes of a ``move`` map before its seq (the codec's key order).
_MOVE_HEAD: Final = b"\x84" + b"".join(msgpack.packb(x) for x in ("t", "move", "seq"))


def _move_tail(action: m.MoveAction, position: int | None) -> bytes:
    """The bytes of a ``move`` map after its seq."""
    return b"".join(msgpack.packb(x) for x in ("action", action.value, "position", position))
#: msgpack bytes of the sequence numbers players reach in a run (larger ones are packed).
_SEQ_BYTES: Final[list[bytes]] = [msgpack.packb(n) for n in range(1 << 15)]


def move_frame(seq: int, action: m.MoveAction, position: int | None) -> bytes:
    """``codec.encode_msgpack(MoveRequest(seq, action, position))``, without walking the schema.

    The generator sends tens of thousands of moves per second from one core;
    ``tests/bench/test_load.py`` checks the bytes are the codec's.
    """
    packed: bytes = msgpack.packb(seq)
    return _MOVE_HEAD + packed + _move_tail(action, position)


def _wire_parts(action: m.MoveAction, position: int | None) -> tuple[bytes, ...]:
    """``(tail, *prefix by seq length)``: a move's frame is ``prefix[len(seq)] + seq + tail``.

    The prefix is the WebSocket header (zero mask key, see :mod:`bench.load_wire`)
    and the map up to the seq; the seq takes 1, 2, 3 or 5 bytes.
    """
    tail = _move_tail(action, position)
    prefixes = [
        ws_frame(OP_BINARY, _MOVE_HEAD + b"\x00" * size + tail)[: -size - len(tail)]
        for size in range(1, 6)
    ]
    return (tail, *prefixes)


#: ``_WIRE_PARTS[action][position or 0]``: see :func:`_wire_parts`.
_WIRE_PARTS: Final = (
    [_wire_parts(m.MoveAction.PLAY, position) for position in range(28)],
    [_wire_parts(m.MoveAction.DRAW, None)],
    [_wire_parts(m.MoveAction.UNDO, None)],
)


def move_wire_frame(seq: int, action: int, position: int | None) -> bytes:
    """The whole WebSocket frame of :func:`move_frame` (``action`` is PLAY, DRAW or UNDO),
    from bytes made ahead: what a player writes for each move."""
    parts = _WIRE_PARTS[action][position or 0]
    packed: bytes = _SEQ_BYTES[seq] if seq < 1 << 15 else msgpack.packb(seq)
    return parts[len(packed)] + packed + parts[0]


def peek_tag(frame: bytes) -> str | None:
    """The tag of a msgpack server frame whose map begins with its ``"t"`` (as the codec and
    the server's fast encoders write every frame), read from the bytes; else ``None``.

    Most frames a generator gets (the racers' ``progress``) have no reader here: knowing
    the tag spares unpacking them (at 10,000 players the generator took 92% of its core
    with them unpacked, 81-87% without).
    """
    if not frame:
        return None
    at = 1 if 0x80 <= frame[0] <= 0x8F else 3 if frame[0] == 0xDE else 0  # fixmap, map 16
    if not at or frame[at : at + 2] != b"\xa1t" or len(frame) < at + 3:
        return None
    size = frame[at + 2] - 0xA0  # a fixstr: every tag is shorter than 32 bytes
    start = at + 3
    if not 0 <= size < 32 or len(frame) < start + size:
        return None
    return frame[start : start + size].decode("ascii", "replace")


@mypyc_attr(native_class=False)  # compiled, a builtin exception is not subclassed
class SetupError(RuntimeError):
    """The server refused or dropped something while the load was being set up."""


class Conn:
    """One WebSocket whose frames are counted and dispatched by tag, from callbacks.

    ``move_result`` frames, nearly all a player gets, go to
    :attr:`on_move_result` as :class:`~protocol.wire.session.MoveAnswer`;
    other frames go, unpacked, to the handler or the waiter for their tag.
    """

    def __init__(self, wire: WireClient, meters: Meters) -> None:
        self.wire = wire
        self.meters = meters
        self.waiters: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.handlers: dict[str, Callable[[dict[str, Any]], None]] = {}
        self.on_move_result: Callable[[MoveAnswer], None] | None = None
        self.player_id = ""
        wire.on_message = self._on_message
        wire.on_close = lambda: self._fail(SetupError("socket closed"))

    def send(self, message: m.ClientMessage) -> None:
        self.wire.send(codec.encode_msgpack(message))

    def wait_for(self, tag: str) -> asyncio.Future[dict[str, Any]]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiters[tag] = future
        return future

    async def request(
        self, message: m.ClientMessage, tag: str, timeout: float = 60
    ) -> dict[str, Any]:
        """Send ``message`` and wait for the next frame tagged ``tag``."""
        future = self.wait_for(tag)
        self.send(message)
        return await asyncio.wait_for(future, timeout)

    def _on_message(self, data: bytes) -> None:
        self.meters.frames_in += 1
        on_answer = self.on_move_result
        if on_answer is not None:
            answer = read_move_answer(data)
            if answer is not None:
                on_answer(answer)
                return
        if not self.waiters:
            peeked = peek_tag(data)
            if peeked is not None and peeked != "move_result" and peeked not in self.handlers:
                return  # no one reads it: counted, not unpacked
        decoded = msgpack.unpackb(data)
        tag = decoded["t"]
        if tag == "move_result" and on_answer is not None:
            # Laid out unlike the codec's answers: read in full.
            on_answer(answer_of(codec.decode_server(data, codec.Encoding.MSGPACK)))  # type: ignore[arg-type]
            return
        handler = self.handlers.get(tag)
        if handler is not None:
            handler(decoded)
        if self.waiters:
            waiter = self.waiters.pop(tag, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(decoded)
            elif tag == "error":
                self._fail(
                    SetupError(f"server error {decoded.get('code')}: {decoded.get('message')}")
                )

    def _fail(self, exc: Exception) -> None:
        for waiter in self.waiters.values():
            if not waiter.done():
                waiter.set_exception(exc)
        self.waiters.clear()

    def close(self) -> None:
        self.wire.close()


async def open_conn(
    url: str, meters: Meters, name: str, gate: asyncio.Semaphore, *, updates: bool = False
) -> Conn:
    """Connect, negotiate msgpack and say hello as a bot (asking for ``spectator_update``
    frames when ``updates``)."""
    async with gate:
        conn = Conn(await connect(url, codec.SUBPROTOCOL_MSGPACK), meters)
        hello = m.Hello(name=name, version=m.PROTOCOL_VERSION, bot=True, spectator_update=updates)
        welcome = await conn.request(hello, "welcome")
        conn.player_id = welcome["player_id"]
        return conn


class Clock:
    """When the window ends; known only at ``go``, so players read it live.

    Players at saturation pace the event loop through it (one :class:`Pacer`
    for the whole job), until the deadline.
    """

    deadline: float = math.inf

    def __init__(self) -> None:
        self.pacer = Pacer(pace_from_env(SATURATION_CYCLE_S))

    def pace(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start pacing ``loop`` (the first call does)."""
        self.pacer.start(loop, lambda: loop.time() < self.deadline)


class Player:
    """A seat in a race that plays from visible cards only.

    The face-up cards are kept by rank (``face[rank]`` holds their positions),
    so that the cards fitting the waste top are found without scanning the
    board.  Answers come read (:class:`~protocol.wire.session.MoveAnswer`).
    """

    def __init__(self, conn: Conn, room: Room, player_id: str, rng: random.Random) -> None:
        self.conn = conn
        self.wire = conn.wire
        self.meters = conn.meters
        self.room = room
        self.player_id = player_id
        self.rng = rng
        self.face: list[list[int]] = [[] for _ in RANKS]
        self.rank_at = [-1] * 28  # rank of the face-up card at each position, else -1
        self.fits = FIT_RANKS[None]  # ranks that fit on the waste top
        self.stock_left = 0
        self.cleared = 0
        self.actions = 0  # accepted moves + undos: what a spectator board shows as moves + undos
        self.depth = 0  # moves that could still be undone
        self.undo_run = 0
        self.seq = 0
        self.started = asyncio.get_running_loop().create_future()
        # Play state: see play().
        self.loop = asyncio.get_running_loop()
        self.interval_s = 0.0
        self.clock = Clock()
        self.next_at = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.awaiting = False
        self.overdue = False
        self.sent_at = 0.0
        self.during_burst = False
        self.before_burst = False
        # Moves sent that spectators have not seen yet: (actions once accepted, sent at).
        self.unseen: deque[tuple[int, float]] = deque()
        self.watched = False
        conn.handlers["race_start"] = self._on_race_start
        conn.on_move_result = self._on_result
        room.by_id[player_id] = self

    def _on_race_start(self, frame: dict[str, Any]) -> None:
        view = frame["view"]
        self.face = [[] for _ in RANKS]
        self.rank_at = [-1] * 28
        for position, card in enumerate(view["board"]):
            if card is not None and card != HIDDEN:
                self._show(position, card)
        self.fits = FIT_RANKS[view["waste_top"]]
        self.stock_left = view["stock_left"]
        self.cleared = 0
        self.actions = 0
        self.depth = 0
        self.unseen.clear()
        if not self.started.done():
            self.started.set_result(time.perf_counter())

    def _show(self, position: int, card: str) -> None:
        rank = RANK_OF[card]
        self.rank_at[position] = rank
        self.face[rank].append(position)

    def _hide(self, position: int) -> None:
        rank = self.rank_at[position]
        if rank >= 0:
            self.face[rank].remove(position)
            self.rank_at[position] = -1

    def _on_result(self, answer: MoveAnswer) -> None:
        if not answer.accepted:
            self.meters.rejected += 1
            self._answered()
            return
        action = answer.action
        if action is _PLAY:
            self._hide(answer.position)  # type: ignore[arg-type]
            for position, card in answer.uncovered:
                self._show(position, card)
        elif answer.undone is _PLAY:
            self._show(answer.position, answer.card)  # type: ignore[arg-type]
            for position in answer.hidden:
                self._hide(position)
        meters = self.meters
        if action is _UNDO:
            self.depth -= 1
            meters.accepted_undo += 1
        else:
            self.depth += 1
            if action is _PLAY:
                meters.accepted_play += 1
            else:
                meters.accepted_draw += 1
        self.fits = FIT_RANKS[answer.waste_top]
        self.stock_left = answer.stock_left
        self.cleared = answer.cleared
        self.actions += 1
        self._answered()

    def next_move(self) -> tuple[int, int | None]:
        """``(action, position)``, greedy on visible cards; undo a short run when stuck or
        about to win."""
        if self.undo_run > 0 and self.depth > 0:
            self.undo_run -= 1
            return UNDO, None
        self.undo_run = 0
        face, fits = self.face, self.fits
        if len(fits) == 2:
            low, high = face[fits[0]], face[fits[1]]
        else:
            low, high = [p for rank in fits for p in face[rank]], []
        count = len(low) + len(high)
        if count and self.cleared < 27:
            pick = int(self.rng.random() * count)
            return PLAY, low[pick] if pick < len(low) else high[pick - len(low)]
        if not count and self.stock_left > 0:
            return DRAW, None
        self.undo_run = UNDO_RUN - 1
        return UNDO, None

    def play(self, interval_s: float, clock: Clock) -> None:
        """Move every ``interval_s`` (0: as soon as the last answer came) until the deadline.

        The schedule is open-loop: a late answer does not push later moves back
        (a move that is due while one is unanswered goes out with the answer),
        so a slow server sees the same offered load as a fast one.
        """
        self.interval_s = interval_s
        self.clock = clock
        self.watched = bool(self.room.spectators)
        if interval_s:
            self.next_at = self.loop.time() + self.rng.random() * interval_s
            self.timer = self.loop.call_at(self.next_at, self._tick)
        else:
            clock.pace(self.loop)
            self._send_move()

    def _tick(self) -> None:
        loop = self.loop
        if loop.time() >= self.clock.deadline or self.wire.closed:
            return
        self.next_at += self.interval_s
        self.timer = loop.call_at(self.next_at, self._tick)
        if self.awaiting:
            self.overdue = True
        else:
            self._send_move()

    def _send_move(self) -> None:
        if self.loop.time() >= self.clock.deadline:
            return
        self.seq += 1
        action, position = self.next_move()
        data = move_wire_frame(self.seq, action, position)
        meters = self.meters
        self.sent_at = sent = time.perf_counter()
        self.during_burst = meters.burst_active and not self.room.in_burst
        self.before_burst = meters.burst_pending
        if self.watched:
            self.unseen.append((self.actions + 1, sent))
        self.awaiting = True
        self.wire.write(data)
        meters.moves_sent += 1

    def _answered(self) -> None:
        """The answer to the move in flight arrived: time it, then maybe move again."""
        if not self.awaiting:
            return
        self.awaiting = False
        sent = self.sent_at
        rtt = time.perf_counter() - sent
        meters = self.meters
        meters.rtt.add(rtt)
        meters.rtt_sent.add(sent)
        if self.during_burst:
            meters.rtt_during_burst.add(rtt)
        elif self.before_burst:
            meters.rtt_before_burst.add(rtt)
        if not self.interval_s or self.overdue:
            self.overdue = False
            self._send_move()

    def stop(self) -> None:
        """Cancel the move timer."""
        if self.timer is not None:
            self.timer.cancel()


class Room:
    """A room of players with one spectator, and its fan-out bookkeeping."""

    def __init__(self, host: Conn, code: str, meters: Meters) -> None:
        self.host = host
        self.code = code
        self.meters = meters
        self.players: list[Player] = []
        self.by_id: dict[str, Player] = {}
        self.spectators: list[Conn] = []
        self.in_burst = False
        self.all_ready = asyncio.Event()
        self.size = 0
        host.handlers["room_state"] = self._on_room_state

    def _on_room_state(self, frame: dict[str, Any]) -> None:
        members = frame["members"]
        if len(members) == self.size and all(mb["ready"] for mb in members):
            self.all_ready.set()

    def on_spectator_board(self, frame: dict[str, Any]) -> None:
        """Every move this board includes has now reached the (only) spectator."""
        player = self.by_id.get(frame["player_id"])
        if player is None or not player.unseen:
            return
        view = frame["view"]
        shown = view["moves"] + view["undos"]
        queue = player.unseen
        now = time.perf_counter()
        add = self.meters.fanout.add
        while queue and queue[0][0] <= shown:
            add(now - queue.popleft()[1])

    def on_spectator_update(self, frame: dict[str, Any]) -> None:
        """A moment's boards in one frame (the progress in it is not timed)."""
        for board in frame["boards"]:
            self.on_spectator_board(board)

    async def start(self) -> float:
        """Start the race; the time until every player holds ``race_start``."""
        for player in self.players:
            player.started = asyncio.get_running_loop().create_future()
        sent = time.perf_counter()
        self.host.send(m.Start())
        started: list[float] = await asyncio.wait_for(
            asyncio.gather(*(p.started for p in self.players)), 120
        )
        return max(started) - sent


async def make_room(
    url: str,
    meters: Meters,
    *,
    index: int,
    players: int,
    spectators: int,
    gate: asyncio.Semaphore,
    rng: random.Random,
    updates: bool = True,
) -> Room:
    """Create a room, seat its players and spectators, and get everyone ready."""
    host = await open_conn(url, meters, f"h{index}", gate)
    state = await host.request(m.CreateRoom(room_options()), "room_state")
    room = Room(host, state["code"], meters)
    room.size = players
    others = await asyncio.gather(
        *(open_conn(url, meters, f"p{index}.{i}", gate) for i in range(1, players))
    )
    conns = [host, *others]
    for conn in conns[1:]:
        await conn.request(m.Join(state["code"]), "room_state")
    for _ in range(spectators):
        watcher = await open_conn(url, meters, f"s{index}", gate, updates=updates)
        watcher.handlers["spectator_board"] = room.on_spectator_board
        watcher.handlers["spectator_update"] = room.on_spectator_update
        await watcher.request(m.Join(state["code"], m.Role.SPECTATOR), "room_state")
        room.spectators.append(watcher)
    room.players = [Player(c, room, c.player_id, rng) for c in conns]
    for conn in conns:
        conn.send(m.Ready(True))
    try:
        await asyncio.wait_for(room.all_ready.wait(), 60)
    except TimeoutError:
        raise SetupError(f"room {room.code}: players never all showed as ready") from None
    return room


async def gather_bounded(
    factories: list[Callable[[], Awaitable[Room]]], limit: int
) -> list[Room]:
    """Run the room set-ups, ``limit`` at a time."""
    gate = asyncio.Semaphore(limit)

    async def one(factory: Callable[[], Awaitable[Room]]) -> Room:
        async with gate:
            return await factory()

    return list(await asyncio.gather(*(one(f) for f in factories)))
