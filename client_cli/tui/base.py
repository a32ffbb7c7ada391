"""What every screen of the terminal app shares: the app as screens see it, the status line.

Screens depend on :class:`TriPeaksHost`, not on the app class: the app
imports every screen to move between them, so the screens must not import it.
"""

from __future__ import annotations

from typing import Any, Final, Protocol, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from client_cli.client import GameClient
from protocol.rules.layout import PEAK_CARDS

BAR_WIDTH: Final = 14
#: The smallest terminal every screen fits in (columns, rows).
MIN_SIZE: Final = (80, 24)
CONNECTION_WORDS: Final = {
    "online": "● online",
    "connecting": "○ connecting…",
    "reconnecting": "◌ reconnecting…",
    "offline": "○ offline",
    "closed": "✗ disconnected",
}


class TriPeaksHost(Protocol):
    """What a screen asks of the app: its client, the server's address, a connection."""

    url: str
    client: GameClient

    async def ensure_connected(self) -> bool:
        """Connect if not connected; ``False`` (said on screen) if that failed."""
        ...


class ClientScreen(Screen[Any]):
    """A screen that shows the client's state and a connection line at the bottom."""

    @property
    def tripeaks(self) -> TriPeaksHost:
        """The app, as the screens see it."""
        return cast("TriPeaksHost", self.app)

    def compose_status(self) -> ComposeResult:
        yield Static("", id="too-small")
        yield Static("", id="connection")

    def set_status(self, text: str) -> None:
        """Write the bottom status line."""
        for widget in self.query("#connection").results(Static):
            widget.update(text)

    DEFAULT_CSS = """
    ClientScreen { layers: base overlay; }
    ClientScreen #too-small { dock: top; layer: overlay; width: 100%; height: 100%;
                              display: none; content-align: center middle;
                              background: $panel; color: $warning; text-style: bold; }
    """

    def on_mount(self) -> None:
        # Errors fade: the status line is redrawn even when nothing else happens.
        self.set_interval(1.0, self.refresh_status)
        self.check_size()

    def on_resize(self) -> None:
        self.check_size()

    def check_size(self) -> None:
        """Cover the screen with a message when the terminal is smaller than :data:`MIN_SIZE`."""
        width, height = self.app.size
        small = width < MIN_SIZE[0] or height < MIN_SIZE[1]
        for widget in self.query("#too-small").results(Static):
            widget.display = small
            widget.update(
                f"This terminal is {width}×{height}; TriPeaks needs at least "
                f"{MIN_SIZE[0]}×{MIN_SIZE[1]}.\nMake the window larger (ctrl+q quits)."
            )

    def refresh_status(self) -> None:
        """Redraw the bottom line only."""
        state = self.tripeaks.client.state
        words = CONNECTION_WORDS.get(state.connection, state.connection)
        room = f"   room {state.room.code}" if state.room is not None else ""
        error = state.current_error()
        error = f"   last error: {error}" if error else ""
        self.set_status(f"{words}   {state.name}{room}{error}")

    def refresh_view(self) -> None:
        """Redraw from the client's state (subclasses extend it)."""
        self.refresh_status()

    def on_client_event(self, event: str, detail: object) -> None:
        """A client event arrived while this screen is shown."""
        self.refresh_view()

    def on_screen_resume(self) -> None:
        self.refresh_view()


def progress_bar(cleared: int, width: int = BAR_WIDTH) -> Text:
    """``█████░░░░ 12/28``."""
    # Rounded down: a player one card short must not look done.
    filled = width * cleared // PEAK_CARDS
    bar = Text("█" * filled, "green")
    bar.append("░" * (width - filled), "grey37")
    bar.append(f" {cleared:>2}/28")
    return bar
