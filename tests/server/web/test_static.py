"""The spectator pages' own code, in a real Chromium, against the Python reference.

These tests serve only the web routes (no game server): the in-browser
seed commitment and deal rebuild must match :mod:`protocol` byte for byte,
the replay engine must match :class:`protocol.rules.game.Game`, and cards must be
drawn with their spoken labels and face-down cards must carry nothing else.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from playwright.async_api import Browser, Page

from protocol.deals.commitment import commitment
from protocol.deals.shuffle import candidate_deal, shuffled_deck
from protocol.rules.cards import card_code
from protocol.rules.game import Game, Rules
from server.web import CONTENT_SECURITY_POLICY, add_web_routes
from tests import webutil


@pytest.fixture
async def web_url() -> AsyncIterator[str]:
    """The web routes alone, on an ephemeral port of 127.0.0.1."""
    app = web.Application()
    add_web_routes(app)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with webutil.open_browser() as chromium:
        yield chromium


@pytest.fixture
async def page(browser: Browser, web_url: str) -> Page:
    """A page on the server's origin, where the modules can be imported."""
    page = await webutil.new_page(browser)
    await page.goto(f"{web_url}/races/none")
    return page


async def test_pages_come_with_a_content_security_policy_and_modules_as_javascript(
    web_url: str,
) -> None:
    async with aiohttp.ClientSession() as http:
        for path in ("/", "/watch/ABC234", "/races/0123abcd"):
            async with http.get(web_url + path) as response:
                assert response.status == 200
                assert response.content_type == "text/html"
                assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
                assert "<main" in await response.text()
        for path in ("/static/js/watch.js", "/static/js/cards.js", "/static/css/site.css"):
            async with http.get(web_url + path) as response:
                assert response.status == 200
                assert response.headers["X-Content-Type-Options"] == "nosniff"
        async with http.get(web_url + "/static/js/ws.js") as response:
            # Browsers refuse to run a module served with any other type.
            assert response.content_type in {"text/javascript", "application/javascript"}


async def test_malformed_room_codes_and_race_ids_get_a_plain_404(web_url: str) -> None:
    async with aiohttp.ClientSession() as http:
        for path in ("/watch/NO%20SUCH", "/watch/" + "A" * 17, "/races/a.b", "/static/nope.js"):
            async with http.get(web_url + path) as response:
                assert response.status == 404, path


async def test_the_browser_commitment_matches_python_byte_for_byte(page: Page) -> None:
    seeds = ["42", "dev-seed-1", "ünïcødé ♠ seed", "a b=c", "x" * 64, "-7", "日本語のシード"]
    cases = [
        (seed, wrap, empty) for seed in seeds for wrap in (True, False) for empty in (True, False)
    ]
    digests = await page.evaluate(
        """async (cases) => {
            const { commitment } = await import("/static/js/commitment.js");
            return Promise.all(cases.map(([seed, wrap, empty]) =>
                commitment(seed, { wrap, empty_waste: empty })));
        }""",
        [list(case) for case in cases],
    )
    expected = [
        commitment(seed, Rules(wrap=wrap, empty_waste=empty)) for seed, wrap, empty in cases
    ]
    assert digests == expected


async def test_the_browser_rebuilds_the_same_deal_from_seed_and_candidate(page: Page) -> None:
    cases = [("42", 0), ("42", 1), ("dev-seed-1", 0), ("ünïcødé ♠", 7), ("z" * 64, 2**40 + 3)]
    decks = await page.evaluate(
        """async (cases) => {
            const { shuffledDeck } = await import("/static/js/commitment.js");
            return Promise.all(cases.map(([seed, candidate]) => shuffledDeck(seed, candidate)));
        }""",
        [list(case) for case in cases],
    )
    assert decks == [[card_code(c) for c in shuffled_deck(s, n)] for s, n in cases]
    deal = candidate_deal("42", 3, Rules(empty_waste=True)).codes()
    verdicts = await page.evaluate(
        """async (deal) => {
            const { dealMatches } = await import("/static/js/commitment.js");
            const rules = { wrap: true, empty_waste: true };
            const peaks = [deal.peaks[1], deal.peaks[0], ...deal.peaks.slice(2)];
            return [
                await dealMatches("42", 3, rules, deal),
                await dealMatches("42", 3, rules, { ...deal, peaks }),
                await dealMatches("42", 4, rules, deal),
            ];
        }""",
        deal,
    )
    assert verdicts == [True, False, False]


def _random_line(seed: int) -> tuple[dict[str, Any], list[int | str], list[dict[str, Any]]]:
    """A random legal game with undos, and the Python engine's view after each move."""
    rng = random.Random(seed)
    deal = candidate_deal(str(seed), 0, Rules(wrap=seed % 2 == 0))
    game = Game(deal)
    moves: list[int | str] = []
    views = []
    for _ in range(60):
        legal = game.legal_moves()
        if not legal:
            break
        if game.history and rng.random() < 0.15:
            game.undo()
            moves.append("undo")
        else:
            move = rng.choice(legal)
            game.push(move)
            moves.append(move)
        view = game.view()
        views.append(
            {"board": list(view.board), "waste_top": view.waste_top, "stock_left": view.stock_left}
        )
    codes = deal.codes()
    codes["wrap"] = deal.rules.wrap
    return codes, moves, views


async def test_the_replay_engine_shows_what_the_python_engine_shows(page: Page) -> None:
    for seed in range(6):
        deal, moves, expected = _random_line(seed)
        views = await page.evaluate(
            """async ([deal, moves]) => {
                const { Game } = await import("/static/js/engine.js");
                const game = new Game(deal);
                return moves.map((move) => {
                    game.push(move);
                    const { board, waste_top, stock_left } = game.view();
                    return { board, waste_top, stock_left };
                });
            }""",
            [deal, moves],
        )
        assert views == expected, f"seed {seed}"


async def test_the_replay_engine_refuses_a_move_the_rules_forbid(page: Page) -> None:
    deal = candidate_deal("42", 0, Rules()).codes()
    message = await page.evaluate(
        """async (deal) => {
            const { Game } = await import("/static/js/engine.js");
            try { new Game(deal).play(0); return "accepted"; } catch (e) { return e.message; }
        }""",
        deal,
    )
    assert message == "position 0 is still covered"


async def test_cards_are_labelled_and_face_down_cards_carry_nothing_but_their_back(
    page: Page,
) -> None:
    bottom = ["QH", "TD", None, "AS", "2C", "??", "KS", "9H", "3D", "JC"]
    board: list[str | None] = ["??"] * 18 + bottom
    drawn = await page.evaluate(
        """async (board) => {
            const { BoardView } = await import("/static/js/board.js");
            const view = new BoardView("Test");
            document.body.append(view.root);
            view.update({ board, waste_top: "7S", stock_left: 1 });
            const spots = [...view.root.querySelectorAll(".spot")];
            const label = (css) => view.root.querySelector(css).getAttribute("aria-label");
            return {
                labels: spots.map((s) => s.firstChild.getAttribute("aria-label")),
                downHtml: spots.filter((s) => s.dataset.state === "down").map((s) => s.innerHTML),
                waste: label("[data-pile=waste] .card"),
                stock: label("[data-pile=stock] .card"),
                positions: spots.map((s) => Number(s.dataset.pos)),
            };
        }""",
        board,
    )
    assert drawn["labels"][18:] == [
        "Queen of hearts",
        "Ten of diamonds",
        None,
        "Ace of spades",
        "Two of clubs",
        "face-down card",
        "King of spades",
        "Nine of hearts",
        "Three of diamonds",
        "Jack of clubs",
    ]
    assert drawn["labels"][:18] == ["face-down card"] * 18
    assert set(drawn["downHtml"]) == {
        '<div class="card face-down" role="img" aria-label="face-down card"></div>'
    }
    assert drawn["waste"] == "waste: Seven of spades"
    assert drawn["stock"] == "stock: 1 card left"
    assert drawn["positions"] == list(range(28))
