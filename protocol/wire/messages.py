"""Every wire message of protocol version 2, as frozen dataclasses.

A frame holds one map: ``"t"`` is the message type (each class's ``TAG``)
and the other keys are the dataclass fields, with the same snake_case names
in msgpack and JSON.  Field annotations carry the ranges the codec enforces
(:mod:`protocol.wire.schema`); ``docs/protocol.md`` documents each message.

Client to server: :data:`ClientMessage`; server to client:
:data:`ServerMessage`; tag registries :data:`CLIENT_MESSAGES` and
:data:`SERVER_MESSAGES`.  Nested structures (:class:`RoomOptions`,
:class:`Member`, :class:`BoardView`, ...) have no tag of their own.

What version 2 added is marked where it is (:class:`~protocol.wire.schema.Since`):
a field ``Annotated[..., Since(2)]`` is left out of version-1 frames (with
``older``: given a value version 1 has), a class with ``SINCE = Since(2)`` is
not sent to version-1 connections as news.  Client fields are marked too, so
this code's version-1 frames are ones a version-1 server reads.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import Annotated, ClassVar, Final, Literal

from protocol.rules.cards import ALL_CODES, card_code
from protocol.rules.game import DRAW, HIDDEN, Deal, Move, PlayerView, Rules, Status
from protocol.rules.refusals import Reason
from protocol.wire.schema import Int, Items, OneOf, Pattern, Since, Text

PROTOCOL_VERSION: Final = 2  # the latest, the one these classes describe
SUPPORTED_VERSIONS: Final[frozenset[int]] = frozenset({1, PROTOCOL_VERSION})

MAX_PLAYERS: Final = 16
MAX_NAME_LENGTH: Final = 24
#: Largest sequence number, counter or millisecond value: 2**53 - 1 is the
#: largest integer a JavaScript number holds exactly.
MAX_SAFE_INT: Final = 2**53 - 1
MAX_SEQ: Final = 2**31 - 1
#: The shortest spectator delay (s) with which a room may show spectators open boards.
OPEN_BOARDS_MIN_DELAY_S: Final = 30
#: Stored runs one room may race at once (:class:`GhostRef`).
MAX_GHOSTS: Final = 3

# ---- field types --------------------------------------------------------
Name = Annotated[str, Text(1, MAX_NAME_LENGTH)]
PlayerId = Annotated[str, Text(1, 40)]
RoomCode = Annotated[str, Text(1, 16)]
RaceId = Annotated[str, Text(1, 64)]
Token = Annotated[str, Text(1, 64)]
#: A claimed name's secret key: 22 to 64 URL-safe base64 characters (at least 128 bits).
Key = Annotated[str, Pattern("[A-Za-z0-9_-]{22,64}", 64)]
Seed = Annotated[str, Text(1, 64)]
Commitment = Annotated[str, Pattern("[0-9a-f]{64}", 64)]
Count = Annotated[int, Int(0, MAX_SAFE_INT)]
Millis = Annotated[int, Int(0, MAX_SAFE_INT)]
Seq = Annotated[int, Int(1, MAX_SEQ)]
Rank = Annotated[int, Int(1, MAX_PLAYERS)]
Cleared = Annotated[int, Int(0, 28)]
StockLeft = Annotated[int, Int(0, 24)]
Position = Annotated[int, Int(0, 27)]
#: A position as a move may name it: 0..255 is well formed on the wire, and
#: 28..255 is refused by the rules (``Reason.NO_SUCH_POSITION``), not the codec.
MovePosition = Annotated[int, Int(0, 255)]
CardCode = Annotated[str, OneOf(frozenset(ALL_CODES))]
BoardEntry = Annotated[str, OneOf(frozenset((*ALL_CODES, HIDDEN)))] | None
SolutionStep = Annotated[int, Int(0, 27)] | Literal["draw"]
DifficultyName = Literal["any", "easy", "medium", "hard"]
#: A UTC day, ``YYYY-MM-DD`` (the daily deal's date).
DayText = Annotated[str, Pattern("[0-9]{4}-[0-9]{2}-[0-9]{2}", 10)]


class Phase(enum.StrEnum):
    """The room's phase; also the rows of the life-cycle table."""

    LOBBY = "lobby"
    COUNTDOWN = "countdown"
    RACING = "racing"
    FINISHED = "finished"


class Role(enum.StrEnum):
    """How a connection takes part in a room."""

    PLAYER = "player"
    SPECTATOR = "spectator"


class UndoPolicy(enum.StrEnum):
    """Whether undo is allowed in a race, and at what cost."""

    OFF = "off"
    FREE = "free"
    PENALTY = "penalty"


class MoveAction(enum.StrEnum):
    PLAY = "play"
    DRAW = "draw"
    UNDO = "undo"


#: What an accepted undo took back: a play or a draw, never another undo.
UndoneAction = Literal[MoveAction.PLAY, MoveAction.DRAW]


class PlayerStatus(enum.StrEnum):
    """A player's standing in the race, as shown in progress and standings."""

    RACING = "racing"
    FINISHED = "finished"
    STUCK = "stuck"
    RESIGNED = "resigned"
    LEFT = "left"
    TIMED_OUT = "timed_out"


class RaceEnd(enum.StrEnum):
    """Why a race ended."""

    ALL_DONE = "all_done"
    TIME_LIMIT = "time_limit"
    ABORTED = "aborted"


class LeftReason(enum.StrEnum):
    LEFT = "left"
    KICKED = "kicked"
    ROOM_CLOSED = "room_closed"


def _hidden_as_none(top: str | None) -> str | None:
    """``null`` for ``"??"``: version 1 has no face-down waste top, so a spectator is
    shown none (the board's face-down cards are ``"??"`` in both versions)."""
    return None if top == HIDDEN else top


# ---- nested structures ---------------------------------------------------
@dataclass(frozen=True, slots=True)
class GhostRef:
    """A stored run to race as a ghost: player ``player_id``'s run of stored race ``race_id``."""

    race_id: RaceId
    player_id: PlayerId


@dataclass(frozen=True, slots=True)
class RoomOptions:
    """Everything the host chooses about a room; each field has a default."""

    name: Annotated[str, Text(1, 40)] = "TriPeaks race"
    public: bool = False
    max_players: Annotated[int, Int(2, MAX_PLAYERS)] = 8
    allow_spectators: bool = True
    spectator_delay_s: Annotated[int, Int(0, 600)] = 0
    open_boards: Annotated[bool, Since(2)] = False
    wrap: bool = True
    empty_waste: bool = False
    undo: UndoPolicy = UndoPolicy.PENALTY
    undo_penalty_s: Annotated[int, Int(0, 300)] = 5
    countdown_s: Annotated[int, Int(0, 30)] = 3
    time_limit_s: Annotated[int, Int(0, 3600)] = 0
    difficulty: DifficultyName = "any"
    practice_seed: Seed | None = None
    #: A solo attempt at today's daily deal (docs/protocol.md, "The daily deal").
    daily: Annotated[bool, Since(2)] = False
    #: Stored runs to race, replayed at their recorded times ("Ghost races").
    ghosts: Annotated[tuple[GhostRef, ...], Items(MAX_GHOSTS), Since(2)] = ()

    @property
    def rules(self) -> Rules:
        """The rule options that change play."""
        return Rules(wrap=self.wrap, empty_waste=self.empty_waste)

    @property
    def practice(self) -> bool:
        """A race dealt from a chosen seed, or against ghosts, is a practice race."""
        return self.practice_seed is not None or bool(self.ghosts)


@dataclass(frozen=True, slots=True)
class Member:
    """A player seated in a room (spectators are only counted)."""

    player_id: PlayerId
    name: Name
    bot: bool
    ready: bool
    connected: bool
    guest: Annotated[bool, Since(2)] = True
    #: A stored run replayed by the server, not a person (see "Ghost races").
    ghost: Annotated[bool, Since(2)] = False


@dataclass(frozen=True, slots=True)
class RoomSummary:
    """One public room in a ``room_list``."""

    code: RoomCode
    phase: Phase
    players: Annotated[int, Int(0, MAX_PLAYERS)]
    spectators: Count
    options: RoomOptions


@dataclass(frozen=True, slots=True)
class BoardView:
    """A player's view on the wire; mirrors :class:`protocol.rules.game.PlayerView`."""

    board: Annotated[tuple[BoardEntry, ...], Items(28, exact=True)]
    #: ``"??"`` only in a ``spectator_board`` (a card some racer still racing has not seen).
    waste_top: Annotated[BoardEntry, Since(2, 'may be ``"??"``', older=_hidden_as_none)]
    stock_left: StockLeft
    moves: Count
    draws: Count
    undos: Count
    status: Status

    @classmethod
    def from_view(cls, view: PlayerView) -> BoardView:
        """The wire form of an engine view."""
        return cls(
            view.board, view.waste_top, view.stock_left, view.moves, view.draws, view.undos,
            view.status,
        )

    def to_view(self) -> PlayerView:
        """The engine's :class:`PlayerView` for this wire view."""
        return PlayerView(
            self.board, self.waste_top, self.stock_left, self.moves, self.draws, self.undos,
            self.status,
        )

    @property
    def cleared(self) -> int:
        return sum(1 for entry in self.board if entry is None)


@dataclass(frozen=True, slots=True)
class Uncovered:
    """A card that a move turned face up, at its position."""

    position: Position
    card: CardCode


@dataclass(frozen=True, slots=True)
class PlayerProgress:
    """One player's line in a ``progress`` frame."""

    player_id: PlayerId
    cleared: Cleared
    stock_left: StockLeft
    moves: Count
    undos: Count
    status: PlayerStatus
    elapsed_ms: Millis
    connected: bool


@dataclass(frozen=True, slots=True)
class Standing:
    """One player's final line in ``race_over``."""

    player_id: PlayerId
    name: Name
    bot: bool
    rank: Rank
    status: PlayerStatus
    time_ms: Millis
    cleared: Cleared
    moves: Count
    undos: Count
    penalty_ms: Millis
    #: A stored run replayed by the server, not a person (see "Ghost races").
    ghost: Annotated[bool, Since(2)] = False


@dataclass(frozen=True, slots=True)
class DealCodes:
    """A full deal as card codes; ``stock[0]`` is drawn first."""

    peaks: Annotated[tuple[CardCode, ...], Items(28, exact=True)]
    waste: CardCode | None
    stock: Annotated[tuple[CardCode, ...], Items(24)]

    @classmethod
    def from_deal(cls, deal: Deal) -> DealCodes:
        return cls(
            tuple(card_code(c) for c in deal.peaks),
            None if deal.waste is None else card_code(deal.waste),
            tuple(card_code(c) for c in deal.stock),
        )

    def to_deal(self, rules: Rules) -> Deal:
        """The engine deal; raises ``CardError`` when the codes are not a valid deal."""
        return Deal.from_codes(rules, self.peaks, self.waste, self.stock)


# ---- client to server ---------------------------------------------------
@dataclass(frozen=True, slots=True)
class Hello:
    TAG: ClassVar[str] = "hello"
    name: Name
    version: Annotated[int, Int(0, 65535)]
    token: Token | None = None
    bot: bool = False
    client: Annotated[str, Text(0, 40)] = ""
    key: Annotated[Key | None, Since(2)] = None
    spectator_update: Annotated[bool, Since(2)] = False


@dataclass(frozen=True, slots=True)
class CreateRoom:
    TAG: ClassVar[str] = "create_room"
    options: RoomOptions = field(default_factory=RoomOptions)


@dataclass(frozen=True, slots=True)
class Join:
    TAG: ClassVar[str] = "join"
    code: RoomCode
    role: Role = Role.PLAYER


@dataclass(frozen=True, slots=True)
class Leave:
    TAG: ClassVar[str] = "leave"


@dataclass(frozen=True, slots=True)
class Ready:
    TAG: ClassVar[str] = "ready"
    ready: bool = True


@dataclass(frozen=True, slots=True)
class Start:
    TAG: ClassVar[str] = "start"


@dataclass(frozen=True, slots=True)
class Kick:
    TAG: ClassVar[str] = "kick"
    player_id: PlayerId


@dataclass(frozen=True, slots=True)
class UpdateOptions:
    TAG: ClassVar[str] = "update_options"
    options: RoomOptions


@dataclass(frozen=True, slots=True)
class MoveRequest:
    """A move: ``position`` is given for ``play`` and only for ``play``."""

    TAG: ClassVar[str] = "move"
    seq: Seq
    action: MoveAction
    position: MovePosition | None = None

    @property
    def move(self) -> Move | None:
        """The engine move (a position or ``"draw"``); ``None`` for an undo."""
        if self.action is MoveAction.PLAY:
            return self.position
        return DRAW if self.action is MoveAction.DRAW else None


@dataclass(frozen=True, slots=True)
class Resign:
    TAG: ClassVar[str] = "resign"


@dataclass(frozen=True, slots=True)
class Rematch:
    TAG: ClassVar[str] = "rematch"


@dataclass(frozen=True, slots=True)
class Ping:
    TAG: ClassVar[str] = "ping"
    client_time_ms: Millis


@dataclass(frozen=True, slots=True)
class ListRooms:
    TAG: ClassVar[str] = "list_rooms"


@dataclass(frozen=True, slots=True)
class Sync:
    TAG: ClassVar[str] = "sync"


ClientMessage = (
    Hello | CreateRoom | Join | Leave | Ready | Start | Kick | UpdateOptions | MoveRequest
    | Resign | Rematch | Ping | ListRooms | Sync
)


# ---- server to client ---------------------------------------------------
@dataclass(frozen=True, slots=True)
class Welcome:
    TAG: ClassVar[str] = "welcome"
    player_id: PlayerId
    name: Name
    token: Token
    resumed: bool
    protocol_version: Annotated[int, Int(0, 65535)]
    server_version: Annotated[str, Text(1, 40)]


@dataclass(frozen=True, slots=True)
class RoomState:
    TAG: ClassVar[str] = "room_state"
    version: Count
    code: RoomCode
    phase: Phase
    host_id: PlayerId | None
    options: RoomOptions
    members: Annotated[tuple[Member, ...], Items(MAX_PLAYERS)]
    spectators: Count
    your_role: Role
    race_id: RaceId | None


@dataclass(frozen=True, slots=True)
class Countdown:
    TAG: ClassVar[str] = "countdown"
    seconds: Annotated[int, Int(0, 30)]
    start_at_ms: Millis
    server_time_ms: Millis


@dataclass(frozen=True, slots=True)
class RaceStart:
    TAG: ClassVar[str] = "race_start"
    race_id: RaceId
    practice: bool
    wrap: bool
    empty_waste: bool
    commitment: Commitment
    view: BoardView
    started_at_ms: Millis
    server_time_ms: Millis

    @property
    def rules(self) -> Rules:
        return Rules(wrap=self.wrap, empty_waste=self.empty_waste)


@dataclass(frozen=True, slots=True)
class MoveResult:
    """The answer to one ``move``; see docs/protocol.md for each action's fields."""

    TAG: ClassVar[str] = "move_result"
    seq: Seq
    action: MoveAction
    accepted: bool
    reason: Reason | None
    position: MovePosition | None
    card: CardCode | None
    uncovered: Annotated[tuple[Uncovered, ...], Items(2)]
    hidden: Annotated[tuple[Position, ...], Items(2)]
    undone: UndoneAction | None
    waste_top: CardCode | None
    stock_left: StockLeft
    cleared: Cleared
    moves: Count
    draws: Count
    undos: Count
    status: Status
    penalty_ms: Millis
    elapsed_ms: Millis


@dataclass(frozen=True, slots=True)
class Progress:
    TAG: ClassVar[str] = "progress"
    elapsed_ms: Millis
    players: Annotated[tuple[PlayerProgress, ...], Items(MAX_PLAYERS)]


@dataclass(frozen=True, slots=True)
class Finish:
    TAG: ClassVar[str] = "finish"
    player_id: PlayerId
    name: Name
    rank: Rank
    time_ms: Millis
    moves: Count
    undos: Count


@dataclass(frozen=True, slots=True)
class RaceOver:
    TAG: ClassVar[str] = "race_over"
    race_id: RaceId
    ended_by: RaceEnd
    standings: Annotated[tuple[Standing, ...], Items(MAX_PLAYERS)]
    #: ``seed``, ``candidate``, ``deal`` and ``solution`` are null only in a daily
    #: attempt (``daily`` set) until that day is over.
    seed: Seed | None
    candidate: Count | None
    wrap: bool
    empty_waste: bool
    difficulty: DifficultyName
    practice: bool
    commitment: Commitment
    deal: DealCodes | None
    solution: Annotated[tuple[SolutionStep, ...], Items(64)] | None
    par: Annotated[int, Int(0, 24)] | None
    saved: Annotated[bool, Since(2)] = True
    #: The day of a daily attempt: its deal is revealed once that UTC day is over.
    daily: Annotated[DayText | None, Since(2)] = None

    @property
    def rules(self) -> Rules:
        return Rules(wrap=self.wrap, empty_waste=self.empty_waste)


@dataclass(frozen=True, slots=True)
class SavedLater(RaceOver):
    """``race_over`` once more, with ``saved: true``: a result first announced with
    ``saved: false`` is stored now.  Not sent to version 1 (a catch-up holding it is)."""

    SINCE: ClassVar[Since] = Since(2)

    @classmethod
    def of(cls, over: RaceOver) -> SavedLater:
        """The note for ``over``'s race."""
        return cls(**{**{f.name: getattr(over, f.name) for f in fields(over)}, "saved": True})


@dataclass(frozen=True, slots=True)
class SpectatorBoard:
    TAG: ClassVar[str] = "spectator_board"
    player_id: PlayerId
    view: BoardView
    elapsed_ms: Millis


@dataclass(frozen=True, slots=True)
class SpectatorUpdate:
    """What changed for a spectator at one moment, in one frame (asked for in ``hello``):
    the ``progress`` sent then, if any, and the boards sent with it."""

    TAG: ClassVar[str] = "spectator_update"
    #: Asked for with ``hello.spectator_update``, which version 1 does not have.
    SINCE: ClassVar[Since] = Since(2)
    progress: Progress | None
    boards: Annotated[tuple[SpectatorBoard, ...], Items(MAX_PLAYERS)]


@dataclass(frozen=True, slots=True)
class Resync:
    """The race as this connection should now see it (sent after ``room_state``)."""

    TAG: ClassVar[str] = "resync"
    room_version: Count
    phase: Phase
    race_id: RaceId | None
    commitment: Commitment | None
    started_at_ms: Millis | None
    server_time_ms: Millis
    elapsed_ms: Millis
    last_seq: Annotated[int, Int(0, MAX_SEQ)]
    penalty_ms: Millis
    view: BoardView | None


@dataclass(frozen=True, slots=True)
class Error:
    """A refused message.  ``code`` is an :class:`~protocol.wire.errors.ErrorCode` value."""

    TAG: ClassVar[str] = "error"
    code: Annotated[int, Int(1, 9999)]
    message: Annotated[str, Text(1, 200)]
    ref: Annotated[str, Text(1, 32)] | None = None
    seq: Seq | None = None


@dataclass(frozen=True, slots=True)
class Pong:
    TAG: ClassVar[str] = "pong"
    client_time_ms: Millis
    server_time_ms: Millis


@dataclass(frozen=True, slots=True)
class RoomList:
    TAG: ClassVar[str] = "room_list"
    rooms: Annotated[tuple[RoomSummary, ...], Items(100)]


@dataclass(frozen=True, slots=True)
class Left:
    """This connection is no longer in room ``code``."""

    TAG: ClassVar[str] = "left"
    code: RoomCode
    reason: LeftReason


@dataclass(frozen=True, slots=True)
class Closing:
    """Sent just before the server closes the socket with ``code``."""

    TAG: ClassVar[str] = "closing"
    code: Annotated[int, Int(1000, 4999)]
    reason: Annotated[str, Text(1, 120)]


@dataclass(frozen=True, slots=True)
class Moved:
    """What ``ref`` asked for lives on another node: connect to ``url`` and ask there."""

    TAG: ClassVar[str] = "moved"
    #: A version-1 connection gets error 134 ``ROOM_ELSEWHERE`` naming ``url`` instead.
    SINCE: ClassVar[Since] = Since(2)
    url: Annotated[str, Text(1, 200)]
    ref: Annotated[str, Text(1, 32)]
    code: RoomCode | None = None


ServerMessage = (
    Welcome | RoomState | Countdown | RaceStart | MoveResult | Progress | Finish | RaceOver
    | SpectatorBoard | SpectatorUpdate | Resync | Error | Pong | RoomList | Left | Closing
    | Moved
)

CLIENT_MESSAGES: Final[dict[str, type[ClientMessage]]] = {
    cls.TAG: cls
    for cls in (
        Hello, CreateRoom, Join, Leave, Ready, Start, Kick, UpdateOptions, MoveRequest, Resign,
        Rematch, Ping, ListRooms, Sync,
    )
}
SERVER_VARIANTS: Final[tuple[type[ServerMessage], ...]] = (SavedLater,)  # tags shared
SERVER_MESSAGES: Final[dict[str, type[ServerMessage]]] = {
    cls.TAG: cls
    for cls in (
        Welcome, RoomState, Countdown, RaceStart, MoveResult, Progress, Finish, RaceOver,
        SpectatorBoard, SpectatorUpdate, Resync, Error, Pong, RoomList, Left, Closing, Moved,
    )
}
