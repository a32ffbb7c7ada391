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

The room's small value types (:class:`Identity`, :class:`Seat`,
:class:`RoomTimings`, :class:`Fresh`) live in :mod:`server.race.room_types`, the
outputs in :mod:`server.race.outputs`; the progress line and spectator boards are built by
:mod:`server.race.progress`.  This module decides when they are sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from protocol.deals.commitment import commitment
from protocol.deals.dealer import DealtGame, Difficulty
from protocol.wire.errors import ErrorCode, ProtocolError
from protocol.wire.fast import FRESH, REASON, MoveOutcome, move_result_message
from protocol.wire.lifecycle import PhaseEvent, next_phase
from protocol.wire.messages import (
    MAX_NAME_LENGTH,
    BoardView,
    Countdown,
    Error,
    Finish,
    LeftReason,
    Member,
    MoveAction,
    MoveRequest,
    Phase,
    PlayerStatus,
    RaceEnd,
    RaceStart,
    Resync,
    Role,
    RoomOptions,
    RoomState,
    RoomSummary,
    UndoPolicy,
)
from protocol.wire.messages import Left as LeftMessage
from protocol.wire.names import account_of
from server.race.ghost import (
    GHOST_TIMER,
    GhostError,
    GhostRun,
    Ghosts,
    ghost_members,
    ghost_options,
)
from server.race.outputs import (
    CancelTimer,
    CloseRoom,
    DealRequest,
    Detach,
    LoadGhosts,
    Output,
    RaceBegan,
    RaceEnded,
    SaveRace,
    Send,
    SetTimer,
    Snapshot,
    ToPlayers,
    ToSpectators,
)
from server.race.progress import boards_wanted, catch_up_boards, progress_frames
from server.race.race import Race, Racer, SeqOutOfOrder
from server.race.results import race_outcome
from server.race.room_types import Fresh, Identity, PendingRace, RoomTimings, Seat
from server.race.spectate import BoardsShown

PROGRESS_TIMER: Final = "progress"
COUNTDOWN_TIMER: Final = "countdown"
TIME_LIMIT_TIMER: Final = "time_limit"
EMPTY_TIMER: Final = "empty"
GRACE_PREFIX: Final = "grace:"


class Room:
    """One room.  Create it with its host; see the module docstring."""

    def __init__(
        self, code: str, options: RoomOptions, host: Identity, now_ms: int, timings: RoomTimings
    ) -> None:
        self.code = code
        self.options = options
        self.timings = timings
        self.phase = Phase.LOBBY
        self.version = 0
        self.seats: dict[str, Seat] = {host.player_id: Seat(host)}
        self.spectators: set[str] = set()
        #: Spectators whose connection dropped, kept for the reconnect grace.
        self.spectators_away: set[str] = set()
        self.host_id: str | None = host.player_id
        self.created_ms = now_ms
        self.race: Race | None = None
        self.race_id: str | None = None
        self.dealt: DealtGame | None = None
        self.commitment: str | None = None
        self.closed = False
        self._ticket = 0
        self._pending: PendingRace | None = None
        #: The fresh values of the last rematch request, for a rematch that a leave completes.
        self._rematch_fresh: Fresh | None = None
        self._dirty: set[str] = set()
        #: The claimed names of the race under way's players, for its record.
        self._accounts: dict[str, str] = {}
        self._shown = BoardsShown()
        self._progress_due: int | None = None
        self._last_progress_ms = 0
        #: Who the host kicked, by player id and by folded name: no seat until the next race.
        self._kicked: set[str] = set()
        #: The runs raced as ghosts (loaded at each start) and their replay in the race.
        self.ghost_runs: tuple[GhostRun, ...] = ()
        self._ghosts: Ghosts | None = None
        #: The day of the daily deal this room's race is an attempt at.
        self.daily_day: str | None = None

    # ---- queries -----------------------------------------------------------
    def role_of(self, player_id: str) -> Role | None:
        """The role ``player_id`` has here, or ``None`` if not in the room."""
        if player_id in self.seats:
            return Role.PLAYER
        return Role.SPECTATOR if player_id in self.spectators else None

    def is_host(self, player_id: str) -> bool:
        return player_id == self.host_id

    def connected_players(self) -> list[str]:
        return [pid for pid, seat in self.seats.items() if seat.connected]

    def state(self, role: Role) -> RoomState:
        """The room as ``role`` sees it."""
        return RoomState(
            version=self.version,
            code=self.code,
            phase=self.phase,
            host_id=self.host_id,
            options=self.options,
            members=tuple(
                Member(
                    s.identity.player_id,
                    s.identity.name,
                    s.identity.bot,
                    s.ready,
                    s.connected,
                    guest=s.identity.account is None,
                )
                for s in self.seats.values()
            ) + ghost_members(self.ghost_runs),
            spectators=len(self.spectators),
            your_role=role,
            race_id=self.race_id,
        )

    def summary(self) -> RoomSummary:
        """The room's line in the public room list."""
        return RoomSummary(
            self.code, self.phase, len(self.seats), len(self.spectators), self.options
        )

    def resync(self, player_id: str, now_ms: int) -> Resync:
        """Everything a (re)connected player needs to carry on."""
        racer = self.race.racers.get(player_id) if self.race is not None else None
        race = self.race
        return Resync(
            room_version=self.version,
            phase=self.phase,
            race_id=self.race_id,
            commitment=self.commitment,
            started_at_ms=race.start_ms if race is not None else None,
            server_time_ms=now_ms,
            elapsed_ms=race.elapsed(race.end_ms or now_ms) if race is not None else 0,
            last_seq=racer.last_seq if racer is not None else 0,
            penalty_ms=racer.penalty_ms if racer is not None else 0,
            view=BoardView.from_view(racer.view()) if racer is not None else None,
        )

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
            outputs += catch_up_boards(self.race, self._shown, self.options.open_boards, now_ms)
        return outputs

    @property
    def race_over(self) -> bool:
        return self.race is None or self.race.over

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
            outputs += self._mark_dirty(player_id, now_ms)
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
            outputs += self._mark_dirty(player_id, now_ms)
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
            outputs += self._mark_dirty(player_id, now_ms)
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

    # ---- the race life cycle -----------------------------------------------
    def start(self, host_id: str, now_ms: int, fresh: Fresh) -> list[Output]:
        """The host starts: deal (off the loop), then count down."""
        self._require_host(host_id)
        waiting = [
            s.identity.name for pid, s in self.seats.items() if pid != host_id and not s.ready
        ]
        if waiting:
            raise ProtocolError(ErrorCode.PLAYERS_NOT_READY, "not ready: " + ", ".join(waiting))
        return self._begin(fresh, PhaseEvent.START)

    def rematch(self, player_id: str, now_ms: int, fresh: Fresh) -> list[Output]:
        """A member asks for a rematch; when every member has, the next race begins.

        A member who leaves without asking no longer holds the others back (:meth:`leave`).
        """
        if self.options.daily:
            raise ProtocolError(ErrorCode.DAILY_SOLO)
        self.seats[player_id].ready = True
        self._rematch_fresh = fresh
        return self._rematch_if_all_asked() or self._state_changed()

    def _rematch_if_all_asked(self) -> list[Output]:
        fresh = self._rematch_fresh
        if self.phase is not Phase.FINISHED or fresh is None or not self.seats:
            return []
        if not all(seat.ready for seat in self.seats.values()):
            return []
        self._rematch_fresh = None
        return self._begin(fresh, PhaseEvent.REMATCH)

    def _begin(self, fresh: Fresh, event: PhaseEvent) -> list[Output]:
        phase = next_phase(self.phase, event)
        self._ticket += 1
        seed = self.options.practice_seed or fresh.seed
        self._pending = PendingRace(self._ticket, fresh.race_id, seed)
        self.phase = phase
        if not self.options.ghosts:
            self.ghost_runs = ()
        else:
            return [LoadGhosts(self._ticket, self.options.ghosts), *self._state_changed()]
        return [self._deal_request(seed), *self._state_changed()]

    def _deal_request(self, seed: str) -> DealRequest:
        options = self.options
        assert self._pending is not None
        return DealRequest(
            self._ticket, seed, options.rules, Difficulty(options.difficulty),
            race_id=self._pending.race_id, daily=options.daily,
            chosen=options.practice_seed is not None or bool(self.ghost_runs),
        )

    def ghosts_ready(self, ticket: int, runs: Sequence[GhostRun]) -> list[Output]:
        """The ghosts' runs are loaded: the room takes their deal and rules, then deals."""
        pending = self._pending
        if pending is None or pending.ticket != ticket or self.phase is not Phase.COUNTDOWN:
            return []
        try:
            if not runs:
                raise GhostError("no run to race")
            self.options = ghost_options(self.options, runs)
        except GhostError as exc:
            return self.deal_failed(ticket, str(exc), ErrorCode.GHOST_UNAVAILABLE)
        self.ghost_runs = tuple(runs)
        pending.seed = runs[0].seed
        return [self._deal_request(pending.seed), *self._state_changed()]

    def deal_ready(
        self, ticket: int, dealt: DealtGame, now_ms: int, daily: str | None = None
    ) -> list[Output]:
        """The deal is ready (``daily``: the day's, for a daily attempt): announce the
        countdown (or start at once)."""
        pending = self._pending
        if pending is None or pending.ticket != ticket or self.phase is not Phase.COUNTDOWN:
            return []
        if self.ghost_runs and dealt.candidate != self.ghost_runs[0].candidate:
            return self.deal_failed(ticket, "the run's deal cannot be dealt again here",
                                    ErrorCode.GHOST_UNAVAILABLE)
        pending.dealt = dealt
        self.daily_day = daily
        seconds = self.options.countdown_s
        pending.start_at_ms = now_ms + seconds * 1000
        if seconds == 0:
            return self._start_race(now_ms)
        message = Countdown(seconds, pending.start_at_ms, now_ms)
        return [
            ToPlayers(message),
            ToSpectators(message, key="countdown", new_race=True),
            SetTimer(COUNTDOWN_TIMER, pending.start_at_ms),
        ]

    def deal_failed(
        self, ticket: int, reason: str, code: ErrorCode = ErrorCode.BAD_SEED
    ) -> list[Output]:
        """Dealing failed (a practice seed that cannot be dealt, a run that cannot be
        raced, a daily deal already played): back to the lobby, the host told why."""
        pending = self._pending
        if pending is None or pending.ticket != ticket:
            return []
        self._pending = None
        self.phase = next_phase(self.phase, PhaseEvent.DEAL_FAILED)
        outputs = self._state_changed()
        if self.host_id is not None:
            outputs.append(Send(self.host_id, Error(int(code), reason[:200])))
        return outputs

    def _start_race(self, now_ms: int) -> list[Output]:
        pending = self._pending
        if pending is None or pending.dealt is None:
            return []
        racing = next_phase(self.phase, PhaseEvent.RACE_START)
        self._pending = None
        dealt = pending.dealt
        options = self.options
        limit_ms = options.time_limit_s * 1000 or self.timings.max_race_ms
        ghosts = self._ghosts = Ghosts(self.ghost_runs) if self.ghost_runs else None
        race = Race(
            dealt.deal,
            [(pid, s.identity.name, s.identity.bot) for pid, s in self.seats.items()]
            + (ghosts.players() if ghosts is not None else []),
            start_ms=now_ms,
            allow_undo=options.undo is not UndoPolicy.OFF,
            undo_penalty_ms=options.undo_penalty_s * 1000
            if options.undo is UndoPolicy.PENALTY
            else 0,
            time_limit_ms=limit_ms,
        )
        self.race, self.dealt, self.race_id = race, dealt, pending.race_id
        self._accounts = {
            pid: s.identity.account for pid, s in self.seats.items() if s.identity.account
        }
        self.commitment = commitment(dealt.seed, dealt.rules)
        self.phase = racing
        self._dirty.clear()
        self._shown.forget()
        self._kicked.clear()  # a kick bars a seat until the next race has started
        view = BoardView.from_view(next(iter(race.racers.values())).view()) if race.racers else None
        outputs: list[Output] = [
            *self._state_changed(),
            RaceBegan(pending.race_id, len(race.racers)),
        ]
        if view is not None:
            start = RaceStart(
                race_id=pending.race_id,
                practice=options.practice,
                wrap=dealt.rules.wrap,
                empty_waste=dealt.rules.empty_waste,
                commitment=self.commitment,
                view=view,
                started_at_ms=now_ms,
                server_time_ms=now_ms,
            )
            outputs += [ToPlayers(start), ToSpectators(start, key="race", new_race=True)]
        outputs.append(SetTimer(TIME_LIMIT_TIMER, race.deadline_ms))
        outputs += self._ghost_timer()
        if race.all_done():
            outputs += self._end_race(now_ms, RaceEnd.ALL_DONE)
        return outputs

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
        self._dirty.add(player_id)
        # A racer who is not done (stuck with undo allowed, or back from stuck) cannot
        # finish the race: only a flush to schedule, if none is due yet.
        ended = racer.status is not before and racer.is_done
        if self._progress_due is not None and not ended:
            return outcome, ()  # the usual move: the progress flush is already due
        return outcome, self._moved(racer, ended, now_ms)

    def _moved(self, racer: Racer, ended: bool, now_ms: int) -> list[Output]:
        outputs = self._mark_dirty(racer.player_id, now_ms)
        if ended:
            outputs += self._racer_changed(racer.player_id, now_ms)
        return outputs

    def resign(self, player_id: str, now_ms: int) -> list[Output]:
        race = self.race
        if race is None or not race.resign(player_id, now_ms):
            raise ProtocolError(ErrorCode.NOT_ALLOWED_NOW, "you are not racing")
        return self._mark_dirty(player_id, now_ms) + self._racer_changed(player_id, now_ms)

    def on_timer(self, name: str, now_ms: int) -> list[Output]:
        """A timer set by :class:`SetTimer` fired."""
        if name == PROGRESS_TIMER:
            return self._flush_progress(now_ms)
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

        The outage rule: the race clock pauses for the gap (every racer's time, the
        time limit and a countdown move on by it, so nobody loses or gains against
        another), and every member and spectator is away with a full reconnect grace
        from ``now_ms``.  Every timer the room needs is set again.
        """
        outputs: list[Output] = []
        race, pending = self.race, self._pending
        if race is not None and not race.over:
            race.start_ms += gap_ms
            outputs.append(SetTimer(TIME_LIMIT_TIMER, race.deadline_ms))
        if race is not None and not race.over:
            outputs += self._ghost_timer()
        if pending is not None and pending.dealt is None:
            # The deal was being solved (or the ghosts' runs read) when the server
            # stopped: ask again.
            if self.options.ghosts and not self.ghost_runs:
                outputs.append(LoadGhosts(pending.ticket, self.options.ghosts))
            else:
                outputs.append(self._deal_request(pending.seed))
        elif pending is not None and pending.start_at_ms is not None:
            pending.start_at_ms += gap_ms
            outputs.append(SetTimer(COUNTDOWN_TIMER, pending.start_at_ms))
        self._progress_due = None  # its timer went with the old process; re-armed below
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

    # ---- internals -----------------------------------------------------------
    def _require_host(self, player_id: str) -> None:
        if player_id != self.host_id:
            raise ProtocolError(ErrorCode.NOT_HOST)

    def _state_changed(self) -> list[Output]:
        self.version += 1
        return [
            ToPlayers(self.state(Role.PLAYER)),
            ToSpectators(self.state(Role.SPECTATOR), live=True),
        ]

    def _maybe_empty(self, now_ms: int) -> list[Output]:
        if self.seats:
            return []
        return [SetTimer(EMPTY_TIMER, now_ms + self.timings.empty_grace_ms)]

    def _mark_dirty(self, player_id: str, now_ms: int) -> list[Output]:
        self._dirty.add(player_id)
        if self._progress_due is not None:
            return []
        due = max(now_ms, self._last_progress_ms + self.timings.progress_interval_ms)
        self._progress_due = due
        return [SetTimer(PROGRESS_TIMER, due)]

    def _flush_progress(self, now_ms: int, *, final: bool = False) -> list[Output]:
        """The due progress flush: frames built by :func:`server.race.progress.progress_frames`.

        The ``final`` flush at the race's end sends ``progress`` only when the
        bound allows one now; otherwise ``race_over``'s standings are the last word.
        """
        self._progress_due = None
        race = self.race
        if race is None or not self._dirty:
            return []
        bounded = not final or now_ms >= self._last_progress_ms + self.timings.progress_interval_ms
        if bounded:
            self._last_progress_ms = now_ms
        boards = (
            self._shown.changed(race, self._dirty, self.options.open_boards, now_ms)
            if boards_wanted(self.options, self.spectators)
            else ()
        )
        seats = self.seats if self._ghosts is None else {**self.seats, **self._ghost_seats()}
        outputs = progress_frames(race, seats, boards, now_ms, with_progress=bounded)
        self._dirty.clear()
        return outputs

    def _racer_changed(self, player_id: str, now_ms: int) -> list[Output]:
        """A racer's status changed: announce a finish, and end the race when all are done."""
        race = self.race
        assert race is not None
        outputs = self._finish(player_id) + self._ghosts_catch_up(now_ms)
        if race.all_done():
            outputs += self._end_race(now_ms, RaceEnd.ALL_DONE)
        return outputs

    def _finish(self, player_id: str) -> list[Output]:
        """The ``finish`` frames of a racer who just won, if they did."""
        race = self.race
        assert race is not None
        racer = race.racers[player_id]
        if racer.status is not PlayerStatus.FINISHED or racer.finish_ms is None:
            return []
        finishers = sorted(
            (r for r in race.racers.values() if r.finish_ms is not None),
            key=lambda r: (r.finish_ms, r.game.moves),
        )
        finish = Finish(
            player_id=player_id,
            name=racer.name,
            rank=finishers.index(racer) + 1,
            time_ms=racer.finish_ms,
            moves=racer.game.moves,
            undos=racer.game.undos,
        )
        return [ToPlayers(finish), ToSpectators(finish, key="finish:" + player_id)]

    def _end_race(self, now_ms: int, ended_by: RaceEnd) -> list[Output]:
        race, dealt, race_id = self.race, self.dealt, self.race_id
        if race is None or dealt is None or race_id is None or race.over:
            return []
        finished = next_phase(self.phase, PhaseEvent.RACE_END)
        race.end(now_ms)
        self._dirty.update(race.racers)
        outputs = self._flush_progress(now_ms, final=True)
        outputs.append(CancelTimer(TIME_LIMIT_TIMER))
        over, record = race_outcome(
            race, dealt, race_id, ended_by, self.code, self.options, now_ms, self._accounts,
            ghosts=frozenset(self._ghosts.ids if self._ghosts else ()), daily=self.daily_day,
        )
        outputs.append(CancelTimer(GHOST_TIMER))
        self.phase = finished
        for seat in self.seats.values():
            seat.ready = False
        outputs += [
            ToPlayers(over),
            ToSpectators(over, key="over"),
            SaveRace(record),
            RaceEnded(race_id, ended_by),
            *self._state_changed(),
        ]
        return outputs


    # ---- ghosts ------------------------------------------------------------------
    def _ghost_timer(self) -> list[Output]:
        due = self._ghosts.due_ms(self.race) if self._ghosts and self.race else None
        return [] if due is None else [SetTimer(GHOST_TIMER, due)]

    def _ghost_step(self, now_ms: int) -> list[Output]:
        """The ghost timer fired: each ghost makes the moves its run made by now."""
        race, ghosts = self.race, self._ghosts
        if race is None or ghosts is None or race.over:
            return []
        outputs: list[Output] = []
        for gid in ghosts.step(race, now_ms):
            outputs += self._mark_dirty(gid, now_ms)
            if race.racers[gid].is_done:
                outputs += self._racer_changed(gid, now_ms)
        return outputs + ([] if race.over else self._ghost_timer())

    def _ghosts_catch_up(self, now_ms: int) -> list[Output]:
        """Once every person is done, the ghosts' runs end as they really did, at once."""
        race, ghosts = self.race, self._ghosts
        if race is None or ghosts is None:
            return []
        if not all(r.is_done for pid, r in race.racers.items() if pid not in ghosts.ids):
            return []
        outputs: list[Output] = []
        for gid in ghosts.catch_up(race):
            outputs += self._mark_dirty(gid, now_ms) + self._finish(gid)
        return outputs

    def _ghost_seats(self) -> dict[str, Seat]:
        """The ghosts as always-connected seats, for the progress lines."""
        return {
            member.player_id: Seat(Identity(member.player_id, member.name), True, True)
            for member in ghost_members(self.ghost_runs)
        }


def _folded(name: str) -> str:
    """A name as the kick bar compares it; the prefix keeps it apart from player ids."""
    return "name:" + name.casefold()
