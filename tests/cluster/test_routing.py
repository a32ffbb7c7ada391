"""Three nodes behind nginx: rooms are found from any node, and listed on every node."""

from __future__ import annotations

import asyncio
from pathlib import Path

import websockets
from websockets.typing import Subprotocol

from client_cli.bot import BotSettings, run_bots
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode
from tests.cluster.clusterutil import Cluster, eventually, room_codes, running_cluster
from tests.serverutil import TestClient


async def _client(url: str, name: str, token: str | None = None) -> TestClient:
    ws = await websockets.connect(
        url, subprotocols=[Subprotocol(codec.SUBPROTOCOL_JSON)], proxy=None
    )
    client = TestClient(ws, codec.Encoding.JSON)
    await client.send(m.Hello(name, m.PROTOCOL_VERSION, token))
    return client


async def _host_room(cluster: Cluster, public: bool = False) -> tuple[TestClient, str]:
    host = await _client(cluster.node(0).ws_url, "ann")
    await host.expect(m.Welcome)
    await host.send(m.CreateRoom(m.RoomOptions(public=public, name="ann's")))
    state = await host.expect(m.RoomState)
    return host, state.code


async def test_a_join_through_another_node_is_sent_to_the_owner_and_the_race_finishes(
    tmp_path: Path, postgres_url: str
) -> None:
    async with running_cluster(tmp_path, postgres_url) as cluster:
        a, b = cluster.node(0), cluster.node(1)
        results_task = asyncio.create_task(run_bots(
            a.ws_url, 1, host=True, settings=BotSettings(min_players=2, name_prefix="host"),
        ))
        for _ in range(200):
            if a.events("room_created"):
                break
            await asyncio.sleep(0.05)
        code = a.events("room_created")[0]["room"]
        # Asked on node b directly, the answer names a's path behind nginx.
        raw = await _client(b.ws_url, "probe")
        await raw.expect(m.Welcome)
        await raw.send(m.Join(code))
        moved = await raw.expect(m.Moved)
        assert moved == m.Moved(f"/n/{a.node_id}/ws", "join", code)
        await raw.ws.close()
        # A bot sent to b follows the redirect (through nginx) and races.
        assert cluster.nginx is not None
        b_path = cluster.nginx.ws_url.replace("/ws", f"/n/{b.node_id}/ws")
        joiner = await run_bots(b_path, 1, room=code, settings=BotSettings(name_prefix="joiner"))
        hosted = await results_task
        assert joiner.ok and hosted.ok, (joiner.errors, hosted.errors)
        assert hosted.race_over is not None
        assert {s.name for s in hosted.race_over.standings} == {"host1", "joiner1"}
        assert b.events("moved") and not b.events("room_created")


async def test_a_code_no_node_holds_is_not_found_and_error_203_names_a_lost_redis(
    tmp_path: Path, postgres_url: str
) -> None:
    async with running_cluster(tmp_path, postgres_url, nginx=False) as cluster:
        client = await _client(cluster.node(2).ws_url, "cy")
        await client.expect(m.Welcome)
        await client.send(m.Join("QQQQQQ"))
        error = await client.expect(m.Error)
        assert error.code == ErrorCode.ROOM_NOT_FOUND
        cluster.redis.kill()
        await client.send(m.Join("QQQQQQ"))
        error = await client.expect(m.Error)
        assert error.code == ErrorCode.CLUSTER_UNAVAILABLE and error.ref == "join"
        assert "try again" in error.message


async def test_thirty_public_rooms_over_three_nodes_are_listed_on_every_node(
    tmp_path: Path, postgres_url: str
) -> None:
    async with running_cluster(tmp_path, postgres_url) as cluster:
        hosts: list[TestClient] = []
        created: set[str] = set()
        for i in range(30):
            node = cluster.node(i % 3)
            host = await _client(node.ws_url, f"host{i}")
            await host.expect(m.Welcome)
            await host.send(m.CreateRoom(m.RoomOptions(public=True, name=f"room {i}")))
            created.add((await host.expect(m.RoomState)).code)
            hosts.append(host)
        assert len(created) == 30

        async def all_listed() -> bool:
            for node in cluster.nodes.values():
                if await room_codes(node.url) != created:
                    return False
            return True

        await eventually(all_listed, timeout=10)
        assert cluster.nginx is not None
        assert await room_codes(cluster.nginx.url) == created
        # list_rooms on a node says the same as its GET /api/rooms.
        asker = await _client(cluster.node(1).ws_url, "asker")
        await asker.expect(m.Welcome)
        await asker.send(m.ListRooms())
        listed = await asker.expect(m.RoomList)
        assert {room.code for room in listed.rooms} == created
        for host in hosts:
            await host.ws.close()
