"""A room's state and its race life cycle: dealing, the countdown, the start,
finishes, the end of the race and the ghosts' playback.

:class:`RaceCycle` is the base of :class:`server.race.room.Room`, which adds
the members' inputs (joining, leaving, moves, timers, resume); the outage rule's
clock and timers are here (:meth:`RaceCycle._restart_timers`).  Pure like the
room: every input carries ``now_ms``, every method returns :data:`Output`.  The
phase changes only as :data:`protocol.wire.lifecycle.PHASE_TRANSITIONS` allows.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.deals.commitment import commitment
from protocol.deals.dealer import DealtGame, Difficulty
from protocol.wire.errors import ErrorCode, ProtocolError
from protocol.wire.lifecycle import PhaseEvent, next_phase
from protocol.wire.messages import (
    BoardView,
    Countdown,
    Error,
    Finish,
    Member,
    Phase,
    PlayerStatus,
    RaceEnd,
    RaceStart,
    Resync,
    Role,
    RoomOptions,
    RoomState,
    RoomSummary,
    ServerMessage,
    UndoPolicy,
)
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
    DealRequest,
    LoadGhosts,
    Output,
    RaceBegan,
    RaceEnded,
    SaveRace,
    Send,
    SetTimer,
    ToPlayers,
    ToSpectators,
)
from server.race.progress import FlushRows, flush_frames
from server.race.progress_flush import ProgressFlush
from server.race.race import Race
from server.race.results import race_outcome
from server.race.room_timers import COUNTDOWN_TIMER, EMPTY_TIMER, TIME_LIMIT_TIMER
from server.race.room_types import Fresh, Identity, PendingRace, RoomTimings, Seat


class RaceCycle:
    """A room's state, what it shows, and its races from the start to the end."""

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
        #: The claimed names of the race under way's players, for its record.
        self._accounts: dict[str, str] = {}
        #: Which racers changed, and when the next progress flush is due.
        self._progress = ProgressFlush(timings.progress_interval_ms)
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

    @property
    def race_over(self) -> bool:
        return self.race is None or self.race.over

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

        A member who leaves without asking no longer holds the others back
        (:meth:`Room.leave <server.race.room.Room.leave>`).
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
        self._progress.new_race()
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

    def catch_up_frame(self, key: str, now_ms: int) -> ServerMessage | None:
        """The race's current frame of spectator snapshot key ``key`` (``"progress"`` or
        ``"board:<player>"``): what a spectator feed without delay keeps only a mark of
        (:data:`server.race.spectate.LIVE_KINDS`)."""
        return self._progress.current(
            self.race, self.seats, self._racing_ghosts(), self.options, key, now_ms
        )

    def _racing_ghosts(self) -> Sequence[GhostRun]:
        """The runs racing as ghosts in the current race (none before it started)."""
        return self.ghost_runs if self._ghosts is not None else ()

    def _flush(self, now_ms: int, *, final: bool = False) -> list[Output]:
        """The progress flush, now (``final``: at the race's end, see
        :meth:`server.race.progress_flush.ProgressFlush.flush`), as outputs."""
        rows = self._flush_rows(now_ms, final=final)
        return [] if rows is None else flush_frames(rows)

    def _flush_rows(self, now_ms: int, *, final: bool = False) -> FlushRows | None:
        """:meth:`_flush` as rows (:data:`server.race.progress.FlushRows`)."""
        return self._progress.flush(
            self.race, self.seats, self._racing_ghosts(), self.options, self.spectators,
            now_ms, final=final,
        )

    def _end_race(self, now_ms: int, ended_by: RaceEnd) -> list[Output]:
        race, dealt, race_id = self.race, self.dealt, self.race_id
        if race is None or dealt is None or race_id is None or race.over:
            return []
        finished = next_phase(self.phase, PhaseEvent.RACE_END)
        race.end(now_ms)
        self._progress.dirty.update(race.racers)
        outputs = self._flush(now_ms, final=True)
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

    # ---- the outage rule ---------------------------------------------------------
    def _restart_timers(self, gap_ms: int) -> list[Output]:
        """Back after an outage of ``gap_ms``: the race clock pauses for the gap (every
        racer's time, the time limit and a countdown move on by it, so nobody loses or
        gains against another), every timer is set again, and a deal (or the ghosts'
        runs) being fetched when the server stopped is asked for again."""
        outputs: list[Output] = []
        race, pending = self.race, self._pending
        if race is not None and not race.over:
            race.start_ms += gap_ms
            outputs.append(SetTimer(TIME_LIMIT_TIMER, race.deadline_ms))
            outputs += self._ghost_timer()
        if pending is not None and pending.dealt is None:
            if self.options.ghosts and not self.ghost_runs:
                outputs.append(LoadGhosts(pending.ticket, self.options.ghosts))
            else:
                outputs.append(self._deal_request(pending.seed))
        elif pending is not None and pending.start_at_ms is not None:
            pending.start_at_ms += gap_ms
            outputs.append(SetTimer(COUNTDOWN_TIMER, pending.start_at_ms))
        # The flush timer went with the old process; the first mark after this sets it again.
        self._progress.due_ms = None
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
            outputs += self._progress.mark(gid, now_ms)
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
            outputs += self._progress.mark(gid, now_ms) + self._finish(gid)
        return outputs
