"""The race, results and watch screens of the terminal app, and their shared base."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, ClassVar, Final

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, DataTable, Digits, Static

from client_cli.board import UNDO, Knowledge
from client_cli.client import ClientState, MoveVerdict, Opponent, own_status
from client_cli.render import HOTKEYS, POSITION_OF_KEY, describe, draw_board
from client_cli.results import clock, replay_steps, revealed_deal, verify
from protocol.rules.game import DRAW, Game, Rules
from protocol.rules.layout import PEAK_CARDS
from protocol.wire import messages as m

if TYPE_CHECKING:
    from client_cli.app import TriPeaksApp

FLASH_S: Final = 0.8
RESIGN_CONFIRM_S: Final = 3.0
BAR_WIDTH: Final = 14
CONNECTION_WORDS: Final = {
    "online": "● online",
    "connecting": "○ connecting…",
    "reconnecting": "◌ reconnecting…",
    "offline": "○ offline",
    "closed": "✗ disconnected",
}


class ClientScreen(Screen[Any]):
    """A screen that shows the client's state and a connection line at the bottom."""

    @property
    def tripeaks(self) -> TriPeaksApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    def compose_status(self) -> ComposeResult:
        yield Static("", id="connection")

    def set_status(self, text: str) -> None:
        """Write the bottom status line."""
        for widget in self.query("#connection").results(Static):
            widget.update(text)

    def refresh_view(self) -> None:
        """Redraw from the client's state (subclasses extend it)."""
        state = self.tripeaks.client.state
        words = CONNECTION_WORDS.get(state.connection, state.connection)
        room = f"   room {state.room.code}" if state.room is not None else ""
        error = f"   last error: {state.last_error}" if state.last_error else ""
        self.set_status(f"{words}   {state.player_id or ''}{room}{error}")

    def on_client_event(self, event: str, detail: object) -> None:
        """A client event arrived while this screen is shown."""
        self.refresh_view()

    def on_screen_resume(self) -> None:
        self.refresh_view()


def progress_bar(cleared: int, width: int = BAR_WIDTH) -> Text:
    """``█████░░░░ 12/28``."""
    filled = round(width * cleared / PEAK_CARDS)
    bar = Text("█" * filled, "green")
    bar.append("░" * (width - filled), "grey37")
    bar.append(f" {cleared:>2}/28")
    return bar


def opponent_lines(players: list[Opponent], me: str | None) -> Text:
    """The side panel: one block per player with a live bar, status and finish time."""
    out = Text()
    for player in players:
        name = player.name + (" (you)" if player.player_id == me else "")
        name += " 🤖" if player.bot else ""
        out.append(f"{name}\n", "bold" if player.player_id == me else "")
        out.append_text(progress_bar(player.cleared))
        out.append(f"  {player.moves} moves", "grey70")
        status = player.status if player.connected else f"{player.status}, offline"
        if player.finish_ms is not None:
            status = f"#{player.rank} in {clock(player.finish_ms)}"
        out.append(f"\n  {status}\n\n", "grey70")
    return out


def penalty_text(state: ClientState) -> str:
    """`` (+10 s undo penalty)`` while penalties count, else nothing."""
    if not state.penalty_ms or state.my_finish_ms is not None:
        return ""
    return f" (+{state.penalty_ms / 1000:g} s undo penalty)"


def own_counts(state: ClientState) -> str:
    """Cleared, moves and undos as the screen shows them."""
    board = state.board
    if board is None:
        return ""
    shown = board.shown
    return f"cleared {shown.cleared}/28 · moves {shown.moves} · undos {shown.undos}"


class RaceScreen(ClientScreen):
    """The player's board, hotkeys, clocks and the opponents' progress."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "draw", "draw", priority=True),
        Binding("enter", "draw", "draw", show=False, priority=True),
        Binding("u", "undo", "undo", priority=True),
        Binding("r", "resign", "resign", priority=True),
    ]
    DEFAULT_CSS = """
    RaceScreen #main { height: 1fr; }
    RaceScreen #left { width: 66; }
    RaceScreen #clock { text-style: bold; height: 1; }
    RaceScreen #countdown { color: $warning; width: auto; display: none; }
    RaceScreen #board { height: 17; }
    RaceScreen #message { height: 2; color: $warning; }
    RaceScreen #opponents { width: 1fr; border: round $accent; padding: 0 1; }
    RaceScreen #keys { color: $text-muted; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.flash_position: int | None = None
        self.flash_until = 0.0
        self.resign_asked_at = 0.0
        self.message = ""

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Static("", id="clock")
                yield Digits("", id="countdown")
                yield Static("", id="board")
                yield Static("", id="message")
                yield Static(
                    "keys: 1-0 bottom row · a-l row 2 · z-n row 1 · q w e tops · "
                    "space draw · u undo · r resign", id="keys")
            yield VerticalScroll(Static("", id="opponent-list"), id="opponents")
        yield from self.compose_status()

    def on_mount(self) -> None:
        self.set_interval(0.1, self.tick)
        self.refresh_view()

    def tick(self) -> None:
        state = self.tripeaks.client.state
        left = state.countdown_left()
        countdown = self.query_one("#countdown", Digits)
        countdown.display = left is not None
        if left is not None:
            countdown.update(str(math.ceil(left)))
            if state.board is None:
                self.query_one("#board", Static).update(
                    f"the race starts in {math.ceil(left)} s — the cards show their keys"
                )
        if state.race is not None:
            self.query_one("#clock", Static).update(
                f"race clock {clock(state.race_elapsed() * 1000)}{penalty_text(state)}"
                f"   {own_status(state)}   {own_counts(state)}"
            )
        if self.flash_position is not None and time.monotonic() > self.flash_until:
            self.flash_position = None
            self.draw_board()

    def refresh_view(self) -> None:
        super().refresh_view()
        self.draw_board()
        state = self.tripeaks.client.state
        players = list(state.players.values())
        self.query_one("#opponent-list", Static).update(opponent_lines(players, state.player_id))
        self.query_one("#message", Static).update(self.message)

    def draw_board(self) -> None:
        board = self.tripeaks.client.state.board
        widget = self.query_one("#board", Static)
        if board is None:
            widget.update("waiting for the deal…")
            return
        widget.update(draw_board(board.shown, flash=self.flash_position))

    def on_client_event(self, event: str, detail: object) -> None:
        if event == "rejected" and isinstance(detail, MoveVerdict):
            self.explain(detail, by_server=True)
        elif event == "finish" and isinstance(detail, m.Finish):
            if detail.player_id == self.tripeaks.client.state.player_id:
                self.message = f"★ you finished #{detail.rank} in {clock(detail.time_ms)}!"
        elif event in ("board", "race_start"):
            self.message = ""
        elif event == "reconnecting":
            self.message = "connection lost — reconnecting… (your moves are kept)"
        elif event == "resync":
            self.message = "reconnected; board resynchronised"
        self.refresh_view()

    def explain(self, verdict: MoveVerdict, by_server: bool = False) -> None:
        """Flash the card and say why the move is not allowed."""
        if verdict.position is not None and 0 <= verdict.position < PEAK_CARDS:
            self.flash_position = verdict.position
            self.flash_until = time.monotonic() + FLASH_S
        who = "the server says: " if by_server else ""
        card = ""
        board = self.tripeaks.client.state.board
        if board is not None and verdict.position is not None and verdict.position < PEAK_CARDS:
            known = board.shown.visible(verdict.position)
            if known is not None and known >= 0:
                card = f"{describe(known)}: "
        self.message = f"✗ {who}{card}{verdict.text}"
        self.refresh_view()

    async def on_key(self, event: events.Key) -> None:
        key = event.key
        if key in POSITION_OF_KEY:
            event.stop()
            await self.move(POSITION_OF_KEY[key])

    async def move(self, action: int | str) -> None:
        verdict = await self.tripeaks.client.move(action)  # type: ignore[arg-type]
        if not verdict.sent:
            self.explain(verdict)
        else:
            self.message = ""
            self.refresh_view()

    async def action_draw(self) -> None:
        await self.move(DRAW)

    async def action_undo(self) -> None:
        await self.move(UNDO)

    async def action_resign(self) -> None:
        # A second press within a few seconds confirms: one stray key must not end a race.
        now = time.monotonic()
        if now - self.resign_asked_at > RESIGN_CONFIRM_S:
            self.resign_asked_at = now
            self.message = "press r again to resign"
        else:
            self.resign_asked_at = 0.0
            await self.tripeaks.client.resign()
            self.message = "you resigned"
        self.refresh_view()


class ResultsScreen(ClientScreen):
    """Ranking, par, the seed and its commitment check, the winning line, rematch."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "step(1)", "next card"),
        Binding("p", "step(-1)", "previous card"),
        Binding("a", "autoplay", "play the line"),
    ]
    DEFAULT_CSS = """
    ResultsScreen #standings { height: auto; max-height: 18; }
    ResultsScreen #summary { padding: 1 0; }
    ResultsScreen #replay-board { height: 16; }
    ResultsScreen Grid { grid-size: 2; height: 3; width: 40; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.step = 0
        self.autoplay = False

    def compose(self) -> ComposeResult:
        yield Static("[b]Results[/b]")
        yield DataTable(id="standings", cursor_type="none")
        yield Static("", id="summary")
        yield Static("", id="replay-step")
        yield Static("", id="replay-board")
        with Grid():
            yield Button("Rematch", id="rematch", variant="primary")
            yield Button("Leave", id="leave", variant="error")
        yield from self.compose_status()

    def on_mount(self) -> None:
        self.query_one("#standings", DataTable).add_columns(
            "rank", "player", "result", "time", "cleared", "moves", "undos"
        )
        self.set_interval(0.4, self._auto_step)
        self.refresh_view()

    def refresh_view(self) -> None:
        super().refresh_view()
        state = self.tripeaks.client.state
        race = state.race_over
        if race is None:
            return
        table = self.query_one("#standings", DataTable)
        table.clear()
        for s in sorted(race.standings, key=lambda s: s.rank):
            name = s.name + (" (bot)" if s.bot else "") + (
                " ← you" if s.player_id == state.player_id else "")
            time_text = clock(s.time_ms) if s.status is m.PlayerStatus.FINISHED else "–"
            table.add_row(str(s.rank), name, s.status.value.replace("_", " "), time_text,
                          f"{s.cleared}/28", str(s.moves), str(s.undos))
        commitment = state.race.commitment if state.race is not None else None
        check = verify(race, commitment)
        par = "unknown" if race.par is None else f"{race.par} draws"
        self.query_one("#summary", Static).update(
            f"par {par} · {'practice race · ' if race.practice else ''}seed {race.seed!r} · "
            f"commitment {race.commitment[:12]}… {'✔' if check.commitment_ok else '✗'} · "
            f"deal {'✔' if check.deal_ok else '✗'} · winning line {'✔' if check.line_ok else '✗'}"
            f"\nwinning line: {len(race.solution)} steps — n / p to step, a to play it"
            f"\n{rematch_text(state.room)}"
        )
        self.query_one("#rematch", Button).disabled = state.role is m.Role.SPECTATOR
        self.draw_replay()

    def draw_replay(self) -> None:
        race = self.tripeaks.client.state.race_over
        if race is None:
            return
        deal = revealed_deal(race)
        if deal is None:
            self.query_one("#replay-step", Static).update("the revealed deal is not valid")
            return
        game = Game(deal)
        for step in race.solution[: self.step]:
            game.push(step)
        steps = replay_steps(race)
        label = "start" if self.step == 0 else steps[self.step - 1].strip()
        self.query_one("#replay-step", Static).update(
            f"replay {self.step}/{len(race.solution)}: {label}"
        )
        view = game.view()
        known = Knowledge.from_view(race.rules, view.board, view.waste_top, view.stock_left)
        self.query_one("#replay-board", Static).update(draw_board(known, keys=False))

    def action_step(self, delta: int) -> None:
        race = self.tripeaks.client.state.race_over
        if race is None:
            return
        self.step = max(0, min(len(race.solution), self.step + delta))
        self.draw_replay()

    def action_autoplay(self) -> None:
        self.autoplay = not self.autoplay

    def _auto_step(self) -> None:
        race = self.tripeaks.client.state.race_over
        if self.autoplay and race is not None:
            if self.step >= len(race.solution):
                self.autoplay = False
            else:
                self.action_step(1)

    @on(Button.Pressed, "#rematch")
    async def rematch(self) -> None:
        await self.tripeaks.client.rematch()
        self.app.notify("Rematch asked for; waiting for the room.")

    @on(Button.Pressed, "#leave")
    async def leave(self) -> None:
        await self.tripeaks.client.leave()


def rematch_text(room: m.RoomState | None) -> str:
    """Who has asked for a rematch (the next race starts when everyone has)."""
    if room is None or room.phase is not m.Phase.FINISHED:
        return ""
    asked = [x.name for x in room.members if x.ready]
    if not asked:
        return "rematch: press the button; the next race starts when every player has"
    return f"rematch asked by {', '.join(asked)} ({len(asked)}/{len(room.members)})"


class WatchScreen(ClientScreen):
    """Every player's board side by side, live, with progress."""

    DEFAULT_CSS = """
    WatchScreen #grid { grid-size: 2; grid-gutter: 1 2; height: auto; }
    WatchScreen .player { height: 20; border: round $accent; }
    WatchScreen #title { text-style: bold; }
    """

    def compose(self) -> ComposeResult:
        yield Static("", id="title")
        yield VerticalScroll(Grid(id="grid"))
        yield from self.compose_status()

    def on_mount(self) -> None:
        self.set_interval(0.2, self.refresh_view)
        self.refresh_view()

    def refresh_view(self) -> None:
        super().refresh_view()
        state = self.tripeaks.client.state
        room = state.room
        left = state.countdown_left()
        phase = room.phase.value if room else "?"
        extra = f" — starts in {left:0.1f} s" if left is not None else ""
        self.query_one("#title", Static).update(
            f"watching room {room.code if room else '?'} [{phase}]{extra}   "
            f"race clock {clock(state.race_elapsed() * 1000)}"
        )
        grid = self.query_one("#grid", Grid)
        ids = [p.player_id for p in state.players.values()]
        for player_id in ids:
            if not grid.query(f"#w-{player_id}"):
                grid.mount(Static("", id=f"w-{player_id}", classes="player"))
        for player in state.players.values():
            for widget in grid.query(f"#w-{player.player_id}").results(Static):
                widget.update(watch_panel(player, _rules(state.room)))


def watch_panel(player: Opponent, rules: Rules) -> Text:
    """One watched player: name, bar, status and their board as they see it."""
    out = Text(f"{player.name}{' 🤖' if player.bot else ''}  ", "bold")
    out.append_text(progress_bar(player.cleared))
    status = f"#{player.rank} in {clock(player.finish_ms)}" if player.finish_ms else player.status
    out.append(f"  {status}\n")
    view = player.board
    if view is None:
        out.append("(no board yet)")
        return out
    known = Knowledge.from_view(rules, view.board, view.waste_top, view.stock_left)
    out.append_text(draw_board(known, keys=False))
    return out


def _rules(room: m.RoomState | None) -> Rules:
    return Rules() if room is None else room.options.rules


__all__ = ["HOTKEYS", "ClientScreen", "RaceScreen", "ResultsScreen", "WatchScreen"]
