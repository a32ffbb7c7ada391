"""The race tables as SQLAlchemy Core sees them, and records <-> rows.

The Alembic revisions (``server/storage/alembic/versions/``) create these tables;
a test checks that the two agree column for column.  Deal, solution and options
are JSON text; every move is its own ``race_moves`` row so that logs stay
queryable.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from server.race.records import MoveLogEntry, PlayerResult, RaceRecord

metadata = sa.MetaData()
races = sa.Table(
    "races",
    metadata,
    sa.Column("race_id", sa.Text, primary_key=True),
    sa.Column("room_code", sa.Text, nullable=False),
    sa.Column("room_name", sa.Text, nullable=False),
    sa.Column("options_json", sa.Text, nullable=False),
    sa.Column("practice", sa.Boolean, nullable=False),
    sa.Column("seed", sa.Text, nullable=False),
    sa.Column("commitment", sa.Text, nullable=False),
    sa.Column("wrap", sa.Boolean, nullable=False),
    sa.Column("empty_waste", sa.Boolean, nullable=False),
    sa.Column("candidate", sa.Integer, nullable=False),
    sa.Column("peaks_json", sa.Text, nullable=False),
    sa.Column("waste", sa.Text),
    sa.Column("stock_json", sa.Text, nullable=False),
    sa.Column("solution_json", sa.Text, nullable=False),
    sa.Column("par", sa.Integer),
    sa.Column("started_at_ms", sa.BigInteger, nullable=False),
    sa.Column("ended_at_ms", sa.BigInteger, nullable=False),
    sa.Column("ended_by", sa.Text),
)
race_players = sa.Table(
    "race_players",
    metadata,
    sa.Column("race_id", sa.Text, primary_key=True),
    sa.Column("player_id", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("is_bot", sa.Boolean, nullable=False),
    sa.Column("rank", sa.Integer, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("finish_ms", sa.BigInteger),
    sa.Column("cleared", sa.Integer, nullable=False),
    sa.Column("moves", sa.Integer, nullable=False),
    sa.Column("draws", sa.Integer, nullable=False),
    sa.Column("undos", sa.Integer, nullable=False),
    sa.Column("penalty_ms", sa.BigInteger, nullable=False),
    sa.Column("account", sa.Text),
    sa.Column("ghost", sa.Boolean, nullable=False, server_default=sa.false()),
)
race_moves = sa.Table(
    "race_moves",
    metadata,
    sa.Column("race_id", sa.Text, primary_key=True),
    sa.Column("player_id", sa.Text, primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("at_ms", sa.BigInteger, nullable=False),
    sa.Column("action", sa.Text, nullable=False),
    sa.Column("position", sa.Integer),
    sa.Column("accepted", sa.Boolean, nullable=False),
    sa.Column("reason", sa.Integer),
    sa.Column("card", sa.Text),
)
#: Claimed names: the name as claimed, a slow hash of its key, the rating now.
players = sa.Table(
    "players",
    metadata,
    sa.Column("account", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("key_hash", sa.Text, nullable=False),
    sa.Column("claimed_at_ms", sa.BigInteger, nullable=False),
    sa.Column("mu", sa.Float, nullable=False),
    sa.Column("sigma", sa.Float, nullable=False),
    sa.Column("rated_races", sa.Integer, nullable=False),
)
#: A claimed player's rating after each rated race.
rating_history = sa.Table(
    "rating_history",
    metadata,
    sa.Column("account", sa.Text, primary_key=True),
    sa.Column("race_id", sa.Text, primary_key=True),
    sa.Column("at_ms", sa.BigInteger, nullable=False),
    sa.Column("mu", sa.Float, nullable=False),
    sa.Column("sigma", sa.Float, nullable=False),
)
#: The bookkeeping of the store from before Alembic, kept so that such a server
#: refuses the database (revision 0002).
schema_version = sa.Table(
    "schema_version",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("applied_at_ms", sa.BigInteger, nullable=False),
)


#: The daily deal: each day's seed, and every attempt at it (revision 0005; the
#: queries are in :mod:`server.storage.daily`).
daily_deals = sa.Table(
    "daily_deals",
    metadata,
    sa.Column("day", sa.Text, primary_key=True),
    sa.Column("seed", sa.Text, nullable=False),
    sa.Column("commitment", sa.Text, nullable=False),
    sa.Column("wrap", sa.Boolean, nullable=False),
    sa.Column("empty_waste", sa.Boolean, nullable=False),
    sa.Column("created_at_ms", sa.BigInteger, nullable=False),
)
daily_attempts = sa.Table(
    "daily_attempts",
    metadata,
    sa.Column("race_id", sa.Text, primary_key=True),
    sa.Column("day", sa.Text, nullable=False),
    sa.Column("player_key", sa.Text, nullable=False),
    sa.Column("player_id", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("bot", sa.Boolean, nullable=False),
    sa.Column("ranked", sa.Boolean, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("finish_ms", sa.BigInteger),
    sa.Column("cleared", sa.Integer, nullable=False),
    sa.Column("moves", sa.Integer, nullable=False),
    sa.Column("started_at_ms", sa.BigInteger, nullable=False),
)


Row = dict[str, Any]


def rows_of(record: RaceRecord) -> tuple[Row, list[Row], list[Row]]:
    """The rows of ``races``, ``race_players`` and ``race_moves`` for one record."""
    race_row = {
        "race_id": record.race_id,
        "room_code": record.room_code,
        "room_name": record.room_name,
        "options_json": dumps(record.options, "options"),
        "practice": record.practice,
        "seed": record.seed,
        "commitment": record.commitment,
        "wrap": record.wrap,
        "empty_waste": record.empty_waste,
        "candidate": record.candidate,
        "peaks_json": dumps(list(record.peaks), "peaks"),
        "waste": record.waste,
        "stock_json": dumps(list(record.stock), "stock"),
        "solution_json": dumps(list(record.solution), "solution"),
        "par": record.par,
        "started_at_ms": record.started_at_ms,
        "ended_at_ms": record.ended_at_ms,
        "ended_by": record.ended_by,
    }
    player_rows: list[dict[str, Any]] = []
    move_rows: list[dict[str, Any]] = []
    for player in record.players:
        row = player.to_json(with_log=False)
        row["race_id"] = record.race_id
        player_rows.append(row)
        for idx, entry in enumerate(player.log):
            move = entry.to_json()
            move.update(race_id=record.race_id, player_id=player.player_id, idx=idx)
            move_rows.append(move)
    return race_row, player_rows, move_rows


def race_of(row: sa.Row[Any], players: tuple[PlayerResult, ...]) -> RaceRecord:
    """A record from its ``races`` row and its players."""
    return RaceRecord(
        race_id=row.race_id,
        room_code=row.room_code,
        room_name=row.room_name,
        options=json.loads(row.options_json),
        practice=bool(row.practice),
        seed=row.seed,
        commitment=row.commitment,
        wrap=bool(row.wrap),
        empty_waste=bool(row.empty_waste),
        candidate=row.candidate,
        peaks=tuple(json.loads(row.peaks_json)),
        waste=row.waste,
        stock=tuple(json.loads(row.stock_json)),
        solution=tuple(json.loads(row.solution_json)),
        par=row.par,
        started_at_ms=int(row.started_at_ms),
        ended_at_ms=int(row.ended_at_ms),
        players=players,
        ended_by=row.ended_by,
    )


def player_of(row: sa.Row[Any], log: tuple[MoveLogEntry, ...]) -> PlayerResult:
    """A player's result from its ``race_players`` row and its log."""
    return PlayerResult(
        player_id=row.player_id,
        name=row.name,
        is_bot=bool(row.is_bot),
        rank=row.rank,
        status=row.status,
        finish_ms=None if row.finish_ms is None else int(row.finish_ms),
        cleared=row.cleared,
        moves=row.moves,
        draws=row.draws,
        undos=row.undos,
        penalty_ms=int(row.penalty_ms),
        log=log,
        account=row.account,
        ghost=bool(row.ghost),
    )


def move_of(row: sa.Row[Any]) -> MoveLogEntry:
    """A log entry from its ``race_moves`` row."""
    return MoveLogEntry(
        seq=row.seq,
        at_ms=int(row.at_ms),
        action=row.action,
        position=row.position,
        accepted=bool(row.accepted),
        reason=row.reason,
        card=row.card,
    )


def dumps(value: object, what: str) -> str:
    """Compact, stable JSON text; ``ValueError`` naming the field if it is not plain JSON."""
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"race field {what!r} is not plain JSON: {exc}") from exc
