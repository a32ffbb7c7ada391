"""The profile and leaderboard: their APIs on a real server, their pages in Chromium."""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from playwright.async_api import Browser

from protocol.wire import messages as m
from server.players.ratings import INITIAL
from server.storage.players import Claim, Players
from tests import webutil
from tests.server.storage.test_ratings import race
from tests.serverutil import RunningServer, connect, start_server

pytestmark = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Site:
    server: RunningServer
    browser: Browser | None


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    """A server holding three claimed players, six rated races and one practice race."""
    server = await start_server(tmp_path_factory.mktemp("web-players"))
    players = Players(server.store)
    for account, name in (("ann", "Ann"), ("bob", "Bob"), ("cat", "Cat")):
        await players.claim(Claim(account, name, "scrypt$x"), 1_700_000_000_000)
    for i in range(6):
        order = [("Ann", "ann", False), ("Bob", "bob", False)]
        await server.store.save_race(
            race(f"race{i}", order[::-1] if i == 2 else order, ended_at_ms=1_800_000_000_000 + i)
        )
    practice = race("practice", [("Ann", "ann", False), ("Cat", "cat", False)], practice=True)
    slow = dataclasses.replace(practice.players[1], status="stuck", finish_ms=None)
    await server.store.save_race(dataclasses.replace(practice, players=(practice.players[0], slow)))
    try:
        if webutil.CHROMIUM.is_file():
            async with webutil.open_browser() as browser:
                yield Site(server, browser)
        else:
            yield Site(server, None)
    finally:
        await server.stop()


async def get(site: Site, path: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.get(site.server.url + path) as r:
        return r.status, await r.json()


async def test_a_profile_gives_the_figures_the_rating_and_its_history(site: Site) -> None:
    status, ann = await get(site, "/api/players/ＡＮＮ")  # any spelling of the name
    assert status == 200
    assert (ann["account"], ann["name"]) == ("ann", "Ann")
    assert (ann["races"], ann["wins"], ann["finish_rate"]) == (7, 6, 1.0)
    assert ann["best_finish_ms"] == ann["median_finish_ms"] == 61_000
    assert ann["rating"]["rated_races"] == 6 and ann["rating"]["rating"] > 1000
    history = ann["rating_history"]
    assert [p["race_id"] for p in history] == [f"race{i}" for i in range(6)]
    assert history[-1]["rating"] == ann["rating"]["rating"]
    assert history[2]["mu"] < history[1]["mu"]  # race2 went to Bob
    assert ann["recent_races"][0]["race_id"] == "race5"
    assert {p["account"] for p in ann["recent_races"][0]["players"]} == {"ann", "bob"}
    _, cat = await get(site, "/api/players/cat")
    assert cat["rating"] == {
        "rating": 1000, "mu": INITIAL.mu, "sigma": INITIAL.sigma, "rated_races": 0
    }
    figures = (cat["races"], cat["wins"], cat["finish_rate"], cat["best_finish_ms"])
    assert figures == (1, 0, 0.0, None)


async def test_an_unclaimed_name_and_a_bad_one_get_clear_errors(site: Site) -> None:
    status, body = await get(site, "/api/players/nobody")
    assert status == 404 and "nobody has claimed the name 'nobody'" in body["error"]
    status, body = await get(site, "/api/players/" + "x" * 65)
    assert status == 400 and "1 to 64" in body["error"]


async def test_the_leaderboard_orders_by_rating_above_a_minimum_of_races(site: Site) -> None:
    status, board = await get(site, "/api/leaderboard")
    assert status == 200 and board["min_races"] == 5
    assert [(p["rank"], p["account"]) for p in board["players"]] == [(1, "ann"), (2, "bob")]
    assert board["players"][0]["rating"] > board["players"][1]["rating"]
    _, everyone = await get(site, "/api/leaderboard?min_races=0&limit=3")
    assert [p["account"] for p in everyone["players"]][:1] == ["ann"]
    assert len(everyone["players"]) == 3
    _, none = await get(site, "/api/leaderboard?min_races=7")
    assert none["players"] == []
    for bad in ("min_races=-1", "limit=0", "limit=101", "limit=%205", "min_races=x"):
        status, body = await get(site, f"/api/leaderboard?{bad}")
        assert status == 400 and "digits 0-9" in body["error"], bad


async def test_the_profile_page_shows_figures_a_chart_replays_and_race_this_run(site: Site) -> None:
    if site.browser is None:
        webutil.require_chromium()
    assert site.browser is not None
    _, ann = await get(site, "/api/players/ann")
    for viewport in (webutil.DESKTOP, webutil.PHONE):
        page = await webutil.new_page(site.browser, viewport)
        await page.goto(f"{site.server.url}/players/Ann")
        await page.locator("#profile").wait_for(state="visible")
        assert await page.locator("#player-name").inner_text() == "Ann"
        assert await page.locator("#rating").inner_text() == str(ann["rating"]["rating"])
        assert await page.locator("#wins").inner_text() == "6"
        assert await page.locator("#finish-rate").inner_text() == "100%"
        assert await page.locator("#best").inner_text() == "1:01.0"
        # One point for the start and one per rated race, drawn as SVG in the page.
        assert await page.locator("#chart svg circle").count() == 7
        links = page.locator("#recent a:not(.race-run)")
        assert await links.count() == 7
        assert await links.first.get_attribute("href") == "/races/race5"
        # Each of her runs can be raced as a ghost ("race this run").
        runs = page.locator("#recent a.race-run")
        assert await runs.count() == 7
        assert await runs.first.get_attribute("href") == "/?ghost=race5%3Ap1-race5"
        assert webutil.script_errors(page) == []
        await webutil.screenshot(page, f"player-{viewport['width']}")
        await page.context.close()


async def test_the_profile_page_of_an_unclaimed_name_says_so(site: Site) -> None:
    if site.browser is None:
        webutil.require_chromium()
    assert site.browser is not None
    page = await webutil.new_page(site.browser)
    await page.goto(f"{site.server.url}/players/nobody")
    message = page.locator("#message")
    await message.wait_for(state="visible")
    assert "nobody has claimed the name" in await message.inner_text()
    assert await page.locator("#profile").is_hidden()
    await page.context.close()


async def test_the_leaderboard_page_lists_players_with_links_to_profiles(site: Site) -> None:
    if site.browser is None:
        webutil.require_chromium()
    assert site.browser is not None
    page = await webutil.new_page(site.browser)
    await page.goto(f"{site.server.url}/leaderboard")
    await page.locator("#board").wait_for(state="visible")
    rows = page.locator("#board tbody tr")
    assert await rows.count() == 2
    assert await rows.first.locator("a").get_attribute("href") == "/players/ann"
    assert "at least 5 rated races" in await page.locator("#rule").inner_text()
    await page.goto(f"{site.server.url}/leaderboard?min_races=50")
    await page.locator("#message").wait_for(state="visible")
    assert "Nobody is on the leaderboard yet" in await page.locator("#message").inner_text()
    assert webutil.script_errors(page) == []
    await page.context.close()


async def test_the_play_page_sends_a_kept_key_and_says_when_a_name_is_claimed(
    site: Site,
) -> None:
    if site.browser is None:
        webutil.require_chromium()
    assert site.browser is not None
    key = secrets.token_urlsafe(32)
    owner = await connect(site.server.ws_url, hello=False)
    await owner.send(m.Hello(name="Dee", version=m.PROTOCOL_VERSION, key=key))
    assert isinstance(await owner.recv(), m.Welcome)
    await owner.close()
    host = await connect(site.server.ws_url, "host")
    state = await host.request(m.CreateRoom(), m.RoomState)
    page = await webutil.new_page(site.browser)
    await page.goto(f"{site.server.url}/")
    await page.evaluate(
        "key => { localStorage.setItem('tripeaks.name', 'dee');"
        " localStorage.setItem('tripeaks.keys', JSON.stringify({dee: key})); }", key
    )
    await page.goto(f"{site.server.url}/play/{state.code}")
    while len(state.members) < 2:
        state = await host.expect(m.RoomState)
    assert [(mb.name, mb.guest) for mb in state.members] == [("host", True), ("dee", False)]
    stranger = await webutil.new_page(site.browser)
    await stranger.goto(f"{site.server.url}/")
    await stranger.evaluate("() => localStorage.setItem('tripeaks.name', 'DEE')")
    await stranger.goto(f"{site.server.url}/play/{state.code}")
    await stranger.get_by_text("is claimed").first.wait_for(state="visible")
    assert webutil.script_errors(page) == []
    await host.close()
    await page.context.close()
    await stranger.context.close()
