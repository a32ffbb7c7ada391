"""Claimed names, ratings and profiles in the database (tables in :mod:`server.storage.schema`).

:class:`Players` reads and writes claims and answers the profile and
leaderboard queries; :mod:`server.storage.rating` moves the ratings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from server.players.profile import Figures, Outcome, figures
from server.players.ratings import INITIAL, Rating
from server.race.records import RaceRecord
from server.storage.daily import hidden_races
from server.storage.schema import players, race_players, races, rating_history
from server.storage.store import RaceStore

#: Most points of a rating history a profile carries (the newest).
HISTORY_POINTS: Final = 500


@dataclass(frozen=True, slots=True)
class Claim:
    """A claimed name: its account (normalised), the name as claimed, its key's hash."""

    account: str
    name: str
    key_hash: str


@dataclass(frozen=True, slots=True)
class RatingPoint:
    """A player's rating after one rated race."""

    race_id: str
    at_ms: int
    rating: Rating


@dataclass(frozen=True, slots=True)
class Profile:
    """A claimed player across every stored race."""

    account: str
    name: str
    claimed_at_ms: int
    rating: Rating
    rated_races: int
    figures: Figures
    history: tuple[RatingPoint, ...]
    recent: tuple[RaceRecord, ...]


@dataclass(frozen=True, slots=True)
class Standing:
    """One line of the leaderboard."""

    account: str
    name: str
    rating: Rating
    rated_races: int


class Players:
    """Claims, profiles and the leaderboard of one store."""

    def __init__(self, store: RaceStore) -> None:
        self.store = store

    async def claim_of(self, account: str) -> Claim | None:
        """The claim on ``account``, if any."""
        query = sa.select(players.c.account, players.c.name, players.c.key_hash).where(
            players.c.account == account
        )
        async with self.store.reading() as conn:
            row = (await conn.execute(query)).first()
        return None if row is None else Claim(row.account, row.name, row.key_hash)

    async def claim(self, claim: Claim, now_ms: int) -> bool:
        """Record a new claim; False when the account is claimed already."""
        row = {
            "account": claim.account, "name": claim.name, "key_hash": claim.key_hash,
            "claimed_at_ms": now_ms, "mu": INITIAL.mu, "sigma": INITIAL.sigma,
            "rated_races": 0,
        }
        try:
            async with self.store.writing() as conn:
                await conn.execute(players.insert().values(**row))
        except IntegrityError:
            return False
        return True

    async def profile(
        self, account: str, recent: int = 20, *, hide_daily_from: str | None = None
    ) -> Profile | None:
        """Everything ``GET /api/players/NAME`` serves, or None for an unclaimed name.

        ``hide_daily_from`` (a day) leaves the daily attempts at that day and later out
        of the recent races: their seeds are secret until the day is over.
        """
        async with self.store.reading() as conn:
            row = (await conn.execute(players.select().where(players.c.account == account))).first()
            if row is None:
                return None
            outcomes = await _outcomes(conn, account)
            history = await _history(conn, account)
            ids = await _recent_ids(conn, account, recent, hide_daily_from)
        records = await self.store._load(ids, with_logs=False)
        return Profile(
            account=row.account,
            name=row.name,
            claimed_at_ms=int(row.claimed_at_ms),
            rating=Rating(row.mu, row.sigma),
            rated_races=row.rated_races,
            figures=figures(outcomes),
            history=history,
            recent=tuple(records),
        )

    async def leaderboard(self, min_races: int, limit: int) -> list[Standing]:
        """Claimed players with at least ``min_races`` rated races, best rating first."""
        conservative = players.c.mu - 3 * players.c.sigma
        query = (
            sa.select(players)
            .where(players.c.rated_races >= min_races)
            .order_by(conservative.desc(), players.c.account)
            .limit(limit)
        )
        async with self.store.reading() as conn:
            rows = (await conn.execute(query)).all()
        return [Standing(r.account, r.name, Rating(r.mu, r.sigma), r.rated_races) for r in rows]


async def _outcomes(conn: AsyncConnection, account: str) -> list[Outcome]:
    theirs = sa.select(race_players.c.race_id).where(race_players.c.account == account)
    counts = (
        sa.select(race_players.c.race_id, sa.func.count().label("n"))
        .where(race_players.c.race_id.in_(theirs))
        .group_by(race_players.c.race_id)
        .subquery()
    )
    query = (
        sa.select(race_players.c.rank, race_players.c.status, race_players.c.finish_ms, counts.c.n)
        .join(counts, counts.c.race_id == race_players.c.race_id)
        .where(race_players.c.account == account)
    )
    return [
        Outcome(row.rank, int(row.n), row.status == "finished", row.finish_ms)
        for row in await conn.execute(query)
    ]


async def _history(conn: AsyncConnection, account: str) -> tuple[RatingPoint, ...]:
    query = (
        sa.select(rating_history)
        .where(rating_history.c.account == account)
        .order_by(rating_history.c.at_ms.desc(), rating_history.c.race_id.desc())
        .limit(HISTORY_POINTS)
    )
    rows = (await conn.execute(query)).all()
    return tuple(
        RatingPoint(row.race_id, int(row.at_ms), Rating(row.mu, row.sigma))
        for row in reversed(rows)
    )


async def _recent_ids(
    conn: AsyncConnection, account: str, limit: int, hide_daily_from: str | None
) -> list[str]:
    theirs = sa.select(race_players.c.race_id).where(race_players.c.account == account)
    query = sa.select(races.c.race_id).where(races.c.race_id.in_(theirs))
    if hide_daily_from is not None:
        query = query.where(races.c.race_id.not_in(hidden_races(hide_daily_from)))
    query = query.order_by(races.c.started_at_ms.desc(), races.c.race_id.desc()).limit(limit)
    return [row.race_id for row in await conn.execute(query)]
