"""One race, pure: every player's game, the move checks, the clock and the ranking.

No I/O and no clock: each call takes ``now_ms`` (milliseconds on the
server's race clock).  The room (:mod:`server.room`) owns a :class:`Race`
while it runs and turns its results into wire messages.

Sequence numbers: each player's moves carry ``seq`` 1, 2, 3, ...  A number
already answered returns the original :class:`MoveResult` and changes
nothing (a move resent after a reconnect counts once); a number that skips
ahead raises :class:`SeqOutOfOrder`.  Rejected moves use up their number too,
so a resend of a rejected move is rejected again with the same reason.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field
from typing import Final

from protocol.cards import card_code
from protocol.game import Deal, Game, IllegalMoveError, PlayerView, Reason, Status
from protocol.layout import PEAK_CARDS
from server.records import MoveLogEntry, PlayerResult

#: How many answered moves each player can have resent after a reconnect.
RESULT_MEMORY: Final = 512
#: Refused moves logged per player; accepted moves are always logged.
MAX_REFUSALS_LOGGED: Final = 1000


class RacerStatus(enum.Enum):
    """A player's standing in the race (the wire's progress status)."""

    RACING = "racing"
    FINISHED = "finished"
    STUCK = "stuck"
    RESIGNED = "resigned"
    LEFT = "left"
    TIMEOUT = "timeout"


class Action(enum.Enum):
    """What a move asks for."""

    PLAY = "play"
    DRAW = "draw"
    UNDO = "undo"


class SeqOutOfOrder(Exception):
    """A move's sequence number skips ahead of the next one expected."""

    def __init__(self, expected: int, got: int) -> None:
        self.expected = expected
        self.got = got
        super().__init__(f"expected move seq {expected} (or a resend of an earlier one), got {got}")


@dataclass(frozen=True, slots=True)
class MoveResult:
    """The answer to one move: accepted with what changed, or refused with a reason."""

    seq: int
    action: Action
    position: int | None
    accepted: bool
    reason: Reason | None
    detail: str
    #: Positions that this move turned face up, with their cards (plays only).
    uncovered: tuple[tuple[int, str], ...]
    waste_top: str | None
    stock_left: int
    cleared: int
    moves: int
    undos: int
    status: RacerStatus
    elapsed_ms: int
    finish_ms: int | None


@dataclass(slots=True)
class Racer:
    """One player's side of the race."""

    player_id: str
    name: str
    is_bot: bool
    game: Game
    status: RacerStatus = RacerStatus.RACING
    last_seq: int = 0
    results: deque[MoveResult] = field(default_factory=lambda: deque(maxlen=RESULT_MEMORY))
    log: list[MoveLogEntry] = field(default_factory=list)
    refusals_logged: int = 0
    penalty_ms: int = 0
    finish_ms: int | None = None
    #: Race time when the current cleared count was reached (ranks non-finishers).
    cleared_at_ms: int = 0
    #: Race time when the player stopped racing.
    done_ms: int | None = None

    @property
    def is_done(self) -> bool:
        """True when nothing this player can do changes the race any more."""
        if self.status is RacerStatus.STUCK:
            return not self.game.allow_undo
        return self.status is not RacerStatus.RACING

    def view(self) -> PlayerView:
        """What this player sees."""
        return self.game.view()


class Race:
    """The authoritative state of one race.

    ``players`` are ``(player_id, name, is_bot)``; ``time_limit_ms`` is
    measured from ``start_ms``, the end of the countdown.
    """

    def __init__(
        self,
        deal: Deal,
        players: list[tuple[str, str, bool]],
        *,
        start_ms: int,
        allow_undo: bool,
        undo_penalty_ms: int,
        time_limit_ms: int,
    ) -> None:
        self.start_ms = start_ms
        self.undo_penalty_ms = undo_penalty_ms
        self.time_limit_ms = time_limit_ms
        self.racers: dict[str, Racer] = {
            pid: Racer(pid, name, is_bot, Game(deal, allow_undo=allow_undo))
            for pid, name, is_bot in players
        }
        self.finish_order: list[str] = []
        self.over = False
        self.end_ms: int | None = None

    # ---- queries -------------------------------------------------------
    def elapsed(self, now_ms: int) -> int:
        """Race time in ms (0 before the start)."""
        return max(0, now_ms - self.start_ms)

    @property
    def deadline_ms(self) -> int:
        """When the time limit ends the race."""
        return self.start_ms + self.time_limit_ms

    def all_done(self) -> bool:
        """True when every racer has finished, is out, has resigned or has left."""
        return all(racer.is_done for racer in self.racers.values())

    def standings(self) -> list[Racer]:
        """Racers in rank order (see :func:`rank_key`)."""
        return sorted(self.racers.values(), key=rank_key)

    # ---- inputs --------------------------------------------------------
    def move(
        self, player_id: str, seq: int, action: Action, position: int | None, now_ms: int
    ) -> tuple[MoveResult, bool]:
        """Apply one move; return its result and whether it is a fresh (not resent) answer."""
        racer = self.racers[player_id]
        if seq <= racer.last_seq:
            for result in racer.results:
                if result.seq == seq:
                    return result, False
            raise SeqOutOfOrder(racer.last_seq + 1, seq)
        if seq != racer.last_seq + 1:
            raise SeqOutOfOrder(racer.last_seq + 1, seq)
        racer.last_seq = seq
        at = self.elapsed(now_ms)
        if self.over or racer.status in _FINAL:
            result = self._refusal(racer, seq, action, position, Reason.GAME_OVER, "", at)
        else:
            result = self._apply(racer, seq, action, position, at)
        racer.results.append(result)
        return result, True

    def resign(self, player_id: str, now_ms: int) -> bool:
        """The player gives up; False if they were already done."""
        return self._stop(player_id, RacerStatus.RESIGNED, "resign", now_ms)

    def leave(self, player_id: str, now_ms: int) -> bool:
        """The player left (or their reconnect grace ran out)."""
        return self._stop(player_id, RacerStatus.LEFT, "leave", now_ms)

    def time_up(self, now_ms: int) -> list[str]:
        """The time limit is reached: everyone still racing times out."""
        stopped = [
            pid
            for pid, racer in self.racers.items()
            if not racer.is_done and self._stop(pid, RacerStatus.TIMEOUT, "timeout", now_ms)
        ]
        self.end(now_ms)
        return stopped

    def end(self, now_ms: int) -> None:
        """Mark the race over."""
        if not self.over:
            self.over = True
            self.end_ms = now_ms

    # ---- results -------------------------------------------------------
    def results(self) -> tuple[PlayerResult, ...]:
        """Every player's stored result, in rank order."""
        return tuple(
            PlayerResult(
                player_id=racer.player_id,
                name=racer.name,
                is_bot=racer.is_bot,
                rank=rank,
                status=racer.status.value,
                finish_ms=racer.finish_ms,
                cleared=racer.game.cleared,
                moves=racer.game.moves,
                draws=racer.game.draws,
                undos=racer.game.undos,
                penalty_ms=racer.penalty_ms,
                log=tuple(racer.log),
            )
            for rank, racer in enumerate(self.standings(), start=1)
        )

    # ---- internals -----------------------------------------------------
    def _apply(
        self, racer: Racer, seq: int, action: Action, position: int | None, at: int
    ) -> MoveResult:
        game = racer.game
        uncovered: tuple[tuple[int, str], ...] = ()
        card: str | None = None
        try:
            if action is Action.PLAY:
                if position is None:
                    raise IllegalMoveError(Reason.NO_SUCH_POSITION, "a play needs a position")
                turned = game.play(position)
                card = card_code(game.deal.peaks[position])
                uncovered = tuple((p, card_code(game.deal.peaks[p])) for p in turned)
            elif action is Action.DRAW:
                card = card_code(game.draw())
            else:
                game.undo()
                racer.penalty_ms += self.undo_penalty_ms
        except IllegalMoveError as refusal:
            return self._refusal(racer, seq, action, position, refusal.reason, str(refusal), at)
        racer.log.append(MoveLogEntry(seq, at, action.value, position, True, None, card))
        if action is not Action.DRAW:
            racer.cleared_at_ms = at
        self._update_status(racer, at)
        return self._result(racer, seq, action, position, True, None, "", uncovered, at)

    def _update_status(self, racer: Racer, at: int) -> None:
        status = racer.game.status
        if status is Status.WON:
            racer.status = RacerStatus.FINISHED
            racer.finish_ms = at + racer.penalty_ms
            racer.done_ms = at
            self.finish_order.append(racer.player_id)
        elif status is Status.STUCK:
            racer.status = RacerStatus.STUCK
            racer.done_ms = at
        else:
            # An undo out of a stuck position puts the player back in the race.
            racer.status = RacerStatus.RACING
            racer.done_ms = None

    def _refusal(
        self,
        racer: Racer,
        seq: int,
        action: Action,
        position: int | None,
        reason: Reason,
        detail: str,
        at: int,
    ) -> MoveResult:
        if racer.refusals_logged < MAX_REFUSALS_LOGGED:
            racer.refusals_logged += 1
            entry = MoveLogEntry(seq, at, action.value, position, False, int(reason), None)
            racer.log.append(entry)
        return self._result(racer, seq, action, position, False, reason, detail, (), at)

    def _result(
        self,
        racer: Racer,
        seq: int,
        action: Action,
        position: int | None,
        accepted: bool,
        reason: Reason | None,
        detail: str,
        uncovered: tuple[tuple[int, str], ...],
        at: int,
    ) -> MoveResult:
        game = racer.game
        top = game.waste_top
        return MoveResult(
            seq=seq,
            action=action,
            position=position,
            accepted=accepted,
            reason=reason,
            detail=detail,
            uncovered=uncovered,
            waste_top=None if top is None else card_code(top),
            stock_left=game.stock_left,
            cleared=game.cleared,
            moves=game.moves,
            undos=game.undos,
            status=racer.status,
            elapsed_ms=at,
            finish_ms=racer.finish_ms,
        )

    def _stop(self, player_id: str, status: RacerStatus, action: str, now_ms: int) -> bool:
        racer = self.racers.get(player_id)
        if racer is None or racer.status in _FINAL:
            return False
        at = self.elapsed(now_ms)
        racer.status = status
        racer.done_ms = at
        racer.log.append(MoveLogEntry(0, at, action, None, True, None, None))
        return True


_FINAL: Final = frozenset(
    {RacerStatus.FINISHED, RacerStatus.RESIGNED, RacerStatus.LEFT, RacerStatus.TIMEOUT}
)


def rank_key(racer: Racer) -> tuple[int, int, int, int]:
    """Finishers by time (then fewer moves); then others by cleared, time, fewer moves.

    For a player who did not finish, "time" is the race time at which they
    reached their final cleared count: of two players who both cleared 20,
    the one who got there first ranks higher.
    """
    if racer.finish_ms is not None:
        return (0, racer.finish_ms, racer.game.moves, 0)
    return (1, PEAK_CARDS - racer.game.cleared, racer.cleared_at_ms, racer.game.moves)
