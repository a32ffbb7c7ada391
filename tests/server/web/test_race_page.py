"""The live spectator page in a real Chromium, watching a real bot race on a real server.

One module-scoped fixture starts a server on an ephemeral port, starts a
three-bot race and watches it from a desktop and a phone page, sampling the
page as the race runs.  A MutationObserver inside the desktop page records
every board the page ever drew; after the race those boards are checked
against the server's stored move logs, so a hidden card anywhere in the DOM
would fail the test.  Screenshots go to ``artifacts/screenshots/``.
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

from client_cli.bot import BotSettings, RaceResults, run_bots
from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import HIDDEN, Deal, Game, Rules
from protocol.wire import messages as m
from tests import webutil
from tests.serverutil import RunningServer, connect, move_request, start_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

PLAYERS = 3  # two greedy bots and one scripted player who knows the winning line
PACE = 8.0  # moves per second per player
PRACTICE_SEED = "web-test-1"

#: Runs in the page before its own scripts and records, each time the page
#: changes (the ticking clock aside): the phase, the countdown, every
#: progress bar, every board (per player: 28 labels, null for a played slot)
#: with its waste card, every card named anywhere in the document, and
#: whether the results are shown.  Recording in the page itself means a busy
#: test machine cannot make the test miss a frame.
SNAPSHOT_SCRIPT = """
(() => {
  window.__snapshots = [];
  let last = "";
  const RANKS = "Ace|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Jack|Queen|King";
  const CARD = new RegExp(`(${RANKS}) of (clubs|diamonds|hearts|spades)`, "g");
  const byId = (id) => document.getElementById(id);
  const take = () => {
    const boards = {};
    const progress = {};
    for (const panel of document.querySelectorAll(".player-panel[data-player]")) {
      const spots = [...panel.querySelectorAll(".peaks .spot")];
      const waste = panel.querySelector("[data-pile=waste] .card");
      boards[panel.dataset.player] = {
        board: spots.map((s) => s.firstChild ? s.firstChild.getAttribute("aria-label") : "?"),
        waste: waste ? waste.getAttribute("aria-label") : null,
      };
      progress[panel.dataset.player] = panel.querySelector("progress").value;
    }
    const names = new Set();
    for (const node of document.querySelectorAll("[aria-label]")) {
      for (const match of node.getAttribute("aria-label").matchAll(CARD)) names.add(match[0]);
    }
    const text = document.body ? document.body.textContent : "";
    for (const match of text.matchAll(CARD)) names.add(match[0]);
    const countdown = byId("countdown");
    const snapshot = {
      over: byId("results") ? !byId("results").hidden : false,
      phase: byId("room-phase") ? byId("room-phase").textContent : "",
      countdown: countdown && !countdown.hidden ? countdown.textContent : null,
      progress,
      boards,
      names: [...names].sort(),
    };
    const json = JSON.stringify(snapshot);
    if (json !== last) { last = json; window.__snapshots.push(snapshot); }
  };
  const onlyClock = (records) => records.every((r) => {
    const node = r.target.nodeType === 1 ? r.target : r.target.parentElement;
    return node && node.closest("#clock");
  });
  new MutationObserver((records) => { if (!onlyClock(records)) take(); })
    .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
})();
"""


@dataclass
class WatchedRace:
    """What the pages showed of one bot race, and where to find it again."""

    server: RunningServer
    browser: Browser
    desktop: Page
    phone: Page
    code: str
    bots: RaceResults
    race: dict[str, Any]
    snapshots: list[dict[str, Any]] = field(default_factory=list)


async def _glance(page: Page) -> tuple[str, int, bool]:
    """Phase, total cards cleared and whether the results are up, in one round trip."""
    state: list[Any] = await page.evaluate(
        """() => [
            document.getElementById("room-phase").textContent,
            [...document.querySelectorAll(".player-panel progress")]
                .reduce((sum, bar) => sum + bar.value, 0),
            !document.getElementById("results").hidden,
        ]"""
    )
    return state[0], state[1], state[2]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def watched(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[WatchedRace]:
    """A finished bot race, watched from the start on a desktop and a phone page."""
    webutil.require_chromium()
    server = await start_server(tmp_path_factory.mktemp("web-race"))
    try:
        async with webutil.open_browser() as browser:
            yield await _watch_a_race(server, browser)
    finally:
        await server.stop()


async def _play_the_winning_line(server: RunningServer, code: str, line: tuple[Any, ...]) -> None:
    """A scripted player who knows the practice deal's winning line and plays it steadily."""
    player = await connect(server.ws_url, "Solver", encoding="json")
    try:
        await player.request(m.Join(code), m.RoomState)
        await player.send(m.Ready(True))
        await player.expect(m.RaceStart, timeout=60)
        for seq, step in enumerate(line, start=1):
            await asyncio.sleep(1 / PACE)
            result = await player.request(move_request(seq, step), m.MoveResult)
            assert result.accepted, f"move {seq} ({step}) refused: {result.reason}"
        await player.expect(m.RaceOver, timeout=120)
    finally:
        await player.close()


async def _watch_a_race(server: RunningServer, browser: Browser) -> WatchedRace:
    # A practice seed makes the deal known here, so one player can be sure to
    # finish (the greedy bots may get stuck); the bots still play it blind.
    dealt = await asyncio.to_thread(deal_for_seed, PRACTICE_SEED, Rules())
    loop = asyncio.get_running_loop()
    code_known: asyncio.Future[str] = loop.create_future()

    def on_event(bot: str, event: str, detail: str) -> None:
        if event == "joined" and not code_known.done():
            code_known.set_result(detail)

    options = m.RoomOptions(
        name="Browser test race", public=True, countdown_s=5, practice_seed=PRACTICE_SEED
    )
    settings = BotSettings(name_prefix="Bot ", on_event=on_event, seed=7, min_players=PLAYERS)
    bots_task = asyncio.create_task(
        run_bots(server.ws_url, 2, host=True, pace=PACE, options=options, settings=settings)
    )
    code = await asyncio.wait_for(code_known, 30)
    desktop = await webutil.new_page(browser, webutil.DESKTOP)
    await desktop.add_init_script(SNAPSHOT_SCRIPT)
    phone = await webutil.new_page(browser, webutil.PHONE)
    await desktop.goto(f"{server.url}/watch/{code}")
    await phone.goto(f"{server.url}/watch/{code}")
    # The race needs the third player: it joins once both pages watch the lobby, so a
    # slow browser start cannot make the pages miss the countdown.
    for page in (desktop, phone):
        await page.wait_for_function(
            "() => document.getElementById('spectators').textContent === '2'"
            " && document.getElementById('room-phase').textContent === 'lobby'",
            timeout=60_000,
        )
    solver_task = asyncio.create_task(_play_the_winning_line(server, code, dealt.solution))
    watched = WatchedRace(server, browser, desktop, phone, code, None, {})  # type: ignore[arg-type]
    for _ in range(1200):  # bounded: about two minutes
        phase, cleared, over = await _glance(desktop)
        if over:
            break
        if phase == "racing" and cleared >= 3 * PLAYERS:
            await webutil.screenshot(desktop, "watch-racing-desktop")
            await webutil.screenshot(phone, "watch-racing-phone")
            break
        await asyncio.sleep(0.1)
    watched.bots = await asyncio.wait_for(bots_task, 120)
    await asyncio.wait_for(solver_task, 30)
    assert watched.bots.ok, watched.bots.errors
    assert watched.bots.race_over is not None
    assert list(watched.bots.race_over.deal.peaks) == dealt.deal.codes()["peaks"]
    await desktop.locator("#results").wait_for(state="visible", timeout=30_000)
    await phone.locator("#results").wait_for(state="visible", timeout=30_000)
    for page in (desktop, phone):
        await page.wait_for_function(
            "() => ['commit-check', 'deal-check'].every(id => "
            "document.getElementById(id).dataset.ok === 'true')",
            timeout=10_000,
        )
    await webutil.screenshot(desktop, "watch-over-desktop")
    await webutil.screenshot(phone, "watch-over-phone")
    watched.snapshots = await desktop.evaluate("window.__snapshots")
    race_id = watched.bots.race_over.race_id
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{server.url}/api/races/{race_id}") as response,
    ):
        assert response.status == 200
        watched.race = await response.json()
    return watched


def format_ms(ms: int) -> str:
    """The pages' race-time format, m:ss.t (dom.js formatMs)."""
    tenths = ms // 100
    return f"{tenths // 600}:{tenths // 10 % 60:02d}.{tenths % 10}"


# ---- the live page ------------------------------------------------------------
async def test_every_players_board_appears_with_cards_and_backs(watched: WatchedRace) -> None:
    panels = watched.desktop.locator(".player-panel")
    assert await panels.count() == PLAYERS
    names = sorted(await watched.desktop.locator(".player-name").all_inner_texts())
    assert names == ["Bot 1", "Bot 2", "Solver"]
    first = next(s for s in watched.snapshots if len(s["boards"]) == PLAYERS)
    opening = [entry["board"] for entry in first["boards"].values()]
    assert all(len(board) == 28 for board in opening)
    assert all(board[:18] == ["face-down card"] * 18 for board in opening)


async def test_the_countdown_counts_down_before_the_start(watched: WatchedRace) -> None:
    shown = [s["countdown"] for s in watched.snapshots if s["countdown"] is not None]
    assert shown, "no countdown was shown"
    assert set(shown) <= {"1", "2", "3", "4", "5"}
    numbers = [int(n) for n in shown]
    assert numbers == sorted(numbers, reverse=True)
    first_racing = next(i for i, s in enumerate(watched.snapshots) if s["phase"] == "racing")
    assert all(s["countdown"] is None for s in watched.snapshots[first_racing:])


async def test_the_spectator_count_includes_every_watching_page(watched: WatchedRace) -> None:
    assert await watched.desktop.inner_text("#spectators") == "2"
    assert await watched.phone.inner_text("#spectators") == "2"


async def test_the_watch_pages_take_one_spectator_update_per_moment(watched: WatchedRace) -> None:
    hub = watched.server.hub
    asking = [conn for conn in hub.connections if conn in hub._ticking]  # their hello asked
    assert len(asking) == 2  # the desktop and the phone page; the bots and player did not


async def test_progress_bars_move_while_the_race_is_running(watched: WatchedRace) -> None:
    during = [s["progress"] for s in watched.snapshots if s["phase"] == "racing"]
    totals = sorted({sum(progress.values()) for progress in during})
    assert len(totals) >= 3, f"progress seen during the race: {totals}"
    assert totals[0] < totals[-1]
    bars = await watched.desktop.eval_on_selector_all(
        ".player-panel progress", "bars => bars.map(b => b.value)"
    )
    stored = {p["player_id"]: p["cleared"] for p in watched.race["players"]}
    by_panel = await watched.desktop.eval_on_selector_all(
        ".player-panel", "ps => ps.map(p => p.dataset.player)"
    )
    assert bars == [stored[pid] for pid in by_panel]


async def test_finish_order_and_standings_match_the_stored_race(watched: WatchedRace) -> None:
    rows = await watched.desktop.eval_on_selector_all(
        "#standings tbody tr",
        "rows => rows.map(r => [r.dataset.player, ...[...r.cells].map(c => c.innerText)])",
    )
    expected = []
    for player in watched.race["players"]:
        time_text = (
            format_ms(player["finish_ms"]) if player["status"] == "finished" else player["status"]
        )
        # The watch page marks bots, and people playing under no claimed name as guests.
        mark = " (bot)" if player["is_bot"] else " (guest)" if player["account"] is None else ""
        name = player["name"] + mark
        assert player["name"] == "Solver" or player["is_bot"]
        expected.append(
            [
                player["player_id"],
                str(player["rank"]),
                name,
                time_text,
                str(player["cleared"]),
                str(player["moves"]),
            ]
        )
    assert rows == expected
    finishers = [p for p in watched.race["players"] if p["status"] == "finished"]
    assert "Solver" in [p["name"] for p in finishers]
    order = await watched.desktop.eval_on_selector_all(
        "#finish-order li", "items => items.map(i => i.dataset.player)"
    )
    assert order == [p["player_id"] for p in finishers]
    clock = await watched.desktop.inner_text("#clock")
    assert clock != "0:00.0"


async def test_the_revealed_seed_is_checked_in_the_browser_with_a_tick(
    watched: WatchedRace,
) -> None:
    for page in (watched.desktop, watched.phone):
        assert (await page.inner_text("#commit-check")).startswith("✔")
        assert (await page.inner_text("#deal-check")).startswith("✔")
        assert await page.inner_text("#seed") == watched.race["seed"]
        assert await page.inner_text("#commitment") == watched.race["commitment"]
    par = watched.race["par"]
    assert await watched.desktop.inner_text("#par") == (
        "unknown" if par is None else f"{par} draws"
    )


def _views_of(race: dict[str, Any], player: dict[str, Any]) -> set[tuple[Any, ...]]:
    """Every (board, waste top) this player was shown, replayed from the stored log."""
    deal = Deal.from_codes(
        Rules(wrap=race["wrap"], empty_waste=race["empty_waste"]),
        race["peaks"],
        race["waste"],
        race["stock"],
    )
    game = Game(deal)
    views = {(tuple(game.view().board), game.view().waste_top)}
    for entry in player["log"]:
        if not entry["accepted"] or entry["action"] not in {"play", "draw", "undo"}:
            continue
        if entry["action"] == "undo":
            game.undo()
        else:
            game.push("draw" if entry["action"] == "draw" else entry["position"])
        views.add((tuple(game.view().board), game.view().waste_top))
    return views


def _as_codes(drawn: dict[str, Any]) -> tuple[Any, ...]:
    board = []
    for label in drawn["board"]:
        if label is None:
            board.append(None)
        elif label == "face-down card":
            board.append(HIDDEN)
        else:
            board.append(webutil.CODE_FOR_LABEL[label])
    waste = drawn["waste"]
    top = None
    if waste == "waste: face-down card":
        top = HIDDEN
    elif waste is not None and waste.startswith("waste: "):
        top = webutil.CODE_FOR_LABEL[waste.removeprefix("waste: ")]
    return (tuple(board), top)


def _shows_as(drawn: tuple[Any, ...], views: set[tuple[Any, ...]]) -> bool:
    """Whether a drawn (board, waste top) is one of ``views`` with some faces turned down
    (a spectator board hides the cards a racer still racing has not seen)."""

    def hides(shown: str | None, own: str | None) -> bool:
        return shown == own or (shown == HIDDEN and own is not None)

    board, top = drawn
    return any(
        hides(top, own_top) and all(hides(a, b) for a, b in zip(board, own, strict=True))
        for own, own_top in views
    )


def hidden_card_leaks(race: dict[str, Any], snapshots: list[dict[str, Any]]) -> list[str]:
    """Every way the recorded page showed more than the players had uncovered."""
    views = {p["player_id"]: _views_of(race, p) for p in race["players"]}
    blank = ((HIDDEN,) * 28, None)  # before the first frame: every spot a back
    leaks = []
    for index, snapshot in enumerate(s for s in snapshots if not s["over"]):
        shown: set[str] = set()
        for player_id, drawn in snapshot["boards"].items():
            board, top = _as_codes(drawn)
            if (board, top) != blank and not _shows_as((board, top), views[player_id]):
                leaks.append(f"snapshot {index}: {player_id}'s board was never that player's view")
            shown.update(code for code in board if code not in (None, HIDDEN))
            if top not in (None, HIDDEN):
                shown.add(top)
        named = {webutil.CODE_FOR_LABEL[name] for name in snapshot["names"]}
        if not named <= shown:
            leaks.append(f"snapshot {index}: cards named off the boards: {sorted(named - shown)}")
    return leaks


async def test_no_hidden_card_ever_reaches_the_page_before_it_is_uncovered(
    watched: WatchedRace,
) -> None:
    racing = [s for s in watched.snapshots if not s["over"]]
    assert len(racing) >= 10, "the page was not observed during the race"
    assert hidden_card_leaks(watched.race, watched.snapshots) == []


async def test_a_face_some_racer_still_racing_has_not_seen_is_drawn_face_down(
    watched: WatchedRace,
) -> None:
    # The racers draw at different moments, so a drawn card is on one waste before the
    # others have seen it: the page draws that waste top as a card back.
    wastes = {
        drawn["waste"]
        for snapshot in watched.snapshots
        if not snapshot["over"]
        for drawn in snapshot["boards"].values()
    }
    assert "waste: face-down card" in wastes


async def test_the_hidden_card_scan_catches_a_card_shown_too_early(watched: WatchedRace) -> None:
    # The scan itself must be able to fail: doctor one recorded board so that
    # a still-covered card shows, and name another card outside the boards.
    race = watched.race
    snapshot = copy.deepcopy(next(s for s in watched.snapshots if len(s["boards"]) == PLAYERS))
    drawn = next(iter(snapshot["boards"].values()))
    covered = drawn["board"].index("face-down card")
    drawn["board"][covered] = webutil.LABEL_FOR_CODE[race["peaks"][covered]]
    assert len(hidden_card_leaks(race, [snapshot])) == 1
    snapshot = copy.deepcopy(next(s for s in watched.snapshots if len(s["boards"]) == PLAYERS))
    snapshot["names"].append(webutil.LABEL_FOR_CODE[race["stock"][-1]])
    assert hidden_card_leaks(race, [snapshot]) == [
        f"snapshot 0: cards named off the boards: {[race['stock'][-1]]}"
    ]


async def test_the_winning_line_replays_from_the_keyboard(watched: WatchedRace) -> None:
    page = watched.desktop
    await page.focus("#main")
    for _ in range(60):  # Tab through the page until the button has focus
        await page.keyboard.press("Tab")
        if await page.evaluate("document.activeElement.id") == "winning-line":
            break
    else:
        raise AssertionError("the winning-line button cannot be reached with Tab")
    outline = await page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none", "keyboard focus must be visible"
    await page.keyboard.press("Enter")
    await page.locator("#solution").wait_for(state="visible")
    steps = len(watched.race["solution"])
    assert await page.get_attribute("#solution-slider", "max") == str(steps)
    await page.click("#solution-play")  # pause the animation, then step by hand
    await page.focus("#solution-slider")
    await page.keyboard.press("End")
    assert await page.inner_text("#solution-step") == f"{steps} / {steps}"
    played = await page.locator("#solution-board .spot[data-state=played]").count()
    assert played == 28
    await page.keyboard.press("Home")
    assert await page.inner_text("#solution-step") == f"0 / {steps}"
    assert await page.locator("#solution-board .spot[data-state=up]").count() == 10
    await page.keyboard.press("ArrowRight")
    assert await page.inner_text("#solution-step") == f"1 / {steps}"
    await webutil.screenshot(page, "watch-winning-line-desktop")
    assert webutil.script_errors(page) == []


async def test_the_phone_layout_never_scrolls_sideways(watched: WatchedRace) -> None:
    page = watched.phone
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= webutil.PHONE["width"]
    assert webutil.script_errors(page) == []


# ---- the stored race -------------------------------------------------------------
async def test_a_stored_race_replays_move_by_move_with_timestamps(watched: WatchedRace) -> None:
    race = watched.race
    page = await webutil.new_page(watched.browser, webutil.DESKTOP)
    await page.goto(f"{watched.server.url}/races/{race['race_id']}")
    await page.locator("#race").wait_for(state="visible")
    accepted = [entry for player in race["players"] for entry in player["log"] if entry["accepted"]]
    assert await page.get_attribute("#slider", "max") == str(len(accepted))
    assert await page.inner_text("#caption") == "Start of the race"
    last = max(entry["at_ms"] for entry in accepted)
    assert await page.inner_text("#time") == f"0:00.0 / {format_ms(last)}"

    first = min(accepted, key=lambda entry: entry["at_ms"])
    await page.click("#forward")
    assert (await page.inner_text("#time")).startswith(format_ms(first["at_ms"]))
    assert await page.input_value("#slider") == "1"
    await page.click("#back")
    assert await page.input_value("#slider") == "0"

    await page.focus("#slider")
    await page.keyboard.press("End")
    cleared = await page.eval_on_selector_all(
        ".player-panel", "ps => ps.map(p => [p.dataset.player, Number(p.dataset.cleared)])"
    )
    assert cleared == [[p["player_id"], p["cleared"]] for p in race["players"]]
    await page.wait_for_function(
        "() => document.getElementById('deal-check').dataset.ok === 'true'"
    )
    assert (await page.inner_text("#commit-check")).startswith("✔")
    await webutil.screenshot(page, "race-replay-end-desktop")

    # The move logs list every entry with its time; a time jumps the replay there.
    events = [
        (entry["at_ms"], t, i)
        for t, player in enumerate(race["players"])
        for i, entry in enumerate(e for e in player["log"] if e["accepted"])
    ]
    order = sorted(range(len(events)), key=lambda k: events[k][0])
    step_of = {events[k][1:]: step for step, k in enumerate(order, start=1)}
    logs = page.locator("#logs details")
    assert await logs.count() == len(race["players"])
    await logs.nth(1).locator("summary").click()
    rows = logs.nth(1).locator("tbody tr")
    assert await rows.count() == len(race["players"][1]["log"])
    await rows.locator("button").nth(2).click()
    assert await page.input_value("#slider") == str(step_of[(1, 2)])
    assert await page.evaluate("document.activeElement.id") == "slider"

    await page.keyboard.press("Home")
    await page.click("#play")
    await page.wait_for_function("() => Number(document.getElementById('slider').value) >= 3")
    await page.click("#play")  # pause
    await page.set_viewport_size(webutil.PHONE)
    await webutil.screenshot(page, "race-replay-phone")
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= webutil.PHONE["width"]
    assert webutil.script_errors(page) == []


async def test_an_unknown_race_id_gets_a_clear_message(watched: WatchedRace) -> None:
    page = await webutil.new_page(watched.browser, webutil.DESKTOP)
    await page.goto(f"{watched.server.url}/races/0000000000000000")
    message = page.locator("#message")
    await message.wait_for(state="visible")
    assert "no stored race with id “0000000000000000”" in await message.inner_text()


async def _host_room(server: RunningServer, **options: Any) -> tuple[Any, str]:
    host = await connect(server.ws_url, "Host", encoding="json")
    state = await host.request(m.CreateRoom(m.RoomOptions(**options)), m.RoomState)
    return host, state.code


# ---- the front page ------------------------------------------------------------------
async def test_the_front_page_lists_public_rooms_live_and_opens_a_code(
    watched: WatchedRace,
) -> None:
    page = await webutil.new_page(watched.browser, webutil.DESKTOP)
    await page.goto(watched.server.url + "/")
    host, code = await _host_room(watched.server, name="Late arrivals", public=True)
    try:
        row = page.locator(f"#rooms tr[data-code='{code}']")
        await row.wait_for(state="visible", timeout=10_000)  # picked up by the polling
        cells = await row.locator("td").all_inner_texts()
        assert cells[:5] == [code, "Late arrivals", "1 / 8", "0", "lobby"]
        race_id = watched.race["race_id"]
        recent = page.locator(f"#races li[data-race='{race_id}'] a")
        assert await recent.inner_text() == "Browser test race (practice)"
        assert await recent.get_attribute("href") == f"/races/{race_id}"
        await webutil.screenshot(page, "lobby-desktop")
        await page.set_viewport_size(webutil.PHONE)
        await webutil.screenshot(page, "lobby-phone")
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390

        await page.focus("#room-code")
        await page.keyboard.type("no way!")
        await page.keyboard.press("Enter")
        assert "1 to 16 letters and digits" in await page.inner_text("#code-error")
        await page.fill("#room-code", "")
        await page.keyboard.type(code.lower())
        await page.keyboard.press("Enter")
        await page.wait_for_url(f"**/watch/{code}")
        await page.locator(".player-panel").first.wait_for(state="visible")
        assert await page.inner_text("#room-title") == "Late arrivals"
        assert await page.inner_text("#room-phase") == "lobby"
        assert webutil.script_errors(page) == []
    finally:
        await host.close()
