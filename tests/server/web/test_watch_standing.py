"""The watch page's panels against the standings, in a real Chromium on a real server.

Scripted players race a practice deal (its winning line is known here), so
each test can put every player exactly where it needs them: panels listed by
standing rather than join order, a bar one card short of the end, a player
who undoes forty times and resigns in the tick that ends the race, frames
lost or replayed out of order on the way to the page (a routed socket), and
the stored race's Standings table on a phone.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, WebSocketRoute

from client_cli.state import Opponent, by_standing
from protocol.deals.dealer import DealtGame, deal_for_seed
from protocol.rules.game import Game, Move, Rules
from protocol.wire import messages as m
from tests import webutil
from tests.serverutil import RunningServer, TestClient, move_request, open_room, start_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

SEED = "web-test-1"
WAIT_MS = 20_000

#: Every panel in page order: player id, then the counters' texts and the status.
PANELS = """() => [...document.querySelectorAll('#boards .player-panel')].map(p => ({
  id: p.dataset.player,
  cleared: Number(p.dataset.cleared ?? 0),
  counts: [...p.querySelectorAll('.player-stats strong')].map(s => s.textContent),
  status: p.querySelector('.player-status').textContent,
}))"""


@dataclass
class Site:
    server: RunningServer
    browser: Browser
    dealt: DealtGame


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    """One server, one browser and the practice deal for the module."""
    webutil.require_chromium()
    dealt = await asyncio.to_thread(deal_for_seed, SEED, Rules())
    # A stuck bot's undo storm runs at full speed: more than a person's credit.
    server = await start_server(
        tmp_path_factory.mktemp("web-watch-standing"), player_burst=1000.0, player_rate=1000.0
    )
    try:
        async with webutil.open_browser() as browser:
            yield Site(server, browser, dealt)
    finally:
        await server.stop()


class Racer:
    """A scripted player who plays the practice deal's winning line, step by step."""

    def __init__(self, client: TestClient, line: tuple[Move, ...]) -> None:
        self.client = client
        self.line = line
        self.seq = 0
        self.step = 0  # steps of the line on the board now

    @property
    def pid(self) -> str:
        return self.client.player_id

    async def send(self, request: m.MoveRequest) -> m.MoveResult:
        result = await self.client.request(request, m.MoveResult)
        assert result.accepted, result
        return result

    async def play_to(self, step: int) -> m.MoveResult | None:
        """Play the line on to ``step`` steps from the start."""
        result = None
        while self.step < step:
            self.seq += 1
            result = await self.send(move_request(self.seq, self.line[self.step]))
            self.step += 1
        return result

    async def undo(self) -> m.MoveResult:
        self.seq += 1
        self.step -= 1
        return await self.send(m.MoveRequest(self.seq, m.MoveAction.UNDO))

    async def storm(self, undos: int) -> None:
        """Undo ``undos`` times, replaying every other step: a stuck bot's search."""
        for i in range(undos):
            await self.undo()
            if i % 2 == 0 and i < undos - 4:
                await self.play_to(self.step + 1)


def cleared_after(dealt: DealtGame, steps: int) -> int:
    """Cards cleared after the first ``steps`` steps of the winning line."""
    game = Game(dealt.deal)
    for step in dealt.solution[:steps]:
        game.push(step)
    return game.cleared


def step_clearing(dealt: DealtGame, cleared: int) -> int:
    """The fewest steps of the winning line that clear ``cleared`` cards."""
    return next(k for k in range(len(dealt.solution) + 1) if cleared_after(dealt, k) >= cleared)


async def race_room(
    site: Site, names: list[str], **options: Any
) -> tuple[list[Racer], str]:
    """A started race with one scripted racer per name, joined in that order."""
    clients, state = await open_room(
        site.server.ws_url, names, encoding="json", practice_seed=SEED, **options
    )
    await clients[0].send(m.Start())
    for client in clients:
        await client.expect(m.RaceStart, timeout=60)
    return [Racer(client, site.dealt.solution) for client in clients], state.code


async def watch(site: Site, code: str, viewport: dict[str, int] = webutil.DESKTOP,
                route: Callable[[WebSocketRoute], Any] | None = None) -> Page:
    page = await webutil.new_page(site.browser, viewport)
    if route is not None:
        await page.route_web_socket(re.compile(r"/ws$"), route)
    await page.goto(f"{site.server.url}/watch/{code}")
    await page.locator(".player-panel").first.wait_for()
    return page


async def shows(page: Page, pid: str, *, cleared: int | None = None,
                undos: int | None = None) -> None:
    """Wait until ``pid``'s panel shows these counts."""
    await page.wait_for_function(
        """([pid, cleared, undos]) => {
          const p = document.querySelector(`.player-panel[data-player="${pid}"]`);
          if (!p) return false;
          const stats = [...p.querySelectorAll('.player-stats strong')].map(s => s.textContent);
          return (cleared === null || p.dataset.cleared === String(cleared))
            && (undos === null || stats[3] === String(undos));
        }""",
        arg=[pid, cleared, undos],
        timeout=WAIT_MS,
    )


async def order(page: Page) -> list[str]:
    return [panel["id"] for panel in await page.evaluate(PANELS)]


# ---- panels in standing order ---------------------------------------------------
async def test_panels_are_listed_by_standing_not_join_order(site: Site) -> None:
    (ann, bob, cat), code = await race_room(site, ["Ann", "Bob", "Cat"])
    page = await watch(site, code)
    five, ten = step_clearing(site.dealt, 5), step_clearing(site.dealt, 10)
    await ann.play_to(five)
    await bob.play_to(ten)
    await cat.play_to(step_clearing(site.dealt, 20))
    await shows(page, cat.pid, cleared=cleared_after(site.dealt, cat.step))
    await shows(page, bob.pid, cleared=cleared_after(site.dealt, ten))
    await shows(page, ann.pid, cleared=cleared_after(site.dealt, five))
    assert await order(page) == [cat.pid, bob.pid, ann.pid]

    # Ann catches up with Bob's count in as many moves: Bob got there first.
    await ann.play_to(ten)
    await shows(page, ann.pid, cleared=cleared_after(site.dealt, ten))
    assert await order(page) == [cat.pid, bob.pid, ann.pid]
    # One card more puts her ahead.
    await ann.play_to(step_clearing(site.dealt, cleared_after(site.dealt, ten) + 1))
    await shows(page, ann.pid, cleared=cleared_after(site.dealt, ann.step))
    assert await order(page) == [cat.pid, ann.pid, bob.pid]

    # A finisher goes first whatever the others cleared; at race over, the ranks.
    await bob.play_to(len(site.dealt.solution))
    await shows(page, bob.pid, cleared=28)
    assert await order(page) == [bob.pid, cat.pid, ann.pid]
    await ann.play_to(step_clearing(site.dealt, 21))
    await cat.client.send(m.Resign())
    await ann.client.send(m.Resign())
    over = await ann.client.expect(m.RaceOver, timeout=30)
    await page.locator("#results").wait_for(state="visible")
    assert await order(page) == [s.player_id for s in sorted(over.standings, key=lambda s: s.rank)]
    assert await order(page) == [bob.pid, ann.pid, cat.pid]
    assert webutil.script_errors(page) == []


async def _bar_pixels(page: Page, pid: str) -> list[list[int]]:
    """The colour at the middle of each of the 28 notches of ``pid``'s bar, on screen."""
    bar = page.locator(f'.player-panel[data-player="{pid}"] progress')
    png = base64.b64encode(await bar.screenshot(animations="disabled")).decode()
    pixels: list[list[int]] = await page.evaluate(
        """async (png) => {
          const image = new Image();
          image.src = `data:image/png;base64,${png}`;
          await image.decode();
          const canvas = document.createElement('canvas');
          canvas.width = image.width; canvas.height = image.height;
          const context = canvas.getContext('2d');
          context.drawImage(image, 0, 0);
          const y = Math.floor(image.height / 2);
          return Array.from({ length: 28 }, (_, i) => [...context.getImageData(
            Math.floor((i + 0.5) * image.width / 28), y, 1, 1).data.slice(0, 3)]);
        }""",
        png,
    )
    return pixels


async def test_a_player_one_card_short_of_the_end_does_not_look_full(site: Site) -> None:
    (ann, bob), code = await race_room(site, ["Ann", "Bob"])
    page = await watch(site, code)
    last = len(site.dealt.solution)
    assert cleared_after(site.dealt, last - 1) == 27  # the line ends on the last peak card
    await ann.play_to(last - 1)
    await bob.play_to(last)
    await shows(page, ann.pid, cleared=27)
    await shows(page, bob.pid, cleared=28)
    await page.emulate_media(reduced_motion="reduce")
    short, full = await _bar_pixels(page, ann.pid), await _bar_pixels(page, bob.pid)
    # The 28th notch of 27/28 is as empty as the track; the rest is not the "done" colour.
    assert short[27] != full[27]
    assert max(short[27]) < 80, short[27]
    assert abs(short[13][0] - full[13][0]) > 60, (short[13], full[13])
    await webutil.screenshot(page, "watch-one-card-short")
    await ann.client.send(m.Resign())
    await ann.client.expect(m.RaceOver, timeout=30)


# ---- a panel never freezes at an old state -------------------------------------
@dataclass
class Lossy:
    """The page's socket through a filter: frames about one player can be dropped
    (``drop``), and any frame seen can be sent again later (``replay``)."""

    pid: str = ""
    drop: bool = False
    boards: list[str] = field(default_factory=list)
    routes: list[WebSocketRoute] = field(default_factory=list)

    def route(self, ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        ws.on_message(server.send)
        server.on_message(lambda message: self._from_server(ws, message))
        self.routes.append(ws)

    def _from_server(self, ws: WebSocketRoute, message: str | bytes) -> None:
        text = message if isinstance(message, str) else message.decode()
        frame = json.loads(text)
        about = frame.get("t") in {"progress", "spectator_board", "spectator_update"} and (
            self.pid in text
        )
        if frame.get("t") == "spectator_board" and frame.get("player_id") == self.pid:
            self.boards.append(text)
        for board in frame.get("boards", []) if frame.get("t") == "spectator_update" else []:
            if board.get("player_id") == self.pid:  # kept as the frame an old page would get
                self.boards.append(json.dumps({"t": "spectator_board", **board}))
        if not (self.drop and about):
            ws.send(message)

    def replay(self, text: str) -> None:
        for ws in self.routes:
            ws.send(text)


@dataclass
class RoomStateLate:
    """The page's socket with every ``room_state`` held back until a race frame has gone
    by (as after a reconnect, where the catch-up can come before the room's state)."""

    held: list[str | bytes] = field(default_factory=list)
    overtaken: bool = False

    def route(self, ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        ws.on_message(server.send)
        server.on_message(lambda message: self._from_server(ws, message))

    def _from_server(self, ws: WebSocketRoute, message: str | bytes) -> None:
        kind = json.loads(message).get("t")
        if kind == "room_state" and not self.overtaken:
            self.held.append(message)
            return
        ws.send(message)
        if kind in {"progress", "spectator_board", "spectator_update"} and not self.overtaken:
            self.overtaken = True
            for late in self.held:
                ws.send(late)


async def test_panels_made_before_the_room_state_show_the_players_names(site: Site) -> None:
    (ann, bob), code = await race_room(site, ["Ann", "Bob"])
    await ann.play_to(3)
    late = RoomStateLate()
    page = await watch(site, code, route=late.route)
    wanted = "Ann|Ann's board|Ann: cards cleared,Bob|Bob's board|Bob: cards cleared"
    await page.wait_for_function(
        """(wanted) => [...document.querySelectorAll('.player-panel')].map(p =>
             [p.querySelector('.player-name').textContent, p.getAttribute('aria-label'),
              p.querySelector('progress').getAttribute('aria-label')].join('|')
           ).sort().join() === wanted""",
        arg=wanted,
        timeout=WAIT_MS,
    )
    assert late.overtaken and late.held, "the room state never came after a race frame"
    assert await page.locator(".peaks[aria-label='Ann: peaks']").count() == 1
    assert webutil.script_errors(page) == []
    for racer in (ann, bob):
        await racer.client.send(m.Resign())
    await ann.client.expect(m.RaceOver, timeout=30)


async def test_a_bot_that_undoes_forty_times_and_resigns_ends_with_the_standings(
    site: Site,
) -> None:
    (steady, undoer), code = await race_room(site, ["Steady", "Undoer"], undo=m.UndoPolicy.FREE)
    lossy = Lossy(pid=undoer.pid)
    watching = await watch(site, code)
    routed = await watch(site, code, route=lossy.route)
    await steady.play_to(len(site.dealt.solution))
    await undoer.play_to(30)
    for page in (watching, routed):
        await shows(page, undoer.pid, cleared=cleared_after(site.dealt, 30), undos=0)
    # From here the routed page loses every frame about the undoer: only race_over
    # can tell it the end, as when the progress bound skips the last progress.
    lossy.drop = True
    await undoer.storm(40)
    await undoer.client.send(m.Resign())  # the last racer: this ends the race
    over = await undoer.client.expect(m.RaceOver, timeout=30)
    late = await watch(site, code)  # arrives after the end: the catch-up alone
    expected = {
        s.player_id: (s.cleared, str(s.moves), str(s.undos), s.status.value)
        for s in over.standings
    }
    assert expected[undoer.pid][2] == "40"
    for page in (watching, routed, late):
        await page.locator("#results").wait_for(state="visible")
        panels = await page.evaluate(PANELS)
        shown = {
            p["id"]: (p["cleared"], p["counts"][2], p["counts"][3], p["status"]) for p in panels
        }
        assert shown == expected
        assert webutil.script_errors(page) == []


async def test_an_old_board_arriving_after_newer_counts_does_not_roll_the_panel_back(
    site: Site,
) -> None:
    (steady, undoer), code = await race_room(site, ["Steady", "Undoer"], undo=m.UndoPolicy.FREE)
    lossy = Lossy(pid=undoer.pid)
    page = await watch(site, code, route=lossy.route)
    await undoer.play_to(25)
    await shows(page, undoer.pid, cleared=cleared_after(site.dealt, 25), undos=0)
    old = lossy.boards[-1]
    await undoer.storm(12)
    await shows(page, undoer.pid, undos=12)
    now = await page.evaluate(PANELS)
    lossy.replay(old)  # e.g. a catch-up replaying the board it kept from before the undos
    await page.wait_for_timeout(500)
    assert await page.evaluate(PANELS) == now
    spots = await page.eval_on_selector_all(
        f'.player-panel[data-player="{undoer.pid}"] .spot', "ss => ss.map(s => s.dataset.state)"
    )
    assert spots.count("played") == cleared_after(site.dealt, undoer.step)
    await undoer.client.send(m.Resign())
    await steady.client.send(m.Resign())
    await undoer.client.expect(m.RaceOver, timeout=30)


# ---- the standings on a phone ----------------------------------------------------
#: Every visible Standings table: whether its box scrolls sideways, and each header
#: cell's text and horizontal extent.
TABLES = """() => [...document.querySelectorAll('table.standings')]
  .filter(t => t.offsetParent !== null && !t.closest('details'))
  .map(t => {
    const box = t.closest('.table-wrap');
    return {
      scrolls: box.scrollWidth > box.clientWidth,
      heads: [...t.tHead.rows[0].cells].map(c => {
        const r = c.getBoundingClientRect();
        return [c.textContent, r.left, r.right, r.width];
      }),
    };
  })"""


async def test_the_standings_fit_a_phone_with_every_column(site: Site) -> None:
    names = ["Maximiliana Longname-Smy", "Bob", "Out Of Luck"]
    (maxi, bob, luck), code = await race_room(site, names, undo=m.UndoPolicy.FREE)
    page = await watch(site, code, webutil.PHONE)
    await maxi.play_to(len(site.dealt.solution))
    await luck.play_to(20)
    await luck.undo()
    await luck.client.send(m.Resign())
    await bob.client.send(m.Resign())
    over = await maxi.client.expect(m.RaceOver, timeout=30)
    await page.locator("#results").wait_for(state="visible")
    replay = await webutil.new_page(site.browser, webutil.PHONE)
    await replay.goto(f"{site.server.url}/races/{over.race_id}")
    await replay.locator("#race").wait_for(state="visible")
    width = webutil.PHONE["width"]
    for where, shown in (("watch", page), ("replay", replay)):
        tables = await shown.evaluate(TABLES)
        assert len(tables) == 1, where
        table = tables[0]
        assert not table["scrolls"], (where, table)
        heads = [text for text, *_ in table["heads"]]
        assert heads == ["#", "Player", "Time", "Cleared", "Moves"], where
        for text, left, right, cell_width in table["heads"]:
            assert cell_width > 0 and left >= 0 and right <= width, (where, text, left, right)
        assert await shown.evaluate("document.documentElement.scrollWidth") <= width
        await webutil.screenshot(shown, f"standings-phone-{where}")
        assert webutil.script_errors(shown) == []
    rows = await replay.eval_on_selector_all(
        "#standings tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.innerText))"
    )
    # The replay marks players under no claimed name, as the watch page does.
    assert rows[0][1:] == [f"{names[0]} (guest)", rows[0][2], "28", str(maxi.seq)]
    assert {row[2] for row in rows[1:]} == {"resigned"}


async def test_the_shared_standing_order_ranks_finishers_then_cleared_then_time_then_moves(
    site: Site,
) -> None:
    """standing.js, which the watch and play pages both sort by, on ties of every kind."""
    page = await webutil.new_page(site.browser, webutil.DESKTOP)
    await page.goto(f"{site.server.url}/")
    ordered = await page.evaluate(
        """async () => {
          const { sortByStanding } = await import('/static/js/standing.js');
          const items = [
            { id: 'slow', finished: false, rank: null, cleared: 20, reachedAtMs: 9000, moves: 30 },
            { id: 'second', finished: true, rank: 2, cleared: 28, reachedAtMs: 0, moves: 50 },
            { id: 'fast', finished: false, rank: null, cleared: 20, reachedAtMs: 4000, moves: 40 },
            { id: 'lean', finished: false, rank: null, cleared: 20, reachedAtMs: 4000, moves: 35 },
            { id: 'first', finished: true, rank: 1, cleared: 28, reachedAtMs: 0, moves: 60 },
            { id: 'tieA', finished: false, rank: null, cleared: 3, reachedAtMs: 100, moves: 5 },
            { id: 'tieB', finished: false, rank: null, cleared: 3, reachedAtMs: 100, moves: 5 },
            { id: 'most', finished: false, rank: null, cleared: 25, reachedAtMs: 20000, moves: 99 },
          ];
          return sortByStanding(items, (item) => item).map((item) => item.id);
        }"""
    )
    await page.close()
    assert ordered == ["first", "second", "most", "lean", "fast", "slow", "tieA", "tieB"]


async def test_the_pages_and_the_terminal_client_sort_every_standing_alike(site: Site) -> None:
    """standing.js and client_cli.state.by_standing on the same random rooms, ties included."""
    rng = random.Random(20261201)
    rooms = []
    for _ in range(300):
        players = []
        ranks = iter(range(1, 9))
        for index in range(rng.randint(2, 8)):
            finished = rng.random() < 0.3
            players.append(Opponent(
                player_id=f"p{index}", name=f"p{index}",
                cleared=28 if finished else rng.choice((0, 3, 3, 12, 20, 27)),
                cleared_at_ms=rng.choice((0, 100, 100, 4000, 9000)),
                moves=rng.choice((5, 5, 30, 41)),
                finish_ms=rng.randint(1, 99_999) if finished else None,
                rank=next(ranks) if finished else None,
            ))
        rooms.append(players)
    page = await webutil.new_page(site.browser, webutil.DESKTOP)
    await page.goto(f"{site.server.url}/")
    by_page = await page.evaluate(
        """async (rooms) => {
          const { sortByStanding } = await import('/static/js/standing.js');
          return rooms.map((items) => sortByStanding(items, (item) => item).map((i) => i.id));
        }""",
        [[{"id": p.player_id, "finished": p.finish_ms is not None, "rank": p.rank,
           "cleared": p.cleared, "reachedAtMs": p.cleared_at_ms, "moves": p.moves}
          for p in players] for players in rooms],
    )
    await page.close()
    by_client = [[p.player_id for p in by_standing(players)] for players in rooms]
    assert by_page == by_client
    # The cases hold ties the last key does not break (the given order then decides).
    assert any(len({(p.cleared, p.cleared_at_ms, p.moves) for p in players if p.rank is None})
               < sum(p.rank is None for p in players) for players in rooms)
