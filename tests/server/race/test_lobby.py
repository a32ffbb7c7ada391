"""The lobby's decisions, without sockets: sessions, resume, the room registry, joins, snapshots.

Connections are plain strings here: the lobby only compares them.
"""

from __future__ import annotations

import itertools

import pytest

from protocol.wire import lifecycle
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from server.race.lobby import SERVER_VERSION, Limits, Lobby, NewPlayer
from server.race.outputs import (
    CancelTimer,
    InRoom,
    LobbyOutput,
    Replace,
    Reply,
    Retune,
    RoomOpened,
    Send,
    SetTimer,
    Snapshot,
)
from server.race.room_types import RoomTimings

Outputs = list[LobbyOutput[str]]


def lobby(rooms_per_connection: int = 5, max_rooms: int = 100) -> Lobby[str]:
    return Lobby(Limits(rooms_per_connection, max_rooms), RoomTimings())


def hello(lob: Lobby[str], conn: str, name: str = "ann", token: str | None = None) -> Outputs:
    greeting = m.Hello(name, m.PROTOCOL_VERSION, token)
    return lob.hello(conn, greeting, NewPlayer("p-" + conn, "t-" + conn), 0)


def welcome(outputs: Outputs) -> m.Welcome:
    (reply,) = [out for out in outputs if isinstance(out, Reply)]
    assert isinstance(reply.message, m.Welcome)
    return reply.message


def room_outputs(outputs: Outputs) -> list[object]:
    (in_room,) = [out for out in outputs if isinstance(out, InRoom)]
    return list(in_room.outputs)


def open_room(lob: Lobby[str], conn: str = "c1", **options: object) -> str:
    hello(lob, conn)
    opts = m.RoomOptions(**options)  # type: ignore[arg-type]
    outputs = lob.create_room(conn, opts, iter(["ROOM01", "ROOM02", "ROOM03"]), 1000)
    opened = outputs[0]
    assert isinstance(opened, RoomOpened)
    return opened.code


# ---- hello ---------------------------------------------------------------------------
def test_a_hello_without_a_token_starts_a_new_session_with_the_ids_it_was_given() -> None:
    lob = lobby()
    outputs = hello(lob, "c1", "ann")
    assert outputs == [
        Reply(m.Welcome("p-c1", "ann", "t-c1", False, m.PROTOCOL_VERSION, SERVER_VERSION))
    ]
    session = lob.session_of("c1")
    assert session is not None and session.conn == "c1" and session.room is None
    assert lob.sessions["t-c1"] is session and lob.by_player["p-c1"] is session


def test_a_hello_with_an_unknown_token_starts_a_new_session() -> None:
    lob = lobby()
    assert welcome(hello(lob, "c1", token="nobody-has-this")) == m.Welcome(
        "p-c1", "ann", "t-c1", False, m.PROTOCOL_VERSION, SERVER_VERSION
    )


def test_a_hello_with_a_known_token_resumes_the_session_and_replaces_the_older_connection() -> None:
    lob = lobby()
    hello(lob, "c1", "ann")
    outputs = hello(lob, "c2", "someone else", token="t-c1")
    assert outputs[0] == Replace("c1")
    assert welcome(outputs) == m.Welcome(
        "p-c1", "ann", "t-c1", True, m.PROTOCOL_VERSION, SERVER_VERSION
    )
    assert lob.session_of("c1") is None
    session = lob.session_of("c2")
    assert session is not None and session.conn == "c2"


def test_a_resume_after_the_connection_dropped_replaces_nothing() -> None:
    lob = lobby()
    code = open_room(lob, "c1")
    lob.connection_lost("c1", 2000)
    outputs = hello(lob, "c2", token="t-c1")
    assert not [out for out in outputs if isinstance(out, Replace)]
    assert welcome(outputs).resumed
    resumed = room_outputs(outputs)
    assert resumed[0] == CancelTimer("grace:p-c1")
    assert isinstance(resumed[-1], Send) and isinstance(resumed[-1].message, m.Resync)
    session = lob.session_of("c2")
    assert session is not None and session.room == code


def test_a_resumed_player_who_lost_the_seat_is_outside_any_room() -> None:
    lob = lobby()
    code = open_room(lob, "c1")
    lob.connection_lost("c1", 2000)
    lob.rooms[code].leave("p-c1", 3000)
    outputs = hello(lob, "c2", token="t-c1")
    assert [out for out in outputs if isinstance(out, InRoom)] == []
    session = lob.session_of("c2")
    assert session is not None and session.room is None


# ---- creating rooms ------------------------------------------------------------------
def test_a_room_opens_under_the_first_free_code_and_its_host_gets_the_state() -> None:
    lob = lobby()
    first = open_room(lob, "c1")
    hello(lob, "c2", "bob")
    outputs = lob.create_room("c2", m.RoomOptions(public=True), iter(["ROOM01", "ROOM09"]), 5)
    assert first == "ROOM01"
    assert outputs[0] == RoomOpened("ROOM09", "p-c2", True)
    room = lob.rooms["ROOM09"]
    assert room.version == 1 and room.created_ms == 5
    assert outputs[1:] == [Reply(room.state(m.Role.PLAYER))]
    session = lob.session_of("c2")
    assert session is not None and session.room == "ROOM09"


def test_a_connection_may_create_only_so_many_rooms() -> None:
    lob = lobby(rooms_per_connection=1)
    open_room(lob, "c1")
    with pytest.raises(ProtocolError) as refused:
        lob.create_room("c1", m.RoomOptions(), iter(["ROOM07"]), 0)
    assert refused.value.code is ErrorCode.TOO_MANY_ROOMS
    assert "ROOM07" not in lob.rooms


def test_a_full_server_refuses_new_rooms_as_busy() -> None:
    lob = lobby(max_rooms=1)
    open_room(lob, "c1")
    hello(lob, "c2")
    with pytest.raises(ProtocolError) as refused:
        lob.create_room("c2", m.RoomOptions(), iter(["ROOM07"]), 0)
    assert refused.value.code is ErrorCode.SERVER_BUSY
    assert "try again later" in refused.value.message


def test_a_practice_seed_with_control_characters_is_refused() -> None:
    lob = lobby()
    hello(lob, "c1")
    with pytest.raises(ProtocolError) as refused:
        lob.create_room("c1", m.RoomOptions(practice_seed="4\x072"), iter(["ROOM01"]), 0)
    assert refused.value.code is ErrorCode.BAD_SEED
    assert lob.rooms == {}


def test_creating_a_room_needs_a_hello_first() -> None:
    with pytest.raises(ProtocolError) as refused:
        lobby().create_room("c1", m.RoomOptions(), iter(["ROOM01"]), 0)
    assert refused.value.code is ErrorCode.HELLO_REQUIRED


# ---- joining and syncing -------------------------------------------------------------
def test_a_join_naming_no_open_room_is_refused_with_the_code_as_typed() -> None:
    lob = lobby()
    code = open_room(lob, "c1")
    hello(lob, "c2")
    with pytest.raises(ProtocolError) as refused:
        lob.join("c2", m.Join("zz-zz"), "ZZZZ", 0)
    assert refused.value.code is ErrorCode.ROOM_NOT_FOUND
    assert "'zz-zz'" in refused.value.message
    lob.rooms[code].closed = True
    with pytest.raises(ProtocolError) as closed:
        lob.join("c2", m.Join(code), code, 0)
    assert closed.value.code is ErrorCode.ROOM_NOT_FOUND


def test_a_player_join_carries_out_the_rooms_outputs_only() -> None:
    lob = lobby()
    code = open_room(lob, "c1")
    hello(lob, "c2", "bob")
    outputs = lob.join("c2", m.Join(code.lower()), code, 10)
    assert len(outputs) == 1 and isinstance(outputs[0], InRoom) and outputs[0].code == code
    assert not any(isinstance(out, Snapshot) for out in outputs[0].outputs)
    assert lob.rooms[code].role_of("p-c2") is m.Role.PLAYER
    session = lob.session_of("c2")
    assert session is not None and session.room == code


def test_a_spectator_is_retuned_and_gets_the_snapshot_after_the_rooms_outputs() -> None:
    lob = lobby()
    code = open_room(lob, "c1")
    hello(lob, "c2", "eve")
    outputs = lob.join("c2", m.Join(code, m.Role.SPECTATOR), code, 10)
    assert outputs[0] == Retune("c2", m.Role.SPECTATOR)
    in_room = outputs[1]
    assert isinstance(in_room, InRoom) and in_room.outputs[-1] == Snapshot("p-c2")
    assert lob.rooms[code].role_of("p-c2") is m.Role.SPECTATOR


def test_a_failed_join_leaves_the_session_outside_any_room() -> None:
    lob = lobby()
    code = open_room(lob, "c1", max_players=2)
    hello(lob, "c2", "bob")
    lob.join("c2", m.Join(code), code, 10)
    hello(lob, "c3", "cy")
    with pytest.raises(ProtocolError) as refused:
        lob.join("c3", m.Join(code), code, 10)
    assert refused.value.code is ErrorCode.ROOM_FULL
    session = lob.session_of("c3")
    assert session is not None and session.room is None


def test_a_sync_gives_a_player_the_state_and_a_resync_and_a_spectator_the_snapshot() -> None:
    lob = lobby()
    code = open_room(lob, "c1")
    hello(lob, "c2", "eve")
    lob.join("c2", m.Join(code, m.Role.SPECTATOR), code, 10)
    room = lob.rooms[code]
    player = room_outputs(lob.sync("c1", 20))
    assert player == [
        Send("p-c1", room.state(m.Role.PLAYER)),
        Send("p-c1", room.resync("p-c1", 20)),
    ]
    spectator = room_outputs(lob.sync("c2", 20))
    assert spectator == [Send("p-c2", room.state(m.Role.SPECTATOR)), Snapshot("p-c2")]


def test_a_sync_outside_a_room_is_refused() -> None:
    lob = lobby()
    hello(lob, "c1")
    with pytest.raises(ProtocolError) as refused:
        lob.sync("c1", 0)
    assert refused.value.code is ErrorCode.NOT_IN_ROOM


# ---- losing connections, detaching, closing ----------------------------------------
def test_a_lost_connection_outside_a_room_forgets_its_session() -> None:
    lob = lobby()
    hello(lob, "c1")
    assert lob.connection_lost("c1", 0) == []
    assert lob.sessions == {} and lob.by_player == {} and lob.session_of("c1") is None
    assert not welcome(hello(lob, "c2", token="t-c1")).resumed


def test_a_lost_connection_in_a_room_keeps_the_seat_for_a_resume() -> None:
    lob = lobby()
    code = open_room(lob, "c1")
    lost = room_outputs(lob.connection_lost("c1", 2000))
    assert lost[0] == SetTimer("grace:p-c1", 2000 + RoomTimings().reconnect_grace_ms)
    session = lob.sessions["t-c1"]
    assert session.conn is None and session.room == code
    assert lob.conn_of("p-c1") is None


def test_the_loss_of_a_replaced_connection_changes_nothing() -> None:
    lob = lobby()
    open_room(lob, "c1")
    hello(lob, "c2", token="t-c1")
    assert lob.connection_lost("c1", 0) == []
    assert lob.conn_of("p-c1") == "c2"


def test_a_detached_member_gets_the_player_budget_back_or_is_forgotten_when_gone() -> None:
    lob = lobby()
    code = open_room(lob, "c1")
    assert lob.detach("OTHER1", "p-c1") == []
    assert lob.detach(code, "p-c1") == [Retune("c1", m.Role.PLAYER)]
    session = lob.session_of("c1")
    assert session is not None and session.room is None
    hello(lob, "c2", "bob")
    lob.join("c2", m.Join(code), code, 0)
    lob.connection_lost("c2", 0)
    assert lob.detach(code, "p-c2") == []
    assert "t-c2" not in lob.sessions and "p-c2" not in lob.by_player


def test_a_forgotten_room_frees_its_code() -> None:
    lob = lobby()
    code = open_room(lob, "c1")
    lob.forget_room(code)
    assert code not in lob.rooms
    hello(lob, "c9")
    opened = lob.create_room("c9", m.RoomOptions(), iter([code]), 0)[0]
    assert opened == RoomOpened(code, "p-c9", False)


# ---- the life cycle and the listings -------------------------------------------------
def test_refusals_follow_the_life_cycle_table() -> None:
    lob = lobby()
    assert lob.refusal("c1", "create_room") is ErrorCode.HELLO_REQUIRED
    assert lob.refusal("c1", "hello") is None
    code = open_room(lob, "c1")
    assert lob.refusal("c1", "hello") is ErrorCode.ALREADY_HELLO
    assert lob.refusal("c1", "join") is ErrorCode.ALREADY_IN_ROOM
    assert lob.refusal("c1", "start") is None
    hello(lob, "c2", "bob")
    assert lob.refusal("c2", "sync") is ErrorCode.NOT_IN_ROOM
    lob.join("c2", m.Join(code), code, 0)
    assert lob.refusal("c2", "start") is ErrorCode.NOT_HOST
    assert lob.refusal("c2", "move") is ErrorCode.NOT_ALLOWED_NOW


def test_move_allowed_agrees_with_the_table_for_every_phase_and_role() -> None:
    for phase, role in itertools.product(m.Phase, [*m.Role, None]):
        expected = lifecycle.refusal("move", True, phase, role) is None
        assert lifecycle.move_allowed(phase, role) is expected, (phase, role)
    assert lifecycle.move_allowed(m.Phase.RACING, m.Role.PLAYER)


def test_public_rooms_are_listed_newest_first_and_every_phase_is_counted() -> None:
    lob = lobby()
    for n, public in enumerate([True, False, True]):
        conn = f"c{n}"
        hello(lob, conn)
        lob.create_room(conn, m.RoomOptions(public=public), iter([f"ROOM0{n}"]), n)
    assert [room.code for room in lob.public_rooms()] == ["ROOM02", "ROOM00"]
    assert lob.rooms_by_state() == {"lobby": 3, "countdown": 0, "racing": 0, "finished": 0}


def test_a_spectator_resuming_with_the_token_is_retuned_and_caught_up_in_the_same_room() -> None:
    lob = lobby()
    code = open_room(lob, "c1")
    token = welcome(hello(lob, "c2", "eve")).token
    lob.join("c2", m.Join(code, m.Role.SPECTATOR), code, 10)
    dropped = room_outputs(lob.connection_lost("c2", 20))
    assert dropped == [SetTimer("grace:p-c2", 20 + RoomTimings().reconnect_grace_ms)]
    outputs = hello(lob, "c3", "eve", token)
    assert welcome(outputs).resumed and welcome(outputs).player_id == "p-c2"
    assert Retune("c3", m.Role.SPECTATOR) in outputs
    room = lob.rooms[code]
    assert room_outputs(outputs) == [
        CancelTimer("grace:p-c2"), Send("p-c2", room.state(m.Role.SPECTATOR)), Snapshot("p-c2")
    ]
    assert lob.room_of("c3") is room and room.role_of("p-c2") is m.Role.SPECTATOR


def test_a_session_names_the_connection_that_maps_to_it_and_only_that_one() -> None:
    """``Session.conn`` is ``c`` exactly while ``by_conn[c]`` is the session: the move fast
    path (``server.hub.MoveRoute``) trusts a kept session on that alone."""
    lob = lobby()

    def holds() -> None:
        for session in [*lob.sessions.values(), *lob.restored.values()]:
            if session.conn is not None:
                assert lob.by_conn.get(session.conn) is session
        for conn, session in lob.by_conn.items():
            assert session.conn == conn

    code = open_room(lob, "c1")
    hello(lob, "c2", "bob")
    lob.join("c2", m.Join(code), code, 1000)
    holds()
    token = welcome(hello(lob, "c3", "ann", token="t-c1")).token  # ann again, on c3
    assert token == "t-c1"
    holds()
    lob.connection_lost("c2", 2000)
    holds()
    kept = lob.session_of("c3")
    assert kept is not None
    lob.drop_sessions(code)  # another node holds the room now
    holds()
    assert kept.conn is None and lob.session_of("c3") is None
