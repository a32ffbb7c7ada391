"""A spectator's catch-up in a room without delay: the progress and boards are the race's
current ones, made when asked (the feed keeps marks of them), and never a newer race's
while that race's own frames are still held back from its players."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import DRAW, Rules
from protocol.wire import messages as m
from server.config import Settings
from server.hub import Hub
from server.hub_rooms import RoomHandle
from server.race.room import Room
from server.race.room_types import Fresh, Identity
from server.race.spectate import LIVE_KINDS, SpectatorFeed
from server.storage.store import RaceStore

T0 = int(time.time() * 1000)


@pytest.fixture
async def hub() -> AsyncIterator[Hub]:
    store = await RaceStore.connect("sqlite:///:memory:")
    made = Hub(Settings(), store, None, None)  # type: ignore[arg-type]
    yield made
    made.flushes.close()
    await store.close()


def _racing_room(hub: Hub) -> RoomHandle:
    players = [Identity("ann", "Ann"), Identity("bob", "Bob")]
    room = Room("ROOM01", m.RoomOptions(countdown_s=0), players[0], T0, hub.timings)
    room.join(players[1], m.Role.PLAYER, T0)
    room.set_ready("bob", True)
    room.join(Identity("sam", "Sam"), m.Role.SPECTATOR, T0)
    room.start("ann", T0, Fresh(seed="catch-up", race_id="race-1"))
    handle = RoomHandle(room, SpectatorFeed(0, live=LIVE_KINDS))
    hub.lobby.rooms[room.code] = room
    hub.handles[room.code] = handle
    hub.run(handle, room.deal_ready(1, deal_for_seed("catch-up", Rules()), T0))
    assert room.phase is m.Phase.RACING
    return handle


def _moves(handle: RoomHandle, hub: Hub, count: int, at: int) -> None:
    race = handle.room.race
    assert race is not None
    game = race.racers["ann"].game
    for _ in range(count):
        move = game.legal_moves()[0]
        action = m.MoveAction.DRAW if move == DRAW else m.MoveAction.PLAY
        seq = race.racers["ann"].last_seq + 1
        _, outputs = handle.room.answer_move(
            "ann", seq, action, None if move == DRAW else int(move), at
        )
        hub.run(handle, outputs)


def _flush(hub: Hub) -> None:
    """Every progress flush filed, now."""
    for slot_ms, filed in hub.flushes.take():
        hub._flush_slot(max(slot_ms, hub.now_ms()), filed)


async def test_a_catch_up_shows_the_race_as_it_stands_not_as_last_flushed(hub: Hub) -> None:
    handle = _racing_room(hub)
    _moves(handle, hub, 1, T0 + 100)
    _flush(hub)  # the flush of move 1
    _moves(handle, hub, 3, T0 + 200)  # not flushed yet
    frames = hub.catch_up(handle)
    kinds = [type(frame).__name__ for frame in frames]
    assert kinds == ["RaceStart", "Progress", "SpectatorBoard", "SpectatorBoard"]
    progress = frames[1]
    assert isinstance(progress, m.Progress)
    assert {line.player_id: line.moves for line in progress.players} == {"ann": 4, "bob": 0}
    ann = next(f for f in frames if isinstance(f, m.SpectatorBoard) and f.player_id == "ann")
    assert ann.view.moves == 4


async def test_a_catch_up_shows_nothing_of_a_race_whose_start_is_still_held(hub: Hub) -> None:
    handle = _racing_room(hub)
    _moves(handle, hub, 2, T0 + 100)
    _flush(hub)
    # The room has moved on to a race whose race_start the feed has not released
    # (held while the last result is written): its marks are left out, and the
    # race it did release is all a late spectator gets.
    handle.room.race_id = "race-2"
    frames = hub.catch_up(handle)
    assert [type(frame).__name__ for frame in frames] == ["RaceStart"]
    start = frames[0]
    assert isinstance(start, m.RaceStart) and start.race_id == "race-1"
