"""The race screen: the player's board on hotkeys, the clocks, the opponents' progress."""

from __future__ import annotations

import math
import time
from typing import ClassVar, Final

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Digits, Static

from client_cli.board import UNDO
from client_cli.render import POSITION_OF_KEY, describe, draw_board
from client_cli.results import clock
from client_cli.state import (
    ClientState,
    MoveVerdict,
    Opponent,
    by_standing,
    member_mark,
    own_status,
)
from client_cli.tui.base import BAR_WIDTH, ClientScreen, progress_bar
from protocol.rules.game import DRAW
from protocol.rules.layout import PEAK_CARDS
from protocol.wire import messages as m

FLASH_S: Final = 0.8
RESIGN_CONFIRM_S: Final = 3.0


def opponent_lines(players: list[Opponent], me: str | None, width: int = BAR_WIDTH) -> Text:
    """The side panel: one block per player, by standing, with a live bar, status and time."""
    out = Text()
    for player in by_standing(players):
        name = player.name + (" (you)" if player.player_id == me else "")
        name += " 🤖" if player.bot else ""
        name += " 👻 ghost" if player.ghost else ""
        name += " (guest)" if member_mark(player.bot, player.ghost, player.guest) == "guest" else ""
        out.append(f"{name[: width + 6]}\n", "bold" if player.player_id == me else "")
        out.append_text(progress_bar(player.cleared, width))
        out.append(f"\n  {player.moves} moves", "grey70")
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
    RaceScreen #left { width: 62; }
    RaceScreen #clock { text-style: bold; height: 2; }
    RaceScreen #countdown { color: $warning; width: auto; height: 3; display: none; }
    RaceScreen #board { height: 15; }
    RaceScreen #message { height: 2; color: $warning; }
    RaceScreen #opponents { width: 1fr; min-width: 18; border: round $accent; padding: 0 1; }
    RaceScreen #keys { color: $text-muted; height: auto; }
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
                    "keys: 1-0 bottom row · a-l row 2 · z-n row 1 · q w e tops\n"
                    "space draw · u undo · r r resign · ctrl+q quit", id="keys")
            yield VerticalScroll(Static("", id="opponent-list"), id="opponents")
        yield from self.compose_status()

    def on_mount(self) -> None:
        self.set_interval(0.1, self.tick)
        self.refresh_view()

    def tick(self) -> None:
        state = self.tripeaks.client.state
        left = state.countdown_left()
        countdown = self.query_one("#countdown", Digits)
        counting = left is not None and state.board is None
        countdown.display = counting
        if left is not None and counting:
            countdown.update(str(math.ceil(left)))
            self.query_one("#clock", Static).update(
                f"the race starts in {math.ceil(left)} s — the cards will show their keys"
            )
        if state.race is not None:
            # Two lines: at 62 columns one line lost the counts once a penalty showed.
            self.query_one("#clock", Static).update(
                f"race clock {clock(state.race_elapsed() * 1000)}{penalty_text(state)}"
                f"   {own_status(state)}\n{own_counts(state)}"
            )
        if self.flash_position is not None and time.monotonic() > self.flash_until:
            self.flash_position = None
            self.draw_board()

    def refresh_view(self) -> None:
        super().refresh_view()
        self.draw_board()
        state = self.tripeaks.client.state
        players = list(state.players.values())
        panel = self.query_one("#opponents")
        width = max(6, min(BAR_WIDTH, panel.content_size.width - 6))
        self.query_one("#opponent-list", Static).update(
            opponent_lines(players, state.player_id, width))
        self.query_one("#message", Static).update(self.message)

    def draw_board(self) -> None:
        board = self.tripeaks.client.state.board
        widget = self.query_one("#board", Static)
        widget.display = board is not None or self.tripeaks.client.state.countdown_left() is None
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
            if event == "race_start":
                self.query_one("#countdown", Digits).display = False
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
