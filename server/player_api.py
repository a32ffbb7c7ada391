"""``GET /api/players/{name}`` and ``GET /api/leaderboard``: claimed players across races.

The shapes are described in docs/players.md.  A name is looked up as claims
compare it (NFKC, case folded), so ``/api/players/ＡＮＮ`` is Ann's profile.  A
profile's recent races leave out the attempts at today's daily deal (their
seeds are secret until midnight, UTC).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from aiohttp import web

from protocol.wire.names import account_of
from server.players.ratings import Rating
from server.storage.players import Players, Profile
from server.storage.store import RaceStore

#: Leaderboard defaults and bounds.
DEFAULT_MIN_RACES: Final = 5
MAX_MIN_RACES: Final = 100_000
DEFAULT_BOARD: Final = 50
MAX_BOARD: Final = 100
#: Recent races a profile lists.
RECENT_RACES: Final = 20
_DIGITS: Final = re.compile(r"[0-9]{1,9}")
StoreOf = Callable[[web.Application], RaceStore]
TodayOf = Callable[[web.Application], str | None]
_STORE_OF: Final = web.AppKey[StoreOf]("store_of")
_TODAY_OF: Final = web.AppKey[TodayOf]("today_of")


def add_player_routes(
    app: web.Application,
    store_of: Callable[[web.Application], RaceStore],
    today_of: TodayOf = lambda app: None,
) -> None:
    """Register the two routes; ``store_of`` finds the app's store (opened at start-up),
    ``today_of`` the day of the daily deal being played, whose attempts stay hidden."""
    app[_STORE_OF] = store_of
    app[_TODAY_OF] = today_of
    app.router.add_get("/api/players/{name}", handle_profile)
    app.router.add_get("/api/leaderboard", handle_leaderboard)


def _players(request: web.Request) -> Players:
    return Players(request.app[_STORE_OF](request.app))


async def handle_profile(request: web.Request) -> web.Response:
    """``GET /api/players/{name}``: a claimed player's figures, rating and recent races."""
    name = request.match_info["name"]
    if not 1 <= len(name) <= 64 or not name.isprintable():
        return _error(400, "a name is 1 to 64 printable characters")
    today = request.app[_TODAY_OF](request.app)
    profile = await _players(request).profile(
        account_of(name), RECENT_RACES, hide_daily_from=today
    )
    if profile is None:
        return _error(404, f"nobody has claimed the name {name!r}; guests have no profile")
    return web.json_response(profile_json(profile))


async def handle_leaderboard(request: web.Request) -> web.Response:
    """``GET /api/leaderboard?min_races=N&limit=N``: claimed players by rating."""
    min_races = _number(request, "min_races", DEFAULT_MIN_RACES, 0, MAX_MIN_RACES)
    limit = _number(request, "limit", DEFAULT_BOARD, 1, MAX_BOARD)
    if isinstance(min_races, web.Response):
        return min_races
    if isinstance(limit, web.Response):
        return limit
    board = await _players(request).leaderboard(min_races, limit)
    lines = [
        {"rank": rank, "account": s.account, "name": s.name, **rating_json(s.rating),
         "rated_races": s.rated_races}
        for rank, s in enumerate(board, start=1)
    ]
    return web.json_response({"min_races": min_races, "players": lines})


def profile_json(profile: Profile) -> dict[str, Any]:
    """The profile document."""
    figures = profile.figures
    return {
        "account": profile.account,
        "name": profile.name,
        "claimed_at_ms": profile.claimed_at_ms,
        "rating": {**rating_json(profile.rating), "rated_races": profile.rated_races},
        "races": figures.races,
        "wins": figures.wins,
        "finish_rate": figures.finish_rate,
        "best_finish_ms": figures.best_finish_ms,
        "median_finish_ms": figures.median_finish_ms,
        "rating_history": [
            {"race_id": p.race_id, "at_ms": p.at_ms, **rating_json(p.rating)}
            for p in profile.history
        ],
        "recent_races": [record.summary_json() for record in profile.recent],
    }


def rating_json(rating: Rating) -> dict[str, Any]:
    """The number shown and the two it comes from."""
    return {"rating": rating.display, "mu": rating.mu, "sigma": rating.sigma}


def _number(
    request: web.Request, name: str, default: int, low: int, high: int
) -> int | web.Response:
    raw = request.query.get(name)
    if raw is None:
        return default
    # Only ASCII digits: int() would also take " 5", "+5", "1_0" and other scripts' digits.
    if not _DIGITS.fullmatch(raw) or not low <= int(raw) <= high:
        return _error(400, f"{name} must be a number from {low} to {high} in digits 0-9")
    return int(raw)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)
