"""A whole race played from /play/CODE in a real Chromium against a real server.

One module-scoped race: a host who creates the room on the front page and
plays by clicks at 1280x800 (and reloads the page halfway), a friend on a
phone at 390x844 who joins by the link and plays by taps, a keyboard-only
player, and a bot.  The three browser players play the practice deal's
winning line; a MutationObserver in every player's page records everything it
shows, so a hidden card anywhere in a page's DOM would fail the scan.  Then
the three ask for a rematch (the bot has left) and race a second time.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page
from playwright.async_api import TimeoutError as PlaywrightTimeout

from client_cli.bot import BotSettings, RaceResults, run_bots
from client_cli.render import HOTKEYS
from protocol.deals.dealer import DealtGame, deal_for_seed
from protocol.rules.game import HIDDEN, Rules
from tests import webutil
from tests.serverutil import RunningServer, start_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

PRACTICE_SEED = "web-play-1"
RELOAD_AFTER = 12  # the host reloads the page after this many moves
#: How long a page may take to show what the server sent: three Chromium pages, a bot and
#: the server share two cores, and a loaded CI machine has taken over 20 s for a tap.
PAGE_WAIT_MS = 60_000


@dataclass
class PlayedRace:
    """What the pages showed of one race, and the race as the server stored it."""

    server: RunningServer
    host: Page
    phone: Page
    keys: Page
    code: str
    dealt: DealtGame
    bots: RaceResults | None = None
    race: dict[str, Any] = field(default_factory=dict)
    #: Each browser player's recorded page, by name.
    snapshots: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {"Ann": [], "Bea": [], "Kim": []}
    )
    refusals: list[str] = field(default_factory=list)
    before_reload: dict[str, Any] = field(default_factory=dict)
    after_reload: dict[str, Any] = field(default_factory=dict)
    phone_checks: list[dict[str, Any]] = field(default_factory=list)


async def _own_moves(page: Page, moves: int) -> None:
    """Wait until the page's own board shows ``moves`` moves made (each answered); if it
    never does, fail saying what the page showed (its counts, its last words, its phase)."""
    try:
        await page.wait_for_function(
            "n => (document.getElementById('own-counts').textContent.match(/(\\d+) moves/)"
            " || [])[1] === String(n)",
            arg=moves,
            timeout=PAGE_WAIT_MS,
        )
    except PlaywrightTimeout:
        shown = await page.evaluate(
            "() => ({counts: document.getElementById('own-counts').textContent,"
            " say: document.getElementById('say')?.dataset.text ?? '',"
            " phase: document.getElementById('room-phase').textContent})"
        )
        raise AssertionError(f"the page never showed move {moves}: {shown}") from None


def _card(page: Page, step: Any) -> Any:
    if step == "draw":
        return page.get_by_role("button", name="Draw", exact=True)
    return page.locator(f"#board-holder .spot[data-pos='{step}'] button")


async def _play(page: Page, line: tuple[Any, ...], how: str, start: int = 0) -> None:
    """Play ``line[start:]`` by clicks, taps or keys, each move waited for."""
    for done, step in enumerate(line[start:], start=start + 1):
        if how == "keys":
            await page.keyboard.press("Space" if step == "draw" else HOTKEYS[step])
        elif how == "taps":
            await _card(page, step).tap()
        else:
            await _card(page, step).click()
        await _own_moves(page, done)


async def _board(page: Page) -> dict[str, Any]:
    labels: dict[str, Any] = await page.evaluate(
        """() => ({
            board: [...document.querySelectorAll('#board-holder .spot')].map(
                s => s.querySelector('button')?.getAttribute('aria-label') ?? null),
            counts: document.getElementById('own-counts').textContent,
        })"""
    )
    return labels


async def _host_creates_room(page: Page, url: str) -> str:
    await page.goto(url + "/")
    await page.fill("#player-name", "Ann")
    await page.fill("#create-name", "Friday race")
    await page.locator("#create-options summary").click()
    await page.fill("#create-practice-seed", PRACTICE_SEED)
    await page.fill("#create-time-limit-s", "300")
    await page.get_by_role("button", name="Create room", exact=True).click()
    await page.wait_for_url("**/play/*")
    await page.locator("#lobby").wait_for(state="visible")
    return page.url.rsplit("/", 1)[1]


async def _phone_joins(page: Page, url: str, code: str) -> None:
    await page.goto(f"{url}/play/{code}")
    await page.locator("#name-input").tap()
    await page.keyboard.type("Bea")
    await page.get_by_role("button", name="Join", exact=True).tap()
    await page.get_by_role("button", name="Ready", exact=True).tap()


async def _keyboard_joins(page: Page, url: str, code: str) -> None:
    await page.goto(f"{url}/play/{code}")
    await page.locator("#name-input").wait_for(state="visible")
    assert await page.evaluate("document.activeElement.id") == "name-input"
    await page.keyboard.type("Kim")
    await page.keyboard.press("Enter")
    await page.get_by_role("button", name="Ready", exact=True).wait_for()
    for _ in range(40):
        await page.keyboard.press("Tab")
        if await page.evaluate("document.activeElement.id") == "ready":
            break
    else:
        raise AssertionError("the Ready button cannot be reached with Tab")
    await page.keyboard.press("Enter")


async def _refusals(page: Page, dealt: DealtGame) -> list[str]:
    """Two moves the rules refuse, before the first real one: the reasons shown."""
    peaks = dealt.deal.codes()["peaks"]
    waste = dealt.deal.codes()["waste"]
    rank = "A23456789TJQK"
    misfit = next(
        p
        for p in range(18, 28)
        if abs(rank.index(peaks[p][0]) - rank.index(waste[0])) not in (1, 12)
    )
    said = []
    for step in (0, misfit):
        await _card(page, step).click()
        await page.wait_for_function(
            "() => /that card/i.test(document.getElementById('say').textContent)"
        )
        said.append(await page.inner_text("#say"))
        await page.evaluate("document.getElementById('say').textContent = ''")
    return said


async def _host_plays(played: PlayedRace, line: tuple[Any, ...]) -> None:
    page = played.host
    played.refusals = await _refusals(page, played.dealt)
    await _play(page, line[:RELOAD_AFTER], "clicks")
    played.before_reload = await _board(page)
    played.snapshots["Ann"] += await page.evaluate("window.__snapshots")
    await page.reload()
    await _own_moves(page, RELOAD_AFTER)
    played.after_reload = await _board(page)
    await _play(page, line, "clicks", start=RELOAD_AFTER)


async def _phone_plays(played: PlayedRace, line: tuple[Any, ...]) -> None:
    page = played.phone
    half = len(line) // 2
    await page.evaluate(WATCH_BOARD_TOP, True)
    await _play(page, line[:half], "taps")
    await page.evaluate(WATCH_BOARD_TOP, False)
    played.phone_checks.append(await page.evaluate(PHONE_CHECK))
    await webutil.screenshot(page, "play-racing-phone")
    await page.evaluate(WATCH_BOARD_TOP, True)
    await _play(page, line, "taps", start=half)
    await page.evaluate(WATCH_BOARD_TOP, False)
    played.phone_checks.append(await page.evaluate(PHONE_CHECK))


#: Every frame while on, notes where the own board's top is on the page (each
#: distinct place once, in ``window.__boardTops``): opponents finishing, words
#: said and the clock must never move the board under a thumb about to tap it.
WATCH_BOARD_TOP = """on => {
  window.__boardTops ??= [];
  window.__watchingBoard = on;
  const look = () => {
    if (!window.__watchingBoard) return;
    const box = document.getElementById('board-holder').getBoundingClientRect();
    const top = Math.round(box.top + scrollY);
    if (!window.__boardTops.includes(top)) window.__boardTops.push(top);
    requestAnimationFrame(look);
  };
  if (on) look();
}"""


PHONE_CHECK = """() => {
  const spot = document.querySelector('#board-holder .spot').getBoundingClientRect();
  const bars = [...document.querySelectorAll('#live-standings progress')];
  return {
    scrollWidth: document.documentElement.scrollWidth,
    cardWidth: spot.width,
    barsInView: bars.length > 0 && bars.every(b => {
      const r = b.getBoundingClientRect();
      return r.width > 0 && r.left >= 0 && r.right <= innerWidth;
    }),
    bars: bars.length,
    boardTops: window.__boardTops,
  };
}"""

#: Runs in a player's page before its scripts and records, on every change (the
#: clock aside): its own board's labels, the waste, every card named anywhere in
#: the document (text, any attribute, class names, short forms such as "Q♥"),
#: whether the results are up, and what the live region says.
SNAPSHOT_SCRIPT = """
(() => {
  window.__snapshots = [];
  let last = "";
  const RANKS = 'Ace|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Jack|Queen|King';
  const NAME = new RegExp(`(${RANKS}) of (clubs|diamonds|hearts|spades)`, 'g');
  const CODE = /(?<![A-Za-z0-9])[A2-9TJQK][CDHS](?![A-Za-z0-9])/g;
  const SHORT = /(10|[2-9AJQK])[\u2663\u2666\u2665\u2660]/g;
  const take = () => {
    const spots = [...document.querySelectorAll('#board-holder .spot')];
    const waste = document.querySelector('#board-holder [data-pile=waste] .card');
    const names = new Set();
    const codes = new Set();
    for (const node of document.querySelectorAll('*')) {
      for (const attr of node.attributes) {
        for (const m of attr.value.matchAll(NAME)) names.add(m[0]);
        for (const m of attr.value.matchAll(CODE)) codes.add(m[0]);
      }
    }
    const text = document.body ? document.body.textContent : '';
    for (const m of text.matchAll(NAME)) names.add(m[0]);
    const shorts = [...text.matchAll(SHORT)].map(m => m[0]);
    const results = document.getElementById('results');
    const snapshot = {
      over: results ? !results.hidden : false,
      board: spots.map(s => s.querySelector('button')?.getAttribute('aria-label') ?? null),
      waste: waste ? waste.getAttribute('aria-label') : null,
      names: [...names].sort(), codes: [...codes].sort(), shorts,
      say: document.getElementById('say')?.dataset.text ?? '',
    };
    const json = JSON.stringify(snapshot);
    if (json !== last) { last = json; window.__snapshots.push(snapshot); }
  };
  const onlyClock = (records) => records.every((r) => {
    const node = r.target.nodeType === 1 ? r.target : r.target.parentElement;
    return node && node.closest('#clock');
  });
  new MutationObserver((records) => { if (!onlyClock(records)) take(); })
    .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
})();
"""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def played(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[PlayedRace]:
    """A whole race from the browser: three browser players and a bot."""
    webutil.require_chromium()
    server = await start_server(tmp_path_factory.mktemp("web-play"))
    try:
        async with webutil.open_browser() as browser:
            yield await _race(server, browser)
    finally:
        await server.stop()


async def _race(server: RunningServer, browser: Browser) -> PlayedRace:
    dealt = await asyncio.to_thread(deal_for_seed, PRACTICE_SEED, Rules())
    host = await webutil.new_page(browser, webutil.LAPTOP)
    await host.add_init_script(SNAPSHOT_SCRIPT)
    code = await _host_creates_room(host, server.url)
    phone = await webutil.new_touch_page(browser, webutil.PHONE)
    keys = await webutil.new_page(browser, webutil.LAPTOP)
    for page in (phone, keys):
        await page.add_init_script(SNAPSHOT_SCRIPT)
    played = PlayedRace(server, host, phone, keys, code, dealt)
    await _phone_joins(phone, server.url, code)
    await _keyboard_joins(keys, server.url, code)
    bots = asyncio.create_task(
        run_bots(server.ws_url, 1, room=code, pace=8.0, settings=BotSettings(name_prefix="Bot "))
    )
    await host.wait_for_function(
        "() => document.querySelectorAll('#members tr[data-ready=true]').length === 3"
    )
    await webutil.screenshot(host, "play-lobby-laptop")
    await host.get_by_role("button", name="Start race", exact=True).click()
    await host.locator("#countdown").wait_for(state="visible")
    await host.locator("#board-holder .spot[data-state=up]").first.wait_for()
    await phone.locator("#board-holder .spot[data-state=up]").first.wait_for(timeout=PAGE_WAIT_MS)
    line = dealt.solution
    await asyncio.gather(
        _host_plays(played, line), _phone_plays(played, line), _play(keys, line, "keys")
    )
    played.bots = await asyncio.wait_for(bots, 300)
    for page in (host, phone, keys):
        await page.locator("#results").wait_for(state="visible", timeout=60_000)
        await page.wait_for_function(
            "() => ['commit-check', 'deal-check'].every(id => "
            "document.getElementById(id).dataset.ok === 'true')"
        )
    await webutil.screenshot(host, "play-results-laptop")
    for name, page in (("Ann", host), ("Bea", phone), ("Kim", keys)):
        played.snapshots[name] += await page.evaluate("window.__snapshots")
    href = await host.get_attribute("#race-link", "href")
    assert href
    async with aiohttp.ClientSession() as http, http.get(server.url + "/api" + href) as response:
        assert response.status == 200
        played.race = await response.json()
    return played


# ---- the race -------------------------------------------------------------------
async def test_three_browser_players_and_a_bot_race_to_the_end(played: PlayedRace) -> None:
    assert played.bots is not None and played.bots.ok, played.bots and played.bots.errors
    players = {p["name"]: p for p in played.race["players"]}
    assert set(players) == {"Ann", "Bea", "Kim", "Bot 1"}
    for name in ("Ann", "Bea", "Kim"):
        assert players[name]["status"] == "finished"
        assert players[name]["cleared"] == 28
    assert played.race["room_code"] == played.code
    assert played.race["practice"] is True


def _format_ms(ms: int) -> str:
    tenths = ms // 100
    return f"{tenths // 600}:{tenths // 10 % 60:02d}.{tenths % 10}"


def _undo_text(player: dict[str, Any]) -> str:
    undos = str(player["undos"])
    return f"{undos} (+{player['penalty_ms'] // 1000} s)" if player["penalty_ms"] else undos


async def _shows_the_stored_standings(page: Page, race: dict[str, Any]) -> None:
    expected = []
    for p in race["players"]:
        time_text = _format_ms(p["finish_ms"]) if p["status"] == "finished" else p["status"]
        expected.append([p["player_id"], str(p["rank"]), time_text, str(p["cleared"]),
                         str(p["moves"]), _undo_text(p)])
    rows = await page.eval_on_selector_all(
        "#standings tbody tr",
        "rows => rows.map(r => [r.dataset.player, r.cells[0].innerText, r.cells[2].innerText,"
        " r.cells[3].innerText, r.cells[4].textContent, r.cells[5].innerText])",
    )
    assert rows == expected
    live = await page.eval_on_selector_all(
        "#live-standings li", "items => items.map(i => i.dataset.player)"
    )
    assert live == [p["player_id"] for p in race["players"]]
    assert webutil.script_errors(page) == []


async def test_every_page_shows_the_standings_of_the_stored_race(played: PlayedRace) -> None:
    for page in (played.host, played.phone, played.keys):
        await _shows_the_stored_standings(page, played.race)
    said = await webutil.said(played.host, "Race over: you came ")
    ann = next(p for p in played.race["players"] if p["name"] == "Ann")
    assert said.startswith("Race over: you came ")
    assert f"in {_format_ms(ann['finish_ms'])}" in said


async def test_a_reload_mid_race_resumes_the_seat_with_every_move_kept(
    played: PlayedRace,
) -> None:
    assert played.before_reload["counts"].endswith(f"{RELOAD_AFTER} moves · 0 undos")
    assert played.after_reload == played.before_reload
    ann = next(p for p in played.race["players"] if p["name"] == "Ann")
    accepted = [e for e in ann["log"] if e["accepted"]]
    assert len(accepted) == len(played.dealt.solution)
    # The reload kept the seat: one player id for the whole race, no move twice.
    assert ann["moves"] == len(played.dealt.solution)


async def test_a_refused_move_is_explained_in_the_rules_words(played: PlayedRace) -> None:
    covered, misfit = played.refusals
    assert covered == "That card is still covered."
    assert misfit.endswith(": that card is not one rank above or below the waste card.")
    assert webutil.CARD_LABEL_RE.match(misfit)


async def test_the_phone_plays_by_taps_without_sideways_scrolling(played: PlayedRace) -> None:
    assert len(played.phone_checks) == 2
    for check in played.phone_checks:
        assert check["scrollWidth"] <= webutil.PHONE["width"]
        assert check["cardWidth"] >= 34
        assert check["barsInView"] and check["bars"] == 4
    # Opponents finished, words were said and the clock ran while the phone played:
    # its board stayed where it was, so no tap landed on another card.
    assert played.phone_checks[-1]["boardTops"] == played.phone_checks[0]["boardTops"][:1]
    bea = next(p for p in played.race["players"] if p["name"] == "Bea")
    assert bea["status"] == "finished"


async def test_the_keyboard_only_player_finishes_the_race(played: PlayedRace) -> None:
    kim = next(p for p in played.race["players"] if p["name"] == "Kim")
    assert kim["status"] == "finished"
    assert kim["moves"] == len(played.dealt.solution)


# ---- hidden cards ---------------------------------------------------------------
def _views(race: dict[str, Any], name: str) -> set[tuple[Any, ...]]:
    player = next(p for p in race["players"] if p["name"] == name)
    return webutil.views_of(race, player["log"])


def play_page_leaks(
    race: dict[str, Any], snapshots: list[dict[str, Any]], name: str = "Ann"
) -> list[str]:
    """Every way a player's recorded page showed a card that player had not uncovered."""
    views = _views(race, name)
    blank = ((HIDDEN,) * 28, None)
    leaks = []
    for index, snapshot in enumerate(s for s in snapshots if not s["over"] and s["board"]):
        board = tuple(
            None if label is None else HIDDEN if label == "face-down card"
            else webutil.CODE_FOR_LABEL[label]
            for label in snapshot["board"]
        )
        waste = snapshot["waste"]
        top = webutil.CODE_FOR_LABEL[waste.removeprefix("waste: ")] if waste and \
            waste.startswith("waste: ") else None
        if (board, top) != blank and (board, top) not in views:
            leaks.append(f"snapshot {index}: a board {name} never had")
        shown = {c for c in board if c not in (None, HIDDEN)} | ({top} if top else set())
        named = {webutil.CODE_FOR_LABEL[n] for n in snapshot["names"]}
        named |= set(snapshot["codes"]) | {webutil.code_of_short(s) for s in snapshot["shorts"]}
        if not named <= shown:
            leaks.append(f"snapshot {index}: cards named off the board: {sorted(named - shown)}")
    return leaks


async def test_no_player_page_ever_holds_a_card_not_yet_uncovered(played: PlayedRace) -> None:
    for name, snapshots in played.snapshots.items():
        racing = [s for s in snapshots if not s["over"] and s["board"]]
        assert len(racing) >= len(played.dealt.solution), name
        leaks = play_page_leaks(played.race, snapshots, name)
        assert leaks == [], (name, [racing[int(leak.split()[1][:-1])] for leak in leaks[:2]])


async def test_the_leak_scan_catches_a_covered_card_and_a_stray_name(played: PlayedRace) -> None:
    race = played.race
    first = next(
        s for s in played.snapshots["Ann"] if s["board"] and s["board"][18] != "face-down card"
    )
    snapshot = copy.deepcopy(first)
    snapshot["board"][0] = webutil.LABEL_FOR_CODE[race["peaks"][0]]
    assert play_page_leaks(race, [snapshot]) == ["snapshot 0: a board Ann never had"]
    snapshot = copy.deepcopy(first)
    snapshot["codes"].append(race["stock"][-1])
    assert play_page_leaks(race, [snapshot]) == [
        f"snapshot 0: cards named off the board: {[race['stock'][-1]]}"
    ]


# ---- after the race --------------------------------------------------------------
async def test_the_results_check_the_seed_and_offer_a_rematch(played: PlayedRace) -> None:
    page = played.host
    assert await page.inner_text("#seed") == played.race["seed"]
    assert (await page.inner_text("#commit-check")).startswith("✔")
    rematch = page.get_by_role("button", name="Rematch", exact=True)
    await rematch.click()
    assert await rematch.get_attribute("aria-pressed") == "true"
    await page.wait_for_function(
        "() => document.querySelector('#members tr[data-ready=true]') !== null"
    )
    assert "Rematch when" in await page.inner_text("#rematch-note")
    await page.get_by_role("button", name="▶ Replay the winning line").click()
    await page.locator("#solution").wait_for(state="visible")
    await webutil.screenshot(played.phone, "play-results-phone")


# ---- a second race -----------------------------------------------------------------
async def _resign(page: Page, how: str) -> None:
    resign = page.get_by_role("button", name="Resign", exact=True)
    yes = page.get_by_role("button", name="Yes, resign")
    if how == "taps":
        await resign.tap()
        await yes.tap()
    else:
        await resign.click()
        await yes.click()
    await page.wait_for_function(
        "() => document.getElementById('say').dataset.text === 'You resigned.'"
    )


async def _kim_plays_with_an_undo(page: Page, line: tuple[Any, ...]) -> None:
    """Kim plays the first move, takes it back (a 5 s penalty), then the whole line."""
    await page.keyboard.press("Space" if line[0] == "draw" else HOTKEYS[line[0]])
    await _own_moves(page, 1)
    await page.keyboard.press("u")
    await page.wait_for_function(
        "() => document.getElementById('own-counts').textContent.endsWith('1 undo')"
    )
    for done, step in enumerate(line, start=2):
        await page.keyboard.press("Space" if step == "draw" else HOTKEYS[step])
        await _own_moves(page, done)


async def test_a_rematch_by_every_player_deals_a_second_race_that_finishes(
    played: PlayedRace,
) -> None:
    pages = {"Ann": played.host, "Bea": played.phone, "Kim": played.keys}
    ids = {p["name"]: p["player_id"] for p in played.race["players"]}
    for page in pages.values():
        await page.evaluate("window.__snapshots = []")
    if await played.host.get_attribute("#rematch", "aria-pressed") != "true":
        await played.host.get_by_role("button", name="Rematch", exact=True).click()
    # The bot has gone but keeps its seat for the reconnect grace: the host frees it.
    note = played.host.locator("#rematch-note")
    await note.get_by_text("Bot 1 is offline: kick to race without them.").wait_for()
    await played.host.get_by_role("button", name="Kick Bot 1", exact=True).click()
    await played.host.locator("#members tr:has-text('Bot 1')").wait_for(state="detached")
    await played.phone.get_by_role("button", name="Rematch", exact=True).tap()
    await played.keys.get_by_role("button", name="Rematch", exact=True).click()
    for page in pages.values():
        up = page.locator("#board-holder .spot[data-state=up]").first
        await up.wait_for(timeout=PAGE_WAIT_MS)
        assert await page.locator("#results").is_hidden()
        # A new race from nothing, for the three still here: the bot has left.
        lines = await page.eval_on_selector_all(
            "#live-standings li", "items => items.map(i => i.innerText.includes('0/28'))"
        )
        assert lines == [True, True, True]
    await _resign(played.host, "clicks")
    await _resign(played.phone, "taps")
    line = played.dealt.solution
    kim = asyncio.create_task(_kim_plays_with_an_undo(played.keys, line))
    # The standing follows the race, not the order of joining: Kim, who joined last, leads.
    for page in pages.values():
        await page.wait_for_function(
            "id => { const first = document.querySelector('#live-standings li');"
            " return first && first.dataset.player === id"
            " && /1 undo \\(\\+5 s\\)/.test(first.innerText); }",
            arg=ids["Kim"],
            timeout=PAGE_WAIT_MS,
        )
    await kim
    for page in pages.values():
        await page.locator("#results").wait_for(state="visible", timeout=30_000)
        await page.wait_for_function(
            "() => ['commit-check', 'deal-check'].every(id => "
            "document.getElementById(id).dataset.ok === 'true')"
        )
    href = await played.host.get_attribute("#race-link", "href")
    assert href and href.rsplit("/", 1)[1] != played.race["race_id"]
    async with aiohttp.ClientSession() as http, \
            http.get(played.server.url + "/api" + href) as response:
        second = await response.json()
    assert [(p["name"], p["status"]) for p in second["players"]] == [
        ("Kim", "finished"), ("Ann", "resigned"), ("Bea", "resigned")
    ] or [(p["name"], p["status"]) for p in second["players"]] == [
        ("Kim", "finished"), ("Bea", "resigned"), ("Ann", "resigned")
    ]
    assert second["players"][0]["penalty_ms"] == 5000
    for name, page in pages.items():
        await _shows_the_stored_standings(page, second)
        snapshots = await page.evaluate("window.__snapshots")
        assert play_page_leaks(second, snapshots, name) == [], name
    finished = f"Kim finished #1 in {_format_ms(second['players'][0]['finish_ms'])}."
    said = [s["say"] for s in await played.host.evaluate("window.__snapshots")]
    assert finished in said
    assert said[-1].startswith("Race over: you came ")
