"""Ghosts and guests are marked on the browser's pages (watch, lobby, race, results), and a
daily attempt's race_over, which keeps its seed back, shows without errors.  Real
Chromium, one real server for the module."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import pytest_asyncio
from playwright.async_api import Browser

from protocol.wire import messages as m
from server.race.records import RaceRecord
from tests import webutil
from tests.server.test_ghost import recorded_race
from tests.serverutil import RunningServer, TestClient, connect, start_server

pytestmark = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Site:
    server: RunningServer
    browser: Browser
    record: RaceRecord


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    """One server with ann's stored run (seed 42, about two seconds), one browser."""
    webutil.require_chromium()
    server = await start_server(tmp_path_factory.mktemp("web-marks"))
    record = recorded_race()
    await server.store.save_race(record)
    try:
        async with webutil.open_browser() as browser:
            yield Site(server, browser, record)
    finally:
        await server.stop()


async def ghost_room(site: Site, host: str) -> tuple[TestClient, m.RoomState]:
    """``host`` (a guest) opens a room racing ann's run as a ghost."""
    client = await connect(site.server.ws_url, host)
    options = m.RoomOptions(countdown_s=0, ghosts=(m.GhostRef(site.record.race_id, "p0"),))
    return client, await client.request(m.CreateRoom(options), m.RoomState)


async def test_the_watch_page_marks_the_ghost_and_the_guest_in_panels_and_standings(
    site: Site,
) -> None:
    host, state = await ghost_room(site, "Bea")
    page = await webutil.new_page(site.browser, webutil.LAPTOP)
    try:
        await page.goto(f"{site.server.url}/watch/{state.code}")
        mine = page.locator(f'#boards .player-panel[data-player="{host.player_id}"]')
        await mine.wait_for()
        await host.request(m.Start(), m.RaceStart)
        ghost = page.locator('#boards .player-panel[data-player="ghost-1"]')
        await ghost.wait_for()
        assert await ghost.get_attribute("data-mark") == "ghost"
        assert "ghost" in await ghost.locator(".player-mark").inner_text()
        assert await mine.get_attribute("data-mark") == "guest"
        await host.request(m.Resign(), m.RaceOver)
        row = page.locator('#standings tr[data-player="ghost-1"]')
        await row.wait_for()
        assert "ann (ghost)" in await row.inner_text()
        mine_row = page.locator(f'#standings tr[data-player="{host.player_id}"]')
        assert "Bea (guest)" in await mine_row.inner_text()
        assert webutil.script_errors(page) == []
    finally:
        await host.close()


async def test_the_play_page_marks_guests_in_the_lobby_and_the_ghost_in_the_race(
    site: Site,
) -> None:
    host, state = await ghost_room(site, "Bea")
    page = await webutil.new_page(site.browser, webutil.LAPTOP)
    try:
        await page.goto(f"{site.server.url}/")
        await page.evaluate("() => localStorage.setItem('tripeaks.name', 'Zoe')")
        await page.goto(f"{site.server.url}/play/{state.code}")
        bea = page.locator("#members tr:has-text('Bea')")
        await bea.wait_for()
        assert "(host, guest)" in await bea.inner_text()
        assert "(guest, you)" in await page.locator("#members tr:has-text('Zoe')").inner_text()
        await page.locator("#ready").click()
        zoe = [mb for mb in state.members if mb.name == "Zoe"]
        while not (zoe and zoe[0].ready):
            zoe = [mb for mb in (await host.expect(m.RoomState)).members if mb.name == "Zoe"]
        await host.request(m.Start(), m.RaceStart)
        ghost = page.locator('#live-standings li[data-player="ghost-1"]')
        await ghost.wait_for()
        assert "ghost" in await ghost.locator("[data-mark]").inner_text()
        await host.send(m.Resign())
        await page.locator("#resign").click()
        await page.locator("#confirm-yes").click()
        row = page.locator('#standings tr[data-player="ghost-1"]')
        await row.wait_for()
        assert "(ghost)" in await row.inner_text()
        assert "(guest)" in await page.locator("#standings tr:has-text('Bea')").inner_text()
        assert webutil.script_errors(page) == []
    finally:
        await host.close()


SECRET_OVER = """async () => {
  const { showReveal } = await import('/static/js/playresults.js');
  showReveal({ seed: null, candidate: null, deal: null, solution: null, par: null,
               daily: '2031-03-14', commitment: 'ab'.repeat(32), wrap: true,
               empty_waste: false });
  return ['seed', 'par', 'commit-check', 'deal-check', 'commitment']
    .map((id) => document.getElementById(id).textContent)
    .concat([document.getElementById('winning-line').hidden]);
}"""


@pytest.mark.parametrize("where", ["play", "watch"])
async def test_a_daily_race_over_says_when_its_seed_comes_and_checks_nothing(
    site: Site, where: str,
) -> None:
    page = await webutil.new_page(site.browser, webutil.LAPTOP)
    await page.goto(f"{site.server.url}/{where}/ABCDEF")
    seed, par, commit, deal, commitment, winning_hidden = await page.evaluate(SECRET_OVER)
    assert seed == "revealed when 2031-03-14 is over (UTC)"
    assert par == "shown when the day is over"
    assert commit == deal == "checkable once the day is over (the daily page)"
    assert commitment == "ab" * 32 and winning_hidden is True
    assert [e for e in webutil.script_errors(page) if "ABCDEF" not in e] == []


async def test_a_stored_ghost_race_keeps_the_ghost_mark_in_the_api_and_the_replay(
    site: Site,
) -> None:
    host, _state = await ghost_room(site, "Bea")
    try:
        await host.request(m.Start(), m.RaceStart)
        over = await host.request(m.Resign(), m.RaceOver)
        assert over.saved is not False
        stored = await site.server.store.get_race(over.race_id)
        assert stored is not None
        assert {p.player_id: p.ghost for p in stored.players} == {
            host.player_id: False, "ghost-1": True}
        page = await webutil.new_page(site.browser, webutil.LAPTOP)
        await page.goto(f"{site.server.url}/races/{over.race_id}")
        row = page.locator('#standings tr[data-player="ghost-1"]')
        await row.wait_for()
        assert "ann (ghost)" in await row.inner_text()
        mine = page.locator(f'#standings tr[data-player="{host.player_id}"]')
        assert "Bea (guest)" in await mine.inner_text()
        assert webutil.script_errors(page) == []
    finally:
        await host.close()
