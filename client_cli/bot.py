"""Bot players: hundreds in one process, each one asyncio task on its own WebSocket.

Importable API (stable; documented in ``docs/client.md``)::

    results = await run_bots("ws://127.0.0.1:8765/ws", 4, host=True, pace=2.0)
    results.ok, results.room, [b.rank for b in results.bots]

A bot knows only what its player is shown: it keeps a
:class:`~client_cli.board.Board` fed by the server's frames and asks a
:class:`~client_cli.strategy.Strategy` for each move.  It speaks through a
:class:`~protocol.wire.session.ClientSession`, as the terminal client does
(hello and welcome, move numbers, answers matched to their moves, resends),
on a lean loop of its own: one socket at a time.  A bot whose socket drops in
a race (the server restarting, say) reconnects with its token, with growing
pauses, for up to ``BotSettings.reconnect_s``, and plays on from the board the
server's ``resync`` shows.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import websockets
from websockets.asyncio.client import ClientConnection

from client_cli.board import Board, Knowledge
from client_cli.connection import open_socket, wire_move
from client_cli.keys import stored_key
from client_cli.net import ClientError, ConnectionLost, error_text
from client_cli.strategy import STRATEGIES, Strategy
from protocol.rules.game import Rules, Status
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode
from protocol.wire.session import (
    MAX_REDIRECTS,
    BadFrame,
    ClientSession,
    Event,
    Frame,
    HelloRefused,
    MoveAnswered,
    Redirected,
    SessionState,
    redirect_url,
)

#: Close codes after which a racing bot reconnects: the server stops or restarts.
_RESUMABLE: Final = frozenset({int(CloseCode.GOING_AWAY), int(CloseCode.TRY_AGAIN_LATER)})

#: Seconds a bot waits for any one step before it reports the race as not completed.
STEP_TIMEOUT_S: Final = 120.0
#: How long a rate-limited bot waits before it resends the same move.
RATE_LIMIT_BACKOFF_S: Final = 0.25
#: Rejections in a row after which a bot resigns (its model must be wrong).
MAX_REJECTIONS: Final = 5
#: Seconds between a racing bot's reconnection attempts: doubling, then the last value.
RECONNECT_BACKOFF_S: Final = (0.25, 0.5, 1.0, 2.0)
#: A host bot in its lobby looks again this often whether it can start (a bot that
#: failed before reaching the room sends the host no frame to wake it).
LOBBY_RECHECK_S: Final = 0.5


@dataclass(frozen=True, slots=True)
class BotSettings:
    """Everything about a bot run beyond the core arguments of :func:`run_bots`."""

    name_prefix: str = "bot"
    #: Seats the host waits for (bots and humans) before it starts; default: the bot count, >= 2.
    min_players: int | None = None
    #: Keep each move's round trip (seconds from send to ``move_result``) in the results.
    record_rtt: bool = False
    #: Seed for the bots' own randomness (start jitter, pace, ties between equal moves);
    #: each bot draws from its own generator, so a fixed seed repeats a run.
    seed: int | None = None
    #: Host: seconds the lobby stays open for people before the bots start without them
    #: (the race starts sooner once a person has joined and everyone is ready).
    lobby_s: float = 0.0
    #: Host: people (not bots) to wait for before starting, however long it takes.
    wait_for: int = 0
    #: Races to play in the room: after each, every bot asks for the rematch.
    races: int = 1
    #: Give up if the server takes longer than this to answer a hello, a join or a move.
    step_timeout_s: float = STEP_TIMEOUT_S
    #: Seconds a racing bot keeps trying to reconnect after its socket drops (0: never);
    #: the server keeps a seat for its reconnect grace (60 s by default).
    reconnect_s: float = 60.0
    #: Called with (bot name, event, detail) as the run progresses (the CLI prints them).
    on_event: Callable[[str, str, str], None] | None = None
    #: Called with (bot name, "sent" or "received", frame) for every frame (tests audit them).
    on_frame: Callable[[str, str, bytes], None] | None = None


@dataclass(slots=True)
class BotResult:
    """How one bot's race went."""

    name: str
    player_id: str | None = None
    status: str = "not_started"
    rank: int | None = None
    time_ms: int | None = None
    cleared: int = 0
    moves: int = 0
    undos: int = 0
    rejected: int = 0
    error: str | None = None
    rtts: list[float] = field(default_factory=list)


@dataclass(slots=True)
class RaceResults:
    """The outcome of :func:`run_bots`."""

    room: str | None
    bots: list[BotResult]
    race_over: m.RaceOver | None = None
    #: Host only: seconds from sending ``start`` to receiving ``race_start`` (dealing included).
    start_latency_s: float | None = None

    @property
    def ok(self) -> bool:
        """True when the race ended and no bot failed."""
        return self.race_over is not None and all(b.error is None for b in self.bots)

    @property
    def errors(self) -> list[str]:
        """Every bot's failure, as ``name: reason``."""
        return [f"{b.name}: {b.error}" for b in self.bots if b.error is not None]


class BotFailed(ClientError):
    """A bot could not complete its race; the message says why."""


class _Moved(Exception):
    """The server sent the bot to another node (``moved``)."""

    def __init__(self, moved: m.Moved) -> None:
        super().__init__(moved.url)
        self.moved = moved


class _Limited(Exception):
    """The server refused the request unhandled for lack of credit (error 114): send it again."""


class Bot:
    """One bot player on one socket; :meth:`run` plays a whole race."""

    def __init__(
        self,
        url: str,
        name: str,
        strategy: str,
        pace: float | None,
        settings: BotSettings,
        rng: random.Random,
    ) -> None:
        self.url = url
        #: The address given; :attr:`url` follows ``moved`` to the room's node (cluster mode).
        self.home_url = url
        self.result = BotResult(name)
        # A bot's name claimed with ``tripeaks claim`` is proved like a person's: its
        # daily attempts are then ranked (on the bots' board).
        self.session = ClientSession(name, bot=True, client="tripeaks-bot", key=stored_key(name))
        self.strategy_name = strategy
        self.strategy = Strategy(strategy, rng=rng)
        # Each bot keeps a pace of its own, within about a fifth of the one asked for.
        self.interval = 0.0 if not pace else (0.8 + 0.45 * rng.random()) / pace
        self.settings = settings
        self.rng = rng
        self.ws: ClientConnection | None = None
        self.board: Board | None = None
        self.undo_allowed = True
        self.next_move_at = 0.0
        self.sent_at = 0.0
        self.waiting = False  # a move is in flight
        self.done_playing = False
        self.rejections = 0
        self.race_over: m.RaceOver | None = None
        self.room_state: m.RoomState | None = None
        self.start_sent_at: float | None = None
        self.start_latency_s: float | None = None
        self.lobby_deadline = 0.0
        self.races_done = 0
        self.rules: Rules | None = None
        #: Host: bots of this run that failed before their race and will never take a seat.
        self.seats_lost = 0
        #: The last message of each kind other than moves, to send again if refused unhandled.
        self.sent: dict[str, m.ClientMessage] = {}

    # ---- plumbing -------------------------------------------------------
    def _event(self, event: str, detail: str = "") -> None:
        if self.settings.on_event is not None:
            self.settings.on_event(self.result.name, event, detail)

    async def _send(self, message: m.ClientMessage) -> None:
        self.sent[message.TAG] = message
        await self._send_frame(self.session.send(message))

    async def _send_frame(self, frame: Frame) -> None:
        assert self.ws is not None and isinstance(frame, bytes)
        if self.settings.on_frame is not None:
            self.settings.on_frame(self.result.name, "sent", frame)
        await self.ws.send(frame)

    async def _recv(self, timeout: float | None) -> list[Event]:
        """The events of the next frame; one that does not decode fails the bot."""
        assert self.ws is not None
        async with asyncio.timeout(timeout):
            frame = await self.ws.recv()
        if self.settings.on_frame is not None and isinstance(frame, bytes):
            self.settings.on_frame(self.result.name, "received", frame)
        events = self.session.receive(frame)
        for event in events:
            if isinstance(event, BadFrame):
                raise BotFailed(f"unreadable frame from the server: {event.error}")
        return events

    async def _expect(self, wanted: type[Any]) -> Any:
        """Wait for a message of type ``wanted``, handling room news on the way."""
        while True:
            for message in await self._recv(self.settings.step_timeout_s):
                if isinstance(message, wanted):
                    return message
                if isinstance(message, Redirected):
                    raise _Moved(message.moved)
                if isinstance(message, m.Moved):
                    raise _Moved(message)
                if isinstance(message, HelloRefused):
                    if message.error.code == ErrorCode.RATE_LIMITED:
                        raise _Limited
                    raise BotFailed(error_text(message.error))
                if isinstance(message, m.Error):
                    if message.code == ErrorCode.RATE_LIMITED:
                        raise _Limited
                    raise BotFailed(error_text(message))
                if isinstance(message, m.Closing):
                    raise BotFailed(f"the server is closing the connection: {message.reason}")

    # ---- the race -------------------------------------------------------
    async def run(
        self,
        *,
        room: str | None,
        create: m.RoomOptions | None,
        code_ready: asyncio.Future[str] | None = None,
        min_players: int = 2,
    ) -> BotResult:
        """Connect, join or create the room, race, and return this bot's result."""
        try:
            await self._run(room, create, code_ready, min_players)
        except BotFailed as exc:
            self.result.error = str(exc)
        except ConnectionLost as exc:
            self.result.error = str(exc)
        except ClientError as exc:
            self.result.error = str(exc)
        except websockets.ConnectionClosed as exc:
            reason = exc.rcvd.reason if exc.rcvd is not None else ""
            self.result.error = "the server closed the connection" + (
                f": {reason}" if reason else ""
            )
        except TimeoutError:
            self.result.error = "timed out waiting for the server"
        finally:
            if code_ready is not None and not code_ready.done():
                code_ready.set_exception(BotFailed(self.result.error or "the host bot failed"))
            self.session.close()
            if self.ws is not None:
                await self.ws.close()
        if self.result.error:
            self.result.status = "error"
            self._event("error", self.result.error)
        return self.result

    async def _run(
        self,
        room: str | None,
        create: m.RoomOptions | None,
        code_ready: asyncio.Future[str] | None,
        min_players: int,
    ) -> None:
        await self._connect()
        request = m.CreateRoom(create) if create is not None else m.Join(room or "")
        state = await self._enter(request)
        self.room_state = state
        if code_ready is not None:
            code_ready.set_result(state.code)
        self._event("joined", state.code)
        await self._send(m.Ready(True))
        self.result.status = "ready"
        self.lobby_deadline = time.monotonic() + self.settings.lobby_s
        host = create is not None
        await self._loop(host=host, min_players=min_players)
        while self.races_done < self.settings.races:
            await self._send(m.Rematch())
            self._next_race()
            await self._loop(host=host, min_players=min_players)

    async def _connect(self) -> m.Welcome:
        """Open a socket and say hello, following ``moved`` to another node (cluster mode)."""
        for _ in range(MAX_REDIRECTS + 1):
            if self.ws is not None:
                await self.ws.close()
            self.ws = await open_socket(self.url, codec.Encoding.MSGPACK)
            # The server picked the newest version both speak; the session speaks it too.
            self.session.encoding = codec.encoding_for(self.ws.subprotocol)
            try:
                welcome: m.Welcome = await self._ask(self.session.hello, m.Welcome)
            except _Moved as moved:
                self.url = redirect_url(self.url, moved.moved.url)
                continue
            self.result.player_id = welcome.player_id
            return welcome
        raise BotFailed("the servers sent this bot from node to node too many times")

    async def _enter(self, request: m.CreateRoom | m.Join) -> m.RoomState:
        """Create or join the room; a ``moved`` answer is followed to the room's node."""
        for _ in range(MAX_REDIRECTS + 1):
            try:
                state: m.RoomState = await self._ask(
                    lambda: self.session.send(request), m.RoomState
                )
            except _Moved as moved:
                self.url = redirect_url(self.url, moved.moved.url)
                self.session.connection_lost()
                await self._connect()
                continue
            return state
        raise BotFailed("the servers sent this bot from node to node too many times")

    async def _ask(self, frame: Callable[[], Frame], wanted: type[Any]) -> Any:
        """Send ``frame()`` and wait for ``wanted``; a request refused for lack of credit
        is sent again after a pause, until the step's time is up."""
        deadline = time.monotonic() + self.settings.step_timeout_s
        while True:
            await self._send_frame(frame())
            try:
                return await self._expect(wanted)
            except _Limited:
                if time.monotonic() + RATE_LIMIT_BACKOFF_S > deadline:
                    raise BotFailed("the server kept refusing for lack of credit") from None
                await asyncio.sleep(RATE_LIMIT_BACKOFF_S)

    def _next_race(self) -> None:
        self.race_over, self.board = None, None
        self.done_playing, self.waiting, self.rejections = False, False, 0
        self.strategy = Strategy(self.strategy_name, rng=self.rng)

    async def _loop(self, *, host: bool, min_players: int) -> None:
        while self.race_over is None:
            try:
                await self._step(host, min_players)
            except (websockets.ConnectionClosed, OSError) as exc:
                if self.board is None or not self.settings.reconnect_s:
                    raise
                await self._reconnect(exc)

    async def _reconnect(self, why: BaseException) -> None:
        """Open a new socket and resume the seat with the token (the race goes on)."""
        self._event("reconnecting", str(why) or type(why).__name__)
        if self.session.state in (SessionState.HELLO_SENT, SessionState.READY):
            self.session.connection_lost()
        deadline = time.monotonic() + self.settings.reconnect_s
        for attempt in itertools.count():
            if time.monotonic() > deadline:
                raise BotFailed(f"lost the server and could not reconnect: {why}")
            await asyncio.sleep(RECONNECT_BACKOFF_S[min(attempt, len(RECONNECT_BACKOFF_S) - 1)])
            try:
                welcome = await self._connect()
            except (ClientError, websockets.ConnectionClosed, OSError, TimeoutError):
                if self.session.state is SessionState.HELLO_SENT:
                    self.session.connection_lost()
                # The node the seat was on may be gone (cluster mode): start where we began.
                self.url = self.home_url
                continue
            if not welcome.resumed:
                raise BotFailed("the server no longer had this bot's seat")
            self._event("reconnected", welcome.player_id)
            return

    def _on_resync(self, resync: m.Resync) -> None:
        """After a reconnect: play on from the board the server has, numbering on."""
        view, rules = resync.view, self.rules
        if view is None or rules is None or self.board is None:
            return
        known = Knowledge.from_view(
            rules, view.board, view.waste_top, view.stock_left,
            moves=view.moves, draws=view.draws, undos=view.undos, undo_allowed=self.undo_allowed,
        )
        self.board = Board(known)
        self.session.restart_moves(resync.last_seq + 1)
        self.waiting = False
        self.next_move_at = time.monotonic()

    async def _step(self, host: bool, min_players: int) -> None:
        """One turn of the race loop: a move, or the next frame from the server."""
        # Waiting on the server is bounded; waiting on people (to join, to
        # start, to finish their race) is not: the race's own time limit ends that.
        timeout = self.settings.step_timeout_s if self.waiting else None
        if self._should_move():
            delay = self.next_move_at - time.monotonic()
            if delay <= 0:
                await self._move()
                return
            timeout = delay
        lobby_left = self._lobby_left(host)
        if lobby_left is not None:
            lobby_left = min(lobby_left, LOBBY_RECHECK_S)
            timeout = lobby_left if timeout is None else min(timeout, lobby_left)
        try:
            events = await self._recv(timeout)
        except TimeoutError:
            if self._should_move():
                return
            if lobby_left is not None:
                await self._maybe_start(min_players)
                return
            raise
        for event in events:
            if isinstance(event, MoveAnswered):
                self._on_result(event.result)
            elif isinstance(event, m.MoveResult):
                self._on_result(event)
            else:
                await self._on_message(event, host, min_players)

    def _should_move(self) -> bool:
        return self.board is not None and not self.waiting and not self.done_playing

    async def _on_message(self, message: Any, host: bool, min_players: int) -> None:
        if isinstance(message, m.RoomState):
            self.room_state = message
            self.undo_allowed = message.options.undo is not m.UndoPolicy.OFF
            if host:
                await self._maybe_start(min_players)
        elif isinstance(message, m.RaceStart):
            self._on_race_start(message)
        elif isinstance(message, m.RaceOver):
            self._on_race_over(message)
        elif isinstance(message, m.Resync):
            self._on_resync(message)
        elif isinstance(message, m.Error):
            await self._on_error(message)
        elif isinstance(message, m.Closing):
            if self.board is not None and self.settings.reconnect_s and message.code in _RESUMABLE:
                return  # the socket closes next; the seat is kept across the restart
            raise BotFailed(f"the server is closing the connection: {message.reason}")
        elif isinstance(message, m.Left):
            raise BotFailed(f"left the room ({message.reason.value})")

    def _lobby_left(self, host: bool) -> float | None:
        """Host in the lobby before starting: seconds until it starts without people."""
        state = self.room_state
        if not host or self.start_sent_at is not None or state is None:
            return None
        if state.phase is not m.Phase.LOBBY:
            return None
        return max(0.0, self.lobby_deadline - time.monotonic())

    async def _maybe_start(self, min_players: int) -> None:
        """Start when the seats are filled, everyone is ready and nobody is awaited."""
        state = self.room_state
        if state is None or state.phase is not m.Phase.LOBBY or self.start_sent_at is not None:
            return
        members = state.members
        if self.seats_lost:
            # Bots that failed on their way in are not waited for; the run reports them.
            min_players -= self.seats_lost
            if min_players < 2 and len(members) < 2:
                raise BotFailed(f"{self.seats_lost} of the other bots could not reach the room")
        if len(members) < min_players or not all(x.ready for x in members):
            return
        people = sum(1 for x in members if not x.bot)
        if people < self.settings.wait_for:
            return
        if not people and time.monotonic() < self.lobby_deadline:
            return  # the lobby is still open for someone to join
        self.start_sent_at = time.monotonic()
        await self._send(m.Start())
        self._event("start", f"{len(members)} players")

    def _on_race_start(self, start: m.RaceStart) -> None:
        if self.start_sent_at is not None:
            self.start_latency_s = time.monotonic() - self.start_sent_at
        view = start.view
        known = Knowledge.from_view(
            start.rules, view.board, view.waste_top, view.stock_left,
            moves=view.moves, draws=view.draws, undos=view.undos, undo_allowed=self.undo_allowed,
        )
        self.board = Board(known)
        self.rules = start.rules
        self.result.status = "racing"
        # Spread the first moves so a room of bots does not move in lockstep.
        self.next_move_at = time.monotonic() + self.rng.random() * self.interval
        self._event("race_start", start.race_id)

    async def _move(self) -> None:
        board = self.board
        assert board is not None
        known = board.confirmed
        if known.status is Status.WON:
            self.done_playing = True
            return
        if known.status is Status.STUCK and not self.undo_allowed:
            self.done_playing = True  # the server has marked us stuck already
            return
        action = self.strategy.choose(known)
        if action is None or self.rejections >= MAX_REJECTIONS:
            self.done_playing = True
            await self._send(m.Resign())
            self._event("resign", "stuck")
            return
        seq, frame = self.session.move(*wire_move(action))
        board.propose(action, seq)
        await self._send_move(frame)

    async def _send_move(self, frame: Frame) -> None:
        self.waiting = True
        self.sent_at = time.monotonic()
        await self._send_frame(frame)

    def _on_result(self, result: m.MoveResult) -> None:
        board = self.board
        if board is None:
            return
        now = time.monotonic()
        if self.settings.record_rtt:
            self.result.rtts.append(now - self.sent_at)
        if result.accepted:
            board.accept(
                result.seq,
                uncovered={u.position: u.card for u in result.uncovered},
                waste_top=result.waste_top,
                stock_left=result.stock_left,
                counts={"moves": result.moves, "draws": result.draws, "undos": result.undos},
                restored=result.position if result.action is m.MoveAction.UNDO else None,
            )
            self.rejections = 0
        else:
            board.reject(result.seq)
            self.rejections += 1
            self.result.rejected += 1
        self.result.cleared = result.cleared
        self.result.moves = result.moves
        self.result.undos = result.undos
        status = result.status
        if status is Status.WON or (status is Status.STUCK and not self.undo_allowed):
            self.done_playing = True
        self.waiting = False
        self.next_move_at = max(self.next_move_at + self.interval, now) if self.interval else now

    async def _on_error(self, error: m.Error) -> None:
        board = self.board
        pending = board.pending[0] if board is not None and board.pending else None
        if error.code == ErrorCode.RATE_LIMITED and pending is not None:
            # The move was not handled: send the same sequence number again, later.
            await asyncio.sleep(RATE_LIMIT_BACKOFF_S)
            await self._send_move(self.session.resend(pending.seq))
            return
        refused = self.sent.get(error.ref or "")
        if error.code == ErrorCode.RATE_LIMITED and refused is not None:
            # Not handled either (a ready, start or rematch): the same again, later.
            await asyncio.sleep(RATE_LIMIT_BACKOFF_S)
            await self._send(refused)
            return
        if self.board is None:
            raise BotFailed(error_text(error))
        self._event("error", error_text(error))
        if pending is not None and error.seq == pending.seq:
            # The server refused the frame unhandled; think again with the same number.
            assert board is not None
            board.forget(pending.seq)
            self.session.refused(pending.seq)
            self.waiting = False
            self.rejections += 1

    def _on_race_over(self, race: m.RaceOver) -> None:
        self.race_over = race
        self.races_done += 1
        pid = self.result.player_id
        for standing in race.standings:
            if standing.player_id == pid:
                self.result.status = standing.status.value
                self.result.rank = standing.rank
                self.result.time_ms = standing.time_ms
                self.result.cleared = standing.cleared
                self.result.moves = standing.moves
                self.result.undos = standing.undos
        self._event("race_over", self.result.status)


async def run_bots(
    url: str,
    count: int,
    room: str | None = None,
    host: bool = False,
    pace: float | None = None,
    strategy: str = "greedy",
    options: m.RoomOptions | None = None,
    *,
    settings: BotSettings | None = None,
) -> RaceResults:
    """Run ``count`` bots through one race and return how it went.

    With ``host=True`` the first bot creates a room with ``options`` (default
    options otherwise), the others join it, and the host starts the race once
    ``settings.min_players`` seats (default ``max(2, count)``) are filled and
    everyone is ready; with ``room=CODE`` every bot joins that room and a human
    host starts it.  ``pace`` is moves per second per bot (``None``: as fast as
    the server answers).  Never raises for a failed race: see ``RaceResults.ok``.
    """
    if host == (room is not None):
        raise ValueError("give exactly one of room=CODE or host=True")
    if count < 1:
        raise ValueError("count must be at least 1")
    if pace is not None and pace <= 0:
        raise ValueError("pace must be positive (moves per second), or None for full speed")
    names = STRATEGIES if strategy == "mixed" else (strategy,)
    Strategy(names[0])  # fails early on an unknown strategy name
    settings = settings or BotSettings()
    bots = [
        Bot(url, f"{settings.name_prefix}{i + 1}", names[i % len(names)], pace, settings,
            random.Random(None if settings.seed is None else f"{settings.seed}:{i}"))
        for i in range(count)
    ]
    if not host:
        assert room is not None
        await asyncio.gather(*(b.run(room=room, create=None) for b in bots))
        return _collect(room, bots)
    min_players = settings.min_players or max(2, count)
    code_ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    host_task = asyncio.create_task(
        bots[0].run(
            room=None, create=options or m.RoomOptions(), code_ready=code_ready,
            min_players=min_players,
        )
    )
    try:
        code = await code_ready
    except BotFailed:
        await host_task
        return _collect(None, bots)
    others = [asyncio.create_task(b.run(room=code, create=None)) for b in bots[1:]]

    def failed_on_the_way_in(bot: Bot) -> Callable[[asyncio.Task[BotResult]], None]:
        def done(task: asyncio.Task[BotResult]) -> None:
            if bot.board is None and bot.result.error is not None:
                bots[0].seats_lost += 1  # the host stops waiting for this seat

        return done

    for bot, task in zip(bots[1:], others, strict=True):
        task.add_done_callback(failed_on_the_way_in(bot))
    await host_task
    if bots[0].result.error is not None:
        # Nobody else starts a bots' room: unless the race is already on, stop waiting.
        for bot, task in zip(bots[1:], others, strict=True):
            if bot.board is None and not task.done():
                task.cancel()
                bot.result.error = f"the host bot failed ({bots[0].result.error})"
                bot.result.status = "error"
    await asyncio.gather(*others, return_exceptions=True)
    return _collect(code, bots)


def _collect(room: str | None, bots: list[Bot]) -> RaceResults:
    race_over = next((b.race_over for b in bots if b.race_over is not None), None)
    latency = bots[0].start_latency_s if bots else None
    return RaceResults(room, [b.result for b in bots], race_over, latency)
