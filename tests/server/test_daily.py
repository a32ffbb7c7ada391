"""The daily deal: one deal a UTC day, committed at once, revealed when the day is over."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import aiohttp
import pytest
import sqlalchemy as sa

from protocol.deals.commitment import verify_commitment, verify_deal
from protocol.deals.dealer import DealtGame, Difficulty, deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from server.daily import DailyPlayed, DailyService
from server.race.daily import (
    DAY_MS,
    Attempt,
    DayError,
    daily_options,
    day_end_ms,
    day_of,
    day_start_ms,
    leaderboard,
)
from server.race.records import RaceRecord
from server.race.room_types import Identity
from server.storage.store import RaceStore
from tests.server.storage.test_store import make_record
from tests.server.test_players import hello, new_key
from tests.serverutil import TestClient, connect, running_server

NOON = day_start_ms("2031-03-14") + DAY_MS // 2


def test_days_are_utc_dates_and_end_at_the_next_midnight() -> None:
    assert day_of(0) == "1970-01-01"
    assert day_of(day_start_ms("2024-02-29") + DAY_MS - 1) == "2024-02-29"
    assert day_of(day_end_ms("2024-02-29")) == "2024-03-01"
    assert day_of(day_end_ms("1999-12-31")) == "2000-01-01"


@pytest.mark.parametrize("text", ["2023-02-29", "2024-13-01", "24-01-01", "1969-12-31", "x"])
def test_a_day_that_is_no_date_is_refused(text: str) -> None:
    with pytest.raises(DayError):
        day_start_ms(text)


def test_a_daily_attempt_keeps_the_default_rules_and_is_solo_and_unwatched() -> None:
    options = daily_options(m.RoomOptions(daily=True, countdown_s=0))
    assert options.rules == Rules() and options.countdown_s == 0
    assert not options.allow_spectators and not options.public
    with pytest.raises(ProtocolError) as refused:
        daily_options(m.RoomOptions(daily=True, wrap=False))
    assert refused.value.code is ErrorCode.INVALID_COMBINATION and refused.value.path == "wrap"


def attempt(race_id: str, *, finish: int | None, cleared: int, moves: int,
            bot: bool = False, ranked: bool = True) -> Attempt:
    return Attempt(race_id, race_id, bot, ranked, "finished" if finish else "stuck", finish,
                   cleared, moves, 0)


def test_the_leaderboard_ranks_finishers_by_time_then_cleared_cards_then_moves() -> None:
    attempts = [
        attempt("slow", finish=90_000, cleared=28, moves=40),
        attempt("fast", finish=60_000, cleared=28, moves=50),
        attempt("most", finish=None, cleared=25, moves=60),
        attempt("fewer", finish=None, cleared=20, moves=30),
        attempt("thrifty", finish=None, cleared=20, moves=29),
        attempt("guest", finish=10_000, cleared=28, moves=10, ranked=False),
        attempt("robot", finish=1_000, cleared=28, moves=10, bot=True),
    ]
    humans = [a.race_id for a in leaderboard(attempts, "humans")]
    assert humans == ["fast", "slow", "most", "thrifty", "fewer"]
    assert [a.race_id for a in leaderboard(attempts, "bots")] == ["robot"]


# ---- on a real server ---------------------------------------------------------------
async def get(session: aiohttp.ClientSession, url: str) -> tuple[int, dict[str, object]]:
    async with session.get(url) as response:
        return response.status, await response.json()


async def resigned_attempt(ws_url: str, name: str) -> tuple[TestClient, m.RaceStart, m.RaceOver]:
    """``name`` opens a daily attempt, starts it and resigns; what it was shown."""
    client = await connect(ws_url, name)
    state = await client.request(m.CreateRoom(m.RoomOptions(daily=True, countdown_s=0)),
                                 m.RoomState)
    assert state.options.daily and not state.options.allow_spectators
    start = await client.request(m.Start(), m.RaceStart)
    over = await client.request(m.Resign(), m.RaceOver)
    return client, start, over


async def test_the_days_deal_stays_secret_until_midnight_and_then_checks(tmp_path) -> None:
    async with running_server(tmp_path) as server, aiohttp.ClientSession() as http:
        server.hub.shift_clock(NOON - server.hub.now_ms())
        status, today = await get(http, server.url + "/api/daily")
        assert status == 200 and today["day"] == "2031-03-14" and not today["revealed"]
        assert "seed" not in today and "deal" not in today
        client, start, over = await resigned_attempt(server.ws_url, "ann")
        assert start.commitment == today["commitment"] and not start.practice
        assert over.daily == "2031-03-14"
        assert (over.seed, over.candidate, over.deal, over.solution) == (None,) * 4
        race_id = over.race_id
        status, listed = await get(http, server.url + "/api/races")
        assert status == 200 and race_id not in {r["race_id"] for r in listed["races"]}  # type: ignore[union-attr]
        status, hidden = await get(http, f"{server.url}/api/races/{race_id}")
        assert status == 403 and "2031-03-14" in str(hidden["error"])
        status, board = await get(http, server.url + "/api/daily/2031-03-14/leaderboard")
        assert status == 200 and "race_id" not in str(board)
        status, _ = await get(http, server.url + "/api/daily/2031-03-15")
        assert status == 404
        await client.close()

        server.hub.shift_clock(DAY_MS // 2)  # midnight: the day is over
        status, day = await get(http, server.url + "/api/daily/2031-03-14")
        assert status == 200 and day["revealed"]
        seed, candidate = str(day["seed"]), int(day["candidate"])  # type: ignore[call-overload]
        assert verify_commitment(str(day["commitment"]), seed, Rules())
        dealt = deal_for_seed(seed, Rules())
        deal = m.DealCodes(**{k: tuple(v) if isinstance(v, list) else v  # type: ignore[arg-type]
                              for k, v in day["deal"].items()})  # type: ignore[union-attr]
        assert verify_deal(deal.to_deal(Rules()), seed, candidate)
        assert deal.to_deal(Rules()) == dealt.deal
        assert m.BoardView.from_view(_start_view(dealt)) == start.view
        status, record = await get(http, f"{server.url}/api/races/{race_id}")
        assert status == 200 and record["seed"] == seed
        status, listed = await get(http, server.url + "/api/races")
        assert race_id in {r["race_id"] for r in listed["races"]}  # type: ignore[union-attr]
        status, today = await get(http, server.url + "/api/daily")
        assert today["day"] == "2031-03-15" and today["commitment"] != day["commitment"]


def _start_view(dealt):  # type: ignore[no-untyped-def]
    from protocol.rules.game import Game

    return Game(dealt.deal).view()


async def test_a_daily_attempt_takes_nobody_else_and_no_option_changes(tmp_path) -> None:
    async with running_server(tmp_path) as server:
        host = await connect(server.ws_url, "ann")
        state = await host.request(m.CreateRoom(m.RoomOptions(daily=True)), m.RoomState)
        other = await connect(server.ws_url, "bea")
        refused = await other.request(m.Join(state.code), m.Error)
        assert refused.code == ErrorCode.DAILY_SOLO
        refused = await other.request(m.Join(state.code, m.Role.SPECTATOR), m.Error)
        assert refused.code == ErrorCode.DAILY_SOLO
        refused = await host.request(m.UpdateOptions(m.RoomOptions()), m.Error)
        assert refused.code == ErrorCode.DAILY_SOLO
        bad = await other.request(m.CreateRoom(m.RoomOptions(daily=True, practice_seed="1")),
                                  m.Error)
        assert bad.code == ErrorCode.INVALID_COMBINATION
        await host.close()
        await other.close()


# ---- the store's side, on SQLite and PostgreSQL ---------------------------------------
@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    """The same tests on a fresh SQLite file and on a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'races.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


async def deal_here(seed: str, rules: Rules, difficulty: Difficulty) -> DealtGame:
    return deal_for_seed(seed, rules, difficulty)


async def test_a_claimed_name_gets_one_attempt_a_day_and_a_guest_any_number(db_url) -> None:
    store = await RaceStore.connect(db_url)
    clock = Clock(NOON)
    try:
        daily = DailyService(store, deal_here, clock)
        ann = Identity("p1", "Ann")
        day, dealt = await daily.begin(ann, "race-1", "ann")
        assert day == "2031-03-14" and dealt.deal == deal_for_seed(
            (await daily.day_row(day)).seed, Rules()).deal
        with pytest.raises(DailyPlayed):
            await daily.begin(Identity("p2", "ANN"), "race-2", "ann")
        for n in range(2):
            await daily.begin(Identity(f"g{n}", "guest"), f"guest-{n}", None)
        clock.now_ms += DAY_MS
        day, _ = await daily.begin(ann, "race-3", "ann")  # a new day, a new attempt
        assert day == "2031-03-15"
        # Another server on the same database shares the day's seed.
        again = DailyService(store, deal_here, clock)
        assert (await again.day_row(day)).seed == (await daily.day_row(day)).seed
    finally:
        await store.close()


async def test_results_fill_the_attempt_with_the_race_and_stay_hidden_until_midnight(
    db_url,
) -> None:
    store = await RaceStore.connect(db_url)
    clock = Clock(NOON)
    try:
        daily = DailyService(store, deal_here, clock)
        for name, finish, cleared in (("ann", 70_000, 28), ("bea", 50_000, 28),
                                      ("cy", None, 20), ("dee", None, 25)):
            await daily.begin(Identity(name, name), f"race-{name}", name)
            await store.save_race(daily_record(f"race-{name}", name, finish, cleared))
        await daily.begin(Identity("g", "guest"), "race-guest", None)
        board = await daily.board("2031-03-14")
        assert [e["name"] for e in board["humans"]] == ["bea", "ann", "dee", "cy"]
        assert board["unranked"] == 1 and "race_id" not in str(board)
        listed = await store.list_races(limit=100, hide_daily_from=daily.today())
        assert listed == [] and await daily.race_hidden("race-ann") == "2031-03-14"
        clock.now_ms += DAY_MS // 2
        assert await daily.race_hidden("race-ann") is None
        board = await daily.board("2031-03-14")
        assert board["humans"][0]["race_id"] == "race-bea"
        listed = await store.list_races(limit=100, hide_daily_from=daily.today())
        assert len(listed) == 4
    finally:
        await store.close()


def daily_record(race_id: str, name: str, finish: int | None, cleared: int) -> RaceRecord:
    """A stored daily attempt by ``name`` (its deal does not matter to the leaderboard)."""
    base = make_record(race_id)
    player = replace(base.players[0], player_id=name, name=name, rank=1,
                     status="finished" if finish else "stuck", finish_ms=finish,
                     cleared=cleared, moves=40)
    return replace(base, options={**base.options, "daily": True}, players=(player,))


# ---- claimed names on a real server ----------------------------------------------------
async def test_a_claimed_name_plays_the_daily_once_ranked_and_its_profile_hides_it_till_midnight(
    tmp_path,
) -> None:
    key = new_key()
    async with running_server(tmp_path) as server, aiohttp.ClientSession() as http:
        server.hub.shift_clock(NOON - server.hub.now_ms())
        ann, welcome = await hello(server.ws_url, "Ann", key)
        assert isinstance(welcome, m.Welcome)
        await ann.request(m.CreateRoom(m.RoomOptions(daily=True, countdown_s=0)), m.RoomState)
        await ann.request(m.Start(), m.RaceStart)
        over = await ann.request(m.Resign(), m.RaceOver)
        await ann.close()
        # Another connection proving the same name, spelt otherwise, is refused a second go.
        again, _ = await hello(server.ws_url, "ＡＮＮ", key)
        await again.request(m.CreateRoom(m.RoomOptions(daily=True, countdown_s=0)), m.RoomState)
        refused = await again.request(m.Start(), m.Error)
        assert refused.code == ErrorCode.DAILY_PLAYED and "2031-03-14" in refused.message
        states = [f for f in again.frames if isinstance(f, m.RoomState)]
        assert states[-1].phase is m.Phase.LOBBY
        await again.close()
        # A guest of another name plays unranked, as often as they like.
        for _ in range(2):
            guest, _, _ = await resigned_attempt(server.ws_url, "Bea")
            await guest.close()
        status, board = await get(http, server.url + "/api/daily/2031-03-14/leaderboard")
        assert status == 200 and board["unranked"] == 2
        assert [e["name"] for e in board["humans"]] == ["Ann"]  # type: ignore[index]
        for _ in range(50):  # the result is written just after race_over
            status, profile = await get(http, server.url + "/api/players/ann")
            if profile["races"] == 1:
                break
            await asyncio.sleep(0.05)
        assert status == 200 and profile["races"] == 1
        assert profile["recent_races"] == [] and over.race_id not in str(profile)

        server.hub.shift_clock(DAY_MS // 2)  # midnight
        status, profile = await get(http, server.url + "/api/players/ann")
        recent = profile["recent_races"]
        assert [r["race_id"] for r in recent] == [over.race_id]  # type: ignore[union-attr]
        assert profile["rating"]["rated_races"] == 0  # type: ignore[index]


async def test_an_attempt_the_store_refuses_to_register_is_not_dealt_and_not_counted(
    tmp_path,
) -> None:
    refuse = sa.text("CREATE TRIGGER no_room BEFORE INSERT ON daily_attempts "
                     "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    key = new_key()
    async with running_server(tmp_path) as server:
        server.hub.shift_clock(NOON - server.hub.now_ms())
        async with server.hub.store.writing() as conn:
            await conn.execute(refuse)
        ann, _ = await hello(server.ws_url, "Ann", key)
        await ann.request(m.CreateRoom(m.RoomOptions(daily=True, countdown_s=0)), m.RoomState)
        refused = await ann.request(m.Start(), m.Error)
        assert refused.code == ErrorCode.DAILY_UNAVAILABLE
        assert not any(isinstance(f, m.RaceStart) for f in ann.frames)
        states = [f for f in ann.frames if isinstance(f, m.RoomState)]
        assert states[-1].phase is m.Phase.LOBBY
        async with server.hub.store.writing() as conn:
            await conn.execute(sa.text("DROP TRIGGER no_room"))
        # Nothing was counted: the claimed name starts its one attempt now.
        start = await ann.request(m.Start(), m.RaceStart)
        over = await ann.request(m.Resign(), m.RaceOver)
        assert over.daily == "2031-03-14" and start.commitment == over.commitment
        await ann.close()
