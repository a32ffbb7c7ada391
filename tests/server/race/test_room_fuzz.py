"""Random sequences of everything clients and timers can do to a room: no crash, sane state."""

from __future__ import annotations

import random

import pytest

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import messages as m
from protocol.wire.errors import ProtocolError
from server.race.outputs import DealRequest, FlushDue, Output, SetTimer
from server.race.room import Room
from server.race.room_types import Fresh, Identity, RoomTimings
from tests.server.race.test_core import FLUSH

DEALT = deal_for_seed("fuzz", Rules())
PLAYERS = [Identity(f"p{n}", f"player{n}") for n in range(5)]


def check_invariants(room: Room) -> None:
    assert room.host_id is None or room.host_id in room.seats
    assert (room.host_id is None) == (not room.seats)
    assert not set(room.seats) & room.spectators
    assert room.spectators_away <= room.spectators
    if room.phase is m.Phase.RACING:
        assert room.race is not None and not room.race.over
    if room.race is not None:
        for racer in room.race.racers.values():
            assert 0 <= racer.game.cleared <= 28


@pytest.mark.parametrize("seed", range(40))
def test_any_sequence_of_inputs_leaves_the_room_consistent(seed: int) -> None:
    rng = random.Random(seed)
    options = m.RoomOptions(
        countdown_s=rng.choice([0, 1]),
        undo=rng.choice(list(m.UndoPolicy)),
        max_players=rng.choice([2, 3, 8]),
        time_limit_s=rng.choice([0, 5]),
    )
    room = Room("ABCDEF", options, PLAYERS[0], 0, RoomTimings(reconnect_grace_ms=300))
    timers: dict[str, int] = {}
    deals: list[DealRequest] = []
    seqs: dict[str, int] = {}
    now = 0

    def apply(outputs: list[Output]) -> None:
        for out in outputs:
            if isinstance(out, SetTimer):
                timers[out.name] = out.at_ms
            elif isinstance(out, FlushDue):
                timers[FLUSH] = out.at_ms
            elif isinstance(out, DealRequest):
                deals.append(out)

    for guest in PLAYERS[1 : rng.randrange(1, 5)]:
        apply(room.join(guest, m.Role.PLAYER, 0) if len(room.seats) < options.max_players else [])
        apply(room.set_ready(guest.player_id, True) if guest.player_id in room.seats else [])
    for _ in range(300):
        now += rng.choice([0, 1, 10, 100, 400])
        who = rng.choice(PLAYERS).player_id
        choice = rng.randrange(13)
        # Bias towards what keeps a race going, so that races really run.
        if room.phase is m.Phase.RACING and room.seats and rng.random() < 0.7:
            choice, who = 4, rng.choice(list(room.seats))
        elif room.phase is m.Phase.LOBBY and rng.random() < 0.3:
            choice, who = 3, room.host_id or who
        elif deals and rng.random() < 0.5:
            choice = 10
        elif choice in (1, 7) and rng.random() < 0.7:
            choice = 2
        try:
            if choice == 0:
                role = rng.choice(list(m.Role))
                apply(room.join(rng.choice(PLAYERS), role, now))
            elif choice == 1:
                apply(room.leave(who, now))
            elif choice == 2 and who in room.seats:
                apply(room.set_ready(who, rng.random() < 0.8))
            elif choice == 3:
                apply(room.start(who, now, Fresh("s", f"r{now}")))
            elif choice == 4 and who in room.seats and room.phase is m.Phase.RACING:
                seqs[who] = seqs.get(who, 0) + rng.choice([1, 1, 1, 0, 2])
                action = rng.choice(list(m.MoveAction))
                position = rng.randrange(30) if action is m.MoveAction.PLAY else None
                apply(room.move(who, m.MoveRequest(max(1, seqs[who]), action, position), now))
            elif choice == 5:
                apply(room.resign(who, now))
            elif choice == 6 and who in room.seats and room.phase is m.Phase.FINISHED:
                apply(room.rematch(who, now, Fresh("s2", f"r{now}")))
            elif choice == 7:
                apply(room.kick(who, rng.choice(PLAYERS).player_id, now))
            elif choice == 8:
                apply(room.disconnect(who, now))
            elif choice == 9:
                apply(room.reconnect(who, now))
            elif choice == 10 and deals:
                request = deals.pop(0)
                apply(room.deal_ready(request.ticket, DEALT, now))
            elif choice == 11 and room.phase is m.Phase.LOBBY and who == room.host_id:
                apply(room.update_options(who, options))
            else:
                for name, at in sorted(timers.items(), key=lambda item: item[1]):
                    if at <= now:
                        del timers[name]
                        flushed = name == FLUSH
                        apply(room.flush_progress(now) if flushed else room.on_timer(name, now))
        except ProtocolError:
            pass  # a refusal is a fine answer; anything else fails the test
        if room.closed:
            break
        check_invariants(room)
