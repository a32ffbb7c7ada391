"""Ratings move in the transaction that stores a race, as openskill says, on both back
ends; unrated races move nothing; profiles and the leaderboard read them back."""

from __future__ import annotations

import dataclasses

import pytest
from openskill.models import PlackettLuce

from server.players.ratings import INITIAL, display, is_rated, new_ratings
from server.race.records import RaceRecord
from server.storage.players import Claim, Players
from server.storage.store import RaceStore
from tests.server.storage.test_store import make_record


def race(
    race_id: str,
    seats: list[tuple[str, str | None, bool]],
    *,
    ended_at_ms: int = 1_790_000_090_000,
    **changes: object,
) -> RaceRecord:
    """A stored race whose players are (name, account, is_bot), in rank order."""
    base = make_record(race_id, names=tuple(name for name, _, _ in seats), log_length=2)
    players = tuple(
        dataclasses.replace(p, account=account, is_bot=bot, status="finished",
                            finish_ms=60_000 + 1000 * p.rank)
        for p, (_, account, bot) in zip(base.players, seats, strict=True)
    )
    record = dataclasses.replace(
        base, players=players, ended_by="all_done", ended_at_ms=ended_at_ms,
        started_at_ms=ended_at_ms - 90_000,
    )
    return dataclasses.replace(record, **changes)  # type: ignore[arg-type]


async def claim(store: RaceStore, *accounts: str) -> Players:
    players = Players(store)
    for account in accounts:
        assert await players.claim(Claim(account, account.title(), "scrypt$x"), 1)
    return players


async def test_a_rated_race_moves_ratings_exactly_as_openskill_does(store: RaceStore) -> None:
    players = await claim(store, "ann", "bob", "cat")
    record = race(
        "r1",
        [("Cat", "cat", False), ("bot", None, True), ("Ann", "ann", False),
         ("guest", None, False), ("Bob", "bob", False)],
    )
    await store.save_race(record)
    model = PlackettLuce()
    expected = model.rate([[model.rating()], [model.rating()], [model.rating()]], ranks=[1, 3, 5])
    for account, team in zip(("cat", "ann", "bob"), expected, strict=True):
        profile = await players.profile(account)
        assert profile is not None
        assert profile.rating.mu == pytest.approx(team[0].mu, abs=1e-9)
        assert profile.rating.sigma == pytest.approx(team[0].sigma, abs=1e-9)
        assert profile.rated_races == 1
        assert [(p.race_id, p.at_ms) for p in profile.history] == [("r1", record.ended_at_ms)]
    # A second race starts from the first one's ratings.
    pair = [("Bob", "bob", False), ("Ann", "ann", False)]
    second = race("r2", pair, ended_at_ms=2_000_000_000_000)
    await store.save_race(second)
    before = {a: (await players.profile(a)).rating for a in ("ann", "bob")}  # type: ignore[union-attr]
    ann_bob = model.rate(
        [[model.rating(mu=expected[2][0].mu, sigma=expected[2][0].sigma)],
         [model.rating(mu=expected[1][0].mu, sigma=expected[1][0].sigma)]],
        ranks=[1, 2],
    )
    assert before["bob"].mu == pytest.approx(ann_bob[0][0].mu)
    assert before["ann"].mu == pytest.approx(ann_bob[1][0].mu)


@pytest.mark.parametrize(
    "why",
    ["practice", "aborted", "unknown ending", "one claimed player", "claimed bots", "guests",
     "ghost race", "daily attempt"],
)
async def test_unrated_races_move_no_rating(store: RaceStore, why: str) -> None:
    players = await claim(store, "ann", "bob")
    two = [("Ann", "ann", False), ("Bob", "bob", False)]
    record = {
        "practice": race("u", two, practice=True),
        "aborted": race("u", two, ended_by="aborted"),
        "unknown ending": race("u", two, ended_by=None),
        "one claimed player": race("u", [("Ann", "ann", False), ("x", None, False)]),
        "claimed bots": race("u", [("Ann", "ann", True), ("Bob", "bob", True)]),
        "guests": race("u", [("Ann", None, False), ("Bob", None, False)]),
        # Unrated by their options, even in a record that does not say practice.
        "ghost race": race("u", two, options={
            **make_record().options, "ghosts": [{"race_id": "r0", "player_id": "p1"}]}),
        "daily attempt": race("u", two, options={**make_record().options, "daily": True}),
    }[why]
    assert not is_rated(record)
    await store.save_race(record)
    assert await store.get_race("u") == record
    for account in ("ann", "bob"):
        profile = await players.profile(account)
        assert profile is not None
        assert (profile.rating, profile.rated_races, profile.history) == (INITIAL, 0, ())


async def test_saving_a_rated_race_twice_rates_it_once(store: RaceStore) -> None:
    players = await claim(store, "ann", "bob")
    record = race("twice", [("Ann", "ann", False), ("Bob", "bob", False)])
    await store.save_race(record)
    await store.save_race(record)
    await store.save_races([record, race("other", [("x", None, False)])])
    profile = await players.profile("ann")
    assert profile is not None and profile.rated_races == 1 and len(profile.history) == 1


async def test_a_player_seated_twice_is_rated_once_at_their_best_rank() -> None:
    record = race("d", [("Ann", "ann", False), ("Bob", "bob", False), ("Ann (2)", "ann", False)])
    moved = new_ratings(record, {})
    model = PlackettLuce()
    ann, bob = model.rate([[model.rating()], [model.rating()]], ranks=[1, 2])
    assert moved["ann"].mu == pytest.approx(ann[0].mu)
    assert moved["bob"].mu == pytest.approx(bob[0].mu)


async def test_the_profile_counts_every_race_and_the_leaderboard_orders_by_rating(
    store: RaceStore,
) -> None:
    players = await claim(store, "ann", "bob", "cat")
    for i in range(3):
        await store.save_race(
            race(f"w{i}", [("Ann", "ann", False), ("Bob", "bob", False)],
                 ended_at_ms=1_800_000_000_000 + i)
        )
    practice = race("p", [("Ann", "ann", False)], practice=True)
    loser = dataclasses.replace(practice.players[0], status="stuck", finish_ms=None)
    await store.save_race(dataclasses.replace(practice, players=(loser,)))
    await store.save_race(race("c", [("Cat", "cat", False), ("Ann", "ann", False)]))
    profile = await players.profile("ann")
    assert profile is not None
    figures = profile.figures
    assert (figures.races, figures.wins) == (5, 3)  # a solo race is no win
    assert figures.finish_rate == pytest.approx(4 / 5)
    assert (figures.best_finish_ms, figures.median_finish_ms) == (61_000, 61_000)
    assert profile.recent[0].race_id == "w2"
    assert {r.race_id for r in profile.recent} == {"w0", "w1", "w2", "p", "c"}
    board = await players.leaderboard(min_races=3, limit=10)
    assert [s.account for s in board] == ["ann", "bob"]
    assert board[0].rating.display > board[1].rating.display
    everyone = await players.leaderboard(min_races=0, limit=10)
    assert [s.account for s in everyone][-1] in {"bob", "cat"} and len(everyone) == 3
    assert await players.profile("nobody") is None


def test_the_display_number_is_conservative() -> None:
    assert display(INITIAL.mu, INITIAL.sigma) == 1000
    assert display(30.0, 1.0) == 1000 + 40 * 27
    assert display(25.0, 9.0) < 1000
