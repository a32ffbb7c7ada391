"""Subprotocol choice, the life-cycle table, and the purity of the protocol package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from protocol.wire import codec, lifecycle
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode
from protocol.wire.lifecycle import (
    PHASE_TRANSITIONS,
    RACER_TRANSITIONS,
    LifecycleError,
    PhaseEvent,
    RacerEvent,
    next_phase,
    next_status,
    refusal,
    transition_rows,
)
from protocol.wire.messages import Phase, PlayerStatus, Role

ROOT = Path(__file__).resolve().parents[3]


# ---- subprotocols ------------------------------------------------------------
def test_a_client_that_offers_no_subprotocol_gets_msgpack_of_version_1() -> None:
    assert codec.choose_subprotocol([]) == codec.SUBPROTOCOL_MSGPACK_V1
    assert codec.choose_subprotocol([""]) == codec.SUBPROTOCOL_MSGPACK_V1
    assert codec.encoding_for(None) is codec.Encoding.MSGPACK_V1


def test_the_first_supported_subprotocol_in_the_clients_order_wins() -> None:
    offered = ["chat.v2", " tripeaks.v1.json", "tripeaks.v2.msgpack"]
    assert codec.choose_subprotocol(offered) == codec.SUBPROTOCOL_JSON_V1
    assert codec.encoding_for(codec.SUBPROTOCOL_JSON_V1) is codec.Encoding.JSON_V1
    assert codec.encoding_for(codec.SUBPROTOCOL_JSON) is codec.Encoding.JSON
    assert codec.choose_subprotocol(["tripeaks.v2.msgpack", "tripeaks.v1.msgpack"]) == (
        codec.SUBPROTOCOL_MSGPACK
    )


def test_a_client_offering_only_unknown_subprotocols_gets_none() -> None:
    assert codec.choose_subprotocol(["tripeaks.v3.msgpack", "graphql-ws"]) is None


def test_encode_returns_bytes_for_msgpack_and_text_for_json() -> None:
    ping = m.Ping(12)
    assert isinstance(codec.encode(ping, "msgpack"), bytes)
    assert codec.encode(ping, codec.Encoding.JSON) == '{"t":"ping","client_time_ms":12}'


# ---- the life-cycle table -------------------------------------------------------
def test_every_client_message_is_allowed_somewhere_and_no_server_message_is() -> None:
    cells = [lifecycle.BEFORE_HELLO, lifecycle.OUTSIDE_ROOM, *lifecycle.ALLOWED.values()]
    everywhere = frozenset().union(*cells)
    assert everywhere == set(m.CLIENT_MESSAGES)
    assert everywhere >= lifecycle.HOST_ONLY


def test_the_table_has_a_row_for_every_phase_and_role() -> None:
    assert set(lifecycle.ALLOWED) == {(p, r) for p in Phase for r in Role}


def test_only_hello_is_allowed_before_hello() -> None:
    assert refusal("hello", False, None, None) is None
    for tag in m.CLIENT_MESSAGES:
        if tag != "hello":
            assert refusal(tag, False, None, None) is ErrorCode.HELLO_REQUIRED


def test_a_second_hello_is_refused_everywhere() -> None:
    assert refusal("hello", True, None, None) is ErrorCode.ALREADY_HELLO
    assert refusal("hello", True, Phase.RACING, Role.PLAYER) is ErrorCode.ALREADY_HELLO


def test_outside_a_room_one_can_create_join_list_and_ping_only() -> None:
    for tag in ("create_room", "join", "list_rooms", "ping"):
        assert refusal(tag, True, None, None) is None
    for tag in ("leave", "ready", "move", "start", "sync", "rematch"):
        assert refusal(tag, True, None, None) is ErrorCode.NOT_IN_ROOM


def test_joining_or_creating_again_inside_a_room_is_refused() -> None:
    for tag in ("create_room", "join"):
        assert refusal(tag, True, Phase.LOBBY, Role.PLAYER) is ErrorCode.ALREADY_IN_ROOM


def test_moves_are_allowed_only_to_players_while_racing() -> None:
    for phase in Phase:
        expected = None if phase is Phase.RACING else ErrorCode.NOT_ALLOWED_NOW
        assert refusal("move", True, phase, Role.PLAYER) is expected
        assert refusal("move", True, phase, Role.SPECTATOR) is ErrorCode.NOT_ALLOWED_NOW


def test_host_messages_need_the_host() -> None:
    for tag in ("start", "kick", "update_options"):
        assert refusal(tag, True, Phase.LOBBY, Role.PLAYER, is_host=True) is None
        assert refusal(tag, True, Phase.LOBBY, Role.PLAYER, is_host=False) is ErrorCode.NOT_HOST


def test_the_host_may_change_options_in_the_lobby_and_between_races_only() -> None:
    for phase in Phase:
        expected = None if phase in (Phase.LOBBY, Phase.FINISHED) else ErrorCode.NOT_ALLOWED_NOW
        assert refusal("update_options", True, phase, Role.PLAYER, is_host=True) is expected


def test_the_phase_is_checked_before_host_rights() -> None:
    assert refusal("start", True, Phase.RACING, Role.PLAYER, is_host=False) is (
        ErrorCode.NOT_ALLOWED_NOW
    )


def test_spectators_may_only_leave_sync_list_and_ping() -> None:
    for phase in Phase:
        assert lifecycle.ALLOWED[phase, Role.SPECTATOR] == {"leave", "sync", "list_rooms", "ping"}


def test_rematch_is_allowed_only_when_the_race_is_finished() -> None:
    for phase in Phase:
        expected = None if phase is Phase.FINISHED else ErrorCode.NOT_ALLOWED_NOW
        assert refusal("rematch", True, phase, Role.PLAYER) is expected


def test_allowed_answers_the_same_table() -> None:
    assert lifecycle.allowed(False, None, None) == {"hello"}
    assert lifecycle.allowed(True, None, None) == lifecycle.OUTSIDE_ROOM
    assert lifecycle.allowed(True, Phase.RACING, Role.PLAYER) == (
        lifecycle.ALLOWED[Phase.RACING, Role.PLAYER]
    )


# ---- phase and racer-status transitions ------------------------------------------------
def test_a_phase_change_the_table_does_not_hold_is_refused() -> None:
    for phase in Phase:
        for event in PhaseEvent:
            if (phase, event) in PHASE_TRANSITIONS:
                assert next_phase(phase, event) is PHASE_TRANSITIONS[phase, event]
                continue
            with pytest.raises(LifecycleError) as refused:
                next_phase(phase, event)
            assert (refused.value.state, refused.value.event) == (phase, event)
            assert f"{phase.value!r} on {event.value!r}" in str(refused.value)


def test_a_racer_status_change_the_table_does_not_hold_is_refused() -> None:
    for status in PlayerStatus:
        for event in RacerEvent:
            if (status, event) in RACER_TRANSITIONS:
                assert next_status(status, event) is RACER_TRANSITIONS[status, event]
                continue
            with pytest.raises(LifecycleError):
                next_status(status, event)


def test_a_racer_who_finished_resigned_left_or_timed_out_never_changes_status() -> None:
    final = {PlayerStatus.FINISHED, PlayerStatus.RESIGNED, PlayerStatus.LEFT,
             PlayerStatus.TIMED_OUT}
    assert not {status for status, _ in RACER_TRANSITIONS} & final
    assert {status for status, _ in RACER_TRANSITIONS} == {PlayerStatus.RACING,
                                                          PlayerStatus.STUCK}


def test_every_phase_is_reached_and_left_by_some_transition() -> None:
    assert {phase for phase, _ in PHASE_TRANSITIONS} == set(Phase)
    assert set(PHASE_TRANSITIONS.values()) == set(Phase)


def test_the_transition_tables_render_as_one_row_per_transition() -> None:
    rows = transition_rows()
    table = "\n".join(
        ["| from | event | to |", "|---|---|---|", *(f"| {a} | {e} | {b} |" for a, e, b in rows)]
    )
    assert len(rows) == len(PHASE_TRANSITIONS) + len(RACER_TRANSITIONS) == len(set(rows))
    for (phase, event), after in PHASE_TRANSITIONS.items():
        assert f"| {phase.value} | {event.value} | {after.value} |" in table
    for (status, racer_event), racer_after in RACER_TRANSITIONS.items():
        assert f"| {status.value} | {racer_event.value} | {racer_after.value} |" in table
    assert rows[0] == ("lobby", "start", "countdown")


# ---- purity ------------------------------------------------------------------------
FORBIDDEN = {"asyncio", "aiohttp", "textual", "websockets", "time", "random", "socket"}
MINE = [
    "protocol/wire/errors.py", "protocol/wire/schema.py", "protocol/wire/messages.py",
    "protocol/wire/codec.py", "protocol/deals/commitment.py", "protocol/wire/lifecycle.py",
    "protocol/wire/fast.py",
    "tools/docgen.py", "tools/docnotes.py",
]


@pytest.mark.parametrize("module", MINE)
def test_protocol_modules_import_no_io_clock_or_randomness(module: str) -> None:
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & FORBIDDEN
