"""What a cluster does when a part of it dies: Redis (kill -9, then back), or a node."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import redis.asyncio as aioredis
import websockets
from websockets.typing import Subprotocol

from client_cli.bot import BotSettings, run_bots
from protocol.wire import codec
from protocol.wire import messages as m
from server.cluster import keys
from tests.cluster.clusterutil import Cluster, eventually, get_json, room_codes, running_cluster
from tests.serverutil import TestClient


async def _public_rooms(cluster: Cluster, per_node: int) -> tuple[list[TestClient], set[str]]:
    hosts, codes = [], set()
    for index in range(3):
        for i in range(per_node):
            ws = await websockets.connect(
                cluster.node(index).ws_url, subprotocols=[Subprotocol(codec.SUBPROTOCOL_JSON)],
                proxy=None,
            )
            host = TestClient(ws, codec.Encoding.JSON)
            await host.send(m.Hello(f"h{index}{i}", m.PROTOCOL_VERSION))
            await host.expect(m.Welcome)
            await host.send(m.CreateRoom(m.RoomOptions(public=True)))
            codes.add((await host.expect(m.RoomState)).code)
            hosts.append(host)
    return hosts, codes


async def _stored_listings(url: str) -> set[str]:
    """The codes of every listing Redis holds."""
    client = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        found = set()
        for key in await client.keys(keys.PREFIX + "node:*:rooms"):
            found |= set(await client.hkeys(key))
        return found
    finally:
        await client.aclose()


async def _listed_everywhere(cluster: Cluster, codes: set[str]) -> bool:
    for node in cluster.nodes.values():
        if node.process.poll() is None and await room_codes(node.url) != codes:
            return False
    return True


async def test_races_go_on_while_redis_is_killed_and_the_list_is_whole_soon_after_its_restart(
    tmp_path: Path, postgres_url: str
) -> None:
    async with running_cluster(tmp_path, postgres_url) as cluster:
        hosts, codes = await _public_rooms(cluster, 2)
        await eventually(lambda: _listed_everywhere(cluster, codes), timeout=10)
        assert cluster.nginx is not None
        # A race across nodes: hosted on the first node, joined through nginx.
        a = cluster.node(0)
        race = asyncio.create_task(run_bots(
            a.ws_url, 2, host=True, pace=6.0, settings=BotSettings(min_players=2),
        ))
        async def racing() -> bool:
            return bool(a.events("race_started"))

        await eventually(racing, timeout=30)
        cluster.redis.kill()

        async def degraded() -> bool:
            return bool((await get_json(f"{a.url}/healthz"))["status"] == "degraded")

        await eventually(degraded, timeout=10)
        health = await get_json(f"{a.url}/healthz")
        assert health["cluster"]["redis"] == "unavailable" and health["cluster"]["reason"]
        # While Redis is away every node still lists what it knows.
        assert await room_codes(a.url) >= codes
        results = await race
        assert results.ok, results.errors
        assert results.race_over is not None and results.race_over.ended_by is m.RaceEnd.ALL_DONE
        # The worst case: Redis comes back without any of its data.
        shutil.rmtree(cluster.redis.root)
        cluster.redis.start()
        restarted = time.monotonic()

        async def whole() -> bool:
            for node in cluster.nodes.values():
                if (await get_json(f"{node.url}/healthz"))["status"] != "ok":
                    return False
            stored = await _stored_listings(cluster.redis.url)
            return stored == codes and await _listed_everywhere(cluster, codes)

        await eventually(whole, timeout=10)
        assert time.monotonic() - restarted <= 10
        for host in hosts:
            await host.ws.close()


async def test_a_dead_node_with_idle_rooms_leaves_every_list_within_ten_seconds(
    tmp_path: Path, postgres_url: str
) -> None:
    async with running_cluster(tmp_path, postgres_url, nginx=False) as cluster:
        hosts, codes = await _public_rooms(cluster, 3)
        await eventually(lambda: _listed_everywhere(cluster, codes), timeout=10)
        victim = cluster.node(2)
        theirs = {entry["room"] for entry in victim.events("room_created")}
        assert len(theirs) == 3 and theirs <= codes
        victim.kill()
        killed = time.monotonic()
        expected = codes - theirs

        async def gone() -> bool:
            for index in (0, 1):
                if await room_codes(cluster.node(index).url) != expected:
                    return False
            return True

        await eventually(gone, timeout=10, step=0.2)
        assert time.monotonic() - killed <= 10
        assert len(expected) == 6
        for host in hosts:
            await host.ws.close()
