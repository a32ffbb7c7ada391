"""One race, pure: every player's game, the move checks, the clock and the ranking.

No I/O and no clock: each call takes ``now_ms`` (milliseconds on the
server's race clock).  The room (:mod:`server.race.room`) owns a :class:`Race`
while it runs and turns its results into wire messages.  A move is answered
with a plain tuple, a :data:`~protocol.wire.fast.MoveOutcome`: the fast path
writes its frame with :func:`protocol.wire.fast.move_result_msgpack`, the
general path makes it a ``MoveResult``.  A racer's status changes only as
:data:`protocol.wire.lifecycle.RACER_TRANSITIONS` allows.

Sequence numbers: each player's moves carry ``seq`` 1, 2, 3, ...  A number
already answered returns the original answer again and changes
nothing (a move resent after a reconnect counts once); a number that skips
ahead raises :class:`SeqOutOfOrder`.  Rejected moves use up their number too,
so a resend of a rejected move is rejected again with the same reason.
"""

from __future__ import annotations

import struct
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Final

from protocol.rules.cards import ALL_CODES
from protocol.rules.game import DRAW, HIDDEN, Deal, Game, PlayerView, Status, standing_key
from protocol.rules.refusals import IllegalMoveError, Reason
from protocol.wire.fast import FRESH, MoveOutcome, face, move_result_message, resent
from protocol.wire.lifecycle import RacerEvent, next_status
from protocol.wire.messages import MoveAction, MoveResult, PlayerStatus
from server.race.records import MoveLogEntry, PlayerResult

#: How many answered moves each player can have resent after a reconnect.
RESULT_MEMORY: Final = 64
#: Refused moves logged per player; accepted moves are always logged.
MAX_REFUSALS_LOGGED: Final = 1000


#: The actions a move log holds (an entry stores the index).
_LOG_ACTIONS: Final = ("play", "draw", "undo", "resign", "timeout", "leave")
_LOG_ACTION_INDEX: Final = {name: i for i, name in enumerate(_LOG_ACTIONS)}
_CARD_INDEX: Final = {code: i for i, code in enumerate(ALL_CODES)}
_LOG_PLAY, _LOG_DRAW, _LOG_UNDO = (_LOG_ACTION_INDEX[name] for name in ("play", "draw", "undo"))


#: One log entry as the bytes of its seven integers: ``ints.frombytes(ENTRY.pack(...))``
#: costs less than half of ``ints.extend`` of a tuple.
ENTRY: Final = struct.Struct("7q")
_pack_entry: Final = ENTRY.pack


class MoveLog:
    """A player's move log, seven integers per entry in one flat array.

    Thousands of players append to their logs many times a second; tuples
    would each be an object for the garbage collector to walk (tens of ms per
    young-generation collection at 2,000 players), integers in an array are
    not.  :meth:`entries` turns them into :class:`MoveLogEntry` at the end.
    """

    __slots__ = ("ints",)

    def __init__(self) -> None:
        #: The entries, seven integers each (see :meth:`append`; -1 for ``None``).
        self.ints = array("q")

    def append(
        self,
        seq: int,
        at_ms: int,
        action: str,
        position: int | None,
        accepted: bool,
        reason: int | None,
        card: str | None,
    ) -> None:
        """Log one entry (the fields of :class:`MoveLogEntry`)."""
        self.ints.frombytes(ENTRY.pack(
            seq, at_ms, _LOG_ACTION_INDEX[action], -1 if position is None else position,
            accepted, -1 if reason is None else reason, -1 if card is None else _CARD_INDEX[card],
        ))

    def entries(self) -> tuple[MoveLogEntry, ...]:
        """Every entry, oldest first."""
        ints = self.ints
        return tuple(
            MoveLogEntry(
                ints[i], ints[i + 1], _LOG_ACTIONS[ints[i + 2]],
                None if ints[i + 3] < 0 else ints[i + 3], bool(ints[i + 4]),
                None if ints[i + 5] < 0 else ints[i + 5],
                None if ints[i + 6] < 0 else ALL_CODES[ints[i + 6]],
            )
            for i in range(0, len(ints), 7)
        )

    def __len__(self) -> int:
        return len(self.ints) // 7

#: ``action.value`` without the enum descriptor's cost on every move.
_ACTION_NAME: Final = {action: action.value for action in MoveAction}

#: Record statuses differ from the wire's in one word.
RECORD_STATUS: Final = {status: status.value for status in PlayerStatus} | {
    PlayerStatus.TIMED_OUT: "timeout"
}


class SeqOutOfOrder(Exception):
    """A move's sequence number skips ahead of the next one expected."""

    def __init__(self, expected: int, got: int) -> None:
        self.expected = expected
        self.got = got
        super().__init__(f"expected move seq {expected} (or a resend of an earlier one), got {got}")


@dataclass(slots=True)
class Racer:
    """One player's side of the race."""

    player_id: str
    name: str
    is_bot: bool
    game: Game
    status: PlayerStatus = PlayerStatus.RACING
    last_seq: int = 0
    #: The last answers (seqs up to ``last_seq``), for resends.
    answers: deque[MoveOutcome] = field(default_factory=lambda: deque(maxlen=RESULT_MEMORY))
    #: Every move attempt (and how the player stopped), for the stored race.
    log: MoveLog = field(default_factory=MoveLog)
    refusals_logged: int = 0
    penalty_ms: int = 0
    finish_ms: int | None = None
    #: Race time when the current cleared count was reached (ranks non-finishers).
    cleared_at_ms: int = 0
    #: Race time when the player stopped racing.
    done_ms: int | None = None
    #: Every card this player has seen, one bit per card (``1 << card``): face up on
    #: their board or drawn to their waste, even if an undo hid it again.
    seen: int = 0

    @property
    def is_done(self) -> bool:
        """True when nothing this player can do changes the race any more."""
        if self.status is _STUCK:
            return not self.game.allow_undo
        return self.status is not _RACING

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
        board = Game(deal).view().board
        #: The cards every player sees from the start: the face-up row and the waste card.
        self.seen_at_start: int = sum(
            1 << card for card, entry in zip(deal.peaks, board, strict=True) if entry != HIDDEN
        ) | (0 if deal.waste is None else 1 << deal.waste)
        self.racers: dict[str, Racer] = {
            pid: Racer(
                pid, name, is_bot, Game(deal, allow_undo=allow_undo), seen=self.seen_at_start
            )
            for pid, name, is_bot in players
        }
        self.finish_order: list[str] = []
        #: ``uncovered`` entries of the answers (:func:`~protocol.wire.fast.face`), by position.
        self.faces: tuple[int, ...] = tuple(face(p, card) for p, card in enumerate(deal.peaks))
        #: ``Racer.seen``'s bit for the card at each position.
        self.bits: tuple[int, ...] = tuple(1 << card for card in deal.peaks)
        #: The position of each peak card (spectators' boards hide faces by card).
        self.positions: dict[int, int] = {card: p for p, card in enumerate(deal.peaks)}
        #: The peak cards, a bit each (like ``Racer.seen``).
        self.peak_cards: int = sum(self.bits)
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
        self, player_id: str, seq: int, action: MoveAction, position: int | None, now_ms: int
    ) -> tuple[MoveResult, bool]:
        """Apply one move; return its result and whether it is a fresh (not resent) answer."""
        outcome = self.answer(player_id, seq, action, position, now_ms)
        return move_result_message(outcome), outcome[FRESH]

    def answer(
        self, player_id: str, seq: int, action: MoveAction, position: int | None, now_ms: int
    ) -> MoveOutcome:
        """:meth:`move` as the server's fast path takes it: the
        :data:`~protocol.wire.fast.MoveOutcome` (``protocol.wire.fast`` writes its frame)."""
        return self.respond(self.racers[player_id], seq, action, position, now_ms)

    def respond(
        self, racer: Racer, seq: int, action: MoveAction, position: int | None, now_ms: int
    ) -> MoveOutcome:
        """:meth:`answer` for the server's hot path, for one of this race's racers."""
        if seq != racer.last_seq + 1:
            return self._resent(racer, seq)
        racer.last_seq = seq
        at = now_ms - self.start_ms
        if at < 0:
            at = 0
        if self.over or racer.status in _FINAL:
            return self._refuse(racer, seq, action, position, Reason.GAME_OVER, at)
        game = racer.game
        # The answer holds plain values only (see MoveOutcome): the actions' wire strings,
        # one per branch, and a field for each card the move turned up or down.
        turned = turned_2 = undone = None
        try:
            if action is _PLAY:
                name = "play"
                if position is None:
                    raise IllegalMoveError(Reason.NO_SUCH_POSITION, "a play needs a position")
                up = game.play(position)
                card = game.peaks[position]
                if up:
                    # A card lies on at most two others: it turns up one or two.
                    turned = self.faces[up[0]]
                    racer.seen |= self.bits[up[0]]
                    if len(up) == 2:
                        turned_2 = self.faces[up[1]]
                        racer.seen |= self.bits[up[1]]
                racer.cleared_at_ms = at
                racer.log.ints.frombytes(_pack_entry(seq, at, _LOG_PLAY, position, 1, -1, card))
            elif action is _DRAW:
                name, card, position = "draw", game.draw(), None
                racer.seen |= 1 << card
                racer.log.ints.frombytes(_pack_entry(seq, at, _LOG_DRAW, -1, 1, -1, card))
            else:
                name = "undo"
                taken, hidden = game.take_back()
                racer.penalty_ms += self.undo_penalty_ms
                if taken == DRAW:
                    # The count is unchanged: the player still reached it when they did.
                    undone, position, card = "draw", None, None
                    racer.log.ints.frombytes(_pack_entry(seq, at, _LOG_UNDO, -1, 1, -1, -1))
                else:
                    assert isinstance(taken, int)
                    racer.cleared_at_ms = at  # back to the lower count, reached now
                    undone, position, card = "play", taken, game.peaks[taken]
                    if hidden:
                        turned = hidden[0]
                        if len(hidden) == 2:
                            turned_2 = hidden[1]
                    racer.log.ints.frombytes(_pack_entry(seq, at, _LOG_UNDO, taken, 1, -1, card))
        except IllegalMoveError as refusal:
            if action is _DRAW:
                position = None  # a draw has none, even if the caller gave one
            return self._refuse(racer, seq, action, position, refusal.reason, at)
        top, stock, cleared, moves, draws, undos, status = game.tally()
        if status is _PLAYING:
            state = "playing"
            if racer.status is not _RACING:
                # An undo out of a stuck position puts the player back in the race.
                racer.status = next_status(racer.status, RacerEvent.UNDO)
                racer.done_ms = None
        else:
            self._stopped_by(racer, status, at)
            state = status.value
        outcome = (
            seq, name, None, position, card, turned, turned_2, undone,
            top, stock, cleared, moves, draws, undos, state, racer.penalty_ms, at, True,
        )
        racer.answers.append(outcome)
        return outcome

    def resign(self, player_id: str, now_ms: int) -> bool:
        """The player gives up; False if they were already done."""
        return self._stop(player_id, RacerEvent.RESIGN, "resign", now_ms)

    def leave(self, player_id: str, now_ms: int) -> bool:
        """The player left (or their reconnect grace ran out)."""
        return self._stop(player_id, RacerEvent.LEAVE, "leave", now_ms)

    def time_up(self, now_ms: int) -> list[str]:
        """The time limit is reached: everyone still racing times out (then call :meth:`end`)."""
        return [
            pid
            for pid, racer in self.racers.items()
            if not racer.is_done and self._stop(pid, RacerEvent.TIME_OUT, "timeout", now_ms)
        ]

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
                status=RECORD_STATUS[racer.status],
                finish_ms=racer.finish_ms,
                cleared=racer.game.cleared,
                moves=racer.game.moves,
                draws=racer.game.draws,
                undos=racer.game.undos,
                penalty_ms=racer.penalty_ms,
                log=racer.log.entries(),
            )
            for rank, racer in enumerate(self.standings(), start=1)
        )

    # ---- internals -----------------------------------------------------
    def _resent(self, racer: Racer, seq: int) -> MoveOutcome:
        """A seq that is not the next one: the remembered answer, or :class:`SeqOutOfOrder`."""
        last = racer.last_seq
        back = last - seq  # answers[-1] is the answer to last_seq
        if seq > last or back >= len(racer.answers):
            raise SeqOutOfOrder(last + 1, seq)
        return resent(racer.answers[-1 - back])

    def _stopped_by(self, racer: Racer, status: Status, at: int) -> None:
        """The player's game just ended: won or stuck."""
        if status is Status.WON:
            racer.status = next_status(racer.status, RacerEvent.WIN)
            racer.finish_ms = at + racer.penalty_ms
            racer.done_ms = at
            self.finish_order.append(racer.player_id)
        else:
            racer.status = next_status(racer.status, RacerEvent.GET_STUCK)
            racer.done_ms = at

    def _refuse(
        self,
        racer: Racer,
        seq: int,
        action: MoveAction,
        position: int | None,
        reason: Reason,
        at: int,
    ) -> MoveOutcome:
        """Log a refused move (up to :data:`MAX_REFUSALS_LOGGED`); remember and return the
        answer."""
        name, number = _ACTION_NAME[action], int(reason)
        if racer.refusals_logged < MAX_REFUSALS_LOGGED:
            racer.refusals_logged += 1
            racer.log.append(seq, at, name, position, False, number, None)
        if position is not None and position > 255:
            position = None  # the answer's position is what a move may name on the wire
        top, stock, cleared, moves, draws, undos, status = racer.game.tally()
        outcome: MoveOutcome = (
            seq, name, number, position, None, None, None, None,
            top, stock, cleared, moves, draws, undos, status.value, racer.penalty_ms, at, True,
        )
        racer.answers.append(outcome)
        return outcome

    def _stop(self, player_id: str, event: RacerEvent, action: str, now_ms: int) -> bool:
        racer = self.racers.get(player_id)
        if racer is None or racer.status in _FINAL:
            return False
        at = self.elapsed(now_ms)
        racer.status = next_status(racer.status, event)
        racer.done_ms = at
        racer.log.append(0, at, action, None, True, None, None)
        return True


_PLAY, _DRAW = MoveAction.PLAY, MoveAction.DRAW
#: Enum members read once: compiled, ``PlayerStatus.RACING`` in a function is a lookup.
_RACING: Final = PlayerStatus.RACING
_STUCK: Final = PlayerStatus.STUCK
_PLAYING: Final = Status.PLAYING


_FINAL: Final = frozenset(
    {PlayerStatus.FINISHED, PlayerStatus.RESIGNED, PlayerStatus.LEFT, PlayerStatus.TIMED_OUT}
)


def rank_key(racer: Racer) -> tuple[int, float, int]:
    """Finishers by time, then everyone else by cleared cards, time, fewer moves.

    Uses :func:`protocol.rules.game.standing_key`.  For a player who did not
    finish, "time" is the race time at which they reached their final cleared
    count: of two players who both cleared 20, the one who got there first
    ranks higher.
    """
    time = racer.finish_ms if racer.finish_ms is not None else racer.cleared_at_ms
    return standing_key(racer.game.cleared, time, racer.game.moves)
