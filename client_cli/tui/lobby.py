"""The lobby screen: the room code, the members and their ready flags, the options."""

from __future__ import annotations

import time
from typing import ClassVar, Final

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.widgets import Button, DataTable, Footer, Static

from client_cli.state import member_mark
from client_cli.tui.base import ClientScreen
from protocol.wire import messages as m

#: Seconds within which a second ``s`` confirms starting a race alone.
SOLO_CONFIRM_S: Final = 5.0


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

    def __init__(self) -> None:
        super().__init__()
        self.solo_asked_at = 0.0

    def compose(self) -> ComposeResult:
        yield Static("", id="code")
        yield Static("share this code: others join with  tripeaks join CODE", id="hint")
        yield DataTable(id="members", cursor_type="none")
        yield Static("", id="options")
        yield Static("", id="lobby-message")
        with Grid():
            yield Button("Ready", id="ready", variant="success")
            yield Button("Start", id="start", variant="primary")
            yield Button("Leave", id="leave", variant="error")
        yield from self.compose_status()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#members", DataTable).add_columns("player", "role", "ready", "online")
        self.refresh_view()
        # The buttons sit in a grid whose own children may mount after this screen does
        # (seen on a busy machine): refresh again once they have.
        self.call_after_refresh(self.refresh_view)

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
            mark = member_mark(member.bot, member.ghost, member.guest)
            role += f" · {mark}" if mark else ""
            role = "ghost (a stored run)" if member.ghost else role
            table.add_row(member.name + me, role, "✔ ready" if member.ready else "…",
                          "yes" if member.connected else "no")
        self.query_one("#options", Static).update(describe_options(room.options, room.spectators))
        me_ready = any(x.ready for x in room.members if x.player_id == state.player_id)
        for ready_button in self.query("#ready").results(Button):  # none until mounted
            ready_button.label = "Not ready" if me_ready else "Ready"
            ready_button.disabled = state.role is m.Role.SPECTATOR
        for start_button in self.query("#start").results(Button):
            start_button.disabled = not state.is_host

    @on(Button.Pressed, "#ready")
    async def action_toggle_ready(self) -> None:
        state = self.tripeaks.client.state
        if state.room is None or state.role is m.Role.SPECTATOR:
            return
        me_ready = any(x.ready for x in state.room.members if x.player_id == state.player_id)
        await self.tripeaks.client.ready(not me_ready)

    @on(Button.Pressed, "#start")
    async def action_start(self) -> None:
        state = self.tripeaks.client.state
        if not state.is_host:
            self.app.notify("Only the host can start the race.", severity="warning")
            return
        alone = state.room is not None and len(state.room.members) == 1
        now = time.monotonic()
        if alone and now - self.solo_asked_at > SOLO_CONFIRM_S:
            # Nobody can join once it starts: a friend a few seconds late would be refused.
            self.solo_asked_at = now
            self.query_one("#lobby-message", Static).update(
                "nobody else is here yet: press s again to race alone"
            )
            return
        self.solo_asked_at = 0.0
        self.query_one("#lobby-message", Static).update("")
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
