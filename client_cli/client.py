"""The client's state and network loop, shared by the full-screen app and the plain mode.

:class:`GameClient` owns one :class:`~protocol.wire.session.ClientSession`
(what is said and what it means: hello, move numbers, moves in flight) and
one :class:`~client_cli.connection.Connection` (the socket), keeps what the
screens show (room, board, opponents, results) and tells a listener what
changed.  When the socket drops it reconnects with backoff using the
reconnect token, shows ``reconnecting``, and after the server's ``resync``
resends what the session says was still in flight (same sequence numbers,
so the server counts each once).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final

from client_cli.board import UNSURE, Action, Board, Knowledge
from client_cli.connection import Connection, unreadable, wire_move
from client_cli.keys import stored_key
from client_cli.net import CLIENT_NAME, ClientError, ConnectionLost, ServerRefused, error_text
from client_cli.seats import SavedSeat, SeatFiles
from client_cli.state import OUT_OF_RACE, ClientState, MoveVerdict, Opponent
from protocol.rules.game import Rules, Status
from protocol.rules.refusals import Reason
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode
from protocol.wire.session import (
    BadFrame,
    ClientSession,
    Event,
    Frame,
    HelloRefused,
    MoveAnswered,
    Redirected,
)

#: Seconds between reconnection attempts: doubling, then staying at the last value.
BACKOFF_S: Final = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
#: Give up reconnecting after this long (the server keeps a seat for 60 s).
RECONNECT_FOR_S: Final = 75.0

Listener = Callable[[str, object], None]


class GameClient:
    """One player's (or spectator's) connection, state and actions."""

    def __init__(
        self, url: str, name: str, listener: Listener | None = None,
        seats: SeatFiles | None = None,
    ) -> None:
        # The watch screen takes a moment's progress and boards in one frame.
        self.session = ClientSession(
            name, client=CLIENT_NAME, key=stored_key(name), spectator_update=True
        )
        self.link = Connection(url, self.session)
        self.state = ClientState()
        self.listener = listener
        #: Where the room's reconnect token is kept, so a new process can reclaim the seat.
        self.seats = seats
        self._saved: tuple[str, str] | None = None
        self._resuming: str | None = None
        self._leaving = False
        #: True when the last ``welcome`` gave back a seat (``tripeaks join`` after a quit).
        self.resumed = False
        self._outbox: list[Frame] = []
        self._closing = False
        self._syncing = False
        self._connected = asyncio.Event()
        self._join_role = m.Role.PLAYER

    # ---- listener ------------------------------------------------------
    def _tell(self, event: str, detail: object = None) -> None:
        if self.listener is None:
            return
        try:
            self.listener(event, detail)
        except Exception:  # a drawing bug must never stop the network loop, nor show a traceback
            self.state.set_error(f"the screen could not be redrawn after {event}")

    def _set_connection(self, value: str) -> None:
        self.state.connection = value
        self._tell("connection", value)

    # ---- the loop ------------------------------------------------------
    def resume(self, seat: SavedSeat) -> None:
        """Say ``seat``'s token in the next hello, to reclaim that seat (before :meth:`connect`)."""
        self.session.token = seat.token
        self._resuming = seat.code

    async def connect(self) -> m.Welcome:
        """First connection; raises :class:`ClientError` in words if it fails."""
        self._set_connection("connecting")
        welcome = await self.link.open()
        if self._resuming is not None and not welcome.resumed and self.seats is not None:
            self.seats.forget(self._resuming)  # the grace ran out: that seat is gone
        self._resuming = None
        self.resumed = welcome.resumed
        self.state.player_id, self.state.name = welcome.player_id, welcome.name
        self._set_connection("online")
        self._connected.set()
        self._tell("welcome", welcome)
        return welcome

    async def run(self) -> None:
        """Read messages until :meth:`close`, reconnecting after a drop.  Never raises."""
        while not self._closing:
            try:
                while not self._closing:
                    for event in await self.link.receive():
                        if isinstance(event, m.Moved):
                            await self._follow(event)
                        else:
                            self._on_event(event)
            except ConnectionLost as exc:
                if self._closing:
                    break
                if exc.final or not await self._reconnect(str(exc)):
                    self.state.set_error(str(exc))
                    self._set_connection("closed")
                    self._tell("closed", str(exc))
                    return
            except ClientError as exc:
                self.state.set_error(str(exc))
                self._tell("error", str(exc))
                await self.link.close()
                if not await self._reconnect(str(exc)):
                    self._set_connection("closed")
                    self._tell("closed", str(exc))
                    return
        self._set_connection("closed")

    async def _follow(self, moved: m.Moved) -> None:
        """The room is on another node (cluster mode): go there and ask again."""
        self.link.move_to(moved.url)
        self._tell("moved", moved.url)
        welcome = await self.link.open()
        self.state.player_id = welcome.player_id
        self._tell("welcome", welcome)
        if moved.ref == m.Join.TAG and moved.code is not None:
            await self.send(m.Join(moved.code, self._join_role))

    async def _reconnect(self, why: str) -> bool:
        self._connected.clear()
        self._set_connection("reconnecting")
        self._tell("reconnecting", why)
        started = time.monotonic()
        attempt = 0
        while not self._closing and time.monotonic() - started < RECONNECT_FOR_S:
            await asyncio.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
            attempt += 1
            try:
                welcome = await self.link.open()
            except ServerRefused as exc:
                self._tell("error", str(exc))
                if exc.code == ErrorCode.CLUSTER_UNAVAILABLE:
                    continue  # the cluster's directory is back in a few seconds
                return False
            except ClientError:
                # The node this seat was on may be gone: start again where we began.
                self.link.url = self.link.home_url
                continue
            self.state.player_id = welcome.player_id
            self._set_connection("online")
            self._connected.set()
            self._tell("welcome", welcome)
            if not welcome.resumed and self.state.room is not None:
                if self.seats is not None:
                    self.seats.forget(self.state.room.code)
                self._saved = None
                self._tell("error", "the server no longer had our seat; the room was left")
                self.state.room = None
                self._tell("room", None)
            return True
        return False

    async def close(self) -> None:
        """Stop the loop; the seat stays reclaimable (for the grace) unless we left."""
        self._closing = True
        room = self.state.room
        if self.seats is not None and room is not None and self._saved is not None:
            if self._leaving:
                self.seats.forget(room.code)
            else:  # released: the next ``tripeaks join`` may take the seat back
                self.seats.save(room.code, self._saved[1], self.session.name, held=False)
        await self.link.close()

    def drop_connection(self) -> None:
        """Cut the socket as a network failure would (for tests and the debug key)."""
        self.link.drop()

    # ---- sending --------------------------------------------------------
    async def send(self, message: m.ClientMessage) -> bool:
        """Send now; while reconnecting, returns False (moves are kept and resent)."""
        if self.state.connection != "online":
            return False
        try:
            await self.link.send(message)
        except ConnectionLost:
            return False
        return True

    async def _write(self, frame: Frame) -> bool:
        """:meth:`send` for a frame the session made (a move)."""
        if self.state.connection != "online":
            return False
        try:
            await self.link.write(frame)
        except ConnectionLost:
            return False
        return True

    async def create_room(self, options: m.RoomOptions) -> None:
        """Create a room with ``options`` (the answer is a ``room`` event)."""
        await self.send(m.CreateRoom(options))

    async def join(self, code: str, spectate: bool = False) -> None:
        """Join room ``code`` as a player, or as a spectator."""
        role = self._join_role = m.Role.SPECTATOR if spectate else m.Role.PLAYER
        await self.send(m.Join(code.strip().upper(), role))

    async def ready(self, ready: bool = True) -> None:
        """Say ready (or not) in the lobby."""
        await self.send(m.Ready(ready))

    async def start(self) -> None:
        """Start the race (host only)."""
        await self.send(m.Start())

    async def leave(self) -> None:
        """Leave the room."""
        self._leaving = True
        await self.send(m.Leave())

    async def resign(self) -> None:
        """Give up this race."""
        await self.send(m.Resign())

    async def rematch(self) -> None:
        """Ask for another race in the same room."""
        await self.send(m.Rematch())

    async def list_rooms(self) -> None:
        """Ask for the public rooms (a ``rooms`` event)."""
        await self.send(m.ListRooms())

    async def move(self, action: Action) -> MoveVerdict:
        """Check ``action`` with the known cards, show it at once and send it.

        A sure-illegal move is not sent: the verdict carries the reason.
        """
        board = self.state.board
        position = action if isinstance(action, int) else None
        if board is None or self.state.phase is not m.Phase.RACING:
            return MoveVerdict(False, Reason.GAME_OVER, position)
        verdict = board.check(action)
        if verdict is not None and verdict != UNSURE:
            assert isinstance(verdict, Reason)
            return MoveVerdict(False, verdict, position)
        seq, frame = self.session.move(*wire_move(action))
        board.propose(action, seq)
        self._tell("board", None)
        await self._write(frame)
        return MoveVerdict(True, None, position)

    # ---- receiving ------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        if isinstance(event, MoveAnswered):
            self._on_move_result(event.result)
        elif isinstance(event, BadFrame):
            raise unreadable(event)
        elif isinstance(event, HelloRefused):
            self.handle(event.error)
        elif isinstance(event, Redirected):
            self.link.move_to(event.moved.url)
        else:
            self.handle(event)

    def handle(self, message: m.ServerMessage) -> None:
        """Fold one server message into the state and tell the listener."""
        handler = _HANDLERS.get(type(message))
        if handler is not None:
            handler(self, message)

    def _on_room(self, room: m.RoomState) -> None:
        state = self.state
        previous = state.room
        state.room = room
        state.last_error = ""  # the room moved on: an old refusal no longer applies
        for member in room.members:
            player = state.players.get(member.player_id)
            if player is None:
                player = Opponent(member.player_id, member.name, member.bot, member.ghost,
                                  member.guest)
                state.players[member.player_id] = player
            else:
                player.connected, player.name = member.connected, member.name
                player.guest = member.guest
            if member.player_id == state.player_id:
                # The server seats a second "root" as "root (2)": say so, once per change.
                if member.name != state.name and member.name != self.session.name:
                    self._tell("renamed", member.name)
                state.name = member.name
        if room.phase is not m.Phase.RACING:
            # Outside a race only the members count: who left is not in the next one.
            seated = {x.player_id for x in room.members}
            for player_id in [p for p in state.players if p not in seated]:
                del state.players[player_id]
        back_in_lobby = previous is None or previous.phase is not m.Phase.LOBBY
        after_race = previous is not None and previous.phase is m.Phase.FINISHED
        if (room.phase is m.Phase.LOBBY and back_in_lobby) or (
            after_race and room.phase is not m.Phase.FINISHED
        ):
            self._reset_race()  # a rematch or a new race: the last results are history
        self._keep_seat(room)
        self._tell("room", room)

    def _keep_seat(self, room: m.RoomState) -> None:
        """Write the room's token to disk once per seat (see :mod:`client_cli.seats`)."""
        token = self.session.token
        if self.seats is None or token is None or room.your_role is not m.Role.PLAYER:
            return
        if self._saved != (room.code, token):
            self._saved = (room.code, token)
            self._leaving = False
            self.seats.save(room.code, token, self.session.name)

    def _reset_race(self) -> None:
        state = self.state
        state.board = None
        state.race = None
        state.race_over = None
        state.my_finish_ms = None
        state.my_stopped_ms = None
        state.penalty_ms = 0
        state.race_clock_zero = None
        state.countdown_until = None
        for player in state.players.values():
            player.cleared, player.moves, player.undos, player.elapsed_ms = 0, 0, 0, 0
            player.cleared_at_ms = 0
            player.status, player.finish_ms, player.rank, player.board = "racing", None, None, None

    def _on_countdown(self, countdown: m.Countdown) -> None:
        lead = (countdown.start_at_ms - countdown.server_time_ms) / 1000
        self.state.countdown_until = time.monotonic() + max(0.0, lead)
        self._tell("countdown", countdown.seconds)

    def _on_race_start(self, start: m.RaceStart) -> None:
        state = self.state
        state.race = start
        state.race_over = None
        state.my_finish_ms = None
        state.countdown_until = None
        already = max(0, start.server_time_ms - start.started_at_ms) / 1000
        state.race_clock_zero = time.monotonic() - already
        if state.role is m.Role.PLAYER:
            state.board = Board(_knowledge(start.rules, start.view, self._undo_allowed()))
        if state.room is not None:
            # Whoever left the lobby before the start is not in this race.
            seated = {x.player_id for x in state.room.members}
            for player_id in [p for p in state.players if p not in seated]:
                del state.players[player_id]
        # Every racer starts from the same visible board, so a watcher can draw
        # them all before anyone has moved.
        for player in state.players.values():
            if player.board is None:
                player.board = start.view
        self._tell("race_start", start)

    def _undo_allowed(self) -> bool:
        room = self.state.room
        return room is None or room.options.undo is not m.UndoPolicy.OFF

    def _on_move_result(self, result: m.MoveResult) -> None:
        board = self.state.board
        if board is None:
            return
        if result.accepted:
            self.state.last_error = ""
            self.state.penalty_ms = result.penalty_ms
            board.accept(
                result.seq,
                uncovered={u.position: u.card for u in result.uncovered},
                waste_top=result.waste_top,
                stock_left=result.stock_left,
                counts={"moves": result.moves, "draws": result.draws, "undos": result.undos},
                restored=result.position if result.action is m.MoveAction.UNDO else None,
            )
            if result.status is Status.WON:
                self.state.my_finish_ms = result.elapsed_ms + result.penalty_ms
            self._tell("board", None)
        else:
            board.reject(result.seq)
            reason = result.reason if result.reason is not None else Reason.GAME_OVER
            self._tell("rejected", MoveVerdict(False, reason, result.position))

    def _on_progress(self, progress: m.Progress) -> None:
        for line in progress.players:
            player = self.state.players.get(line.player_id)
            if player is None:
                player = self.state.players[line.player_id] = Opponent(line.player_id, "?")
            if line.cleared != player.cleared:
                player.cleared_at_ms = progress.elapsed_ms
            player.cleared, player.stock_left = line.cleared, line.stock_left
            player.moves, player.undos = line.moves, line.undos
            player.status, player.elapsed_ms = line.status.value, line.elapsed_ms
            player.connected = line.connected
            out = line.status.value in OUT_OF_RACE
            if line.player_id == self.state.player_id and out and self.state.my_stopped_ms is None:
                self.state.my_stopped_ms = line.elapsed_ms
        self._tell("progress", progress)

    def _on_finish(self, finish: m.Finish) -> None:
        player = self.state.players.get(finish.player_id)
        if player is not None:
            player.finish_ms, player.rank, player.status = finish.time_ms, finish.rank, "finished"
            player.cleared = 28
        if finish.player_id == self.state.player_id:
            self.state.my_finish_ms = finish.time_ms
        self._tell("finish", finish)

    def _on_race_over(self, race: m.RaceOver) -> None:
        self.state.race_over = race
        for standing in race.standings:
            player = self.state.players.get(standing.player_id)
            if player is not None:
                # The standings are the final word: the race's end may send no last progress.
                player.rank, player.status = standing.rank, standing.status.value
                player.cleared, player.moves = standing.cleared, standing.moves
                player.undos = standing.undos
        self._tell("race_over", race)

    def _on_spectator_board(self, board: m.SpectatorBoard) -> None:
        player = self.state.players.get(board.player_id)
        if player is None:
            player = self.state.players[board.player_id] = Opponent(board.player_id, "?")
        player.board = board.view
        player.cleared = board.view.cleared
        player.elapsed_ms = board.elapsed_ms
        self._tell("spectator", board)

    def _on_spectator_update(self, update: m.SpectatorUpdate) -> None:
        if update.progress is not None:
            self._on_progress(update.progress)
        for board in update.boards:
            self._on_spectator_board(board)

    def _on_resync(self, resync: m.Resync) -> None:
        self._syncing = False
        state = self.state
        state.penalty_ms = resync.penalty_ms
        if resync.started_at_ms is not None and resync.phase is m.Phase.RACING:
            state.race_clock_zero = time.monotonic() - resync.elapsed_ms / 1000
        if resync.view is None or state.role is not m.Role.PLAYER:
            self._tell("resync", resync)
            return
        if state.race is None:
            state.race = _race_from_resync(resync, state.room)
        rules = state.race.rules if state.race is not None else _rules_of(state.room)
        known = _knowledge(rules, resync.view, self._undo_allowed(), history_complete=False)
        if state.board is None:
            state.board = Board(known, next_seq=resync.last_seq + 1)
            self.session.restart_moves(resync.last_seq + 1)
        else:
            state.board.resync(known, resync.last_seq)
            # Moves sent before the drop and not yet in the view go again, same numbers.
            self._outbox.extend(self.session.resend_after_resync(resync.last_seq))
        self._tell("resync", resync)
        if self._outbox:
            asyncio.get_running_loop().create_task(self._flush())
        self._tell("board", None)

    async def _flush(self) -> None:
        outbox, self._outbox = self._outbox, []
        for frame in outbox:
            await self._write(frame)

    def _on_error(self, error: m.Error) -> None:
        text = error_text(error)
        self.state.set_error(text)
        board = self.state.board
        if error.seq is not None and board is not None and not self._syncing:
            # The move was not handled, so the ones after it cannot be either:
            # ask for the server's view and resend from there (see _on_resync).
            self._syncing = True
            delay = 0.5 if error.code == ErrorCode.RATE_LIMITED else 0.0
            asyncio.get_running_loop().create_task(self._sync_after(delay))
        self._tell("error", text)

    async def _sync_after(self, delay: float) -> None:
        await asyncio.sleep(delay)
        if not await self.send(m.Sync()):
            self._syncing = False

    def _on_room_list(self, rooms: m.RoomList) -> None:
        self.state.rooms = rooms.rooms
        self._tell("rooms", rooms)

    def _on_left(self, left: m.Left) -> None:
        if self.seats is not None:
            self.seats.forget(left.code)
        self._saved = None
        self.state.room = None
        self._reset_race()
        self.state.players.clear()
        self._tell("left", left)

    def _on_closing(self, closing: m.Closing) -> None:
        self.state.set_error(closing.reason)
        self._tell("error", f"the server is closing the connection: {closing.reason}")


def _race_from_resync(resync: m.Resync, room: m.RoomState | None) -> m.RaceStart | None:
    """The race a new process sat back down in, as its ``race_start`` would have said."""
    if resync.view is None or resync.race_id is None or resync.commitment is None:
        return None
    if resync.started_at_ms is None or room is None:
        return None
    rules = room.options.rules
    return m.RaceStart(
        race_id=resync.race_id, practice=room.options.practice, wrap=rules.wrap,
        empty_waste=rules.empty_waste, commitment=resync.commitment, view=resync.view,
        started_at_ms=resync.started_at_ms, server_time_ms=resync.server_time_ms,
    )


def _rules_of(room: m.RoomState | None) -> Rules:
    return Rules() if room is None else room.options.rules


def _knowledge(
    rules: Rules, view: m.BoardView, undo_allowed: bool, *, history_complete: bool = True
) -> Knowledge:
    return Knowledge.from_view(
        rules, view.board, view.waste_top, view.stock_left, moves=view.moves, draws=view.draws,
        undos=view.undos, undo_allowed=undo_allowed, history_complete=history_complete,
    )


_HANDLERS: Final[dict[type, Callable[[GameClient, object], None]]] = {
    m.RoomState: GameClient._on_room,  # type: ignore[dict-item]
    m.Countdown: GameClient._on_countdown,  # type: ignore[dict-item]
    m.RaceStart: GameClient._on_race_start,  # type: ignore[dict-item]
    m.MoveResult: GameClient._on_move_result,  # type: ignore[dict-item]
    m.Progress: GameClient._on_progress,  # type: ignore[dict-item]
    m.Finish: GameClient._on_finish,  # type: ignore[dict-item]
    m.RaceOver: GameClient._on_race_over,  # type: ignore[dict-item]
    m.SpectatorBoard: GameClient._on_spectator_board,  # type: ignore[dict-item]
    m.SpectatorUpdate: GameClient._on_spectator_update,  # type: ignore[dict-item]
    m.Resync: GameClient._on_resync,  # type: ignore[dict-item]
    m.Error: GameClient._on_error,  # type: ignore[dict-item]
    m.RoomList: GameClient._on_room_list,  # type: ignore[dict-item]
    m.Left: GameClient._on_left,  # type: ignore[dict-item]
    m.Closing: GameClient._on_closing,  # type: ignore[dict-item]
}
