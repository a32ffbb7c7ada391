"""Helpers for the browser tests: Debian's Chromium driven by Playwright.

Playwright never downloads a browser here: it drives ``/usr/bin/chromium``
with the flags this machine needs (no sandbox as root, no background
networking, which the closed network would refuse).  When Chromium is
missing a test is skipped with the reason, except in CI (``CI=true``),
where ``.ci/run`` installs it and its absence is a failure.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import pytest
from playwright.async_api import Browser, BrowserContext, Page, async_playwright

from protocol.rules.cards import RANKS, SUITS
from protocol.rules.game import Deal, Game, Rules

CHROMIUM: Final = Path(os.environ.get("TRIPEAKS_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
#: Where screenshots go (gitignored); the tests create it.
SCREENSHOTS: Final = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
DESKTOP: Final = {"width": 1366, "height": 900}
PHONE: Final = {"width": 390, "height": 844}

_RANK_NAMES: Final = (
    "Ace",
    "Two",
    "Three",
    "Four",
    "Five",
    "Six",
    "Seven",
    "Eight",
    "Nine",
    "Ten",
    "Jack",
    "Queen",
    "King",
)
_SUIT_NAMES: Final = ("clubs", "diamonds", "hearts", "spades")
#: "Queen of hearts" -> "QH", for every card.
CODE_FOR_LABEL: Final = {
    f"{_RANK_NAMES[r]} of {_SUIT_NAMES[s]}": RANKS[r] + SUITS[s]
    for r in range(13)
    for s in range(4)
}
LABEL_FOR_CODE: Final = {code: label for label, code in CODE_FOR_LABEL.items()}
CARD_LABEL_RE: Final = re.compile(
    r"(Ace|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Jack|Queen|King) of "
    r"(clubs|diamonds|hearts|spades)"
)


def in_ci() -> bool:
    """True on the CI runner, where every prerequisite must be present."""
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require_chromium() -> None:
    """Skip (or, in CI, fail) when Debian's Chromium is not installed."""
    if CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK):
        return
    reason = f"Chromium not found at {CHROMIUM}: apt-get install chromium (.ci/run does)"
    if in_ci():
        pytest.fail(reason)
    pytest.skip(reason)


@asynccontextmanager
async def open_browser() -> AsyncIterator[Browser]:
    """A headless Chromium for one test."""
    require_chromium()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS), headless=True
        )
        try:
            yield browser
        finally:
            await browser.close()


async def new_page(browser: Browser, viewport: dict[str, int] = DESKTOP) -> Page:
    """A page in a fresh context that keeps its script errors and console errors."""
    context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    return await _page_keeping_errors(context)


async def _page_keeping_errors(context: BrowserContext) -> Page:
    """A new page of ``context`` whose script and console errors :func:`script_errors`
    returns."""
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    page.on(
        "console",
        lambda message: errors.append(f"console: {message.text}")
        if message.type == "error"
        else None,
    )
    page.script_errors = errors  # type: ignore[attr-defined]
    return page


def script_errors(page: Page) -> list[str]:
    """Uncaught script errors and console errors (failed loads among them) so far."""
    return list(getattr(page, "script_errors", []))


async def said(page: Page, words: str) -> str:
    """The live region ``#say`` once it holds ``words``: a page sets it on the next
    animation frame (cleared first, so the same words are announced again), which
    under load comes well after the change that led to it."""
    await page.wait_for_function(
        "w => document.getElementById('say').textContent.includes(w)", arg=words
    )
    return await page.inner_text("#say")


async def screenshot(page: Page, name: str) -> Path:
    """Save a full-page screenshot as ``artifacts/screenshots/NAME.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    # A card caught mid-animation looks broken in a still: ask for reduced motion.
    await page.emulate_media(reduced_motion="reduce")
    try:
        await page.screenshot(path=str(path), full_page=True, animations="disabled")
    finally:
        await page.emulate_media(reduced_motion="no-preference")
    return path


# ---- the player's page (/play/CODE) ---------------------------------------------
LAPTOP: Final = {"width": 1280, "height": 800}
_SHORT_RANKS: Final = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
#: "Q♥" (the pages' short form, js/cards.js cardShort) -> "QH", for every card.
CODE_FOR_SHORT: Final = {
    _SHORT_RANKS[r] + "♣♦♥♠"[s]: RANKS[r] + SUITS[s] for r in range(13) for s in range(4)
}


def code_of_short(short: str) -> str:
    """The card code of a short form such as "10♦"."""
    return CODE_FOR_SHORT[short]


async def new_touch_page(browser: Browser, viewport: dict[str, int] = PHONE) -> Page:
    """:func:`new_page` on a touch screen (``tap()`` works), as a phone is."""
    context = await browser.new_context(
        viewport=viewport, has_touch=True, is_mobile=True  # type: ignore[arg-type]
    )
    return await _page_keeping_errors(context)


def views_of(race: dict[str, Any], log: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    """Every (board, waste top) a player with this stored move log was shown."""
    deal = Deal.from_codes(
        Rules(wrap=race["wrap"], empty_waste=race["empty_waste"]),
        race["peaks"],
        race["waste"],
        race["stock"],
    )
    game = Game(deal)
    views = {(tuple(game.view().board), game.view().waste_top)}
    for entry in log:
        if not entry["accepted"] or entry["action"] not in {"play", "draw", "undo"}:
            continue
        if entry["action"] == "undo":
            game.undo()
        else:
            game.push("draw" if entry["action"] == "draw" else entry["position"])
        views.add((tuple(game.view().board), game.view().waste_top))
    return views
