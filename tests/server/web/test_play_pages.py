"""The player's page around the race: the browser's session against the Python
one, rooms that cannot be joined, a solo start, a dropped network, the front
page's forms.  Real Chromium, one real server for the module."""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, WebSocketRoute

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import Rules, Status
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.session import ClientSession, MoveAnswered, SessionMisuse
from tests import webutil
from tests.serverutil import RunningServer, connect, open_room, start_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

JSON = codec.Encoding.JSON


@dataclass
class Site:
    server: RunningServer
    browser: Browser


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    """One server and one browser for the module."""
    webutil.require_chromium()
    server = await start_server(tmp_path_factory.mktemp("web-play-pages"))
    try:
        async with webutil.open_browser() as browser:
            yield Site(server, browser)
    finally:
        await server.stop()


# ---- the browser's session mirrors protocol/wire/session.py ---------------------
def _welcome(resumed: bool) -> m.Welcome:
    return m.Welcome("p1", "Ann", f"token-{resumed}", resumed, 1, "test")


def _answer(seq: int) -> m.MoveResult:
    return m.MoveResult(
        seq, m.MoveAction.DRAW, True, None, None, "AS", (), (), None, "AS", 1, 0, 1, 1, 0,
        Status.PLAYING, 0, 0,
    )


def _race_start() -> m.RaceStart:
    view = m.BoardView(("??",) * 18 + ("AS",) * 10, "KS", 23, 0, 0, 0, Status.PLAYING)
    return m.RaceStart("r1", False, True, False, "0" * 64, view, 0, 0)


def _script(rng: random.Random) -> list[tuple[Any, ...]]:
    """A random run of session calls, sensible and not (misuse must match too)."""
    ops: list[tuple[Any, ...]] = []
    for _ in range(rng.randint(5, 40)):
        kind = rng.choice(
            ["hello", "welcome", "move", "move", "move", "answer", "answer", "lost", "resync",
             "refused", "race_start", "restart", "resend"]
        )
        if kind == "welcome":
            ops.append((kind, rng.random() < 0.6))
        elif kind == "move":
            ops.append((kind, rng.choice(["play", "draw", "undo"]), rng.randint(0, 27)))
        elif kind in ("answer", "resync", "refused", "restart", "resend"):
            ops.append((kind, rng.randint(0, 8)))
        else:
            ops.append((kind,))
    return ops


def _python_run(ops: list[tuple[Any, ...]]) -> list[Any]:
    session = ClientSession("Ann", client="web", encoding=JSON)
    out: list[Any] = []
    calls: dict[str, Callable[..., Any]] = {
        "hello": lambda: json.loads(session.hello()),
        "welcome": lambda r: _events(session.receive(codec.encode(_welcome(r), JSON))),
        "move": lambda a, p: _move(session, a, p),
        "answer": lambda s: _events(session.receive(codec.encode(_answer(max(1, s)), JSON))),
        "lost": session.connection_lost,
        "resync": lambda s: [json.loads(f) for f in session.resend_after_resync(s)],
        "refused": session.refused,
        "race_start": lambda: _events(session.receive(codec.encode(_race_start(), JSON))),
        "restart": lambda s: session.restart_moves(max(1, s)),
        "resend": lambda s: json.loads(session.resend(s)),
    }
    for op in ops:
        try:
            result = calls[op[0]](*op[1:])
        except SessionMisuse:
            result = "misuse"
        out.append([result, session.state.value, session.next_seq,
                    [r.seq for r in session.in_flight], session.token])
    return out


def _move(session: ClientSession, action: str, position: int) -> Any:
    pos = position if action == "play" else None
    seq, frame = session.move(m.MoveAction(action), pos)
    return [seq, json.loads(frame)]


def _events(events: list[Any]) -> list[Any]:
    return [
        ["answered", e.result.seq, e.move.seq] if isinstance(e, MoveAnswered)
        else ["message", e.TAG] for e in events
    ]


JS_RUN = """async ({ scripts, frames }) => {
  const { PlaySession, SessionMisuse } = await import('/static/js/playsession.js');
  return scripts.map((ops) => {
    const s = new PlaySession('Ann');
    const events = (evs) => evs.map((e) => e.type === 'answered'
      ? ['answered', e.result.seq, e.move.seq] : ['message', e.message.t]);
    const calls = {
      hello: () => s.hello(),
      welcome: (r) => events(s.receive(frames['welcome-' + r])),
      move: (a, p) => {
        const { seq, frame } = s.move(a, a === 'play' ? p : null);
        return [seq, frame];
      },
      answer: (n) => events(s.receive(frames['answer-' + Math.max(1, n)])),
      lost: () => { s.connectionLost(); return null; },
      resync: (n) => s.resendAfterResync(n),
      refused: (n) => { s.refused(n); return null; },
      race_start: () => events(s.receive(frames.race_start)),
      restart: (n) => { s.restartMoves(Math.max(1, n)); return null; },
      resend: (n) => s.resend(n),
    };
    return ops.map(([kind, ...args]) => {
      let result;
      try { result = calls[kind](...args); } catch (e) {
        if (!(e instanceof SessionMisuse)) throw e;
        result = 'misuse';
      }
      return [result, s.state, s.nextSeq, s.inFlight.map((r) => r.seq), s.token];
    });
  });
}"""


async def test_the_browser_session_numbers_and_resends_moves_as_the_python_one(
    site: Site,
) -> None:
    rng = random.Random(14)
    scripts = [_script(rng) for _ in range(300)]
    frames = {
        "welcome-true": _welcome(True), "welcome-false": _welcome(False),
        "race_start": _race_start(), **{f"answer-{s}": _answer(s) for s in range(1, 9)},
    }
    wire = {key: json.loads(codec.encode(msg, JSON)) for key, msg in frames.items()}
    page = await webutil.new_page(site.browser)
    await page.goto(f"{site.server.url}/races/none")
    browser_runs = await page.evaluate(JS_RUN, {"scripts": scripts, "frames": wire})
    python_runs = [_python_run(ops) for ops in scripts]
    for ops, ours, theirs in zip(scripts, browser_runs, python_runs, strict=True):
        assert ours == json.loads(json.dumps(theirs)), ops
    resent = [step for run in python_runs for step in run if step[0] and step[0] != "misuse"]
    assert any(isinstance(s[0], list) and s[0] and isinstance(s[0][0], dict) for s in resent)


# ---- rooms that cannot be joined ---------------------------------------------
async def _message(page: Page) -> str:
    await page.wait_for_function(
        "() => document.getElementById('message').dataset.kind === 'error'", timeout=15_000
    )
    return await page.inner_text("#message")


async def _named_page(site: Site, name: str = "Zoe") -> Page:
    page = await webutil.new_page(site.browser, webutil.LAPTOP)
    await page.goto(f"{site.server.url}/")
    await page.evaluate("name => localStorage.setItem('tripeaks.name', name)", name)
    return page


async def test_an_unknown_code_a_full_room_and_a_started_race_each_say_so(site: Site) -> None:
    page = await _named_page(site)
    await page.goto(f"{site.server.url}/play/nosuch")
    assert "There is no room with code NOSUCH" in await _message(page)
    assert await page.inner_text("#room-title") == "No such room"
    assert await page.locator("#lobby").is_hidden()

    full, state = await open_room(site.server.ws_url, ["Ann", "Bob"], max_players=2)
    racing, started = await open_room(site.server.ws_url, ["Cy", "Di"])
    try:
        await page.goto(f"{site.server.url}/play/{state.code}")
        text = await _message(page)
        assert f"Room {state.code} is full" in text
        assert await page.get_by_role("link", name="Watch it live").get_attribute("href") == \
            f"/watch/{state.code}"
        await racing[0].send(m.Start())
        await racing[0].expect(m.RaceStart)
        await page.goto(f"{site.server.url}/play/{started.code}")
        assert f"The race in room {started.code} has already started" in await _message(page)
        assert webutil.script_errors(page) == []
    finally:
        for client in full + racing:
            await client.close()


# ---- a solo race, a dropped network, a resignation --------------------------------
class Flaky:
    """Passes the page's socket through, dropping moves or answers on demand."""

    def __init__(self) -> None:
        self.drop_moves = False
        self.drop_answers = False
        self.routes: list[WebSocketRoute] = []

    def route(self, ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def from_page(message: str | bytes) -> None:
            if not (self.drop_moves and '"t":"move"' in str(message)):
                server.send(message)

        def from_server(message: str | bytes) -> None:
            if not (self.drop_answers and "move_result" in str(message)):
                ws.send(message)

        ws.on_message(from_page)
        server.on_message(from_server)
        self.routes.append(ws)


async def _racing_alone(site: Site, name: str, seed: str | None = None) -> Page:
    """A laptop page whose player ``name`` created a room (countdown 0, the practice
    ``seed`` if given) and started racing alone; the board is up."""
    page = await webutil.new_page(site.browser, webutil.LAPTOP)
    await page.goto(f"{site.server.url}/")
    await page.fill("#player-name", name)
    await page.locator("#create-options summary").click()
    if seed is not None:
        await page.fill("#create-practice-seed", seed)
    await page.fill("#create-countdown-s", "0")
    await page.get_by_role("button", name="Create room", exact=True).click()
    await page.get_by_role("button", name="Start race", exact=True).click()
    await page.get_by_role("button", name="Start alone").click()
    await page.locator("#board-holder .spot[data-state=up]").first.wait_for()
    return page


async def _own_moves(page: Page, moves: int) -> None:
    await page.wait_for_function(
        "n => (document.getElementById('own-counts').textContent.match(/(\\d+) moves/) || [])[1]"
        " === String(n)", arg=moves, timeout=20_000,
    )


async def test_a_question_asked_again_before_the_last_ones_close_event_gets_its_own_answer(
    site: Site,
) -> None:
    page = await _racing_alone(site, "Quick", "web-play-quick")
    await page.get_by_role("button", name="Resign", exact=True).click()
    # "Keep racing", then R in the same task: the first close event comes after the
    # dialog is open again, and must neither answer the second question nor resign.
    await page.evaluate(
        "() => { document.getElementById('confirm-no').click();"
        " document.dispatchEvent(new KeyboardEvent('keydown', { key: 'r' })); }"
    )
    dialog = page.get_by_role("dialog")
    await page.wait_for_timeout(200)
    assert await dialog.is_visible()
    assert await page.inner_text("#room-phase") == "racing"
    await page.get_by_role("button", name="Yes, resign").click()
    await page.locator("#results").wait_for(state="visible")
    assert "(resigned)" in await webutil.said(page, "(resigned)")


async def test_a_solo_start_asks_first_and_a_dropped_network_loses_no_move(site: Site) -> None:
    seed = "web-play-solo"
    line = (await _deal(seed)).solution
    flaky = Flaky()
    page = await webutil.new_page(site.browser, webutil.LAPTOP)
    await page.route_web_socket(re.compile(r"/ws$"), flaky.route)
    await page.goto(f"{site.server.url}/")
    await page.fill("#player-name", "Solo")
    await page.locator("#create-options summary").click()
    await page.fill("#create-practice-seed", seed)
    await page.fill("#create-countdown-s", "0")
    await page.get_by_role("button", name="Create room", exact=True).click()
    start = page.get_by_role("button", name="Start race", exact=True)
    await start.click()
    dialog = page.get_by_role("dialog")
    assert "Race on your own?" in await dialog.inner_text()
    await page.get_by_role("button", name="Wait for friends").click()
    assert await dialog.is_hidden()
    assert await page.inner_text("#room-phase") == "lobby"
    await start.click()
    await page.get_by_role("button", name="Start alone").click()
    await page.locator("#board-holder .spot[data-state=up]").first.wait_for()

    # The first move's answer is lost, then the second move itself; then the socket drops.
    flaky.drop_answers = True
    await page.locator(f"#board-holder .spot[data-pos='{line[0]}'] button").click()
    await page.wait_for_timeout(300)
    flaky.drop_moves = True
    await page.locator(f"#board-holder .spot[data-pos='{line[1]}'] button").click()
    flaky.drop_moves = flaky.drop_answers = False
    sockets = len(flaky.routes)  # the front page's, then this page's
    await flaky.routes[-1].close(code=4002)
    await page.wait_for_function(
        "() => document.getElementById('message').textContent.includes('Trying again')"
    )
    await page.wait_for_function(
        "() => document.getElementById('message').textContent.startsWith('Reconnected')"
    )
    await _own_moves(page, 2)
    assert len(flaky.routes) == sockets + 1

    await page.get_by_role("button", name="Resign", exact=True).click()
    await page.get_by_role("button", name="Keep racing").click()
    assert await page.inner_text("#room-phase") == "racing"
    await page.keyboard.press("r")
    await page.get_by_role("button", name="Yes, resign").click()
    await page.locator("#results").wait_for(state="visible")
    await webutil.said(page, "with 2 of 28 cards cleared (resigned)")
    href = await page.get_attribute("#race-link", "href")
    async with aiohttp.ClientSession() as http, \
            http.get(f"{site.server.url}/api{href}") as response:
        race = await response.json()
    (solo,) = race["players"]
    assert [(e["seq"], e["position"]) for e in solo["log"] if e["action"] == "play"] == [
        (1, line[0]), (2, line[1])
    ]
    assert webutil.script_errors(page) == []


async def _deal(seed: str) -> Any:
    return await asyncio.to_thread(deal_for_seed, seed, Rules())


# ---- the front page ------------------------------------------------------------------
async def test_the_front_page_joins_by_code_and_refuses_a_bad_one(site: Site) -> None:
    host = await connect(site.server.ws_url, "Host", encoding="json")
    try:
        state = await host.request(m.CreateRoom(m.RoomOptions(name="Open door", public=True)),
                                   m.RoomState)
        page = await _named_page(site, "Joe")
        await page.goto(f"{site.server.url}/")
        await page.fill("#join-code", "no way!")
        await page.get_by_role("button", name="Join", exact=True).click()
        assert "1 to 16 letters and digits" in await page.inner_text("#join-error")
        await page.fill("#join-code", state.code.lower())
        await page.get_by_role("button", name="Join", exact=True).click()
        await page.wait_for_url(f"**/play/{state.code}")
        await page.locator("#members tr:has-text('Joe')").wait_for()
        assert await page.inner_text("#room-title") == "Open door"
        joined = await host.expect(m.RoomState)
        while len(joined.members) < 2:
            joined = await host.expect(m.RoomState)
        assert [x.name for x in joined.members] == ["Host", "Joe"]
        await page.goto(f"{site.server.url}/")
        row = page.locator(f"#rooms tr[data-code='{state.code}']")
        await row.wait_for()
        assert await row.get_by_role("link", name=f"Join room {state.code}, Open door") \
            .get_attribute("href") == f"/play/{state.code}"
    finally:
        await host.close()


# ---- the host's lobby -----------------------------------------------------------------
async def test_the_host_changes_the_options_and_kicks_from_the_lobby(site: Site) -> None:
    page = await webutil.new_page(site.browser, webutil.LAPTOP)
    await page.goto(f"{site.server.url}/")
    await page.fill("#player-name", "Hal")
    await page.get_by_role("button", name="Create room", exact=True).click()
    await page.wait_for_url("**/play/*")
    code = page.url.rsplit("/", 1)[1]
    guest = await connect(site.server.ws_url, "Gus", encoding="json")
    try:
        await guest.request(m.Join(code), m.RoomState)
        await guest.send(m.Ready(True))
        await page.locator("#members tr[data-ready=true]").wait_for()
        await page.locator("#host-options").get_by_text("Change options").click()
        await page.locator("#host-options").get_by_text("More options").click()
        await page.fill("#room-max-players", "1")
        await page.get_by_role("button", name="Save options").click()
        assert "Seats: a whole number from 2 to 16" in await page.inner_text("#options-error")
        await page.fill("#room-max-players", "3")
        await page.select_option("#room-undo", "off")
        await page.get_by_role("button", name="Save options").click()
        state = await guest.expect(m.RoomState)
        while state.options.max_players != 3:
            state = await guest.expect(m.RoomState)
        assert state.options.undo is m.UndoPolicy.OFF
        assert not any(x.ready for x in state.members)  # the server cleared the flags
        await page.locator("#options-list").get_by_text("off").first.wait_for()
        await page.get_by_role("button", name="Kick Gus").click()
        left = await guest.expect(m.Left)
        assert left.reason is m.LeftReason.KICKED
        await page.locator("#members tr:has-text('Gus')").wait_for(state="detached")
        assert webutil.script_errors(page) == []
    finally:
        await guest.close()


async def test_a_play_address_that_cannot_be_a_code_is_a_plain_404(site: Site) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{site.server.url}/play/not-a-code!") as response:
            assert response.status == 404
            assert "1 to 16 letters and digits" in await response.text()
        async with http.get(f"{site.server.url}/play/ab12") as response:
            assert response.status == 200
            assert response.headers["Content-Security-Policy"].startswith("default-src 'self'")
            assert '<script type="module" src="/static/js/play.js">' in await response.text()


# ---- a seat lost: kicked, opened elsewhere, a race over while away --------------------
async def test_a_kicked_player_is_told_so_and_a_reload_says_why_the_seat_is_refused(
    site: Site,
) -> None:
    host = await connect(site.server.ws_url, "Hub", encoding="json")
    try:
        state = await host.request(m.CreateRoom(m.RoomOptions(name="Kick room")), m.RoomState)
        page = await _named_page(site, "Kit")
        await page.goto(f"{site.server.url}/play/{state.code}")
        joined = await host.expect(m.RoomState)
        while len(joined.members) < 2:
            joined = await host.expect(m.RoomState)
        kit = next(x.player_id for x in joined.members if x.name == "Kit")
        await host.send(m.Kick(kit))
        await page.wait_for_function(
            "() => document.getElementById('room-title').textContent === 'Not in the room'"
        )
        assert (await page.inner_text("#message")).startswith(
            "The host removed you from the room: you can join again once its next race has started."
        )
        assert await page.locator("#lobby").is_hidden()
        await page.reload()
        text = await _message(page)
        assert text.startswith(f"The host removed you from room {state.code}: you can join again")
        assert await page.inner_text("#room-title") == "Removed from the room"
        assert webutil.script_errors(page) == []
    finally:
        await host.close()


async def test_the_seat_opened_in_another_tab_closes_this_one_with_words(site: Site) -> None:
    first = await _named_page(site, "Tab")
    await first.goto(f"{site.server.url}/")
    await first.fill("#player-name", "Tab")
    await first.get_by_role("button", name="Create room", exact=True).click()
    await first.wait_for_url("**/play/*")
    await first.locator("#members tr:has-text('Tab')").wait_for()
    second = await first.context.new_page()  # same browser, same local storage: same token
    await second.goto(first.url)
    await second.locator("#members tr:has-text('Tab')").wait_for()
    text = await _message(first)
    assert text.startswith(
        "Disconnected: this seat was opened in another tab or window; carry on there."
    )
    assert await first.inner_text("#room-title") == "Disconnected"
    # The seat moved, it was not taken twice: one member, the host, in the new tab.
    assert await second.locator("#members tbody tr").count() == 1
    assert await second.get_by_role("button", name="Start race", exact=True).is_visible()
    await first.wait_for_timeout(1500)  # the closed tab does not come back and take it again
    assert await second.locator("#message").is_hidden()
    assert webutil.script_errors(first) == [] and webutil.script_errors(second) == []


async def test_a_page_opened_after_the_race_reads_the_result_from_the_stored_race(
    site: Site,
) -> None:
    page = await _racing_alone(site, "Late")
    await page.get_by_role("button", name="Draw", exact=True).click()
    await _own_moves(page, 1)
    await page.get_by_role("button", name="Resign", exact=True).click()
    await page.get_by_role("button", name="Yes, resign").click()
    await page.locator("#results").wait_for(state="visible")
    # Reloaded, the page has missed race_over: the result comes from the stored race.
    await page.reload()
    await page.locator("#results").wait_for(state="visible")
    await page.wait_for_function(
        "() => ['commit-check', 'deal-check'].every(id => "
        "document.getElementById(id).dataset.ok === 'true')"
    )
    href = await page.get_attribute("#race-link", "href")
    async with aiohttp.ClientSession() as http, \
            http.get(f"{site.server.url}/api{href}") as response:
        race = await response.json()
    assert await page.inner_text("#seed") == race["seed"]
    rows = await page.eval_on_selector_all(
        "#standings tbody tr", "rows => rows.map(r => r.innerText.split('\\t'))"
    )
    assert rows == [["1", "Late (guest) (you)", "resigned", "0", "1", "0"]]
    assert await page.inner_text("#room-phase") == "race over"
    assert await page.get_by_role("button", name="Rematch", exact=True).is_visible()
    assert webutil.script_errors(page) == []



# ---- a new name, open boards ------------------------------------------------------------
async def test_change_name_takes_the_seat_again_under_the_new_name(site: Site) -> None:
    page = await webutil.new_page(site.browser, webutil.LAPTOP)
    await page.goto(f"{site.server.url}/")
    await page.fill("#player-name", "Hal")
    await page.get_by_role("button", name="Create room", exact=True).click()
    await page.wait_for_url("**/play/*")
    code = page.url.rsplit("/", 1)[1]
    guest = await connect(site.server.ws_url, "Gus", encoding="json")
    try:
        await guest.request(m.Join(code), m.RoomState)
        await page.locator("#members tr:has-text('Gus')").wait_for()
        change = page.get_by_role("button", name="Change name", exact=True)
        await change.click()
        assert await page.input_value("#name-input") == "Hal"
        assert "Gus becomes the host" in await page.inner_text("#name-help")
        await page.get_by_role("button", name="Cancel", exact=True).click()
        assert await page.locator("#name-panel").is_hidden()
        await change.click()
        await page.fill("#name-input", "")
        await page.get_by_role("button", name="Save name", exact=True).click()
        assert "1 to 24 characters" in await page.inner_text("#name-error")
        await page.fill("#name-input", "Hank")
        await page.get_by_role("button", name="Save name", exact=True).click()
        state = await guest.expect(m.RoomState)
        while sorted(x.name for x in state.members) != ["Gus", "Hank"]:
            state = await guest.expect(m.RoomState)
        gus = next(x.player_id for x in state.members if x.name == "Gus")
        assert state.host_id == gus
        await page.locator("#members tr:has-text('Hank (guest, you)')").wait_for()
        assert await page.get_by_role("button", name="Ready", exact=True).is_visible()
        assert await page.evaluate("localStorage.getItem('tripeaks.name')") == "Hank"
        await page.reload()  # the new seat's token was kept: the reload resumes it
        await page.locator("#members tr:has-text('Hank (guest, you)')").wait_for()
        assert await page.locator("#members tbody tr").count() == 2
        assert webutil.script_errors(page) == []
    finally:
        await guest.close()


class ShortDelay:
    """Passes the page's socket through, cutting any spectator delay it asks for to 5 s,
    so that the server, not the page, refuses open boards."""

    def route(self, ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def from_page(message: str | bytes) -> None:
            if isinstance(message, str) and '"t":"update_options"' in message:
                frame = json.loads(message)
                frame["options"]["spectator_delay_s"] = 5
                message = json.dumps(frame)
            server.send(message)

        ws.on_message(from_page)
        server.on_message(ws.send)


async def test_open_boards_without_a_long_delay_are_refused_in_words(site: Site) -> None:
    page = await webutil.new_page(site.browser, webutil.LAPTOP)
    await page.route_web_socket(re.compile(r"/ws$"), ShortDelay().route)
    await page.goto(f"{site.server.url}/")
    await page.fill("#player-name", "Bro")
    await page.locator("#create-options summary").click()
    await page.check("#create-open-boards")
    await page.get_by_role("button", name="Create room", exact=True).click()
    words = "Open boards need a spectator delay of 30 seconds or more."
    assert await page.inner_text("#create-error") == words
    assert await page.evaluate("document.activeElement.id") == "create-spectator-delay-s"
    await page.fill("#create-spectator-delay-s", "30")
    await page.get_by_role("button", name="Create room", exact=True).click()
    await page.wait_for_url("**/play/*")
    await page.locator("#options-list").get_by_text("open to spectators").wait_for()
    # The host's form checks the same; a refusal that gets past it is shown there too.
    await page.locator("#host-options").get_by_text("Change options").click()
    await page.locator("#host-options").get_by_text("More options").click()
    await page.fill("#room-spectator-delay-s", "10")
    await page.get_by_role("button", name="Save options").click()
    assert await page.inner_text("#options-error") == words
    await page.fill("#room-spectator-delay-s", "60")
    await page.get_by_role("button", name="Save options").click()
    await page.wait_for_function(
        "() => document.getElementById('options-error').textContent.startsWith('The server')"
    )
    assert await page.inner_text("#options-error") == (
        "The server refused the options: open boards need a spectator delay of 30 seconds or more."
    )
    assert await page.locator("#options-list").get_by_text("30 s behind").is_visible()
    assert webutil.script_errors(page) == []


# ---- the room a window gives ------------------------------------------------------------
FIT = """() => {
  const rect = (sel) => document.querySelector(sel).getBoundingClientRect();
  return {
    scrollWidth: document.documentElement.scrollWidth,
    scrollHeight: document.documentElement.scrollHeight,
    card: rect('#board-holder .spot').width,
    boardBottom: rect('#board-holder .piles').bottom,
    resignBottom: rect('#resign').bottom,
    barRight: rect('#live-standings progress').right,
  };
}"""


async def test_a_phone_on_its_side_and_a_large_desktop_fit_the_whole_race(site: Site) -> None:
    page = await _racing_alone(site, "Wide")
    await page.set_viewport_size({"width": 844, "height": 390})
    side = await page.evaluate(FIT)
    assert side["scrollWidth"] <= 844 and side["scrollHeight"] <= 390, side
    assert side["card"] >= 34 and side["resignBottom"] <= 390 and side["barRight"] <= 844
    await page.set_viewport_size({"width": 1920, "height": 1080})
    large = await page.evaluate(FIT)
    assert large["scrollHeight"] <= 1080 and large["boardBottom"] <= 1080, large
    assert large["card"] >= 100  # the board grows with the window, not stuck at 900 px
    assert webutil.script_errors(page) == []
