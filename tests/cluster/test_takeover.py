"""A room's owner dies (kill -9) or stalls (SIGSTOP past its lease): another node takes the
room over from its log in Redis, the bots race on, and exactly one race is stored with
every move any bot saw acknowledged."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

from client_cli.bot import BotSettings, RaceResults, run_bots
from protocol.wire import codec
from protocol.wire import messages as m
from server.cluster import keys
from server.cluster.directory import Directory
from tests.cluster.clusterutil import Cluster, Node, eventually, get_json, running_cluster

#: Runs of the kill -9 test (the issue asks for a p99 over repeated runs; two cores here).
RUNS = 3
RESUME_BOUND_S = 10.0


class Seen:
    """Every move_result the bots received, with when."""

    def __init__(self) -> None:
        self.moves: dict[str, list[tuple[int, bool]]] = {}
        self.accepted_at: list[float] = []

    def __call__(self, bot: str, direction: str, frame: bytes) -> None:
        if direction != "received":
            return
        message = codec.decode_server(frame, codec.Encoding.MSGPACK)
        if isinstance(message, m.MoveResult):
            self.moves.setdefault(bot, []).append((message.seq, message.accepted))
            if message.accepted:
                self.accepted_at.append(time.monotonic())

    def first_accepted_after(self, moment: float) -> float:
        return min(t for t in self.accepted_at if t > moment) - moment


def _race(cluster: Cluster, seen: Seen, index: int) -> asyncio.Task[RaceResults]:
    assert cluster.nginx is not None
    settings = BotSettings(
        min_players=3, on_frame=seen, reconnect_s=60.0, step_timeout_s=60.0, seed=index,
        name_prefix=f"r{index}b",
    )
    options = m.RoomOptions(countdown_s=0, undo=m.UndoPolicy.OFF)
    return asyncio.create_task(
        run_bots(cluster.nginx.ws_url, 3, host=True, pace=3.0, options=options,
                 settings=settings)
    )


async def _owner_once_racing(cluster: Cluster, seen: Seen, race: asyncio.Task[Any]) -> Node:
    """The node holding the race, once every bot has had a few moves answered."""
    while len(seen.moves) < 3 or min(len(v) for v in seen.moves.values()) < 4:
        assert not race.done(), race.result()
        await asyncio.sleep(0.05)
    owners = [n for n in cluster.nodes.values() if n.process.poll() is None
              and (n.events("race_started"))]
    assert owners, "no node logged the race's start"
    return max(owners, key=lambda n: n.events("race_started")[-1]["ts"])


async def _stored(cluster: Cluster) -> list[dict[str, Any]]:
    for node in cluster.nodes.values():
        if node.process.poll() is None:
            body = await get_json(f"{node.url}/api/races?limit=100")
            return list(body["races"])
    raise AssertionError("no node is up")


async def _check_acknowledged(cluster: Cluster, results: RaceResults, seen: Seen) -> None:
    assert results.ok, results.errors
    assert results.race_over is not None
    node = next(n for n in cluster.nodes.values() if n.process.poll() is None)
    record = await get_json(f"{node.url}/api/races/{results.race_over.race_id}")
    by_player = {bot.player_id: bot.name for bot in results.bots}
    for player in record["players"]:
        logged = {(e["seq"], e["accepted"]) for e in player["log"] if e["seq"]}
        acknowledged = set(seen.moves[by_player[player["player_id"]]])
        assert acknowledged <= logged, player["name"]


async def test_kill_9_of_the_owner_mid_race_the_race_resumes_on_another_node_within_ten_s(
    tmp_path: Path, postgres_url: str
) -> None:
    async with running_cluster(tmp_path, postgres_url) as cluster:
        gaps, race_ids = [], set()
        for run in range(RUNS):
            seen = Seen()
            race = _race(cluster, seen, run)
            owner = await _owner_once_racing(cluster, seen, race)
            owner.kill()
            killed = time.monotonic()
            results = await asyncio.wait_for(race, 240)
            await _check_acknowledged(cluster, results, seen)
            gaps.append(seen.first_accepted_after(killed))
            assert results.race_over is not None
            race_ids.add(results.race_over.race_id)
            taken = [e for n in cluster.nodes.values() if n is not owner
                     for e in n.events("room_taken_over")]
            assert taken, "no node logged the takeover"
            await cluster.restart(owner.node_id)
        stored = await _stored(cluster)
        assert len(stored) == RUNS and {r["race_id"] for r in stored} == race_ids
        print(f"kill -9 to first accepted move on the new owner, s: {gaps}")
        assert max(gaps) <= RESUME_BOUND_S, gaps


async def test_a_stalled_owner_is_fenced_out_and_no_second_copy_of_the_race_exists(
    tmp_path: Path, postgres_url: str
) -> None:
    lease_s = 4.0
    async with running_cluster(tmp_path, postgres_url, extra=(f"--lease-s={lease_s}",)) as cluster:
        seen = Seen()
        race = _race(cluster, seen, 0)
        owner = await _owner_once_racing(cluster, seen, race)
        code = owner.events("room_created")[-1]["room"]
        directory = Directory.connect(cluster.redis.url)
        try:
            old_value = await directory.redis.get(keys.owner(code))
            assert old_value is not None and old_value.startswith(owner.node_id + ":")
            owner.signal(signal.SIGSTOP)
            stopped = time.monotonic()

            async def taken_elsewhere() -> bool:
                value = await directory.redis.get(keys.owner(code))
                return value is not None and value != old_value

            await eventually(taken_elsewhere, timeout=lease_s + 6)
            await asyncio.sleep(max(0.0, lease_s + 2 - (time.monotonic() - stopped)))
            owner.signal(signal.SIGCONT)
            new_value = await directory.redis.get(keys.owner(code))
            # The old owner's epoch writes nothing any more.
            assert await directory.append([(code, old_value, 1, 10**6, ["{}"])]) == [code]
            assert all(index != 10**6 for index, _e, _d in await directory.read_log(code))
            results = await asyncio.wait_for(race, 240)
        finally:
            await directory.close()
        await _check_acknowledged(cluster, results, seen)
        fenced = owner.events("room_fenced") + owner.events("input_log_fenced")
        assert fenced, "the old owner never noticed it had lost the room"
        assert new_value is not None and not new_value.startswith(owner.node_id + ":")
        health = await get_json(f"{owner.url}/healthz")
        assert health["rooms"] == 0  # the old owner holds no copy of the room
        stored = await _stored(cluster)
        assert results.race_over is not None
        assert [r["race_id"] for r in stored] == [results.race_over.race_id]
