"""The home screen: create a room with every option, join or watch by code, browse rooms."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.widgets import Button, Checkbox, DataTable, Footer, Input, Label, Select, Static

from client_cli.net import ClientError, fetch_json
from client_cli.tui.base import ClientScreen
from protocol.wire import messages as m


class MarkedCheckbox(Checkbox):
    """A checkbox whose state shows without colour: ``✔`` when on, blank when off."""

    @property
    def _button(self) -> Content:
        self.BUTTON_INNER = "✔" if self.value else " "
        return super()._button


class HomeScreen(ClientScreen):
    """Create a room (every option), join or watch by code, browse public rooms."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "create", "create room"),
        Binding("ctrl+r", "refresh_rooms", "refresh rooms"),
    ]
    DEFAULT_CSS = """
    HomeScreen #forms { height: 1fr; }
    HomeScreen .panel { border: round $accent; padding: 0 1; height: auto; }
    HomeScreen #create-panel { width: 3fr; max-width: 62; height: 100%; }
    HomeScreen #side { width: 2fr; min-width: 32; }
    HomeScreen .row { height: 1; margin-bottom: 1; }
    HomeScreen .row Label { width: 24; }
    HomeScreen .row Input { width: 1fr; }
    HomeScreen .row Select { width: 1fr; }
    HomeScreen Checkbox { margin-bottom: 1; }
    HomeScreen .buttons { height: 3; }
    HomeScreen .buttons Button { width: 1fr; min-width: 8; }
    HomeScreen #rooms { height: auto; max-height: 10; }
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
                yield MarkedCheckbox("Public (listed for everyone)", False, id="opt-public",
                               compact=True)
                yield from _row("Max players (2-16)", _field("8", "opt-max"))
                yield MarkedCheckbox("Spectators allowed", True, id="opt-spectators", compact=True)
                yield from _row("Spectator delay (s)", _field("0", "opt-delay"))
                yield MarkedCheckbox("Wrap: K and A adjacent", True, id="opt-wrap", compact=True)
                yield MarkedCheckbox("Empty waste start", False, id="opt-empty", compact=True)
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
                    "", id="opt-seed", placeholder="optional", compact=True, max_length=64,
                    select_on_focus=False))
            with Vertical(id="side"):
                with Vertical(classes="panel"):
                    yield Label("[b]Join or watch by code[/b] (enter joins)")
                    yield Input("", id="code", placeholder="room code", max_length=16,
                                select_on_focus=False)
                    with Horizontal(classes="buttons"):
                        yield Button("Join", id="join", variant="success")
                        yield Button("Watch", id="watch")
                with Vertical(classes="panel"):
                    yield Label("[b]Public rooms[/b] (select one to fill in its code)")
                    yield DataTable(id="rooms", cursor_type="row")
                    yield Static("", id="rooms-note")
                    yield Button("Refresh", id="refresh")
        yield from self.compose_status()
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#rooms", DataTable)
        table.add_columns("code", "name", "players", "spectators", "state", "rules")
        self.action_refresh_rooms()

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
    async def action_create(self) -> None:
        try:
            options = self.room_options()
        except ValueError as exc:
            self.app.notify(str(exc), severity="error")
            return
        await self.tripeaks.ensure_connected()
        await self.tripeaks.client.create_room(options)

    @on(Button.Pressed, "#join")
    @on(Input.Submitted, "#code")
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
    def action_refresh_rooms(self) -> None:
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
    # Tabbing into a field must not select its text: the next key would wipe it.
    if text:
        return Input(value, id=widget_id, type="text", compact=True, max_length=40,
                     select_on_focus=False)
    return Input(value, id=widget_id, type="integer", compact=True, max_length=4,
                 select_on_focus=False)


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
