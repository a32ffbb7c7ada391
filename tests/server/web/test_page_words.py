"""The pages' words for a race nobody finished, alone: plurals, the summary, the title."""

from __future__ import annotations

from pathlib import Path

from protocol.wire import messages as m
from tests import webutil
from tests.serverutil import connect, running_server


async def test_a_lone_unfinished_race_reads_naturally_on_the_front_page_and_its_replay(
    tmp_path: Path,
) -> None:
    webutil.require_chromium()
    async with running_server(tmp_path) as server:
        host = await connect(server.ws_url, "root", encoding="json")
        options = m.RoomOptions(name="Solo table", countdown_s=0, practice_seed="words-1")
        await host.request(m.CreateRoom(options), m.RoomState)
        await host.send(m.Start())
        await host.expect(m.RaceStart)
        await host.send(m.Resign())
        over = await host.expect(m.RaceOver)
        await host.close()
        async with webutil.open_browser() as browser:
            page = await webutil.new_page(browser, webutil.DESKTOP)
            await page.goto(server.url + "/")
            item = page.locator(f"#races li[data-race='{over.race_id}']")
            await item.wait_for(state="visible", timeout=10_000)
            text = await item.inner_text()
            assert "1 player ·" in text and "1 players" not in text
            assert "nobody cleared the board; root ranked first" in text
            await page.goto(f"{server.url}/races/{over.race_id}")
            await page.locator("#race").wait_for(state="visible")
            title = await page.title()
            assert "Solo table" in title and over.race_id not in title
            assert over.race_id not in await page.inner_text("#race-title")
            assert webutil.script_errors(page) == []
