"""A progress flush written from its rows in one pass (``Hub._send_flush``) writes
exactly what the general path (``Hub.run`` of the flush's outputs, every frame a
message encoded by the codec) writes: the same bytes to the same sockets, and the
same catch-up for a spectator who comes later.

Two hubs hold twin rooms (same deals, same moves, same clock); one sends its
flushes through the one-pass path, the other through ``run``.  Every connection
is a real socket: what each hub wrote is read from the socket's other end.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

import pytest
from aiohttp import web

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import DRAW, Rules
from protocol.wire import messages as m
from protocol.wire.codec import Encoding
from server.config import Settings
from server.hub import Hub
from server.hub_rooms import RoomHandle
from server.race.lobby import NewPlayer
from server.race.room import Room
from server.race.room_types import Fresh, Identity
from server.race.spectate import LIVE_KINDS, SpectatorFeed
from server.storage.store import RaceStore
from server.transport.connection import Connection

#: The twins' races start here (ms): a day ahead of the hubs' clocks, so that every flush
#: is made at the time the test gives, not at the hub's own now.
T0 = int(time.time() * 1000) + 86_400_000
ENCODINGS = (Encoding.MSGPACK, Encoding.JSON, Encoding.MSGPACK_V1, Encoding.JSON_V1)


@dataclass
class Member:
    conn: Connection
    far_end: socket.socket
    player_id: str
    spectator: bool


class _Quiet(asyncio.Protocol):
    """The server side's protocol: it never reads (the test reads the far end)."""


async def _member(hub: Hub, who: Identity, code: str, encoding: Encoding, index: int,
                  updates: bool, spectator: bool) -> Member:
    near, far = socket.socketpair()
    far.setblocking(False)
    transport, _ = await asyncio.get_running_loop().connect_accepted_socket(_Quiet, near)
    conn = Connection(web.WebSocketResponse(), encoding, "127.0.0.1", index, hub.batch,
                      transport)
    hub.hellos.connect(conn)
    if updates:
        hub._ticking.add(conn)  # as a hello asking for it does (server.hub_hello)
    hello = m.Hello(who.name, encoding.version, spectator_update=updates)
    hub.lobby.hello(conn, hello, NewPlayer(who.player_id, f"token-{who.player_id}"), T0)
    session = hub.lobby.session_of(conn)
    assert session is not None
    session.room = code
    return Member(conn, far, who.player_id, spectator)


@dataclass
class Twin:
    hub: Hub
    members: list[Member]

    def handle(self, code: str) -> RoomHandle:
        return self.hub.handles[code]


async def _twin(store: RaceStore, plan: Mapping[str, int], one_pass: bool) -> Twin:
    """A hub with the rooms ``plan`` describes; ``one_pass`` false sends its flushes
    through ``Hub.run`` only."""
    hub = Hub(Settings(), store, None, None)  # type: ignore[arg-type]
    hub.one_pass = one_pass
    members: list[Member] = []
    rng = random.Random(plan["seed"])
    for r in range(plan["rooms"]):
        options = m.RoomOptions(countdown_s=0, spectator_delay_s=plan["delay_s"])
        players = [Identity(f"p{r}-{i}", f"player {i}") for i in range(4)]
        room = Room(f"R{r:03d}", options, players[0], T0, hub.timings)
        for who in players[1:]:
            room.join(who, m.Role.PLAYER, T0)
            room.set_ready(who.player_id, True)
        room.start(players[0].player_id, T0, Fresh(seed=str(r), race_id=f"race-{r}"))
        room.deal_ready(1, deal_for_seed(f"flush-{r}", Rules()), T0)
        assert room.phase is m.Phase.RACING
        hub.lobby.rooms[room.code] = room
        feed: SpectatorFeed[m.ServerMessage] = SpectatorFeed(  # as the hub makes it
            options.spectator_delay_s * 1000, live=LIVE_KINDS
        )
        hub.handles[room.code] = RoomHandle(room, feed)
        for who in players:
            encoding = rng.choice(ENCODINGS)
            members.append(await _member(hub, who, room.code, encoding, len(members), False,
                                         False))
        for s in range(rng.randrange(3)):
            watcher = Identity(f"s{r}-{s}", f"watcher {s}")
            room.join(watcher, m.Role.SPECTATOR, T0)
            encoding = rng.choice(ENCODINGS)
            updates = encoding.version >= 2 and rng.random() < 0.6
            members.append(await _member(hub, watcher, room.code, encoding, len(members),
                                         updates, True))
    return Twin(hub, members)


def _written(member: Member) -> bytes:
    chunks: list[bytes] = []
    while True:
        try:
            chunk = member.far_end.recv(1 << 20)
        except BlockingIOError:
            return b"".join(chunks)
        chunks.append(chunk)


async def _drain(twin: Twin) -> list[bytes]:
    await asyncio.sleep(0)  # a transport may write on a later turn when its buffer is full
    return [_written(member) for member in twin.members]


@pytest.fixture
async def store() -> AsyncIterator[RaceStore]:
    opened = await RaceStore.connect("sqlite:///:memory:")
    yield opened
    await opened.close()


def _play(twins: list[Twin], rng: random.Random, now: int, rounds: int) -> None:
    """The same random legal moves in both twins' rooms (each racer in turn)."""
    first = twins[0]
    for _ in range(rounds):
        for code, handle in first.hub.handles.items():
            race = handle.room.race
            assert race is not None
            for pid, racer in race.racers.items():
                if racer.is_done or rng.random() < 0.4:
                    continue
                legal = racer.game.legal_moves()
                choice = rng.choice(legal) if legal else None
                if choice is None and racer.game.undos < 50 and racer.game.moves:
                    action, position = m.MoveAction.UNDO, None
                elif choice is None:
                    continue
                elif choice == DRAW:
                    action, position = m.MoveAction.DRAW, None
                else:
                    action, position = m.MoveAction.PLAY, int(choice)
                for twin in twins:
                    tw = twin.handle(code)
                    seq = tw.room.race.racers[pid].last_seq + 1  # type: ignore[union-attr]
                    _outcome, outputs = tw.room.answer_move(pid, seq, action, position, now)
                    twin.hub.run(tw, outputs)


def _catch_up(handle: RoomHandle, now: int) -> list[m.ServerMessage]:
    """What a spectator joining ``handle``'s room at ``now`` catches up on."""
    return handle.feed.snapshot(lambda key: handle.room.catch_up_frame(key, now))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("delay_s", [0, 2])
async def test_one_pass_flushes_write_what_the_general_path_writes(
    store: RaceStore, seed: int, delay_s: int
) -> None:
    plan = {"seed": seed, "rooms": 4, "delay_s": delay_s}
    fast = await _twin(store, plan, one_pass=True)
    slow = await _twin(store, plan, one_pass=False)
    twins = [fast, slow]
    rng = random.Random(seed)
    try:
        sent = 0
        for step in range(1, 16):
            now = T0 + step * 300
            _play(twins, rng, now, 1)
            if step == 5:  # some players and spectators go away in both twins
                for twin in twins:
                    for member in twin.members[seed % 3 :: 4]:
                        member.conn.closed = True
            for twin in twins:
                for slot_ms, filed in twin.hub.flushes.take():
                    twin.hub._flush_slot(max(slot_ms, now), filed)
            got_fast, got_slow = await _drain(fast), await _drain(slow)
            assert got_fast == got_slow, f"step {step}"
            sent += sum(map(len, got_fast))
        assert sent > 0
        # Without a delay every flush takes the one pass; with one, the feed holds
        # the frames back and every flush is the general path's.
        one_pass, general = fast.hub.flushes_one_pass, fast.hub.flushes_general
        if delay_s == 0:
            assert one_pass > 0 and general == 0
        else:
            assert one_pass == 0 and general > 0
        assert (slow.hub.flushes_one_pass, slow.hub.flushes_general) == (0, one_pass + general)
        for code, handle in fast.hub.handles.items():  # what a late spectator catches up on
            caught = _catch_up(handle, now)
            assert caught == _catch_up(slow.handle(code), now)
            assert delay_s or any(type(frame) is m.Progress for frame in caught)
    finally:
        for twin in twins:
            for member in twin.members:
                member.conn.transport.close()  # type: ignore[union-attr]
                member.far_end.close()
            twin.hub.flushes.close()
