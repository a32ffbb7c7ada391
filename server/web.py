"""The web pages: plain HTML, CSS and JavaScript modules from ``server/static``.

:func:`add_web_routes` registers ``/`` (public rooms, create and join),
``/play/{code}`` (the player's page), ``/watch/{code}`` (a live race),
``/races/{race_id}`` (a stored race replayed), ``/daily`` (the daily deal),
``/players/{name}`` (a claimed player's profile), ``/leaderboard``, the static files
under ``/static/`` and ``/api/protocol.schema.json`` (the JSON Schema of every
message, built from the codec's own schema).  The pages are static files:
everything live comes from the JSON WebSocket subprotocol and the ``/api``
routes, so no hidden card ever passes through here.  See ``docs/web.md``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from aiohttp import web

from protocol.wire.json_schema import schema_text

STATIC_DIR: Final = Path(__file__).resolve().parent / "static"

#: Sent with every page: only this server's own scripts, styles and socket.
#: ``connect-src 'self'`` covers same-origin ws:// and wss:// in CSP level 3.
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)

_PAGE_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    # Pages are tiny; always revalidate so a server upgrade is seen at once.
    "Cache-Control": "no-cache",
}

# Anything that could be a room code or race id; the page itself reports a
# code that names no room, so a typo still gets a friendly answer.
_CODE_RE: Final = re.compile(r"^[A-Za-z0-9]{1,16}$")
_RACE_ID_RE: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _page(name: str) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / name, headers=_PAGE_HEADERS)


async def index_page(request: web.Request) -> web.StreamResponse:
    """``/``: the public rooms and the room-code box."""
    return _page("index.html")


async def play_page(request: web.Request) -> web.StreamResponse:
    """``/play/{code}``: a seat in a room, from the lobby to the results."""
    if not _CODE_RE.match(request.match_info["code"]):
        raise web.HTTPNotFound(text="A room code is 1 to 16 letters and digits.\n")
    return _page("play.html")


async def watch_page(request: web.Request) -> web.StreamResponse:
    """``/watch/{code}``: a live race, watched as a spectator."""
    if not _CODE_RE.match(request.match_info["code"]):
        raise web.HTTPNotFound(text="A room code is 1 to 16 letters and digits.\n")
    return _page("watch.html")


async def race_page(request: web.Request) -> web.StreamResponse:
    """``/races/{race_id}``: a stored race replayed move by move."""
    if not _RACE_ID_RE.match(request.match_info["race_id"]):
        raise web.HTTPNotFound(text="A race id is 1 to 64 letters, digits, '-' or '_'.\n")
    return _page("race.html")


async def player_page(request: web.Request) -> web.StreamResponse:
    """``/players/{name}``: a claimed player's figures, rating chart and recent races."""
    if not 1 <= len(request.match_info["name"]) <= 64:
        raise web.HTTPNotFound(text="A player name is 1 to 64 characters.\n")
    return _page("player.html")


async def leaderboard_page(request: web.Request) -> web.StreamResponse:
    """``/leaderboard``: claimed players by rating."""
    return _page("leaderboard.html")


async def daily_page(request: web.Request) -> web.StreamResponse:
    """``/daily``: today's daily deal and a day's leaderboards."""
    return _page("daily.html")


async def protocol_schema(request: web.Request) -> web.StreamResponse:
    """``/api/protocol.schema.json``: the JSON Schema of every wire message."""
    return web.Response(
        text=schema_text(),
        content_type="application/schema+json",
        headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
    )


async def _static_headers(request: web.Request, response: web.StreamResponse) -> None:
    if request.path.startswith("/static/"):
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Cache-Control", "no-cache")


def add_web_routes(app: web.Application) -> None:
    """Register the pages, ``/static/`` and the schema on ``app`` (before it starts)."""
    app.router.add_get("/", index_page, name="web-index")
    app.router.add_get("/play/{code}", play_page, name="web-play")
    app.router.add_get("/watch/{code}", watch_page, name="web-watch")
    app.router.add_get("/races/{race_id}", race_page, name="web-race")
    app.router.add_get("/daily", daily_page, name="web-daily")
    app.router.add_get("/players/{name}", player_page, name="web-player")
    app.router.add_get("/leaderboard", leaderboard_page, name="web-leaderboard")
    app.router.add_get("/api/protocol.schema.json", protocol_schema, name="protocol-schema")
    app.router.add_static("/static/", STATIC_DIR, name="static", append_version=False)
    app.on_response_prepare.append(_static_headers)
