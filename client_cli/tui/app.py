"""``tripeaks play``: the full-screen terminal app (Textual).

One :class:`~client_cli.client.GameClient` runs in a Textual worker on the
app's event loop; every change it reports goes to :meth:`TriPeaksApp.on_client_event`,
which moves between screens (home, lobby, race, results, watch) and asks the
current screen to redraw.  Screens never touch the socket themselves.
"""

from __future__ import annotations

import contextlib
from typing import Any, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.screen import Screen

from client_cli.client import GameClient
from client_cli.names import BadName, save_name
from client_cli.net import ClientError
from client_cli.seats import SeatFiles
from client_cli.tui.base import ClientScreen
from client_cli.tui.home import HomeScreen
from client_cli.tui.lobby import LobbyScreen
from client_cli.tui.name import NameScreen
from client_cli.tui.race import RaceScreen
from client_cli.tui.results import ResultsScreen
from client_cli.tui.watch import WatchScreen
from protocol.wire import messages as m


class TriPeaksApp(App[int]):
    """The terminal client: one connection, five screens."""

    TITLE = "TriPeaks Race"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "quit", priority=True),
        # ctrl+c quits too, as in any terminal program (not Textual's "press ctrl+q" prompt).
        Binding("ctrl+c", "quit", "quit", show=False, priority=True),
    ]

    def __init__(
        self,
        url: str,
        name: str,
        *,
        start: str = "home",
        code: str | None = None,
        options: m.RoomOptions | None = None,
        ask_name: bool = False,
        warning: str = "",
    ) -> None:
        """``ask_name``: nobody chose ``name`` (the first run): ask before connecting.
        ``warning``: a problem with the saved name, shown once."""
        super().__init__()
        self.url = url
        self.start_with = start
        self.start_code = code
        self.start_options = options
        self.ask_name = ask_name
        self.warning = warning
        self.client = GameClient(url, name, self.on_client_event, seats=SeatFiles(url))

    def on_mount(self) -> None:
        self.push_screen(HomeScreen())
        if self.warning:
            self.notify(self.warning, title="saved name", severity="warning", timeout=10)
        if self.ask_name:
            self.push_screen(NameScreen(self.client.session.name), self._name_chosen)
        else:
            self._start_network()

    def _name_chosen(self, chosen: tuple[str, bool] | None) -> None:
        """The first run's answer: race under it, and keep it when asked to."""
        if chosen is not None:
            name, save = chosen
            self.client.session.name = name
            if save:
                try:
                    save_name(name)
                except BadName as exc:
                    self.notify(f"{exc}; racing as {name} this time", severity="warning",
                                timeout=10)
        self._start_network()

    def _start_network(self) -> None:
        self.run_worker(self._network(), group="net", exit_on_error=False)

    async def _network(self) -> None:
        seats, name = SeatFiles(self.url), self.client.session.name
        if self.start_with == "join" and self.start_code:
            seat = seats.load(self.start_code, name)
        else:
            seat = seats.latest(name) if self.start_with == "home" else None
        if seat is not None:
            self.client.resume(seat)
        if not await self.ensure_connected():
            return
        if self.client.resumed:
            self.notify("Back in your seat.", timeout=4)
        elif self.start_with == "host":
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
        if event == "error":
            self.notify(str(detail), severity="error", timeout=6)
        elif event == "reconnecting":
            self.notify("Connection lost; reconnecting…", severity="warning", timeout=3)
        elif event == "closed":
            self.notify(f"Disconnected: {detail}", severity="error", timeout=10)
        elif event == "renamed":
            self.notify(
                f"Another player in this room is called {self.client.session.name}: you are "
                f"seated as {detail}. Start with --name NAME to race under your own name.",
                title="name taken", severity="warning", timeout=12,
            )
        elif event == "left" and isinstance(detail, m.Left):
            self.notify(f"Left room {detail.code} ({detail.reason.value.replace('_', ' ')}).")
        self._follow_phase(event)
        screen = self.screen
        # A screen just switched to is not mounted yet (its tables have no columns):
        # it draws itself on mount.
        if isinstance(screen, ClientScreen) and screen.is_mounted:
            with contextlib.suppress(NoMatches):
                screen.on_client_event(event, detail)

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
        elif room.phase is m.Phase.FINISHED:
            wanted = ResultsScreen  # joined between races: the rematch is asked for there
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
        if isinstance(screen, ClientScreen) and screen.is_mounted:
            with contextlib.suppress(NoMatches):
                screen.refresh_view()

    async def action_quit(self) -> None:
        await self.client.close()
        self.exit(0)
