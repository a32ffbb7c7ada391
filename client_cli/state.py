"""What the client's screens draw: the room, the race, every player's line, in plain data.

:class:`ClientState` is updated only by :class:`~client_cli.client.GameClient`
(the network loop); the full-screen app and the plain mode read it, with the
helpers here that turn it into words and orders (:func:`by_standing`,
:func:`own_status`, :func:`member_mark`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Final

from client_cli.board import Board
from protocol.rules.game import Status
from protocol.rules.refusals import REASON_TEXT, Reason
from protocol.wire import messages as m

#: Seconds an error stays on the status line unless a successful action clears it first.
ERROR_SHOWN_S: Final = 12.0
#: What a player's own status says once they are out of the race without finishing.
OUT_OF_RACE: Final = {
    "resigned": "you resigned: waiting for the others",
    "timed_out": "time is up",
    "left": "you left the race",
}


def member_mark(bot: bool, ghost: bool, guest: bool) -> str:
    """What a player is, in a word after their name on every screen: a ghost (a stored
    run), a bot, a guest (no claimed name proved), or nothing for a claimed name."""
    return "ghost" if ghost else "bot" if bot else "guest" if guest else ""


@dataclass(slots=True)
class Opponent:
    """What the screens show about one player of the room."""

    player_id: str
    name: str
    bot: bool = False
    #: A stored run the server replays (a ghost race), not a person.
    ghost: bool = False
    #: Plays under a name nobody proved with its key (Member.guest).
    guest: bool = False
    cleared: int = 0
    #: The race time (ms) at which the player's ``cleared`` count was first shown.
    cleared_at_ms: int = 0
    stock_left: int = 0
    moves: int = 0
    undos: int = 0
    status: str = "racing"
    elapsed_ms: int = 0
    connected: bool = True
    finish_ms: int | None = None
    rank: int | None = None
    board: m.BoardView | None = None


@dataclass(slots=True)
class MoveVerdict:
    """What happened to a key press: sent, or refused locally with a reason in words."""

    sent: bool
    reason: Reason | None = None
    position: int | None = None

    @property
    def text(self) -> str:
        """The reason in words, or nothing."""
        return "" if self.reason is None else REASON_TEXT[self.reason]


@dataclass(slots=True)
class ClientState:
    """Everything the screens draw, updated only by :class:`GameClient`."""

    player_id: str | None = None
    room: m.RoomState | None = None
    board: Board | None = None
    race: m.RaceStart | None = None
    countdown_until: float | None = None
    race_clock_zero: float | None = None
    players: dict[str, Opponent] = field(default_factory=dict)
    race_over: m.RaceOver | None = None
    my_finish_ms: int | None = None
    #: Undo penalties so far: they are added to this player's finish time.
    penalty_ms: int = 0
    rooms: tuple[m.RoomSummary, ...] = ()
    connection: str = "offline"  # offline, connecting, online, reconnecting, closed
    #: This player's name as the room shows it (the server tells equal names apart).
    name: str = ""
    last_error: str = ""
    #: When :attr:`last_error` was set (``time.monotonic()``): errors fade after a while.
    error_at: float = 0.0
    #: This player's race clock, frozen when they resigned, timed out or left (ms).
    my_stopped_ms: int | None = None

    def set_error(self, text: str) -> None:
        """Show ``text`` as the last error (until the next successful action, or it fades)."""
        self.last_error, self.error_at = text, time.monotonic()

    def current_error(self, now: float | None = None) -> str:
        """The last error while it is fresh (:data:`ERROR_SHOWN_S`), else nothing."""
        if not self.last_error or (now or time.monotonic()) - self.error_at > ERROR_SHOWN_S:
            return ""
        return self.last_error

    @property
    def me(self) -> Opponent | None:
        """This player's own line among the players, if racing."""
        return None if self.player_id is None else self.players.get(self.player_id)

    @property
    def phase(self) -> m.Phase | None:
        """The room's phase, ``None`` outside a room."""
        return None if self.room is None else self.room.phase

    @property
    def role(self) -> m.Role | None:
        """Player or spectator, ``None`` outside a room."""
        return None if self.room is None else self.room.your_role

    @property
    def is_host(self) -> bool:
        """True when this client hosts its room."""
        return self.room is not None and self.room.host_id == self.player_id

    def race_elapsed(self, now: float | None = None) -> float:
        """Seconds on this player's race clock (frozen at the finish)."""
        if self.my_finish_ms is not None:
            return self.my_finish_ms / 1000
        if self.my_stopped_ms is not None:
            return self.my_stopped_ms / 1000
        if self.race_clock_zero is None:
            return 0.0
        return max(0.0, (now or time.monotonic()) - self.race_clock_zero)

    def countdown_left(self, now: float | None = None) -> float | None:
        """Seconds to the start while a countdown runs, else ``None``."""
        if self.countdown_until is None or self.phase is not m.Phase.COUNTDOWN:
            return None
        return max(0.0, self.countdown_until - (now or time.monotonic()))


def by_standing(players: list[Opponent]) -> list[Opponent]:
    """The standing order of docs/rules.md ("Ranking in a race"), as the pages sort:
    finishers by rank, then everyone else by cards cleared (most first), who reached
    that count first on the race clock, then fewer moves; ties keep the given order."""
    def key(player: Opponent) -> tuple[int, int, int, int]:
        if player.rank is not None and player.finish_ms is not None:
            return (0, player.rank, 0, 0)
        return (1, -player.cleared, player.cleared_at_ms, player.moves)

    return sorted(players, key=key)


def own_status(state: ClientState) -> str:
    """This player's race status in words for the status line."""
    board = state.board
    if board is None:
        return ""
    me = state.me
    if me is not None and me.status in OUT_OF_RACE and state.my_finish_ms is None:
        return OUT_OF_RACE[me.status]
    status = board.shown.status
    if status is Status.WON:
        return "cleared all 28!"
    if status is Status.STUCK:
        if board.shown.undo_allowed:
            return "stuck: undo (u) or resign (r r)"
        return "stuck: no move left; waiting for the others"
    return "racing"
