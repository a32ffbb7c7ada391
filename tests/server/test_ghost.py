"""Ghost races: a stored run replayed at its recorded times, in the room and on a real server."""

from __future__ import annotations

import time

import pytest

from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode
from server.race.ghost import GHOST_TIMER, GhostError, ghost_options, run_of
from server.race.outputs import DealRequest, LoadGhosts, Output, SaveRace, SetTimer, ToPlayers
from server.race.records import RaceRecord
from server.race.room import Room
from server.race.room_types import Fresh, Identity, RoomTimings
from tests.server.race.roomdriver import DEALT, racing
from tests.serverutil import connect, running_server

#: The recorded run: the winning line, one move every 40 ms from 100 ms.
TIMES = [100 + 40 * i for i in range(len(DEALT.solution))]


def recorded_race() -> RaceRecord:
    """A finished race on seed 42 in which ann (p0) played the winning line at TIMES."""
    driver = racing(1)
    for step, at in zip(DEALT.solution, TIMES, strict=True):
        driver.move("p0", step, at)
    (save,) = [f for f in driver.frames if isinstance(f, SaveRace)]
    return save.record


def ghost_room(record: RaceRecord, start_ms: int = 10_000) -> tuple[Room, list[Output]]:
    """A room racing ann's run, started at ``start_ms``; the outputs of its start."""
    options = m.RoomOptions(countdown_s=0, ghosts=(m.GhostRef(record.race_id, "p0"),))
    room = Room("GHOST1", options, Identity("p9", "bea"), 0, RoomTimings())
    (load, *_) = room.start("p9", start_ms, Fresh("fresh-seed", "race2"))
    assert isinstance(load, LoadGhosts) and load.ghosts == options.ghosts
    run = run_of(record, load.ghosts[0])
    outputs = room.ghosts_ready(load.ticket, [run])
    (request,) = [o for o in outputs if isinstance(o, DealRequest)]
    assert request.seed == "42" and request.chosen
    return room, list(room.deal_ready(request.ticket, DEALT, start_ms))


def timers(outputs: list[Output]) -> list[int]:
    return [o.at_ms for o in outputs if isinstance(o, SetTimer) and o.name == GHOST_TIMER]


def test_a_ghost_moves_at_the_recorded_times_of_its_run() -> None:
    room, outputs = ghost_room(recorded_race(), start_ms=10_000)
    assert room.race is not None
    ghost = room.race.racers["ghost-1"]
    assert timers(outputs) == [10_000 + TIMES[0]]
    now = 10_000 + TIMES[0]
    made = []
    while True:
        made.append(len(ghost.log))
        more = timers(room.on_timer(GHOST_TIMER, now))
        if not more:
            break
        now = more[0]
    assert [e.at_ms for e in ghost.log.entries()] == TIMES
    assert ghost.status is m.PlayerStatus.FINISHED and ghost.finish_ms == TIMES[-1]
    assert made == list(range(len(TIMES)))


def test_the_ghost_is_a_marked_member_and_its_standing_says_ghost() -> None:
    room, _ = ghost_room(recorded_race())
    members = {member.player_id: member for member in room.state(m.Role.PLAYER).members}
    assert members["ghost-1"].ghost and members["ghost-1"].name == "ann"
    assert not members["p9"].ghost
    outputs = room.resign("p9", 10_500)
    (over,) = [o.message for o in outputs if isinstance(o, ToPlayers)
               and isinstance(o.message, m.RaceOver)]
    assert isinstance(over, m.RaceOver)
    by_id = {s.player_id: s for s in over.standings}
    assert by_id["ghost-1"].ghost and not by_id["p9"].ghost
    # Nobody waits for the ghost: its run ends at once, as it really did.
    assert by_id["ghost-1"].status is m.PlayerStatus.FINISHED
    assert by_id["ghost-1"].time_ms == TIMES[-1]
    assert over.practice


def test_a_ghost_race_is_a_practice_race_on_the_runs_rules() -> None:
    record = recorded_race()
    options = m.RoomOptions(undo=m.UndoPolicy.OFF, ghosts=(m.GhostRef(record.race_id, "p0"),))
    raced = ghost_options(options, [run_of(record, options.ghosts[0])])
    assert raced.undo is m.UndoPolicy.PENALTY and raced.practice


def test_a_run_of_a_player_not_in_the_race_cannot_be_raced() -> None:
    with pytest.raises(GhostError, match="no player"):
        run_of(recorded_race(), m.GhostRef("race1", "p7"))


def test_a_run_that_cannot_be_loaded_sends_the_room_back_to_its_lobby() -> None:
    options = m.RoomOptions(countdown_s=0, ghosts=(m.GhostRef("nope", "p0"),))
    room = Room("GHOST1", options, Identity("p9", "bea"), 0, RoomTimings())
    (load, *_) = room.start("p9", 0, Fresh("seed", "race2"))
    assert isinstance(load, LoadGhosts)
    outputs = room.deal_failed(load.ticket, "no stored race has that id",
                               ErrorCode.GHOST_UNAVAILABLE)
    assert room.phase is m.Phase.LOBBY
    errors = [o.message for o in outputs if isinstance(getattr(o, "message", None), m.Error)]
    assert [e.code for e in errors] == [int(ErrorCode.GHOST_UNAVAILABLE)]  # type: ignore[union-attr]


# ---- on a real server ---------------------------------------------------------------
async def test_a_ghost_race_on_a_server_replays_the_run_at_its_recorded_times(tmp_path) -> None:
    record = recorded_race()
    async with running_server(tmp_path, progress_hz=200) as server:
        await server.store.save_race(record)
        client = await connect(server.ws_url, "bea")
        options = m.RoomOptions(countdown_s=0, ghosts=(m.GhostRef(record.race_id, "p0"),))
        await client.request(m.CreateRoom(options), m.RoomState)
        start = await client.request(m.Start(), m.RaceStart)
        arrivals: dict[int, float] = {}  # the ghost's move count -> unix ms it was first seen
        while len(arrivals) < len(TIMES):
            progress = await client.expect(m.Progress)
            client.drop_unread()
            seen = time.time() * 1000
            line = next(p for p in progress.players if p.player_id == "ghost-1")
            for count in range(1, line.moves + 1):
                arrivals.setdefault(count, seen)
        late = [arrivals[i + 1] - (start.started_at_ms + at) for i, at in enumerate(TIMES)]
        # A quiet machine sees them 12 to 23 ms late (each waits for its commit, which
        # starts at most log_commit_gap_s after the one before); the bound leaves room
        # for a loaded one (the whole suite on two cores) and still catches a wrong time.
        assert max(late) < 250 and min(late) > -5, late
        print(f"ghost moves seen {min(late):.1f} to {max(late):.1f} ms after their times")
        members = await client.request(m.Sync(), m.RoomState)
        assert [mb.ghost for mb in members.members] == [False, True]
        over = await client.request(m.Resign(), m.RaceOver)
        assert {s.player_id: s.ghost for s in over.standings} == {
            client.player_id: False, "ghost-1": True}
        assert over.practice
        await client.close()


async def test_a_ghost_that_names_no_stored_race_is_refused_at_the_start(tmp_path) -> None:
    async with running_server(tmp_path) as server:
        client = await connect(server.ws_url, "bea")
        options = m.RoomOptions(countdown_s=0, ghosts=(m.GhostRef("0123456789abcdef", "p0"),))
        await client.request(m.CreateRoom(options), m.RoomState)
        refused = await client.request(m.Start(), m.Error)
        assert refused.code == ErrorCode.GHOST_UNAVAILABLE and "0123456789abcdef" in refused.message
        await client.close()
