"""``tripeaks play``: the full-screen terminal app (Textual).

One :class:`~client_cli.client.GameClient` runs in a Textual worker on the
app's event loop; every change it reports goes to :meth:`TriPeaksApp.on_client_event`,
which moves between screens (home, lobby, race, results, watch) and asks the
current screen to redraw.  Screens never touch the socket themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, ClassVar

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import (
    Button,
    Checkbox,
    DataTable,
    Footer,
    Input,
    Label,
    Select,
    Static,
)

from client_cli.client import ClientError, GameClient
from client_cli.net import fetch_json
from client_cli.screens import ClientScreen, RaceScreen, ResultsScreen, WatchScreen
from protocol.wire import messages as m


class HomeScreen(ClientScreen):
    """Create a room (every option), join or watch by code, browse public rooms."""

    DEFAULT_CSS = """
    HomeScreen #forms { height: 1fr; }
    HomeScreen .panel { border: round $accent; padding: 0 1; height: auto; }
    HomeScreen #create-panel { width: 62; height: 100%; }
    HomeScreen #side { width: 1fr; }
    HomeScreen .row { height: 1; margin-bottom: 1; }
    HomeScreen .row Label { width: 26; }
    HomeScreen .row Input { width: 1fr; }
    HomeScreen .row Select { width: 1fr; }
    HomeScreen Checkbox { margin-bottom: 1; }
    HomeScreen .buttons { height: 3; }
    HomeScreen #rooms { height: 12; }
    HomeScreen #title { text-style: bold; color: $accent; padding: 0 1; height: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(
            "♠ ♥ TriPeaks Race ♦ ♣   create a room, or join one by its code", id="title"
        )
        with Horizontal(id="forms"):
            with VerticalScroll(id="create-panel", classes="panel"):
                yield Button("Create room", id="create", variant="primary")
                yield Label("")
                yield from _row("Room name", _field("TriPeaks race", "opt-name", text=True))
                yield Checkbox("Public (listed for everyone)", False, id="opt-public",
                               compact=True)
                yield from _row("Max players (2-16)", _field("8", "opt-max"))
                yield Checkbox("Spectators allowed", True, id="opt-spectators", compact=True)
                yield from _row("Spectator delay (s)", _field("0", "opt-delay"))
                yield Checkbox("Wrap: K and A adjacent", True, id="opt-wrap", compact=True)
                yield Checkbox("Empty waste start", False, id="opt-empty", compact=True)
                yield from _row("Undo", Select(
                    [("off", "off"), ("free", "free"), ("time penalty", "penalty")],
                    value="penalty", allow_blank=False, id="opt-undo", compact=True))
                yield from _row("Undo penalty (s)", _field("5", "opt-penalty"))
                yield from _row("Countdown (s)", _field("3", "opt-countdown"))
                yield from _row("Time limit (s, 0 = none)", _field("0", "opt-limit"))
                yield from _row("Difficulty", Select(
                    [(d, d) for d in ("any", "easy", "medium", "hard")],
                    value="any", allow_blank=False, id="opt-difficulty", compact=True))
                yield from _row("Practice seed", Input(
                    "", id="opt-seed", placeholder="optional", compact=True, max_length=64))
            with Vertical(id="side"):
                with Vertical(classes="panel"):
                    yield Label("[b]Join or watch by code[/b]")
                    yield Input("", id="code", placeholder="room code", max_length=16)
                    with Horizontal(classes="buttons"):
                        yield Button("Join", id="join", variant="success")
                        yield Button("Watch", id="watch")
                with Vertical(classes="panel"):
                    yield Label("[b]Public rooms[/b] (select one to fill in its code)")
                    yield DataTable(id="rooms", cursor_type="row")
                    yield Static("", id="rooms-note")
                    yield Button("Refresh", id="refresh")
        yield from self.compose_status()

    def on_mount(self) -> None:
        table = self.query_one("#rooms", DataTable)
        table.add_columns("code", "name", "players", "spectators", "state", "rules")
        self.refresh_rooms()

    def room_options(self) -> m.RoomOptions:
        """The form as room options; raises ``ValueError`` naming a bad field."""
        def number(widget_id: str, label: str) -> int:
            text = self.query_one(f"#{widget_id}", Input).value.strip()
            if not text.isdigit():
                raise ValueError(f"{label} must be a whole number")
            return int(text)

        seed = self.query_one("#opt-seed", Input).value.strip()
        try:
            return m.RoomOptions(
                name=self.query_one("#opt-name", Input).value.strip() or "TriPeaks race",
                public=self.query_one("#opt-public", Checkbox).value,
                max_players=number("opt-max", "Max players"),
                allow_spectators=self.query_one("#opt-spectators", Checkbox).value,
                spectator_delay_s=number("opt-delay", "Spectator delay"),
                wrap=self.query_one("#opt-wrap", Checkbox).value,
                empty_waste=self.query_one("#opt-empty", Checkbox).value,
                undo=m.UndoPolicy(str(self.query_one("#opt-undo", Select).value)),
                undo_penalty_s=number("opt-penalty", "Undo penalty"),
                countdown_s=number("opt-countdown", "Countdown"),
                time_limit_s=number("opt-limit", "Time limit"),
                difficulty=str(self.query_one("#opt-difficulty", Select).value),  # type: ignore[arg-type]
                practice_seed=seed or None,
            )
        except TypeError as exc:
            raise ValueError(str(exc)) from None

    @on(Button.Pressed, "#create")
    async def do_create(self) -> None:
        try:
            options = self.room_options()
        except ValueError as exc:
            self.app.notify(str(exc), severity="error")
            return
        await self.tripeaks.ensure_connected()
        await self.tripeaks.client.create_room(options)

    @on(Button.Pressed, "#join")
    async def do_join(self) -> None:
        await self._join(spectate=False)

    @on(Button.Pressed, "#watch")
    async def do_watch(self) -> None:
        await self._join(spectate=True)

    async def _join(self, spectate: bool) -> None:
        code = self.query_one("#code", Input).value.strip().upper()
        if not code:
            self.app.notify("Type a room code first.", severity="warning")
            return
        await self.tripeaks.ensure_connected()
        await self.tripeaks.client.join(code, spectate=spectate)

    @on(Button.Pressed, "#refresh")
    def refresh_rooms(self) -> None:
        self.run_worker(self._load_rooms(), exclusive=True, group="rooms", exit_on_error=False)

    async def _load_rooms(self) -> None:
        try:
            data = await asyncio.to_thread(fetch_json, self.tripeaks.url, "/api/rooms")
        except ClientError as exc:
            data, note = None, f"cannot list rooms: {exc}"
        # The answer may come after this screen was left: then there is nothing to fill.
        with contextlib.suppress(NoMatches):
            if data is not None:
                note = self._show_rooms(data)
            self.query_one("#rooms-note", Static).update(note)

    def _show_rooms(self, data: Any) -> str:
        table = self.query_one("#rooms", DataTable)
        rooms = data.get("rooms", data) if isinstance(data, dict) else data
        table.clear()
        listed = [r for r in rooms if isinstance(r, dict)] if isinstance(rooms, list) else []
        for room in listed:
            table.add_row(*_room_cells(room), key=str(room.get("code", "")))
        return f"{len(listed)} public room(s)" if listed else "no public rooms right now"

    @on(DataTable.RowSelected, "#rooms")
    def pick_room(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.query_one("#code", Input).value = event.row_key.value


def _field(value: str, widget_id: str, *, text: bool = False) -> Input:
    if text:
        return Input(value, id=widget_id, type="text", compact=True, max_length=40)
    return Input(value, id=widget_id, type="integer", compact=True, max_length=4)


def _row(label: str, widget: Any) -> ComposeResult:
    with Horizontal(classes="row"):
        yield Label(label)
        yield widget


def _room_cells(room: dict[str, Any]) -> tuple[str, ...]:
    options = room.get("options", {}) if isinstance(room.get("options"), dict) else {}
    rules = ", ".join(
        word for word, on in (("wrap", options.get("wrap", True)),
                              ("empty waste", options.get("empty_waste", False))) if on
    ) or "no wrap"
    players = f"{room.get('players', '?')}/{options.get('max_players', '?')}"
    return (
        str(room.get("code", "?")), str(options.get("name", "")), players,
        str(room.get("spectators", 0)), str(room.get("phase", room.get("state", "?"))), rules,
    )


class LobbyScreen(ClientScreen):
    """The room code in big letters, the members and their ready flags, the options."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "toggle_ready", "ready / not ready"),
        Binding("s", "start", "start (host)"),
        Binding("l", "leave", "leave"),
    ]
    DEFAULT_CSS = """
    LobbyScreen #code { text-style: bold; color: $warning; border: double $warning;
                        content-align: center middle; height: 5; width: 40; }
    LobbyScreen #members { height: auto; max-height: 20; width: 70; }
    LobbyScreen #options { padding: 1 0; }
    LobbyScreen Grid { grid-size: 3; height: 3; width: 60; }
    """

    def compose(self) -> ComposeResult:
        yield Static("", id="code")
        yield Static("share this code: others join with  tripeaks join CODE", id="hint")
        yield DataTable(id="members", cursor_type="none")
        yield Static("", id="options")
        with Grid():
            yield Button("Ready", id="ready", variant="success")
            yield Button("Start", id="start", variant="primary")
            yield Button("Leave", id="leave", variant="error")
        yield from self.compose_status()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#members", DataTable).add_columns("player", "role", "ready", "online")
        self.refresh_view()

    def refresh_view(self) -> None:
        super().refresh_view()
        state = self.tripeaks.client.state
        room = state.room
        if room is None:
            return
        self.query_one("#code", Static).update(" ".join(room.code))
        self.query_one("#hint", Static).update(
            f"share the code: others join with  tripeaks join {room.code}"
            f"  (or watch with  tripeaks watch {room.code})"
        )
        table = self.query_one("#members", DataTable)
        table.clear()
        for member in room.members:
            me = " (you)" if member.player_id == state.player_id else ""
            role = "host" if member.player_id == room.host_id else "player"
            role += " · bot" if member.bot else ""
            table.add_row(member.name + me, role, "✔ ready" if member.ready else "…",
                          "yes" if member.connected else "no")
        self.query_one("#options", Static).update(describe_options(room.options, room.spectators))
        me_ready = any(x.ready for x in room.members if x.player_id == state.player_id)
        ready_button = self.query_one("#ready", Button)
        ready_button.label = "Not ready" if me_ready else "Ready"
        self.query_one("#start", Button).disabled = not state.is_host
        self.query_one("#ready", Button).disabled = state.role is m.Role.SPECTATOR

    @on(Button.Pressed, "#ready")
    async def action_toggle_ready(self) -> None:
        state = self.tripeaks.client.state
        if state.room is None or state.role is m.Role.SPECTATOR:
            return
        me_ready = any(x.ready for x in state.room.members if x.player_id == state.player_id)
        await self.tripeaks.client.ready(not me_ready)

    @on(Button.Pressed, "#start")
    async def action_start(self) -> None:
        if not self.tripeaks.client.state.is_host:
            self.app.notify("Only the host can start the race.", severity="warning")
            return
        await self.tripeaks.client.start()

    @on(Button.Pressed, "#leave")
    async def action_leave(self) -> None:
        await self.tripeaks.client.leave()


def describe_options(options: m.RoomOptions, spectators: int = 0) -> str:
    """The room's options in one short paragraph."""
    undo = {"off": "no undo", "free": "free undo"}.get(
        options.undo.value, f"undo costs {options.undo_penalty_s} s"
    )
    parts = [
        f"“{options.name}”", "public" if options.public else "private",
        f"up to {options.max_players} players",
        "wrap K–A" if options.wrap else "no wrap",
        "empty waste start" if options.empty_waste else "",
        undo, f"countdown {options.countdown_s} s",
        f"time limit {options.time_limit_s} s" if options.time_limit_s else "no time limit",
        f"difficulty {options.difficulty}",
        f"practice seed {options.practice_seed!r}" if options.practice_seed else "",
        (f"spectators allowed (delay {options.spectator_delay_s} s), {spectators} watching"
         if options.allow_spectators else "no spectators"),
    ]
    return " · ".join(p for p in parts if p)


class TriPeaksApp(App[int]):
    """The terminal client: one connection, five screens."""

    TITLE = "TriPeaks Race"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+q", "quit", "quit", priority=True)]

    def __init__(
        self,
        url: str,
        name: str,
        *,
        start: str = "home",
        code: str | None = None,
        options: m.RoomOptions | None = None,
    ) -> None:
        super().__init__()
        self.url = url
        self.start_with = start
        self.start_code = code
        self.start_options = options
        self.client = GameClient(url, name, self.on_client_event)

    def on_mount(self) -> None:
        self.push_screen(HomeScreen())
        self.run_worker(self._network(), group="net", exit_on_error=False)

    async def _network(self) -> None:
        if not await self.ensure_connected():
            return
        if self.start_with == "host":
            await self.client.create_room(self.start_options or m.RoomOptions())
        elif self.start_with in ("join", "watch") and self.start_code:
            await self.client.join(self.start_code, spectate=self.start_with == "watch")

    async def ensure_connected(self) -> bool:
        """Connect if not connected; errors go on screen in words."""
        if self.client.state.connection in ("online", "reconnecting", "connecting"):
            return True
        try:
            await self.client.connect()
        except ClientError as exc:
            self.notify(str(exc), title="cannot connect", severity="error", timeout=8)
            self.client.state.connection = "offline"
            self.refresh_screen()
            return False
        self.run_worker(self.client.run(), group="net-loop", exit_on_error=False)
        return True

    # ---- events from the client ----------------------------------------
    def on_client_event(self, event: str, detail: object) -> None:
        """Route a client event: change screen if the phase says so, then redraw."""
        state = self.client.state
        if event == "error":
            self.notify(str(detail), severity="error", timeout=6)
        elif event == "reconnecting":
            self.notify("Connection lost; reconnecting…", severity="warning", timeout=3)
        elif event == "closed":
            self.notify(f"Disconnected: {detail}", severity="error", timeout=10)
        elif event == "left" and isinstance(detail, m.Left):
            self.notify(f"Left room {detail.code} ({detail.reason.value.replace('_', ' ')}).")
        self._follow_phase(event)
        screen = self.screen
        if isinstance(screen, ClientScreen):
            # A screen just switched to is not composed yet; it draws itself on mount.
            with contextlib.suppress(NoMatches):
                screen.on_client_event(event, detail)
        del state

    def _follow_phase(self, event: str) -> None:
        state = self.client.state
        room = state.room
        wanted: type[Screen[Any]]
        if room is None:
            wanted = HomeScreen
        elif state.race_over is not None and room.phase is not m.Phase.LOBBY:
            wanted = ResultsScreen
        elif room.phase is m.Phase.LOBBY:
            wanted = LobbyScreen
        elif state.role is m.Role.SPECTATOR:
            wanted = WatchScreen
        elif room.phase in (m.Phase.COUNTDOWN, m.Phase.RACING):
            wanted = RaceScreen
        else:
            return
        if not isinstance(self.screen, wanted):
            self.switch_screen(wanted())

    def refresh_screen(self) -> None:
        screen = self.screen
        if isinstance(screen, ClientScreen):
            with contextlib.suppress(NoMatches):
                screen.refresh_view()

    async def action_quit(self) -> None:
        await self.client.close()
        self.exit(0)
