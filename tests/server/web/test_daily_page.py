"""The /daily page and "race this run" in a real Chromium, on a real server with a moved clock."""

from __future__ import annotations

import aiohttp
from playwright.async_api import Page

from protocol.wire import messages as m
from server.race.daily import DAY_MS, day_start_ms
from server.race.room_types import Identity
from tests import webutil
from tests.server.test_daily import daily_record
from tests.serverutil import connect, running_server

NOON = day_start_ms("2031-03-14") + DAY_MS // 2


async def played_daily(ws_url: str, name: str) -> tuple[m.RaceStart, m.RaceOver]:
    client = await connect(ws_url, name)
    await client.request(m.CreateRoom(m.RoomOptions(daily=True, countdown_s=0)), m.RoomState)
    start = await client.request(m.Start(), m.RaceStart)
    over = await client.request(m.Resign(), m.RaceOver)
    await client.close()
    return start, over


async def page_text(page: Page) -> str:
    return await page.locator("main").inner_text()


async def test_the_daily_page_hides_the_day_then_checks_it_and_offers_its_runs(tmp_path) -> None:
    async with running_server(tmp_path) as server, webutil.open_browser() as browser:
        server.hub.shift_clock(NOON - server.hub.now_ms())
        start, over = await played_daily(server.ws_url, "guest")
        assert over.daily == "2031-03-14"
        # A ranked attempt, as a claimed name makes one, straight through the daily service.
        await server.hub.daily.begin(Identity("ann", "ann"), "ranked-1", "ann")
        await server.store.save_race(daily_record("ranked-1", "ann", 75_000, 28))
        page = await webutil.new_page(browser)
        await page.goto(server.url + "/daily")
        await page.locator("#board-status").filter(has_text="open until").wait_for()
        text = await page_text(page)
        assert start.commitment in text and "2031-03-14" in text
        assert "ann" in text and "finished in 1:15" in text
        assert "race this run" not in text and "ranked-1" not in await page.content()
        assert await page.locator("#revealed").is_hidden()
        await webutil.screenshot(page, "daily-open")

        server.hub.shift_clock(DAY_MS)
        await page.goto(server.url + "/daily?day=2031-03-14")
        await page.locator("#commit-check[data-ok=true]").wait_for()
        await page.locator("#deal-check[data-ok=true]").wait_for()
        text = await page_text(page)
        assert "race this run" in text and "replay" in text
        await webutil.screenshot(page, "daily-over")
        await page.get_by_role("link", name="race this run").click()
        await page.locator("#ghost-note").wait_for()
        await page.fill("#player-name", "bea")
        await page.get_by_role("button", name="Create room").click()
        await page.wait_for_url("**/play/*")
        (room,) = [r for r in server.hub.rooms.values() if r.options.ghosts]
        assert room.options.ghosts == (m.GhostRef("ranked-1", "ann"),)
        assert webutil.script_errors(page) == []


async def test_a_replay_page_offers_to_race_each_run(tmp_path) -> None:
    async with running_server(tmp_path) as server, webutil.open_browser() as browser:
        client = await connect(server.ws_url, "cy")
        await client.request(m.CreateRoom(m.RoomOptions(countdown_s=0, practice_seed="7")),
                             m.RoomState)
        await client.request(m.Start(), m.RaceStart)
        over = await client.request(m.Resign(), m.RaceOver)
        await client.close()
        page = await webutil.new_page(browser)
        await page.goto(f"{server.url}/races/{over.race_id}")
        link = page.locator("a.race-run", has_text="Race cy's run")
        await link.wait_for(state="attached")
        href = await link.get_attribute("href")
        assert href == f"/?ghost={over.race_id}%3A{client.player_id}"
        assert webutil.script_errors(page) == []


async def test_the_daily_page_has_the_pages_headers(tmp_path) -> None:
    async with running_server(tmp_path) as server, aiohttp.ClientSession() as http, http.get(
        server.url + "/daily"
    ) as response:
        assert response.status == 200
        assert "default-src 'self'" in response.headers["Content-Security-Policy"]
