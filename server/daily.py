"""The daily deal's shell: each UTC day's seed, its deal, its attempts and what the API shows.

The decisions are pure (:mod:`server.race.daily`); this module carries them
out.  The first time a day is asked for (by ``GET /api/daily``, by an attempt,
or by the timer the server sets for each midnight) its seed is drawn from
:mod:`secrets` and stored with its commitment before anything is shown; the
deal is made in the deal pool (:func:`protocol.deals.dealer.deal_for_seed`,
the proven-winnable deal of that seed, as every race's) and kept.  An attempt
is registered in the store before its deal reaches the player, so a claimed
player who started once has played, even if the server died a moment later.
The clock is the hub's (:meth:`server.hub.Hub.now_ms`), which tests may move.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from protocol.deals.commitment import commitment
from protocol.deals.dealer import DealtGame, Difficulty
from protocol.rules.game import Rules
from protocol.wire.errors import ERROR_TEXT, ErrorCode
from protocol.wire.messages import DealCodes
from server import logs
from server.race import inputs
from server.race.daily import (
    BOARDS,
    DAILY_RULES,
    Attempt,
    day_end_ms,
    day_of,
    is_revealed,
    leaderboard,
)
from server.race.outputs import DealRequest
from server.race.room import Room
from server.race.room_types import Identity
from server.storage import daily as db
from server.storage.store import RaceStore, StorageError

#: Deals a seed off the event loop (the hub's deal pool).
Dealer = Callable[[str, Rules, Difficulty], Awaitable[DealtGame]]


class DailyUnknown(LookupError):
    """No deal was ever drawn for that day (a day before the server ran, or a future one)."""


class DailyPlayed(Exception):
    """This claimed player has started an attempt at today's deal already."""


class _Lost(Exception):
    """The day's seed was stored by someone else first."""


class DailyService:
    """Every day's deal of one server (one per process; the store keeps them across runs)."""

    def __init__(self, store: RaceStore, deal: Dealer, clock: Callable[[], int]) -> None:
        self.store = store
        self._deal = deal
        self._clock = clock
        self._rows: dict[str, db.DailyDealRow] = {}
        self._dealt: dict[str, asyncio.Future[DealtGame]] = {}
        self._lock = asyncio.Lock()

    def today(self) -> str:
        """The UTC day it is now."""
        return day_of(self._clock())

    async def day_row(self, day: str, *, draw: bool = False) -> db.DailyDealRow:
        """The stored seed of ``day``; with ``draw``, today's is drawn if none was yet."""
        row = self._rows.get(day)
        if row is not None:
            return row
        async with self._lock:
            async with self.store.reading() as conn:
                row = await db.get_deal(conn, day)
            if row is None and draw and day == self.today():
                row = await self._draw(day)
            if row is None:
                raise DailyUnknown(day)
            self._rows[day] = row
        return row

    async def _draw(self, day: str) -> db.DailyDealRow:
        seed = secrets.token_hex(16)  # 128 bits, as every race's seed
        row = db.DailyDealRow(
            day, seed, commitment(seed, DAILY_RULES), DAILY_RULES.wrap, DAILY_RULES.empty_waste,
            self._clock(),
        )
        with contextlib.suppress(_Lost):
            async with self.store.writing() as conn:
                if not await db.insert_deal(conn, row):
                    raise _Lost  # roll back: another server drew this day's seed first
            return row
        async with self.store.reading() as conn:
            stored = await db.get_deal(conn, day)
        if stored is None:
            raise StorageError(f"the daily deal of {day} could be neither stored nor read")
        return stored

    def dealt(self, row: db.DailyDealRow) -> asyncio.Future[DealtGame]:
        """The day's deal, made once in the deal pool."""
        future = self._dealt.get(row.day)
        if future is None or (future.done() and future.exception() is not None):
            rules = Rules(wrap=row.wrap, empty_waste=row.empty_waste)
            future = asyncio.ensure_future(self._deal(row.seed, rules, Difficulty.ANY))
            self._dealt[row.day] = future
        return future

    async def warm(self) -> None:
        """Draw and deal today's deal now, so the first attempt does not wait for it."""
        await self.dealt(await self.day_row(self.today(), draw=True))

    async def begin(
        self, identity: Identity, race_id: str, claimed: str | None
    ) -> tuple[str, DealtGame]:
        """Register an attempt at today's deal; the day and its deal.

        ``claimed`` is the player's claimed name as names are compared (None for a
        guest).  Raises :class:`DailyPlayed` when that name has an attempt already
        (by another race: registering race ``race_id`` twice registers it once).
        """
        now = self._clock()
        day = day_of(now)
        dealt = await self.dealt(await self.day_row(day, draw=True))
        key, ranked = attempt_key(claimed, race_id)
        attempt = db.AttemptRow(
            race_id, day, key, identity.player_id, identity.name, identity.bot, ranked,
            db.STARTED, None, 0, 0, now,
        )
        try:
            async with self.store.writing() as conn:
                await db.insert_attempt(conn, attempt)
        except db.AttemptTaken as exc:
            async with self.store.reading() as conn:
                taken = await db.attempt_of(conn, day, key)
            if taken is None:  # refused for another reason than an attempt made
                raise StorageError(f"the attempt could not be registered: {exc}") from exc
            # The same race asking again (its room rebuilt after a restart) is not a
            # second attempt.
            if taken.race_id != race_id:
                raise DailyPlayed(day) from None
        return day, dealt

    async def public(self, day: str) -> dict[str, Any]:
        """What ``GET /api/daily/DAY`` shows: the commitment, and after the day the reveal."""
        now = self._clock()
        row = await self.day_row(day, draw=True)
        doc: dict[str, Any] = {
            "day": row.day,
            "commitment": row.commitment,
            "wrap": row.wrap,
            "empty_waste": row.empty_waste,
            "difficulty": Difficulty.ANY.value,
            "reveal_at_ms": day_end_ms(day),
            "revealed": is_revealed(day, now),
        }
        if doc["revealed"]:
            dealt = await self.dealt(row)
            doc.update(
                seed=row.seed, candidate=dealt.candidate, par=dealt.par,
                deal=_deal_json(dealt), solution=list(dealt.solution),
            )
        return doc

    async def board(self, day: str) -> dict[str, Any]:
        """What ``GET /api/daily/DAY/leaderboard`` shows (race ids only once revealed)."""
        await self.day_row(day, draw=True)
        revealed = is_revealed(day, self._clock())
        async with self.store.reading() as conn:
            rows = await db.attempts_of(conn, day)
        attempts = [_attempt(row) for row in rows]
        doc: dict[str, Any] = {
            "day": day, "revealed": revealed, "reveal_at_ms": day_end_ms(day),
            "unranked": sum(1 for a in attempts if not a.ranked),
        }
        by_id = {row.race_id: row for row in rows}
        for board in BOARDS:
            ranked = leaderboard(attempts, board)
            doc[board] = [
                _entry(rank, attempt, by_id[attempt.race_id], revealed)
                for rank, attempt in enumerate(ranked, start=1)
            ]
        return doc

    async def race_hidden(self, race_id: str) -> str | None:
        """The day whose end race ``race_id`` waits for to be shown, or None if it may be."""
        async with self.store.reading() as conn:
            day = await db.day_of_race(conn, race_id)
        return day if day is not None and not is_revealed(day, self._clock()) else None


async def daily_for_room(
    daily: DailyService, room: Room, request: DealRequest, clock: Callable[[], int]
) -> inputs.Dealt | inputs.DealFailed | None:
    """A daily attempt's start: registered in the store first (ranked for a claimed
    name the host proved), then the room's input: the day's deal, or why not."""
    seat = room.seats.get(room.host_id or "")
    if seat is None:
        return None
    try:
        day, dealt = await daily.begin(seat.identity, request.race_id, seat.identity.account)
    except DailyPlayed as played:
        reason = f"you have played the daily deal of {played} already"
        return inputs.DealFailed(request.ticket, reason, clock(), int(ErrorCode.DAILY_PLAYED))
    except Exception as exc:
        logs.event("daily_failed", level=logging.WARNING, room=room.code, reason=str(exc))
        code = ErrorCode.DAILY_UNAVAILABLE
        return inputs.DealFailed(request.ticket, ERROR_TEXT[code], clock(), int(code))
    return inputs.Dealt(request.ticket, dealt, clock(), daily=day)


def attempt_key(claimed: str | None, race_id: str) -> tuple[str, bool]:
    """An attempt's key among the day's attempts, and whether it is ranked.

    A claimed name plays once a day, ranked; a guest's attempts are each their
    own, unranked.
    """
    if claimed is not None:
        return "name:" + claimed, True
    return "guest:" + race_id, False


def _attempt(row: db.AttemptRow) -> Attempt:
    return Attempt(
        row.race_id, row.name, row.bot, row.ranked, row.status, row.finish_ms, row.cleared,
        row.moves, row.started_at_ms,
    )


def _entry(rank: int, attempt: Attempt, row: db.AttemptRow, revealed: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "rank": rank, "name": attempt.name, "bot": attempt.bot, "status": attempt.status,
        "finish_ms": attempt.finish_ms, "cleared": attempt.cleared, "moves": attempt.moves,
    }
    if revealed:  # the replays stay hidden with the deal
        entry.update(race_id=attempt.race_id, player_id=row.player_id)
    return entry


def _deal_json(dealt: DealtGame) -> dict[str, Any]:
    codes = DealCodes.from_deal(dealt.deal)
    return {"peaks": list(codes.peaks), "waste": codes.waste, "stock": list(codes.stock)}
