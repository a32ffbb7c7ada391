"""The daily deal's tables and queries: each day's seed, and every attempt at it.

``daily_deals`` holds one row per UTC day: the seed drawn at the day's start
and its commitment.  ``daily_attempts`` holds one row per attempt, written
when the attempt starts (before its deal is shown: a started attempt counts
even if the server dies a moment later) and filled in with the result in the
transaction that stores the attempt's race (:func:`record_results`, called by
:meth:`server.storage.store.RaceStore.save_races`).  One ``(day, player_key)``
pair is unique, which is what lets a claimed player play each day once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from server.race.records import RaceRecord
from server.storage.schema import daily_attempts, daily_deals

#: The status of an attempt whose race has not been stored (yet, or ever).
STARTED: Final = "racing"


@dataclass(frozen=True, slots=True)
class DailyDealRow:
    """A day's seed as stored."""

    day: str
    seed: str
    commitment: str
    wrap: bool
    empty_waste: bool
    created_at_ms: int


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """One attempt as stored."""

    race_id: str
    day: str
    player_key: str
    player_id: str
    name: str
    bot: bool
    ranked: bool
    status: str
    finish_ms: int | None
    cleared: int
    moves: int
    started_at_ms: int


class AttemptTaken(Exception):
    """The attempt's row broke a constraint: most likely the player has started an
    attempt at this day's deal already (:func:`attempt_of` says for sure)."""


async def get_deal(conn: AsyncConnection, day: str) -> DailyDealRow | None:
    """The stored seed of ``day``, if one was drawn."""
    row = (await conn.execute(daily_deals.select().where(daily_deals.c.day == day))).first()
    return None if row is None else DailyDealRow(
        row.day, row.seed, row.commitment, bool(row.wrap), bool(row.empty_waste),
        int(row.created_at_ms),
    )


async def insert_deal(conn: AsyncConnection, deal: DailyDealRow) -> bool:
    """Store a day's seed; False when another server sharing the database stored one first."""
    try:
        await conn.execute(daily_deals.insert().values(**_fields(deal)))
    except IntegrityError:
        return False
    return True


async def insert_attempt(conn: AsyncConnection, attempt: AttemptRow) -> None:
    """Register a starting attempt; :class:`AttemptTaken` when the player has one that day."""
    try:
        await conn.execute(daily_attempts.insert().values(**_fields(attempt)))
    except IntegrityError as exc:
        raise AttemptTaken(attempt.player_key) from exc


async def attempts_of(conn: AsyncConnection, day: str) -> list[AttemptRow]:
    """Every attempt at ``day``'s deal, in no particular order."""
    rows = await conn.execute(daily_attempts.select().where(daily_attempts.c.day == day))
    return [_attempt(row) for row in rows]


async def attempt_of(conn: AsyncConnection, day: str, player_key: str) -> AttemptRow | None:
    """``player_key``'s attempt at ``day``'s deal, if they made one."""
    query = daily_attempts.select().where(
        daily_attempts.c.day == day, daily_attempts.c.player_key == player_key
    )
    row = (await conn.execute(query)).first()
    return None if row is None else _attempt(row)


async def day_of_race(conn: AsyncConnection, race_id: str) -> str | None:
    """The day of the daily deal that race ``race_id`` is an attempt at, if it is one."""
    query = sa.select(daily_attempts.c.day).where(daily_attempts.c.race_id == race_id)
    return (await conn.execute(query)).scalar()


def hidden_races(first_hidden_day: str) -> sa.Select[Any]:
    """The race ids of attempts at days from ``first_hidden_day`` on (not revealed yet)."""
    return sa.select(daily_attempts.c.race_id).where(daily_attempts.c.day >= first_hidden_day)


async def record_results(conn: AsyncConnection, records: Sequence[RaceRecord]) -> None:
    """Fill in the results of the daily attempts among ``records`` (in their transaction)."""
    for record in records:
        if not record.options.get("daily") or not record.players:
            continue
        player = record.players[0]
        await conn.execute(
            daily_attempts.update()
            .where(daily_attempts.c.race_id == record.race_id)
            .values(
                status=player.status, finish_ms=player.finish_ms, cleared=player.cleared,
                moves=player.moves,
            )
        )


def _attempt(row: sa.Row[Any]) -> AttemptRow:
    return AttemptRow(
        row.race_id, row.day, row.player_key, row.player_id, row.name, bool(row.bot),
        bool(row.ranked), row.status, None if row.finish_ms is None else int(row.finish_ms),
        row.cleared, row.moves, int(row.started_at_ms),
    )


def _fields(value: DailyDealRow | AttemptRow) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__dataclass_fields__}
