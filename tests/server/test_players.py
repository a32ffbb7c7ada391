"""Claimed names on a real server: claiming, using and refusing a name, guests, the
limit on wrong keys, the key kept out of logs and other players' frames, and rated races."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import create_async_engine

from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode
from protocol.wire.names import account_of
from server.race.identity import GuessLimiter, GuessLimits, hash_key, key_matches
from server.storage.players import Players
from server.storage.store import RaceStore, driver_url
from tests.serverutil import TestClient, connect, running_server


def new_key() -> str:
    return secrets.token_urlsafe(32)


async def hello(
    ws_url: str, name: str, key: str | None = None
) -> tuple[TestClient, m.ServerMessage]:
    """A connection that said hello with ``key``: the client and the answer (welcome or error)."""
    client = await connect(ws_url, hello=False)
    await client.send(m.Hello(name=name, version=m.PROTOCOL_VERSION, key=key))
    answer = await client.recv()
    if isinstance(answer, m.Welcome):
        client.welcome = answer
    return client, answer


async def refused(ws_url: str, name: str, key: str | None = None) -> int:
    client, answer = await hello(ws_url, name, key)
    await client.close()
    assert isinstance(answer, m.Error), answer
    return answer.code


# ---- names, pure ------------------------------------------------------------------------


def test_names_compare_after_nfkc_and_case_folding() -> None:
    assert account_of("Ann") == account_of("ＡＮＮ") == account_of("ann") == "ann"
    assert account_of("  Ann   Lee ") == "ann lee"
    assert account_of("Straße") == account_of("STRASSE")
    assert account_of("Ann") != account_of("Anne")


@given(st.text(min_size=1, max_size=24))
def test_normalising_a_name_twice_changes_nothing(name: str) -> None:
    assert account_of(account_of(name)) == account_of(name)


def test_a_key_matches_only_its_own_hash_and_the_hash_hides_it() -> None:
    key = new_key()
    stored = hash_key(key, b"s" * 16, n=2**10)
    assert key not in stored and stored.startswith("scrypt$1024$8$1$")
    assert key_matches(key, stored)
    assert not key_matches(new_key(), stored)
    assert not key_matches(key, "bcrypt$whatever")
    assert not key_matches(key, "scrypt$x$8$1$AA==$AA==")


def test_wrong_keys_spend_a_budget_per_name_and_per_address_that_refills() -> None:
    limiter = GuessLimiter(GuessLimits(per_name=2, per_address=3, window_ms=60_000))
    for _ in range(2):
        assert limiter.may_guess("ann", "1.2.3.4", 0)
        limiter.wrong("ann", "1.2.3.4", 0)
    assert not limiter.may_guess("ann", "5.6.7.8", 0)  # the name's budget is spent
    assert limiter.may_guess("bob", "1.2.3.4", 0)
    limiter.wrong("bob", "1.2.3.4", 0)
    assert not limiter.may_guess("cat", "1.2.3.4", 0)  # the address's budget is spent
    assert limiter.may_guess("cat", "9.9.9.9", 0)
    assert limiter.may_guess("ann", "5.6.7.8", 30_000)  # one try back after half the window


# ---- claiming on a real server ----------------------------------------------------------


async def test_a_key_claims_a_free_name_which_then_needs_that_key(tmp_path: Path) -> None:
    key = new_key()
    async with running_server(tmp_path) as server:
        ann, welcome = await hello(server.ws_url, "Ann", key)
        assert isinstance(welcome, m.Welcome) and welcome.name == "Ann"
        state = await ann.request(m.CreateRoom(), m.RoomState)
        assert [member.guest for member in state.members] == [False]
        claim = await Players(server.store).claim_of("ann")
        assert claim is not None and claim.name == "Ann" and key not in claim.key_hash
        # Without the key, and with another, the name is refused in any spelling.
        assert await refused(server.ws_url, "ann") == ErrorCode.NAME_CLAIMED
        assert await refused(server.ws_url, "ＡＮＮ") == ErrorCode.NAME_CLAIMED
        assert await refused(server.ws_url, "ANN", new_key()) == ErrorCode.WRONG_KEY
        again, answer = await hello(server.ws_url, "ANN", key)
        assert isinstance(answer, m.Welcome) and answer.name == "ANN"
        joined = await again.request(m.Join(state.code), m.RoomState)
        # The same player on a second device still sits apart from the first.
        assert [(mb.name, mb.guest) for mb in joined.members] == [
            ("Ann", False), ("ANN (2)", False)
        ]


async def test_a_refused_hello_leaves_the_connection_open_for_another(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        await (await hello(server.ws_url, "Ann", new_key()))[0].close()
        client, answer = await hello(server.ws_url, "Ann")
        assert isinstance(answer, m.Error) and answer.code == ErrorCode.NAME_CLAIMED
        assert "claimed" in answer.message and answer.ref == "hello"
        # Sent back to back, without waiting: the second hello is answered after the first.
        await client.send(m.Hello(name="Ann", version=m.PROTOCOL_VERSION))
        await client.send(m.Hello(name="Annie", version=m.PROTOCOL_VERSION))
        await client.send(m.CreateRoom())
        first, second = await client.recv(), await client.recv()
        assert isinstance(first, m.Error) and first.code == ErrorCode.NAME_CLAIMED
        assert isinstance(second, m.Welcome) and second.name == "Annie"
        state = await client.expect(m.RoomState)
        assert [(mb.name, mb.guest) for mb in state.members] == [("Annie", True)]


async def test_guests_play_as_before_and_are_marked_as_guests(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        host = await connect(server.ws_url, "root")
        state = await host.request(m.CreateRoom(), m.RoomState)
        other = await connect(server.ws_url, "root", bot=True)
        joined = await other.request(m.Join(state.code), m.RoomState)
        assert [(mb.name, mb.bot, mb.guest) for mb in joined.members] == [
            ("root", False, True), ("root (2)", True, True)
        ]
        assert await Players(server.store).claim_of("root") is None


async def test_a_guest_and_a_claimed_player_of_one_name_are_told_apart(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        guest = await connect(server.ws_url, "ann")  # before anyone claimed the name
        state = await guest.request(m.CreateRoom(), m.RoomState)
        owner, _ = await hello(server.ws_url, "Ann", new_key())
        joined = await owner.request(m.Join(state.code), m.RoomState)
        assert [(mb.name, mb.guest) for mb in joined.members] == [
            ("ann", True), ("Ann (2)", False)
        ]


async def test_wrong_keys_are_limited_per_name_then_even_the_right_key_waits(
    tmp_path: Path,
) -> None:
    key = new_key()
    async with running_server(tmp_path) as server:
        await (await hello(server.ws_url, "Ann", key))[0].close()
        for _ in range(GuessLimits().per_name):
            assert await refused(server.ws_url, "Ann", new_key()) == ErrorCode.WRONG_KEY
        assert await refused(server.ws_url, "Ann", new_key()) == ErrorCode.TOO_MANY_GUESSES
        assert await refused(server.ws_url, "Ann", key) == ErrorCode.TOO_MANY_GUESSES
        # Other names are not held up by it (the address still has budget left).
        _bob, answer = await hello(server.ws_url, "Bob", new_key())
        assert isinstance(answer, m.Welcome)


async def test_wrong_keys_from_one_address_are_limited_across_names(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        names = [f"p{i}" for i in range(GuessLimits().per_address + 1)]
        for name in names:
            await (await hello(server.ws_url, name, new_key()))[0].close()
        for name in names[:-1]:
            assert await refused(server.ws_url, name, new_key()) == ErrorCode.WRONG_KEY
        assert await refused(server.ws_url, names[-1], new_key()) == ErrorCode.TOO_MANY_GUESSES


async def test_the_key_is_in_no_log_line_and_no_frame_anyone_else_gets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key, wrong = new_key(), new_key()
    async with running_server(tmp_path, log_level="DEBUG") as server:
        watcher = await connect(server.ws_url, "watcher", encoding="json")
        ann, _ = await hello(server.ws_url, "Ann", key)
        state = await ann.request(m.CreateRoom(), m.RoomState)
        await watcher.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        bob = await connect(server.ws_url, "bob")
        await bob.request(m.Join(state.code), m.RoomState)
        assert await refused(server.ws_url, "Ann", wrong) == ErrorCode.WRONG_KEY
        await bob.send(m.Ready(True))
        while not all(mb.ready for mb in state.members if mb.name == "bob"):
            state = await ann.expect(m.RoomState)
            ann.drop_unread()
        await ann.send(m.Start())
        await bob.expect(m.RaceStart)
        await watcher.expect(m.RaceStart)
        frames = [*watcher.frames, *bob.frames, *ann.frames]
    assert frames
    for secret in (key, wrong):
        for frame in frames:
            assert secret not in codec.encode_json(frame)
        for record in caplog.records:
            assert secret not in record.getMessage()
            assert secret not in repr(getattr(record, "fields", {}))
    assert any(r.getMessage() == "hello" for r in caplog.records)


async def test_a_name_cannot_be_checked_while_the_database_is_down(tmp_path: Path) -> None:
    nowhere = "postgresql://tripeaks@127.0.0.1:1/tripeaks"  # nothing listens on port 1
    down = RaceStore(create_async_engine(driver_url(nowhere)), nowhere)
    async with running_server(tmp_path) as server:
        server.hub.claims.players = Players(down)
        _client, answer = await hello(server.ws_url, "Ann")
        assert isinstance(answer, m.Error) and answer.code == ErrorCode.SERVER_BUSY
        assert "database is unavailable" in answer.message
    await down.close()


async def test_a_race_of_two_claimed_players_is_rated_when_it_is_stored(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        ann, _ = await hello(server.ws_url, "Ann", new_key())
        state = await ann.request(m.CreateRoom(m.RoomOptions(countdown_s=0)), m.RoomState)
        bob, _ = await hello(server.ws_url, "Bob", new_key())
        guest = await connect(server.ws_url, "guest")
        for joiner in (bob, guest):
            await joiner.request(m.Join(state.code), m.RoomState)
            await joiner.send(m.Ready(True))
        while not all(mb.ready for mb in state.members[1:]) or len(state.members) < 3:
            state = await ann.expect(m.RoomState)
            ann.drop_unread()
        await ann.send(m.Start())
        for client in (ann, bob, guest):
            await client.expect(m.RaceStart)
        await guest.send(m.Resign())
        await bob.send(m.Resign())
        await ann.send(m.Resign())
        over = await ann.expect(m.RaceOver)
        record = await server.store.get_race(over.race_id)
        assert record is not None and record.ended_by == "all_done"
        accounts = {p.name: p.account for p in record.players}
        assert accounts == {"Ann": "ann", "Bob": "bob", "guest": None}
        players = Players(server.store)
        for account in ("ann", "bob"):
            profile = await players.profile(account)
            assert profile is not None and profile.rated_races == 1
            assert [point.race_id for point in profile.history] == [over.race_id]
