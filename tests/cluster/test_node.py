"""A node's periodic work against a real redis-server: what it publishes of its sessions,
and what it leaves alone once another node holds the room."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest

from protocol.wire import messages as m
from server.cluster.directory import Directory
from server.cluster.node import ClusterNode
from server.race.room import Room
from server.race.room_types import Identity, RoomTimings
from tests.cluster.clusterutil import RedisServer

LEASE_S = 1.0
CODE = "AAAAAA"
TOKEN = "a-reconnect-token"


class Held:
    """One node's rooms and sessions, as the hub would hand them to its ClusterNode."""

    def __init__(self, redis_url: str, node_id: str) -> None:
        self.rooms: dict[str, Room] = {}
        self.sessions: dict[str, Any] = {}
        self.lost: list[str] = []
        self.node = ClusterNode(
            Directory.connect(redis_url), node_id, LEASE_S, lambda: self.rooms,
            lambda: self.sessions, lambda: int(time.time() * 1000),
        )
        self.node.url = f"/n/{node_id}/ws"
        self.node.on_lost = self.dropped

    def dropped(self, code: str) -> None:
        """What the router does for a lost room: its room and sessions go."""
        self.lost.append(code)
        self.rooms.pop(code, None)
        for token in [t for t, s in self.sessions.items() if s.room == code]:
            del self.sessions[token]

    def seat(self, code: str, token: str) -> None:
        self.rooms[code] = Room(code, m.RoomOptions(), Identity("p1", "ann", False), 0,
                                RoomTimings())
        self.sessions[token] = SimpleNamespace(room=code)


@pytest.fixture
async def nodes(redis_server: RedisServer) -> AsyncIterator[tuple[Held, Held]]:
    pair = Held(redis_server.url, "a"), Held(redis_server.url, "b")
    yield pair
    for held in pair:
        await held.node.directory.close()


async def _locate(held: Held) -> tuple[str | None, str | None]:
    found = await held.node.directory.locate_session(TOKEN)
    return found.code, found.node


async def _taken_over_by_b(a: Held, b: Held) -> None:
    """``a`` holds the room and publishes its seat; its lease runs out; ``b`` takes the room
    and publishes the same seat."""
    a.node.epochs.update(await a.node.directory.claim([CODE], "a", a.node.lease_ms))
    a.seat(CODE, TOKEN)
    await a.node._tick()
    assert await _locate(b) == (CODE, "a")
    await asyncio.sleep(LEASE_S + 0.2)
    epoch, _value = await b.node.directory.takeover(CODE, "b", b.node.lease_ms)
    assert epoch > 0
    b.node.epochs[CODE] = epoch
    b.seat(CODE, TOKEN)
    await b.node._tick()
    assert await _locate(a) == (CODE, "b")


async def test_a_node_that_finds_its_lease_taken_leaves_the_new_owners_seats_findable(
    nodes: tuple[Held, Held],
) -> None:
    a, b = nodes
    await _taken_over_by_b(a, b)
    await a.node._tick()  # a learns that it lost the room ...
    assert a.lost == [CODE] and CODE not in a.node.epochs
    await a.node._tick()  # ... and its next tick has a session less to publish
    await b.node._tick()
    assert await _locate(b) == (CODE, "b")


async def test_a_node_fenced_by_the_input_log_leaves_the_new_owners_seats_findable(
    nodes: tuple[Held, Held],
) -> None:
    a, b = nodes
    await _taken_over_by_b(a, b)
    a.node.give_up(CODE)  # what the router does when the log refuses a's entries
    a.dropped(CODE)
    await a.node._tick()
    assert a.lost == [CODE]
    assert await _locate(b) == (CODE, "b")


async def test_a_session_that_leaves_its_room_is_forgotten_in_redis(
    nodes: tuple[Held, Held],
) -> None:
    a, b = nodes
    a.node.epochs.update(await a.node.directory.claim([CODE], "a", a.node.lease_ms))
    a.seat(CODE, TOKEN)
    await a.node._tick()
    assert await _locate(b) == (CODE, "a")
    del a.sessions[TOKEN]
    await a.node._tick()
    assert await _locate(b) == (None, None)
