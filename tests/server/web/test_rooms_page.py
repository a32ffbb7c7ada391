"""Watch pages for rooms that are not a plain race: missing, closed to spectators,
delayed, dropped connections and rematches.  Real Chromium, real server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser

from protocol.wire import messages as m
from protocol.wire.errors import CloseCode
from tests import webutil
from tests.serverutil import RunningServer, connect, open_room, start_server

pytestmark = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Site:
    server: RunningServer
    browser: Browser


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    """One server and one browser for the module."""
    webutil.require_chromium()
    server = await start_server(tmp_path_factory.mktemp("web-rooms"))
    try:
        async with webutil.open_browser() as browser:
            yield Site(server, browser)
    finally:
        await server.stop()


async def test_a_missing_room_gets_a_clear_message(site: Site) -> None:
    for viewport, name in ((webutil.DESKTOP, "desktop"), (webutil.PHONE, "phone")):
        page = await webutil.new_page(site.browser, viewport)
        await page.goto(f"{site.server.url}/watch/ZZZZZZ")
        message = page.locator("#message")
        await message.wait_for(state="visible")
        await page.wait_for_function(
            "() => document.getElementById('message').dataset.kind === 'error'"
        )
        assert "There is no room with code ZZZZZZ" in await message.inner_text()
        assert await page.locator("#watch").is_hidden()
        assert await page.locator("#clock").is_hidden()
        await webutil.screenshot(page, f"watch-missing-room-{name}")


async def _host_room(server: RunningServer, **options: Any) -> tuple[Any, str]:
    host = await connect(server.ws_url, "Host", encoding="json")
    state = await host.request(m.CreateRoom(m.RoomOptions(**options)), m.RoomState)
    return host, state.code


async def test_a_room_without_spectators_says_so(site: Site) -> None:
    host, code = await _host_room(site.server, name="Private", allow_spectators=False)
    try:
        page = await webutil.new_page(site.browser, webutil.DESKTOP)
        await page.goto(f"{site.server.url}/watch/{code.lower()}")
        message = page.locator("#message")
        await page.wait_for_function(
            "() => document.getElementById('message').dataset.kind === 'error'"
        )
        assert f"Room {code} does not allow spectators" in await message.inner_text()
        assert await page.locator("#watch").is_hidden()
    finally:
        await host.close()


async def test_a_spectator_delay_is_shown_on_the_page(site: Site) -> None:
    host, code = await _host_room(
        site.server, name="Delayed", spectator_delay_s=2, time_limit_s=300
    )
    try:
        page = await webutil.new_page(site.browser, webutil.DESKTOP)
        await page.goto(f"{site.server.url}/watch/{code}")
        await page.locator("#delay-note").wait_for(state="visible")
        assert await page.inner_text("#delay") == "2 s"
        assert await page.inner_text("#limit") == "5:00"
        assert await page.inner_text("#room-phase") == "lobby"
    finally:
        await host.close()


async def test_a_dropped_connection_is_retried_and_the_room_joined_again(
    site: Site,
) -> None:
    host, code = await _host_room(site.server, name="Flaky network")
    try:
        page = await webutil.new_page(site.browser, webutil.DESKTOP)
        await page.goto(f"{site.server.url}/watch/{code}")
        await page.locator(".player-panel").first.wait_for(state="visible")
        hub = site.server.hub
        watchers = [
            conn
            for conn in hub.connections
            if (session := hub.lobby.session_of(conn)) is not None
            and session.room == code
            and session.identity.name == "web spectator"
        ]
        assert len(watchers) == 1
        await watchers[0].close(CloseCode.IDLE_TIMEOUT)
        message = page.locator("#message")
        await page.wait_for_function(
            "() => document.getElementById('message').textContent.includes('Trying again')"
        )
        assert "idle for too long" in await message.inner_text()
        await message.wait_for(state="hidden", timeout=10_000)  # joined again
        assert await page.inner_text("#room-phase") == "lobby"
        assert await page.inner_text("#room-title") == "Flaky network"
        assert webutil.script_errors(page) == []
    finally:
        await host.close()


async def test_a_rematch_clears_the_last_results_and_follows_the_new_race(
    site: Site,
) -> None:
    clients, state = await open_room(
        site.server.ws_url, ["Ann", "Ben"], encoding="json", name="Two rounds", countdown_s=1
    )
    try:
        page = await webutil.new_page(site.browser, webutil.DESKTOP)
        await page.goto(f"{site.server.url}/watch/{state.code}")
        await page.locator(".player-panel").nth(1).wait_for(state="visible")
        race_ids = []
        for _ in range(2):
            if race_ids:
                for client in clients:
                    await client.send(m.Rematch())
            else:
                await clients[0].send(m.Start())
            start = await clients[0].expect(m.RaceStart, timeout=30)
            await clients[1].expect(m.RaceStart, timeout=30)
            await page.locator("#results").wait_for(state="hidden")
            for client in clients:
                await client.send(m.Resign())
            over = await clients[0].expect(m.RaceOver, timeout=30)
            assert over.race_id == start.race_id
            race_ids.append(over.race_id)
            link = page.locator(f"#race-link[href='/races/{over.race_id}']")
            await link.wait_for(state="visible", timeout=10_000)
            statuses = await page.locator(".player-status").all_inner_texts()
            assert statuses == ["resigned", "resigned"]
            assert await page.inner_text("#no-finish") == "Nobody finished this race."
            for client in clients:
                client.drop_unread()
        assert race_ids[0] != race_ids[1]
        assert webutil.script_errors(page) == []
    finally:
        for client in clients:
            await client.close()


async def test_a_racer_whose_connection_drops_is_marked_offline(site: Site) -> None:
    clients, state = await open_room(site.server.ws_url, ["Cy", "Di"], encoding="json")
    try:
        page = await webutil.new_page(site.browser, webutil.DESKTOP)
        await page.goto(f"{site.server.url}/watch/{state.code}")
        await page.locator(".player-panel").nth(1).wait_for(state="visible")
        await clients[0].send(m.Start())
        await clients[0].expect(m.RaceStart, timeout=30)
        dropped = clients[1].player_id
        await clients[1].close()
        offline = page.locator(f".player-panel[data-player='{dropped}'] .player-offline")
        await offline.wait_for(state="visible", timeout=10_000)
        stayed = clients[0].player_id
        assert await page.locator(f"[data-player='{stayed}'] .player-offline").is_hidden()
    finally:
        await clients[0].close()
