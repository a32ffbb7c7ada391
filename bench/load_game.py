"""A lean load-generator client for the race server, on aiohttp and :mod:`protocol.codec`.

The terminal client's bots (:mod:`client_cli.bot`) are built for play, not
for timing each move; this client is built to be cheap and to time things:

- every frame is counted, and decoded with plain ``msgpack.unpackb`` (the
  server's frames are trusted here; the codec validates them in the tests);
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
from dataclasses import dataclass, field
from typing import Any

import msgpack

from bench.load_stats import Histogram
from bench.load_wire import WireClient, connect
from protocol import codec
from protocol import messages as m
from protocol.cards import ALL_CODES, RANKS, is_adjacent

RANK_OF: dict[str, int] = {code: RANKS.index(code[0]) for code in ALL_CODES}
HIDDEN = "??"
#: The card codes that fit on each waste top (rank wrap on, as in the benchmark's rooms).
FITS: dict[str, frozenset[str]] = {
    top: frozenset(c for c in ALL_CODES if is_adjacent(RANK_OF[c], RANK_OF[top], True))
    for top in ALL_CODES
}
#: Undos a stuck (or about to win) player makes before playing forward again.
UNDO_RUN = 6
CONNECT_GATE = 64
SETUP_GATE = 64


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


@dataclass
class Meters:
    """Everything one generator process measures during the window."""

    measuring: bool = False
    hists: dict[str, Histogram] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    burst_active: bool = False
    opened: float = 0.0  # perf_counter() when the window opened
    worst_by_second: list[float] = field(default_factory=list)

    def record(self, name: str, seconds: float) -> None:
        if self.measuring:
            hist = self.hists.get(name)
            if hist is None:
                hist = self.hists[name] = Histogram()
            hist.record(seconds)

    def timeline(self, sent: float, seconds: float) -> None:
        """Worst move round trip per second of the window (to see stalls)."""
        if self.measuring:
            second = int(sent - self.opened)
            if second >= 0:
                while len(self.worst_by_second) <= second:
                    self.worst_by_second.append(0.0)
                if seconds > self.worst_by_second[second]:
                    self.worst_by_second[second] = seconds

    def count(self, name: str, n: int = 1) -> None:
        if self.measuring:
            self.counts[name] = self.counts.get(name, 0) + n


def move_frame(seq: int, action: m.MoveAction, position: int | None) -> bytes:
    """``codec.encode_msgpack(MoveRequest(seq, action, position))``, without walking the schema.

    The generator sends tens of thousands of moves per second from one core;
    ``tests/test_bench_load.py`` checks the bytes are the codec's.
    """
    return msgpack.packb({"t": "move", "seq": seq, "action": action.value, "position": position})


class SetupError(RuntimeError):
    """The server refused or dropped something while the load was being set up."""


def peek_tag(data: bytes) -> str | None:
    """The ``t`` of a server frame without decoding it, when it is where the codec puts it.

    The codec writes the tag first: a map header (1 byte, or 3 for a map of
    16+ keys), the 1-character string ``t``, then the tag as a short string.
    """
    start = 1 if data[:1] and data[0] & 0xF0 == 0x80 else 3
    if data[start : start + 2] != b"\xa1t" or len(data) <= start + 2:
        return None
    size = data[start + 2] - 0xA0
    if not 0 <= size < 32:
        return None
    return data[start + 3 : start + 3 + size].decode("ascii", "replace")


class Conn:
    """One WebSocket whose frames are counted and dispatched by tag, from callbacks."""

    def __init__(self, wire: WireClient, meters: Meters) -> None:
        self.wire = wire
        self.meters = meters
        self.waiters: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.handlers: dict[str, Callable[[dict[str, Any]], None]] = {}
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
        meters = self.meters
        if meters.measuring:
            meters.counts["frames_in"] = meters.counts.get("frames_in", 0) + 1
        tag = peek_tag(data)
        useless = tag not in self.handlers and tag not in self.waiters and tag != "error"
        if tag is not None and useless:
            return  # counted, and of no use to this client: not worth decoding
        frame = msgpack.unpackb(data)
        tag = frame["t"]
        handler = self.handlers.get(tag)
        if handler is not None:
            handler(frame)
        if self.waiters:
            waiter = self.waiters.pop(tag, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(frame)
            elif tag == "error":
                self._fail(SetupError(f"server error {frame.get('code')}: {frame.get('message')}"))

    def _fail(self, exc: Exception) -> None:
        for waiter in self.waiters.values():
            if not waiter.done():
                waiter.set_exception(exc)
        self.waiters.clear()

    def close(self) -> None:
        self.wire.close()


async def open_conn(url: str, meters: Meters, name: str, gate: asyncio.Semaphore) -> Conn:
    """Connect, negotiate msgpack and say hello as a bot."""
    async with gate:
        conn = Conn(await connect(url, codec.SUBPROTOCOL_MSGPACK), meters)
        welcome = await conn.request(
            m.Hello(name=name, version=m.PROTOCOL_VERSION, bot=True), "welcome"
        )
        conn.player_id = welcome["player_id"]
        return conn


class Clock:
    """When the window ends; known only at ``go``, so players read it live."""

    deadline: float = math.inf


class Player:
    """A seat in a race that plays from visible cards only."""

    def __init__(self, conn: Conn, room: Room, player_id: str, rng: random.Random) -> None:
        self.conn = conn
        self.room = room
        self.player_id = player_id
        self.rng = rng
        self.board: list[str | None] = []
        self.waste_top: str | None = None
        self.stock_left = 0
        self.cleared = 0
        self.actions = 0  # accepted moves + undos: what a spectator board shows as moves + undos
        self.depth = 0  # moves that could still be undone
        self.undo_run = 0
        self.seq = 0
        self.started = asyncio.get_running_loop().create_future()
        # Play state: see play().
        self.interval_s = 0.0
        self.clock = Clock()
        self.next_at = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.awaiting = False
        self.overdue = False
        self.sent_at = 0.0
        self.during_burst = False
        conn.handlers["race_start"] = self._on_race_start
        conn.handlers["move_result"] = self._on_result

    def _on_race_start(self, frame: dict[str, Any]) -> None:
        view = frame["view"]
        self.board = list(view["board"])
        self.waste_top = view["waste_top"]
        self.stock_left = view["stock_left"]
        self.cleared = 0
        self.actions = 0
        self.depth = 0
        if not self.started.done():
            self.started.set_result(time.perf_counter())

    def _on_result(self, frame: dict[str, Any]) -> None:
        if frame["accepted"]:
            action = frame["action"]
            if action == "play":
                self.board[frame["position"]] = None
                for item in frame["uncovered"]:
                    self.board[item["position"]] = item["card"]
                self.depth += 1
            elif action == "draw":
                self.depth += 1
            else:
                if frame["undone"] == "play":
                    self.board[frame["position"]] = frame["card"]
                    for position in frame["hidden"]:
                        self.board[position] = HIDDEN
                self.depth -= 1
            self.waste_top = frame["waste_top"]
            self.stock_left = frame["stock_left"]
            self.cleared = frame["cleared"]
            self.actions += 1
            self.conn.meters.count("accepted")
            self.conn.meters.count("accepted_" + action)
        else:
            self.conn.meters.count("rejected")
        self._answered()

    def next_move(self) -> tuple[int, m.MoveAction, int | None]:
        """Greedy on visible cards; undo a short run when stuck or about to win."""
        self.seq += 1
        if self.undo_run > 0 and self.depth > 0:
            self.undo_run -= 1
            return self.seq, m.MoveAction.UNDO, None
        self.undo_run = 0
        playable = self._playable()
        if playable and self.cleared < 27:
            return self.seq, m.MoveAction.PLAY, self.rng.choice(playable)
        if not playable and self.stock_left > 0:
            return self.seq, m.MoveAction.DRAW, None
        self.undo_run = UNDO_RUN - 1
        return self.seq, m.MoveAction.UNDO, None

    def _playable(self) -> list[int]:
        top = self.waste_top
        if top is None:
            return [p for p, card in enumerate(self.board) if card is not None and card != HIDDEN]
        fitting = FITS[top]
        return [p for p, card in enumerate(self.board) if card in fitting]

    def play(self, interval_s: float, clock: Clock) -> None:
        """Move every ``interval_s`` (0: as soon as the last answer came) until the deadline.

        The schedule is open-loop: a late answer does not push later moves back
        (a move that is due while one is unanswered goes out with the answer),
        so a slow server sees the same offered load as a fast one.
        """
        self.interval_s = interval_s
        self.clock = clock
        loop = asyncio.get_running_loop()
        if interval_s:
            self.next_at = loop.time() + self.rng.random() * interval_s
            self.timer = loop.call_at(self.next_at, self._tick)
        else:
            self._send_move()

    def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        if loop.time() >= self.clock.deadline or self.conn.wire.closed:
            return
        self.next_at += self.interval_s
        self.timer = loop.call_at(self.next_at, self._tick)
        if self.awaiting:
            self.overdue = True
        else:
            self._send_move()

    def _send_move(self) -> None:
        if asyncio.get_running_loop().time() >= self.clock.deadline:
            return
        move = move_frame(*self.next_move())
        meters = self.conn.meters
        self.sent_at = time.perf_counter()
        self.during_burst = meters.burst_active and not self.room.in_burst
        self.room.sent(self.player_id, self.actions + 1, self.sent_at)
        self.awaiting = True
        self.conn.wire.send(move)
        if meters.measuring:
            meters.counts["moves_sent"] = meters.counts.get("moves_sent", 0) + 1

    def _answered(self) -> None:
        """The answer to the move in flight arrived: time it, then maybe move again."""
        if not self.awaiting:
            return
        self.awaiting = False
        rtt = time.perf_counter() - self.sent_at
        meters = self.conn.meters
        meters.record("rtt", rtt)
        meters.timeline(self.sent_at, rtt)
        if self.during_burst:
            meters.record("rtt_during_burst", rtt)
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
        self.spectators: list[Conn] = []
        self.in_burst = False
        self.pending: dict[str, deque[tuple[int, float]]] = {}
        self.all_ready = asyncio.Event()
        self.size = 0
        host.handlers["room_state"] = self._on_room_state

    def _on_room_state(self, frame: dict[str, Any]) -> None:
        members = frame["members"]
        if len(members) == self.size and all(mb["ready"] for mb in members):
            self.all_ready.set()

    def sent(self, player_id: str, actions_after: int, at: float) -> None:
        """A move was sent that, if accepted, spectators will see as ``actions_after``."""
        if self.spectators:
            self.pending.setdefault(player_id, deque()).append((actions_after, at))

    def on_spectator_board(self, frame: dict[str, Any]) -> None:
        """Every move this board includes has now reached the (only) spectator."""
        view = frame["view"]
        shown = view["moves"] + view["undos"]
        queue = self.pending.get(frame["player_id"])
        if not queue:
            return
        now = time.perf_counter()
        while queue and queue[0][0] <= shown:
            _, at = queue.popleft()
            self.meters.record("fanout", now - at)

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
        watcher = await open_conn(url, meters, f"s{index}", gate)
        watcher.handlers["spectator_board"] = room.on_spectator_board
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
