"""The Redis side of the cluster, against a real redis-server: claims, leases, fences,
listings, sessions, and what an unreachable Redis looks like."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from protocol.wire import messages as m
from server.cluster import keys
from server.cluster.directory import Directory, RedisUnavailable, Tick
from server.cluster.node import listing_json, read_listing
from server.race.room import Room
from server.race.room_types import Identity, RoomTimings
from tests.cluster.clusterutil import RedisServer, free_port

LEASE_MS = 1000


@pytest.fixture
async def directory(redis_server: RedisServer) -> AsyncIterator[Directory]:
    found = Directory.connect(redis_server.url)
    yield found
    await found.close()


def _tick(node: str, owned: dict[str, str], **more: object) -> Tick:
    return Tick(node, f"/n/{node}/ws", 1_000_000, LEASE_MS, owned, **more)  # type: ignore[arg-type]


async def test_a_code_is_claimed_by_one_node_only_and_each_claim_raises_its_epoch(
    directory: Directory,
) -> None:
    assert await directory.claim(["AAAAAA", "BBBBBB"], "a", LEASE_MS) == {
        "AAAAAA": 1, "BBBBBB": 1
    }
    assert await directory.claim(["AAAAAA", "CCCCCC"], "b", LEASE_MS) == {"CCCCCC": 1}
    await directory.tick(_tick("a", {}, released={"AAAAAA": "a:1"}))
    assert await directory.claim(["AAAAAA"], "b", LEASE_MS) == {"AAAAAA": 2}


async def test_a_lease_renewed_holds_and_a_taken_over_one_fences_the_old_owner_out(
    directory: Directory,
) -> None:
    await directory.claim(["AAAAAA"], "a", LEASE_MS)
    for _ in range(3):
        await asyncio.sleep(LEASE_MS / 2000)
        answer = await directory.tick(_tick("a", {"AAAAAA": "a:1"}))
        assert answer.lost == ()
    assert await directory.takeover("AAAAAA", "b", LEASE_MS) == (0, "a:1")
    await asyncio.sleep(LEASE_MS / 1000 + 0.3)  # a stalls past its lease
    assert await directory.takeover("AAAAAA", "b", LEASE_MS) == (2, "b:2")
    answer = await directory.tick(_tick("a", {"AAAAAA": "a:1"}))
    assert answer.lost == ("AAAAAA",)
    located = await directory.locate_room("AAAAAA")
    assert (located.node, located.epoch, located.url) == ("b", 2, None)


async def test_a_lease_lost_with_redis_is_taken_back_by_its_owner(
    redis_server: RedisServer, directory: Directory
) -> None:
    await directory.claim(["AAAAAA"], "a", LEASE_MS)
    await directory.redis.flushall()  # what a Redis restarted without its data looks like
    answer = await directory.tick(_tick("a", {"AAAAAA": "a:1"}))
    assert answer.lost == ()
    assert await directory.redis.get(keys.owner("AAAAAA")) == "a:1"


async def test_listings_and_sessions_are_found_from_any_node_and_expire_with_their_node(
    directory: Directory,
) -> None:
    room = Room("AAAAAA", m.RoomOptions(public=True, name="x"), Identity("p1", "ann", False),
                123, RoomTimings())
    await directory.claim(["AAAAAA"], "a", LEASE_MS)
    session_key = keys.session("secret-token")
    answer = await directory.tick(_tick(
        "a", {"AAAAAA": "a:1"}, listed={"AAAAAA": listing_json(room)},
        sessions={session_key: "AAAAAA"},
    ))
    assert answer.listed == 1
    (listed,) = [read_listing(text) for text in answer.listings]
    assert listed is not None and listed.summary == room.summary() and listed.created_ms == 123
    found = await directory.locate_session("secret-token")
    assert (found.code, found.node, found.url) == ("AAAAAA", "a", "/n/a/ws")
    assert "secret-token" not in str(await directory.redis.keys("*"))
    # A node that stops refreshing is dropped from every listing.
    later = Tick("b", "/n/b/ws", 1_000_000 + 9000, LEASE_MS, {})
    assert (await directory.tick(later)).listings == ()


async def test_an_unreachable_redis_is_one_clear_error() -> None:
    lost = Directory.connect(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(RedisUnavailable, match="redis"):
        await lost.locate_room("AAAAAA")
    await lost.close()
