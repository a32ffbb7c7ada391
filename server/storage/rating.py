"""Moving ratings when races are stored: inside the transaction that stores them
(:meth:`~server.storage.store.RaceStore.save_races`), so a rated race and the ratings
it moved commit together or not at all.  What is rated and how is
:mod:`server.players.ratings`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncConnection

from server.players.ratings import Rating, is_rated, new_ratings, rated_players
from server.race.records import PlayerResult, RaceRecord
from server.storage.schema import players, rating_history


async def rate_races(conn: AsyncConnection, records: Sequence[RaceRecord]) -> None:
    """Move the ratings of the rated races among ``records``, oldest end first."""
    for record in sorted(records, key=lambda r: (r.ended_at_ms, r.race_id)):
        if is_rated(record):
            await _rate(conn, record)


async def _rate(conn: AsyncConnection, record: RaceRecord) -> None:
    accounts = [account for account, _ in rated_players(record)]
    # FOR UPDATE: two servers rating one player at once must not both start from the
    # same rating (SQLite ignores it: its writers are one at a time anyway).
    query = players.select().where(players.c.account.in_(accounts)).with_for_update()
    current = {row.account: Rating(row.mu, row.sigma) for row in await conn.execute(query)}
    if len(current) < 2:
        return  # a claim that is gone leaves too few players to rate
    known = [p for p in record.players if p.account is None or p.account in current]
    moved = new_ratings(_only(record, known), current)
    for account, rating in moved.items():
        await conn.execute(
            players.update()
            .where(players.c.account == account)
            .values(mu=rating.mu, sigma=rating.sigma, rated_races=players.c.rated_races + 1)
        )
    await conn.execute(
        rating_history.insert(),
        [
            {"account": a, "race_id": record.race_id, "at_ms": record.ended_at_ms,
             "mu": r.mu, "sigma": r.sigma}
            for a, r in moved.items()
        ],
    )


def _only(record: RaceRecord, kept: list[PlayerResult]) -> RaceRecord:
    return record if len(kept) == len(record.players) else replace(record, players=tuple(kept))
