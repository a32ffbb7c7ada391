"""Stored race records: what a finished race leaves behind.

Pure frozen dataclasses with no I/O.  The server fills them when a race
ends, :mod:`server.storage.store` persists them, and the HTTP API serves them
through :meth:`RaceRecord.to_json`.  :meth:`RaceRecord.from_json` reads the
same shape back and raises :class:`RecordError` on anything malformed, so a
bad document never becomes a half-valid record.  The document is described
field by field in docs/protocol.md ("The stored race record") and in the JSON
Schema (``RaceRecord`` in :mod:`protocol.wire.json_schema`, which also holds its
version and the names its statuses and actions may take).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from protocol.wire.json_schema import RECORD_ACTIONS, RECORD_STATUSES, RECORD_VERSION

#: Actions a move log entry may record.
ACTIONS: Final = frozenset(RECORD_ACTIONS)
#: Final (or current) statuses of a player in a race.
PLAYER_STATUSES: Final = frozenset(RECORD_STATUSES)


class RecordError(ValueError):
    """A race record document is malformed; the message names the field."""


@dataclass(frozen=True, slots=True)
class MoveLogEntry:
    """One move attempt as the server saw it, accepted or not."""

    seq: int  # client sequence number (0 for server-generated entries such as a timeout)
    at_ms: int  # server time since the race clock started, in ms
    action: str  # "play" | "draw" | "undo" | "resign" | "timeout" | "leave"
    position: int | None  # for "play"
    accepted: bool
    reason: int | None  # protocol.rules.game.Reason value when rejected
    card: str | None  # the card played or drawn (code), when accepted

    def to_json(self) -> dict[str, Any]:
        """The entry as a JSON-able dict."""
        return {
            "seq": self.seq,
            "at_ms": self.at_ms,
            "action": self.action,
            "position": self.position,
            "accepted": self.accepted,
            "reason": self.reason,
            "card": self.card,
        }

    @classmethod
    def from_json(cls, data: object) -> MoveLogEntry:
        """Read an entry written by :meth:`to_json`."""
        doc = _mapping(data, "log entry")
        action = _str(doc, "action")
        if action not in ACTIONS:
            raise RecordError(f"log entry: unknown action {action!r}")
        return cls(
            seq=_int(doc, "seq"),
            at_ms=_int(doc, "at_ms"),
            action=action,
            position=_opt_int(doc, "position"),
            accepted=_bool(doc, "accepted"),
            reason=_opt_int(doc, "reason"),
            card=_opt_str(doc, "card"),
        )


@dataclass(frozen=True, slots=True)
class PlayerResult:
    """One player's standing in a finished race, with their full move log."""

    player_id: str
    name: str
    is_bot: bool
    rank: int
    status: str  # "finished" | "stuck" | "resigned" | "left" | "timeout" | "racing"
    finish_ms: int | None  # race time incl. undo penalties, for finishers
    cleared: int
    moves: int
    draws: int
    undos: int
    penalty_ms: int
    log: tuple[MoveLogEntry, ...]
    #: The claimed name the player raced under (normalised, docs/players.md); None: a guest.
    account: str | None = None
    #: A stored run replayed by the server (docs/protocol.md, "Ghost races"), not a person.
    ghost: bool = False

    def to_json(self, *, with_log: bool = True) -> dict[str, Any]:
        """The result as a JSON-able dict; summaries leave the log out."""
        doc: dict[str, Any] = {
            "player_id": self.player_id,
            "name": self.name,
            "is_bot": self.is_bot,
            "rank": self.rank,
            "status": self.status,
            "finish_ms": self.finish_ms,
            "cleared": self.cleared,
            "moves": self.moves,
            "draws": self.draws,
            "undos": self.undos,
            "penalty_ms": self.penalty_ms,
            "account": self.account,
            "ghost": self.ghost,
        }
        if with_log:
            doc["log"] = [entry.to_json() for entry in self.log]
        return doc

    @classmethod
    def from_json(cls, data: object) -> PlayerResult:
        """Read a result written by :meth:`to_json` (a missing log reads as empty)."""
        doc = _mapping(data, "player")
        status = _str(doc, "status")
        if status not in PLAYER_STATUSES:
            raise RecordError(f"player: unknown status {status!r}")
        log = doc.get("log", [])
        if not isinstance(log, list):
            raise RecordError("player: 'log' must be a list")
        return cls(
            player_id=_str(doc, "player_id"),
            name=_str(doc, "name"),
            is_bot=_bool(doc, "is_bot"),
            rank=_int(doc, "rank"),
            status=status,
            finish_ms=_opt_int(doc, "finish_ms"),
            cleared=_int(doc, "cleared"),
            moves=_int(doc, "moves"),
            draws=_int(doc, "draws"),
            undos=_int(doc, "undos"),
            penalty_ms=_int(doc, "penalty_ms"),
            log=tuple(MoveLogEntry.from_json(entry) for entry in log),
            account=_opt_str(doc, "account"),
            # Records written before the field (fallback files) hold no ghost.
            ghost=_bool(doc, "ghost") if "ghost" in doc else False,
        )


@dataclass(frozen=True, slots=True)
class RaceRecord:
    """Everything needed to replay a finished race and re-check its finish times."""

    race_id: str  # opaque string id (e.g. 16 hex chars from a CSPRNG, chosen by the server)
    room_code: str
    room_name: str
    options: dict[str, object]  # the room options as a plain JSON-able dict
    practice: bool
    seed: str
    commitment: str
    wrap: bool
    empty_waste: bool
    candidate: int
    peaks: tuple[str, ...]  # 28 card codes
    waste: str | None
    stock: tuple[str, ...]
    solution: tuple[int | str, ...]  # positions and "draw"
    par: int | None
    started_at_ms: int  # unix ms of the race clock start
    ended_at_ms: int
    players: tuple[PlayerResult, ...]  # in rank order
    #: Why the race ended (``race_over.ended_by``); None in records stored before it was kept.
    ended_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The full record, logs included, as served by ``GET /api/races/{id}``."""
        doc = self.summary_json()
        doc.update(
            peaks=list(self.peaks),
            waste=self.waste,
            stock=list(self.stock),
            solution=list(self.solution),
            players=[player.to_json() for player in self.players],
        )
        return doc

    def summary_json(self) -> dict[str, Any]:
        """A short form for race lists: no deal, no solution, no move logs."""
        return {
            "record_version": RECORD_VERSION,
            "race_id": self.race_id,
            "room_code": self.room_code,
            "room_name": self.room_name,
            "options": dict(self.options),
            "practice": self.practice,
            "seed": self.seed,
            "commitment": self.commitment,
            "wrap": self.wrap,
            "empty_waste": self.empty_waste,
            "candidate": self.candidate,
            "par": self.par,
            "started_at_ms": self.started_at_ms,
            "ended_at_ms": self.ended_at_ms,
            "ended_by": self.ended_by,
            "players": [player.to_json(with_log=False) for player in self.players],
        }

    @classmethod
    def from_json(cls, data: object) -> RaceRecord:
        """Read a record written by :meth:`to_json`, raising :class:`RecordError` if malformed."""
        doc = _mapping(data, "race")
        if doc.get("record_version", RECORD_VERSION) != RECORD_VERSION:
            raise RecordError(f"race: record_version must be {RECORD_VERSION}")
        options = doc.get("options")
        if not isinstance(options, dict):
            raise RecordError("race: 'options' must be an object")
        players = doc.get("players")
        if not isinstance(players, list):
            raise RecordError("race: 'players' must be a list")
        return cls(
            race_id=_str(doc, "race_id"),
            room_code=_str(doc, "room_code"),
            room_name=_str(doc, "room_name"),
            options=dict(options),
            practice=_bool(doc, "practice"),
            seed=_str(doc, "seed"),
            commitment=_str(doc, "commitment"),
            wrap=_bool(doc, "wrap"),
            empty_waste=_bool(doc, "empty_waste"),
            candidate=_int(doc, "candidate"),
            peaks=_str_tuple(doc, "peaks"),
            waste=_opt_str(doc, "waste"),
            stock=_str_tuple(doc, "stock"),
            solution=_solution(doc),
            par=_opt_int(doc, "par"),
            started_at_ms=_int(doc, "started_at_ms"),
            ended_at_ms=_int(doc, "ended_at_ms"),
            players=tuple(PlayerResult.from_json(player) for player in players),
            ended_by=_opt_str(doc, "ended_by"),
        )


def _mapping(data: object, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise RecordError(f"{what} must be a JSON object, got {type(data).__name__}")
    return data


def _field(doc: Mapping[str, Any], key: str) -> Any:
    if key not in doc:
        raise RecordError(f"missing field {key!r}")
    return doc[key]


def _int(doc: Mapping[str, Any], key: str) -> int:
    value = _field(doc, key)
    # bool is an int subclass; a flag where a number belongs is a bug upstream.
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordError(f"field {key!r} must be an integer, got {value!r}")
    return value


def _opt_int(doc: Mapping[str, Any], key: str) -> int | None:
    return None if doc.get(key) is None else _int(doc, key)


def _str(doc: Mapping[str, Any], key: str) -> str:
    value = _field(doc, key)
    if not isinstance(value, str):
        raise RecordError(f"field {key!r} must be a string, got {value!r}")
    return value


def _opt_str(doc: Mapping[str, Any], key: str) -> str | None:
    return None if doc.get(key) is None else _str(doc, key)


def _bool(doc: Mapping[str, Any], key: str) -> bool:
    value = _field(doc, key)
    if not isinstance(value, bool):
        raise RecordError(f"field {key!r} must be true or false, got {value!r}")
    return value


def _str_tuple(doc: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = _field(doc, key)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RecordError(f"field {key!r} must be a list of strings")
    return tuple(value)


def _solution(doc: Mapping[str, Any]) -> tuple[int | str, ...]:
    value = _field(doc, "solution")
    if not isinstance(value, list):
        raise RecordError("field 'solution' must be a list")
    moves: list[int | str] = []
    for move in value:
        if move == "draw" or (isinstance(move, int) and not isinstance(move, bool)):
            moves.append(move)
        else:
            raise RecordError(f"field 'solution' holds a bad move {move!r}")
    return tuple(moves)
