"""``tripeaks play --plain``: the game as lines of text, for pipes, screen readers and CI.

It prints what happens, one line per event (the board as text after each
confirmed move), and reads one command per line from standard input.
Type ``help`` for the commands.  End of input quits (after leaving the room).
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from client_cli.board import UNDO, Action
from client_cli.client import GameClient
from client_cli.net import ClientError
from client_cli.render import plain_board
from client_cli.results import clock, replay_steps, standing_lines, summary_lines
from client_cli.seats import SeatFiles
from client_cli.state import MoveVerdict, by_standing, member_mark, own_status
from protocol.rules.cards import CardError, parse_card
from protocol.rules.game import DRAW
from protocol.rules.layout import PEAK_CARDS
from protocol.wire import messages as m

HELP = """\
commands (one per line):
  anywhere:  help, status, board, quit
  home:      host [seed=S] [undo=off|free|penalty] [wrap=on|off] [empty=on|off]
                  [public] [max=N] [countdown=S] [limit=S] [difficulty=any|easy|medium|hard]
             join CODE, watch CODE, rooms
  lobby:     ready, unready, start (host), leave
  race:      p POSITION or p CARD (play, e.g. p 23 or p QH), d (draw), u (undo), r (resign)
  results:   rematch, replay, leave"""

#: Opponents' progress is printed at most this often (finishes and resignations at once),
#: so a screen reader is not flooded with a line per move.
PROGRESS_EVERY_S = 5.0
#: Seconds ``tripeaks join CODE --plain`` waits for the room before giving up.
JOIN_WAIT_S = 15.0


def parse_room_options(words: list[str]) -> m.RoomOptions:
    """Room options from ``key=value`` words; raises ``ValueError`` with the bad word."""
    values: dict[str, object] = {}
    switches = {"on": True, "off": False, "yes": True, "no": False, "1": True, "0": False}
    for word in words:
        key, _, value = word.partition("=")
        key = key.lower()
        if key == "public" and not value:
            values["public"] = True
        elif key == "seed" and value:
            values["practice_seed"] = value
        elif key == "undo" and value in ("off", "free", "penalty"):
            values["undo"] = m.UndoPolicy(value)
        elif key in ("wrap", "empty", "public", "spectators") and value in switches:
            field = {"empty": "empty_waste", "spectators": "allow_spectators"}.get(key, key)
            values[field] = switches[value]
        elif key in ("max", "countdown", "limit", "delay", "penalty") and value.isdigit():
            field = {
                "max": "max_players", "countdown": "countdown_s", "limit": "time_limit_s",
                "delay": "spectator_delay_s", "penalty": "undo_penalty_s",
            }[key]
            values[field] = int(value)
        elif key == "difficulty" and value in ("any", "easy", "medium", "hard"):
            values["difficulty"] = value
        elif key == "name" and value:
            values["name"] = value
        else:
            raise ValueError(f"not a room option: {word!r} (type help)")
    return m.RoomOptions(**values)  # type: ignore[arg-type]


def parse_play(argument: str) -> int:
    """A position number or a card code on the board; raises ``ValueError`` in words."""
    text = argument.strip().upper()
    if text.isdigit():
        position = int(text)
        if not 0 <= position < PEAK_CARDS:
            raise ValueError("there is no such position (0 to 27)")
        return position
    try:
        parse_card(text)
    except CardError:
        raise ValueError(f"{argument!r} is neither a position (0-27) nor a card like QH") from None
    return -1


class PlainUI:
    """Prints events and runs commands for one :class:`GameClient`."""

    def __init__(self, client: GameClient, out: TextIO) -> None:
        self.client = client
        self.out = out
        self.commitment: str | None = None
        self._last_progress: dict[str, tuple[int, str]] = {}
        self._unsaid: dict[str, str] = {}
        self._progress_said_at = 0.0
        #: The last error the server sent (``tripeaks join`` exits non-zero on one).
        self.last_error: str | None = None
        #: Why this name, said once connected (see :meth:`client_cli.names.NameChoice.explained`).
        self.name_note = ""

    def say(self, text: str) -> None:
        """Print one line at once (a pipe reader waits for it)."""
        self.out.write(text + "\n")
        self.out.flush()

    # ---- events ---------------------------------------------------------
    def on_event(self, event: str, detail: object) -> None:
        """The client's listener: print what happened."""
        handler: Callable[[object], None] | None = getattr(self, f"_on_{event}", None)
        if handler is not None:
            handler(detail)

    def _on_welcome(self, welcome: object) -> None:
        assert isinstance(welcome, m.Welcome)
        again = " (seat restored)" if welcome.resumed else ""
        why = f" ({self.name_note})" if self.name_note else ""
        self.say(f"connected as {welcome.name}{why}{again}; type help for the commands")

    def _on_renamed(self, seated_as: object) -> None:
        self.say(f"another player in this room is called {self.client.session.name}: you are "
                 f"seated as {seated_as}; use --name NAME to race under a name of your own")

    def _on_reconnecting(self, why: object) -> None:
        self.say(f"connection lost ({why}); reconnecting…")

    def _on_closed(self, why: object) -> None:
        self.say(f"disconnected: {why}")

    def _on_error(self, text: object) -> None:
        self.last_error = str(text)
        self.say(f"error: {text}")

    def _on_room(self, room: object) -> None:
        if not isinstance(room, m.RoomState):
            return
        members = []
        for member in room.members:
            tags = [t for t, on in (("host", member.player_id == room.host_id),
                                    ("ready", member.ready), ("bot", member.bot),
                                    ("ghost", member.ghost),
                                    ("guest", member_mark(member.bot, member.ghost,
                                                          member.guest) == "guest"),
                                    ("offline", not member.connected)) if on]
            members.append(member.name + (f" ({', '.join(tags)})" if tags else ""))
        role = "watching" if room.your_role is m.Role.SPECTATOR else "playing"
        self.say(
            f"room {room.code} [{room.phase.value}] {role}; players: {', '.join(members) or 'none'}"
            f"; spectators: {room.spectators}"
        )
        if room.phase is m.Phase.FINISHED and self.client.state.race_over is None:
            self.say("the last race here is over; the next starts when every player asks "
                     "for a rematch")

    def _on_countdown(self, seconds: object) -> None:
        self.say(f"race starts in {seconds} s")

    def _on_race_start(self, start: object) -> None:
        assert isinstance(start, m.RaceStart)
        self.commitment = start.commitment
        kind = "practice race" if start.practice else "race"
        self.say(f"{kind} started; commitment {start.commitment}")
        self._print_board()

    def _on_board(self, _: object) -> None:
        board = self.client.state.board
        if board is not None and not board.pending:
            self._print_board()

    def _on_resync(self, _: object) -> None:
        self.say("resynchronised with the server")

    def _on_rejected(self, verdict: object) -> None:
        assert isinstance(verdict, MoveVerdict)
        self.say(f"refused by the server: {verdict.text}")

    def _on_progress(self, progress: object) -> None:
        assert isinstance(progress, m.Progress)
        urgent = False
        for line in progress.players:
            if line.player_id == self.client.state.player_id:
                continue  # our own board is printed after each move
            key = (line.cleared, line.status.value)
            before = self._last_progress.get(line.player_id)
            if before != key:
                self._last_progress[line.player_id] = key
                urgent |= before is not None and before[1] != key[1]
                name = self.client.state.players.get(line.player_id)
                racing = line.status is m.PlayerStatus.RACING
                self._unsaid[line.player_id] = (
                    f"{name.name if name else '?'} {line.cleared}/28"
                    + ("" if racing else f" {line.status.value.replace('_', ' ')}"))
        now = time.monotonic()
        if self._unsaid and (urgent or now - self._progress_said_at >= PROGRESS_EVERY_S):
            self._progress_said_at = now
            self.say("progress: " + ", ".join(self._unsaid.values()))
            self._unsaid.clear()

    def status_lines(self) -> list[str]:
        """``status``: the connection, the room, the clock and the standings."""
        state = self.client.state
        room = state.room
        where = f"room {room.code} [{room.phase.value}]" if room else "not in a room"
        lines = [f"connection: {state.connection}; {where}"]
        if state.race is not None:
            lines.append(f"race clock {clock(state.race_elapsed() * 1000)}; "
                         f"you: {own_status(state) or 'watching'}")
            for n, player in enumerate(by_standing(list(state.players.values())), 1):
                you = " (you)" if player.player_id == state.player_id else ""
                done = f", #{player.rank} in {clock(player.finish_ms)}" if player.finish_ms else ""
                lines.append(f"  {n}. {player.name}{you}: {player.cleared}/28, "
                             f"{player.moves} moves, {player.status.replace('_', ' ')}{done}")
        return lines

    def _on_finish(self, finish: object) -> None:
        assert isinstance(finish, m.Finish)
        self.say(f"{finish.name} finished #{finish.rank} in {clock(finish.time_ms)}")

    def _on_race_over(self, race: object) -> None:
        assert isinstance(race, m.RaceOver)
        self.say("race over")
        for line in standing_lines(race, self.client.state.player_id):
            self.say(line)
        for line in summary_lines(race, self.commitment):
            self.say(line)
        self.say("type 'replay' for the winning line, 'rematch' to race again")

    def _on_spectator(self, board: object) -> None:
        assert isinstance(board, m.SpectatorBoard)
        player = self.client.state.players.get(board.player_id)
        name = player.name if player else board.player_id
        self.say(f"{name}: {board.view.cleared}/28 cleared, waste {board.view.waste_top or '-'}, "
                 f"stock {board.view.stock_left}")

    def _on_left(self, left: object) -> None:
        assert isinstance(left, m.Left)
        self.say(f"left room {left.code} ({left.reason.value.replace('_', ' ')})")

    def _on_rooms(self, rooms: object) -> None:
        assert isinstance(rooms, m.RoomList)
        if not rooms.rooms:
            self.say("no public rooms")
        for room in rooms.rooms:
            self.say(f"  {room.code}  {room.options.name}  {room.players}/"
                     f"{room.options.max_players} players  {room.phase.value}")

    def _print_board(self) -> None:
        board = self.client.state.board
        if board is not None:
            self.say(plain_board(board.shown))

    # ---- commands -------------------------------------------------------
    async def command(self, line: str) -> bool:
        """Run one command line; return False to quit."""
        words = line.split()
        if not words:
            return True
        verb, args = words[0].lower(), words[1:]
        try:
            return await self._run(verb, args)
        except ValueError as exc:
            self.say(f"error: {exc}")
            return True

    async def _run(self, verb: str, args: list[str]) -> bool:
        c = self.client
        if verb in ("quit", "exit", "q"):
            return False
        if verb in ("help", "?"):
            self.say(HELP)
        elif verb == "board":
            if c.state.board is None:
                self.say("no race on")
            self._print_board()
        elif verb == "status":
            for line in self.status_lines():
                self.say(line)
        elif verb == "host":
            await c.create_room(parse_room_options(args))
        elif verb in ("join", "watch"):
            if len(args) != 1:
                raise ValueError(f"usage: {verb} CODE")
            await c.join(args[0], spectate=verb == "watch")
        elif verb == "rooms":
            await c.list_rooms()
        elif verb in ("ready", "unready"):
            await c.ready(verb == "ready")
        elif verb == "start":
            await c.start()
        elif verb == "leave":
            await c.leave()
        elif verb == "rematch":
            await c.rematch()
        elif verb == "replay":
            race = c.state.race_over
            for step in replay_steps(race) if race else ["no race has ended yet"]:
                self.say(step)
        elif verb in ("p", "play") and len(args) == 1:
            await self._move(self._position(args[0]))
        elif verb in ("d", "draw"):
            await self._move(DRAW)
        elif verb in ("u", "undo"):
            await self._move(UNDO)
        elif verb in ("r", "resign"):
            await c.resign()
        else:
            raise ValueError(f"unknown command {' '.join([verb, *args])!r} (type help)")
        return True

    def _position(self, argument: str) -> int:
        position = parse_play(argument)
        if position >= 0:
            return position
        board = self.client.state.board
        card = parse_card(argument.strip().upper())
        if board is not None:
            for p in board.shown.free_positions():
                if board.shown.peaks[p] == card:
                    return p
        raise ValueError(f"{argument.upper()} is not a free card on your board")

    async def _move(self, action: Action) -> None:
        verdict = await self.client.move(action)
        if not verdict.sent:
            self.say(f"refused: {verdict.text}")


async def _until_race_over(client: GameClient, reader: asyncio.Task[None]) -> None:
    # A room still in its lobby is watched until its coming race is over too.
    live = (m.Phase.LOBBY, m.Phase.COUNTDOWN, m.Phase.RACING)
    while not reader.done() and client.state.race_over is None and client.state.phase in live:
        await asyncio.sleep(0.1)


async def _joined(client: GameClient, ui: PlainUI, reader: asyncio.Task[None]) -> bool:
    """After ``join CODE`` from the command line: True once in the room, False on an error."""
    deadline = time.monotonic() + JOIN_WAIT_S
    while client.state.room is None:
        if ui.last_error is not None or reader.done() or time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


def _read_lines(stdin: TextIO) -> asyncio.Queue[str | None]:
    """Lines of ``stdin`` as they come, ``None`` at the end.

    A daemon thread reads, so a blocked read never keeps the program from exiting.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def pump() -> None:
        for line in iter(stdin.readline, ""):
            loop.call_soon_threadsafe(queue.put_nowait, line)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=pump, name="stdin", daemon=True).start()
    return queue


async def run_plain(
    url: str,
    name: str,
    *,
    first: list[str] | None = None,
    create: m.RoomOptions | None = None,
    stdin: TextIO | None = None,
    out: TextIO | None = None,
    name_note: str = "",
) -> int:
    """Run the plain client until ``quit`` or end of input.

    ``create`` makes a room with those options at once; ``first`` are commands
    run before reading input (``join CODE`` for ``tripeaks join``); ``name_note``
    says where the name came from, on the line that says who you are.
    """
    stdin = stdin or sys.stdin
    out = out or sys.stdout
    client = GameClient(url, name, seats=SeatFiles(url))
    ui = PlainUI(client, out)
    ui.name_note = name_note
    client.listener = ui.on_event
    joining = [c.split()[1] for c in first or [] if c.startswith("join ")]
    seat = client.seats.load(joining[0], name) if client.seats and joining else None
    if seat is not None:
        client.resume(seat)
    try:
        await client.connect()
    except ClientError as exc:
        ui.say(f"error: {exc}")
        return 1
    reader = asyncio.create_task(client.run())
    lines = _read_lines(stdin)
    status = 0
    try:
        if create is not None:
            await client.create_room(create)
        # A seat taken back needs no join: the room and the race come with the welcome.
        for command in [] if client.resumed else first or []:
            await ui.command(command)
        if first and not await _joined(client, ui, reader):
            ui.say(f"could not enter the room: {ui.last_error or 'no answer from the server'}")
            return 1
        while not reader.done():
            next_line = asyncio.ensure_future(lines.get())
            await asyncio.wait({next_line, reader}, return_when=asyncio.FIRST_COMPLETED)
            if not next_line.done():
                next_line.cancel()
                break
            text = next_line.result()
            if text is None:
                # Out of input: a spectator keeps watching until the race is over.
                if client.state.role is m.Role.SPECTATOR:
                    await _until_race_over(client, reader)
                break
            if not await ui.command(text):
                break
        if reader.done() and client.state.connection == "closed":
            status = 1
    finally:
        if client.state.room is not None and client.state.connection == "online":
            await client.leave()
        await client.close()
        reader.cancel()
    return status
