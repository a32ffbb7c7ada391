"""Screenshots of the player's page for docs/web.md: ``python -m tools.screenshots [DIR]``.

Starts a real server on 127.0.0.1, creates a room from the front page at
1280x800, joins it from a phone at 390x844, adds a bot, and races a practice
deal's winning line from both pages, taking the lobby, the race and the
results at both sizes (``make screenshots`` writes them to ``docs/img/``).
Debian's Chromium drives it, as in the browser tests (tests/webutil.py).
The felt's gradient is flattened for the stills, which keeps the PNGs small.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

from playwright.async_api import Browser, Page

from client_cli.bot import BotSettings, run_bots
from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import Rules
from tests import webutil
from tests.serverutil import start_server

OUT: Final = Path("docs/img")
SEED: Final = "web-play-1"
LAPTOP: Final = {"width": 1280, "height": 800}
PHONE: Final = {"width": 390, "height": 844}
FLAT: Final = "html { background: #0f5132 !important; }"


async def _page(browser: Browser, viewport: dict[str, int], touch: bool) -> Page:
    context = await browser.new_context(
        viewport=viewport,  # type: ignore[arg-type]
        has_touch=touch,
        is_mobile=touch,
        bypass_csp=True,  # to add the flat background below
        reduced_motion="reduce",
    )
    return await context.new_page()


async def _shoot(page: Page, out: Path, name: str) -> None:
    await page.add_style_tag(content=FLAT)
    size = page.viewport_size or LAPTOP
    await page.screenshot(
        path=str(out / f"{name}-{size['width']}x{size['height']}.png"), animations="disabled"
    )


async def _moves(page: Page, count: int) -> None:
    await page.wait_for_function(
        "n => (document.getElementById('own-counts').textContent.match(/(\\d+) moves/) || [])[1]"
        " === String(n)",
        arg=count,
        timeout=20_000,
    )


async def _play(page: Page, line: tuple[Any, ...], start: int, stop: int) -> None:
    for done in range(start, stop):
        step = line[done]
        if step == "draw":
            await page.get_by_role("button", name="Draw", exact=True).click()
        else:
            await page.locator(f"#board-holder .spot[data-pos='{step}'] button").click()
        await _moves(page, done + 1)


async def _create(page: Page, url: str) -> str:
    await page.goto(url + "/")
    await page.fill("#player-name", "Ann")
    await page.fill("#create-name", "Friday race")
    await page.locator("#create-options summary").click()
    await page.fill("#create-practice-seed", SEED)
    await page.get_by_role("button", name="Create room", exact=True).click()
    await page.wait_for_url("**/play/*")
    await page.locator("#lobby").wait_for(state="visible")
    return page.url.rsplit("/", 1)[1]


async def shoot(out: Path) -> list[Path]:
    """Take the screenshots into ``out``; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    line = (await asyncio.to_thread(deal_for_seed, SEED, Rules())).solution
    server = await start_server(tempfile.mkdtemp(prefix="tripeaks-shots-"))
    try:
        async with webutil.open_browser() as browser:
            host = await _page(browser, LAPTOP, touch=False)
            phone = await _page(browser, PHONE, touch=True)
            code = await _create(host, server.url)
            await phone.goto(f"{server.url}/play/{code}")
            await phone.fill("#name-input", "Bea")
            await phone.get_by_role("button", name="Join", exact=True).tap()
            await phone.get_by_role("button", name="Ready", exact=True).tap()
            bots = asyncio.create_task(
                run_bots(server.ws_url, 1, room=code, pace=4.0,
                         settings=BotSettings(name_prefix="Bot "))
            )
            await host.wait_for_function(
                "() => document.querySelectorAll('#members tr[data-ready=true]').length === 2"
            )
            await _shoot(host, out, "play-lobby")
            await _shoot(phone, out, "play-lobby")
            await host.get_by_role("button", name="Start race", exact=True).click()
            for page in (host, phone):
                await page.locator("#board-holder .spot[data-state=up]").first.wait_for()
            half = len(line) // 3
            await asyncio.gather(_play(host, line, 0, half + 4), _play(phone, line, 0, half))
            await _shoot(host, out, "play-race")
            await _shoot(phone, out, "play-race")
            await asyncio.gather(
                _play(host, line, half + 4, len(line)), _play(phone, line, half, len(line))
            )
            await bots
            for page in (host, phone):
                await page.locator("#results").wait_for(state="visible", timeout=120_000)
                await page.wait_for_function(
                    "() => document.getElementById('deal-check').dataset.ok === 'true'"
                )
                await _shoot(page, out, "play-results")
    finally:
        await server.stop()
    return sorted(out.glob("play-*.png"))


def main(argv: list[str]) -> int:
    """Write the screenshots and list them with their sizes."""
    out = Path(argv[0]) if argv else OUT
    for path in asyncio.run(shoot(out)):
        print(f"{path}  {path.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
