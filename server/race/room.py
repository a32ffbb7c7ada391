"""A room as a pure reducer: members, host, options and the race life cycle.

Every input is a method call carrying ``now_ms`` (the server's clock, in unix
milliseconds); every method returns the outputs the shell must carry out
(:data:`Output`): frames to send, timers to set, a deal to compute, a race to
store.  Nothing here touches a socket, a clock or a random generator: fresh
seeds and race ids come in as arguments.  Which message is allowed in which
phase is decided before any of this runs, by :mod:`protocol.wire.lifecycle`; the
methods here check only what the table cannot (host rights, ready flags,
room limits) and raise :class:`~protocol.wire.errors.ProtocolError` for those.

Phases: ``lobby`` -> ``countdown`` (dealing, then counting down) ->
``racing`` -> ``finished`` -> (every member asks for a rematch) ->
``countdown`` ...  A room with no members closes after a grace period.  The
phase changes only as :data:`protocol.wire.lifecycle.PHASE_TRANSITIONS` allows.

This module holds the members' side (joining, leaving, kicks, reconnects,
ready flags and options), the moves, the timers and closing.  The room's state
and its races (dealing, countdown, start, finishes, end, ghosts) are its base,
:class:`server.race.race_cycle.RaceCycle` (the outage rule's clock and timers
included); the progress flush is :mod:`server.race.progress_flush`, the timers'
names :mod:`server.race.room_timers`.  The small value types live in
:mod:`server.race.room_types`, the outputs in :mod:`server.race.outputs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from protocol.wire.errors import ErrorCode, ProtocolError
from protocol.wire.fast import FRESH, REASON, MoveOutcome, move_result_message
from protocol.wire.lifecycle import PhaseEvent, next_phase
from protocol.wire.messages import (
    MAX_NAME_LENGTH,
    LeftReason,
    MoveAction,
    MoveRequest,
    Phase,
    RaceEnd,
    Role,
    RoomOptions,
)
from protocol.wire.messages import Left as LeftMessage
from protocol.wire.names import account_of
from server.race.ghost import GHOST_TIMER
from server.race.outputs import (
    CancelTimer,
    CloseRoom,
    Detach,
    Output,
    Send,
    SetTimer,
    Snapshot,
)
from server.race.progress import FlushRows, catch_up_boards, flush_frames
from server.race.race import Racer, SeqOutOfOrder
from server.race.race_cycle import RaceCycle
from server.race.room_timers import (
    COUNTDOWN_TIMER,
    EMPTY_TIMER,
    GRACE_PREFIX,
    PROGRESS_TIMER,
    TIME_LIMIT_TIMER,
)
from server.race.room_types import Identity, Seat


class Room(RaceCycle):
    """One room.  Create it with its host; see the module docstring."""

    # ---- membership --------------------------------------------------------
    def join(self, who: Identity, role: Role, now_ms: int) -> list[Output]:
        """A player takes a seat, or a spectator starts watching."""
        pid = who.player_id
        if pid in self.seats or pid in self.spectators:
            raise ProtocolError(ErrorCode.ALREADY_IN_ROOM)
        if self.options.daily:
            raise ProtocolError(ErrorCode.DAILY_SOLO)
        if role is Role.SPECTATOR:
            return self._add_spectator(who, now_ms)
        if self.phase in (Phase.COUNTDOWN, Phase.RACING):
            raise ProtocolError(ErrorCode.NOT_ALLOWED_NOW, "the race has already started")
        if pid in self._kicked or _folded(who.name) in self._kicked:
            raise ProtocolError(ErrorCode.KICKED)
        if len(self.seats) >= self.options.max_players:
            raise ProtocolError(ErrorCode.ROOM_FULL)
        self.seats[pid] = Seat(self._distinct(who))
        if self.host_id is None:
            self.host_id = pid
        return [CancelTimer(EMPTY_TIMER), *self._state_changed()]

    def _distinct(self, who: Identity) -> Identity:
        """``who`` under a name no member has: a second ``root`` sits as ``root (2)``.

        Names are compared as claims are (``Ann`` and ``ＡＮＮ`` are one name), so a guest
        and a claimed player of one name are told apart by more than the guest mark.
        """
        taken = {account_of(seat.identity.name) for seat in self.seats.values()}
        number, name = 1, who.name
        while account_of(name) in taken:
            number += 1
            suffix = f" ({number})"
            name = who.name[: MAX_NAME_LENGTH - len(suffix)] + suffix
        return who if name == who.name else replace(who, name=name)

    def _add_spectator(self, who: Identity, now_ms: int) -> list[Output]:
        if not self.options.allow_spectators:
            raise ProtocolError(ErrorCode.SPECTATORS_NOT_ALLOWED)
        racer = self.race.racers.get(who.player_id) if self.race is not None else None
        if racer is not None and not self.race_over and not racer.is_done:
            raise ProtocolError(ErrorCode.ALREADY_RACING)
        first = not self.spectators
        self.spectators.add(who.player_id)
        outputs = self._state_changed()  # the live room_state reaches the new spectator too
        if first and self.options.spectator_delay_s == 0:
            shown, open_boards = self._progress.shown, self.options.open_boards
            outputs += catch_up_boards(self.race, shown, open_boards, now_ms)
        return outputs

    def leave(
        self, player_id: str, now_ms: int, reason: LeftReason = LeftReason.LEFT
    ) -> list[Output]:
        """A member or spectator leaves (or is kicked, or their grace ran out)."""
        outputs: list[Output] = [
            Send(player_id, LeftMessage(self.code, reason)),
            Detach(player_id, reason),
            CancelTimer(GRACE_PREFIX + player_id),
        ]
        if player_id in self.spectators:
            self.spectators.discard(player_id)
            self.spectators_away.discard(player_id)
            return outputs + self._state_changed() + self._maybe_empty(now_ms)
        if player_id not in self.seats:
            return []
        del self.seats[player_id]
        if self.host_id == player_id:
            self.host_id = next(iter(self.seats), None)
        if self.race is not None and not self.race.over and self.race.leave(player_id, now_ms):
            outputs += self._progress.mark(player_id, now_ms)
            outputs += self._racer_changed(player_id, now_ms)
        if self.phase is Phase.COUNTDOWN and not self.seats:
            self._pending = None
            self.phase = next_phase(self.phase, PhaseEvent.ALL_LEFT)
        outputs += self._state_changed()
        # The last one who had not asked for the rematch is gone: everyone left has.
        outputs += self._rematch_if_all_asked()
        return outputs + self._maybe_empty(now_ms)

    def kick(self, host_id: str, target: str, now_ms: int) -> list[Output]:
        """The host removes a member."""
        self._require_host(host_id)
        if target == host_id:
            raise ProtocolError(ErrorCode.CANNOT_KICK_SELF)
        seat = self.seats.get(target)
        if seat is None:
            raise ProtocolError(ErrorCode.NO_SUCH_MEMBER)
        self._kicked |= {target, _folded(seat.identity.name)}
        return self.leave(target, now_ms, LeftReason.KICKED)

    def disconnect(self, player_id: str, now_ms: int) -> list[Output]:
        """A connection dropped: a member keeps the seat, a spectator their place, for the
        grace period."""
        grace = SetTimer(GRACE_PREFIX + player_id, now_ms + self.timings.reconnect_grace_ms)
        if player_id in self.spectators:
            self.spectators_away.add(player_id)
            return [grace]
        seat = self.seats.get(player_id)
        if seat is None:
            return []
        seat.connected = False
        outputs: list[Output] = [grace]
        if self.race is not None and player_id in self.race.racers:
            outputs += self._progress.mark(player_id, now_ms)
        return outputs + self._state_changed()

    def reconnect(self, player_id: str, now_ms: int) -> list[Output]:
        """A member came back with their token: restore the seat and resync them (a
        spectator gets the room and the catch-up, as after ``sync``)."""
        if player_id in self.spectators:
            self.spectators_away.discard(player_id)
            return [CancelTimer(GRACE_PREFIX + player_id), *self.spectator_sync(player_id)]
        seat = self.seats.get(player_id)
        if seat is None:
            return []
        seat.connected = True
        outputs: list[Output] = [CancelTimer(GRACE_PREFIX + player_id)]
        outputs += self._state_changed()
        outputs.append(Send(player_id, self.resync(player_id, now_ms)))
        if self.race is not None and player_id in self.race.racers:
            outputs += self._progress.mark(player_id, now_ms)
        return outputs

    def spectator_sync(self, player_id: str) -> list[Output]:
        """A spectator's catch-up: the room as it is, then the latest released race frames."""
        return [Send(player_id, self.state(Role.SPECTATOR)), Snapshot(player_id)]

    def set_ready(self, player_id: str, ready: bool) -> list[Output]:
        seat = self.seats[player_id]
        if seat.ready == ready:
            return []
        seat.ready = ready
        return self._state_changed()

    def update_options(self, host_id: str, options: RoomOptions) -> list[Output]:
        """The host changes the options in the lobby; everyone must ready up again."""
        self._require_host(host_id)
        if self.options.daily or options.daily:
            raise ProtocolError(ErrorCode.DAILY_SOLO)
        if options.max_players < len(self.seats):
            raise ProtocolError(
                ErrorCode.INVALID_COMBINATION,
                f"max_players {options.max_players} is below the {len(self.seats)} members",
                path="options.max_players",
            )
        self.options = options
        self.ghost_runs = ()  # the named runs are read again at the start
        for seat in self.seats.values():
            seat.ready = False
        return self._state_changed()

    # ---- moves, timers, restarts and closing ---------------------------------
    def move(self, player_id: str, request: MoveRequest, now_ms: int) -> list[Output]:
        """A player's move: checked by the engine, answered to that player only."""
        outcome, outputs = self.answer_move(
            player_id, request.seq, request.action, request.position, now_ms
        )
        return [Send(player_id, move_result_message(outcome)), *outputs]

    def answer_move(
        self, player_id: str, seq: int, action: MoveAction, position: int | None, now_ms: int
    ) -> tuple[MoveOutcome, Sequence[Output]]:
        """:meth:`move` for the server's hot path: the answer (:meth:`Race.respond`; its
        ``[REASON]`` is ``None`` when the move was made) and the outputs that follow."""
        race = self.race
        racer = race.racers.get(player_id) if race is not None else None
        if racer is None:
            raise ProtocolError(ErrorCode.NOT_ALLOWED_NOW, "you are not racing in this race")
        assert race is not None
        before = racer.status
        try:
            outcome = race.respond(racer, seq, action, position, now_ms)
        except SeqOutOfOrder as exc:
            raise ProtocolError(ErrorCode.SEQ_OUT_OF_ORDER, str(exc), seq=seq) from None
        if outcome[REASON] is not None or not outcome[FRESH]:
            return outcome, ()
        progress = self._progress
        progress.dirty.add(player_id)
        # A racer who is not done (stuck with undo allowed, or back from stuck) cannot
        # finish the race: only a flush to schedule, if none is due yet.
        ended = racer.status is not before and racer.is_done
        if progress.due_ms is not None and not ended:
            return outcome, ()  # the usual move: the progress flush is already due
        return outcome, self._moved(racer, ended, now_ms)

    def _moved(self, racer: Racer, ended: bool, now_ms: int) -> list[Output]:
        outputs = self._progress.mark(racer.player_id, now_ms)
        if ended:
            outputs += self._racer_changed(racer.player_id, now_ms)
        return outputs

    def resign(self, player_id: str, now_ms: int) -> list[Output]:
        race = self.race
        if race is None or not race.resign(player_id, now_ms):
            raise ProtocolError(ErrorCode.NOT_ALLOWED_NOW, "you are not racing")
        return self._progress.mark(player_id, now_ms) + self._racer_changed(player_id, now_ms)

    def flush_progress(self, now_ms: int) -> list[Output]:
        """The progress flush a :class:`FlushDue` asked for, if it is due by ``now_ms``
        (the shell may call it back late, and again for a flush already made)."""
        rows = self.flush_rows(now_ms)
        return [] if rows is None else flush_frames(rows)

    def flush_rows(self, now_ms: int) -> FlushRows | None:
        """:meth:`flush_progress` as rows, for the hub's fast path (``None``: no flush);
        :func:`server.race.progress.flush_frames` of them is what that returns."""
        due = self._progress.due_ms
        return None if due is None or due > now_ms else self._flush_rows(now_ms)

    def on_timer(self, name: str, now_ms: int) -> list[Output]:
        """A timer set by :class:`SetTimer` fired."""
        if name == PROGRESS_TIMER:
            # Input logs written before flushes were left out of them hold the flushes
            # as this timer: replayed, it flushes as it did then.
            return self._flush(now_ms)
        if name == GHOST_TIMER:
            return self._ghost_step(now_ms)
        if name == COUNTDOWN_TIMER and self.phase is Phase.COUNTDOWN:
            return self._start_race(now_ms)
        if name == TIME_LIMIT_TIMER and self.race is not None and not self.race.over:
            self.race.time_up(now_ms)
            return self._end_race(now_ms, RaceEnd.TIME_LIMIT)
        if name == EMPTY_TIMER and not self.seats:
            return self.close(now_ms)
        if name.startswith(GRACE_PREFIX):
            pid = name.removeprefix(GRACE_PREFIX)
            seat = self.seats.get(pid)
            if (seat is not None and not seat.connected) or pid in self.spectators_away:
                return self.leave(pid, now_ms)
        return []

    def resume(self, gap_ms: int, now_ms: int) -> list[Output]:
        """The server is back after an outage of ``gap_ms``, this room rebuilt from its log.

        The outage rule: the race clock pauses for the gap and every timer is set
        again (:meth:`RaceCycle._restart_timers`), and every member and
        spectator is away with a full reconnect grace from ``now_ms``.
        """
        outputs = self._restart_timers(gap_ms)
        for pid in [*self.spectators, *self.seats]:
            outputs += self.disconnect(pid, now_ms)
        return outputs + self._maybe_empty(now_ms)

    def abort(self, now_ms: int) -> list[Output]:
        """The server is shutting down: end a running race and store it as it stands."""
        if self.race is not None and not self.race.over:
            return self._end_race(now_ms, RaceEnd.ABORTED)
        return []

    def close(self, now_ms: int) -> list[Output]:
        """Close the room: everyone still in it is told and detached."""
        outputs = self.abort(now_ms)
        for pid in [*self.spectators, *self.seats]:
            outputs += [
                Send(pid, LeftMessage(self.code, LeftReason.ROOM_CLOSED)),
                Detach(pid, LeftReason.ROOM_CLOSED),
            ]
        self.spectators.clear()
        self.spectators_away.clear()
        self.seats.clear()
        self.closed = True
        return [*outputs, CloseRoom()]


def _folded(name: str) -> str:
    """A name as the kick bar compares it; the prefix keeps it apart from player ids."""
    return "name:" + name.casefold()
