"""The watch screen: every player's board side by side, live, with progress."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Grid, VerticalScroll
from textual.widgets import Static

from client_cli.board import Knowledge
from client_cli.render import draw_board
from client_cli.results import clock
from client_cli.state import Opponent, member_mark
from client_cli.tui.base import ClientScreen, progress_bar
from protocol.rules.game import Rules
from protocol.wire import messages as m


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
    tag = {"bot": " 🤖", "ghost": " 👻 ghost", "guest": " (guest)", "": ""}[
        member_mark(player.bot, player.ghost, player.guest)]
    out = Text(f"{player.name}{tag}  ", "bold")
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
