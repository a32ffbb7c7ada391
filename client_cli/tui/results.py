"""The results screen: ranking, par, the seed checked against its commitment, the winning line."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.widgets import Button, DataTable, Footer, Static

from client_cli.board import Knowledge
from client_cli.render import draw_board
from client_cli.results import (
    clock,
    hidden_text,
    par_text,
    replay_steps,
    revealed_deal,
    status_words,
    verify,
)
from client_cli.state import member_mark
from client_cli.tui.base import ClientScreen
from protocol.rules.game import Game
from protocol.wire import messages as m


class ResultsScreen(ClientScreen):
    """Ranking, par, the seed and its commitment check, the winning line, rematch."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "step(1)", "next card"),
        Binding("p", "step(-1)", "previous card"),
        Binding("a", "autoplay", "play the line"),
        Binding("m", "rematch", "rematch"),
        Binding("l", "leave", "leave"),
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
            yield Button("Rematch (m)", id="rematch", variant="primary")
            yield Button("Leave (l)", id="leave", variant="error")
        yield from self.compose_status()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#standings", DataTable).add_columns(
            "rank", "player", "result", "time", "cleared", "moves", "undos"
        )
        self.set_interval(0.4, self._auto_step)
        self.refresh_view()
        # The buttons sit in a grid whose own children may mount after this screen does
        # (as in the lobby): refresh again once they have.
        self.call_after_refresh(self.refresh_view)

    def refresh_view(self) -> None:
        super().refresh_view()
        state = self.tripeaks.client.state
        race = state.race_over
        for rematch in self.query("#rematch").results(Button):  # none until mounted
            rematch.disabled = state.role is m.Role.SPECTATOR
        if race is None:
            # Joined between races: nothing to rank, but the rematch is asked for here.
            self.query_one("#summary", Static).update(
                "the last race ended before you joined\n" + rematch_text(state.room)
            )
            return
        table = self.query_one("#standings", DataTable)
        table.clear()
        for s in sorted(race.standings, key=lambda s: s.rank):
            seen = state.players.get(s.player_id)
            mark = member_mark(s.bot, s.ghost, seen is not None and seen.guest)
            name = s.name + (f" ({mark})" if mark else "") + (
                " ← you" if s.player_id == state.player_id else "")
            time_text = clock(s.time_ms) if s.status is m.PlayerStatus.FINISHED else "–"
            table.add_row(str(s.rank), name, status_words(s.status, race.ended_by), time_text,
                          f"{s.cleared}/28", str(s.moves), str(s.undos))
        commitment = state.race.commitment if state.race is not None else None
        check = verify(race, commitment)
        ended = "" if race.ended_by is m.RaceEnd.ALL_DONE else (
            f"race ended early ({race.ended_by.value.replace('_', ' ')}) · ")
        if race.daily is not None:
            self.query_one("#summary", Static).update(
                f"{ended}{hidden_text(race)}\n{rematch_text(state.room)}")
            self.draw_replay()
            return
        self.query_one("#summary", Static).update(
            f"{ended}{par_text(race)}\n"
            f"{'practice race · ' if race.practice else ''}seed {race.seed!r} · "
            f"commitment {race.commitment[:12]}… {'✔' if check.commitment_ok else '✗'} · "
            f"deal {'✔' if check.deal_ok else '✗'} · winning line {'✔' if check.line_ok else '✗'}"
            f"\nwinning line: {len(race.solution or ())} steps — n / p to step, a to play it"
            f"\n{rematch_text(state.room)}"
        )
        self.draw_replay()

    def draw_replay(self) -> None:
        race = self.tripeaks.client.state.race_over
        if race is None:
            return
        deal = revealed_deal(race)
        if deal is None:
            self.query_one("#replay-step", Static).update(
                hidden_text(race) if race.daily else "the revealed deal is not valid")
            return
        game = Game(deal)
        for step in (race.solution or ())[: self.step]:
            game.push(step)
        steps = replay_steps(race)
        label = "start" if self.step == 0 else steps[self.step - 1].strip()
        self.query_one("#replay-step", Static).update(
            f"replay {self.step}/{len(race.solution or ())}: {label}"
        )
        view = game.view()
        known = Knowledge.from_view(race.rules, view.board, view.waste_top, view.stock_left)
        self.query_one("#replay-board", Static).update(draw_board(known, keys=False))

    def action_step(self, delta: int) -> None:
        race = self.tripeaks.client.state.race_over
        if race is None:
            return
        self.step = max(0, min(len(race.solution or ()), self.step + delta))
        self.draw_replay()

    def action_autoplay(self) -> None:
        self.autoplay = not self.autoplay

    def _auto_step(self) -> None:
        race = self.tripeaks.client.state.race_over
        if self.autoplay and race is not None:
            if self.step >= len(race.solution or ()):
                self.autoplay = False
            else:
                self.action_step(1)

    @on(Button.Pressed, "#rematch")
    async def action_rematch(self) -> None:
        state = self.tripeaks.client.state
        if state.role is m.Role.SPECTATOR:
            return
        await self.tripeaks.client.rematch()
        self.app.notify("Rematch asked for; it starts when everyone still here has asked.")

    @on(Button.Pressed, "#leave")
    async def action_leave(self) -> None:
        await self.tripeaks.client.leave()


def rematch_text(room: m.RoomState | None) -> str:
    """Who has asked for a rematch (the next race starts when everyone has)."""
    if room is None or room.phase is not m.Phase.FINISHED:
        return ""
    asked = [x.name for x in room.members if x.ready]
    if not asked:
        return "rematch: press m; the next race starts when every player still here has"
    return f"rematch asked by {', '.join(asked)} ({len(asked)}/{len(room.members)})"
