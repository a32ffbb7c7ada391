"""The daily deal's HTTP API: ``/api/daily``, ``/api/daily/{day}`` and its leaderboard.

Documented in docs/server.md ("The daily deal").  Until a day is over
nothing here names its seed, its deal or its attempts' races.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from server.daily import DailyService, DailyUnknown
from server.race.daily import DayError, day_start_ms

DailyOf = Callable[[web.Request], DailyService]


def add_daily_routes(app: web.Application, daily_of: DailyOf) -> None:
    """Register the daily deal's routes; ``daily_of`` finds the service for a request."""

    async def today(request: web.Request) -> web.Response:
        service = daily_of(request)
        return web.json_response(await service.public(service.today()))

    async def for_day(
        request: web.Request, answer: Callable[[str], Awaitable[object]]
    ) -> web.Response:
        day = request.match_info["day"]
        problem = _bad_day(day)
        if problem is not None:
            return problem
        try:
            return web.json_response(await answer(day))
        except DailyUnknown:
            return _unknown(day)

    async def one_day(request: web.Request) -> web.Response:
        return await for_day(request, daily_of(request).public)

    async def board(request: web.Request) -> web.Response:
        return await for_day(request, daily_of(request).board)

    app.router.add_get("/api/daily", today)
    app.router.add_get("/api/daily/{day}", one_day)
    app.router.add_get("/api/daily/{day}/leaderboard", board)


def _bad_day(day: str) -> web.Response | None:
    try:
        day_start_ms(day)
    except DayError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return None


def _unknown(day: str) -> web.Response:
    return web.json_response(
        {"error": f"this server has no daily deal for {day} (days are dealt as they come)"},
        status=404,
    )
