"""The first run's question: the name others see, asked once and saved.

Shown before the app connects, when no name was saved and none was given
with ``--name`` (:mod:`client_cli.names`).  Enter keeps the name typed (the
login name is offered); a name the server would refuse is explained and not
taken.  Escape races under the offered name for this run only, and asks again
next time.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from client_cli.names import BadName, check_name, config_file
from protocol.wire.messages import MAX_NAME_LENGTH


class NameScreen(ModalScreen[tuple[str, bool]]):
    """Ask for the player's name; dismissed with ``(name, save)``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "skip", "use it this once"),
    ]
    DEFAULT_CSS = """
    NameScreen { align: center middle; }
    NameScreen #name-box {
        width: 64; max-width: 100%; height: auto; border: round $accent; padding: 1 2;
    }
    NameScreen #name-problem { color: $error; height: auto; }
    """

    def __init__(self, offered: str) -> None:
        super().__init__()
        self.offered = offered

    def compose(self) -> ComposeResult:
        with Vertical(id="name-box"):
            yield Static("[b]Your name[/b]: what the other players and spectators see.")
            yield Static(
                f"It is saved for next time in {config_file()}; --name NAME changes it for "
                "one run. Enter to keep it, Escape to use it this once."
            )
            yield Input(self.offered, id="name-input", max_length=MAX_NAME_LENGTH,
                        select_on_focus=False)
            yield Static("", id="name-problem")

    def on_mount(self) -> None:
        self.query_one("#name-input", Input).focus()

    @on(Input.Submitted, "#name-input")
    def _submitted(self, event: Input.Submitted) -> None:
        try:
            name = check_name(event.value)
        except BadName as exc:
            self.query_one("#name-problem", Static).update(f"{exc}.")
            return
        self.dismiss((name, True))

    def action_skip(self) -> None:
        self.dismiss((self.offered, False))
