"""Ghost races, pure: a stored run replayed move by move at its recorded race times.

A room whose options name ghosts (:class:`~protocol.wire.messages.GhostRef`)
loads each run from the store when it starts (the shell reads the record;
:func:`run_of` turns it into a :class:`GhostRun`).  The runs fix the deal (the
run's seed, rules and candidate) and the undo rules; the race then holds one
extra racer per ghost, ``ghost-1``, ``ghost-2``, ...  The room schedules one
timer at the next recorded time of any ghost; when it fires, :meth:`Ghosts.step`
makes every ghost move that is due, stamped with its recorded time, so a
ghost's finish time in the new race is the one it had.  Ghost moves are
therefore reducer inputs like a player's, and a replay of the room's inputs
makes the same race.

A ghost whose run ended by resigning, leaving or running out of time resigns
at that moment.  Once every person in the race is done, the ghosts' remaining
moves are made at once (:meth:`Ghosts.catch_up`), at their recorded times, so
the results compare with how the run really ended and nobody waits for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from protocol.deals.dealer import Difficulty
from protocol.rules.game import Rules
from protocol.wire.messages import GhostRef, Member, MoveAction, RoomOptions, UndoPolicy
from server.race.race import Race
from server.race.records import RaceRecord

#: Ghost racers' player ids are this prefix and their place in the room's ghost list.
GHOST_PREFIX: Final = "ghost-"
GHOST_TIMER: Final = "ghost"
_MOVES: Final = {"play": MoveAction.PLAY, "draw": MoveAction.DRAW, "undo": MoveAction.UNDO}
_STOPS: Final = frozenset({"resign", "leave", "timeout"})


class GhostError(ValueError):
    """A run that cannot be raced; the message says why."""


@dataclass(frozen=True, slots=True)
class GhostMove:
    """One accepted move of the run, at its race time."""

    at_ms: int
    action: MoveAction
    position: int | None


@dataclass(frozen=True, slots=True)
class GhostRun:
    """A stored run to race: who ran it, its deal, its rules and its moves."""

    ref: GhostRef
    name: str
    seed: str
    rules: Rules
    difficulty: Difficulty
    candidate: int
    undo: UndoPolicy
    undo_penalty_s: int
    moves: tuple[GhostMove, ...]
    #: Race time at which the run resigned, left or timed out (None: it won or got stuck).
    stop_ms: int | None


def run_of(record: RaceRecord, ref: GhostRef) -> GhostRun:
    """Player ``ref.player_id``'s run in ``record``; :class:`GhostError` if it has none."""
    player = next((p for p in record.players if p.player_id == ref.player_id), None)
    if player is None:
        raise GhostError(f"race {record.race_id} has no player {ref.player_id!r}")
    moves = tuple(
        GhostMove(entry.at_ms, _MOVES[entry.action], entry.position)
        for entry in player.log
        if entry.accepted and entry.action in _MOVES
    )
    stop = next((e.at_ms for e in player.log if e.accepted and e.action in _STOPS), None)
    options = record.options
    try:
        difficulty = Difficulty(str(options.get("difficulty", "any")))
        undo = UndoPolicy(str(options.get("undo", UndoPolicy.PENALTY.value)))
    except ValueError as exc:
        raise GhostError(f"race {record.race_id} has options this server cannot read") from exc
    penalty = options.get("undo_penalty_s", 5)
    return GhostRun(
        ref, player.name, record.seed, Rules(record.wrap, record.empty_waste), difficulty,
        record.candidate, undo, penalty if isinstance(penalty, int) else 5, moves, stop,
    )


def ghost_options(options: RoomOptions, runs: Sequence[GhostRun]) -> RoomOptions:
    """The room's options for racing ``runs``: their deal's rules and their undo rules.

    Every run must be of one deal (the same seed, rules and candidate: runs of
    one race, or of one day's daily deal).
    """
    if not runs:
        return options
    first = runs[0]
    for run in runs[1:]:
        if (run.seed, run.rules, run.candidate) != (first.seed, first.rules, first.candidate):
            raise GhostError("the ghosts of one room must be runs of one deal")
    return replace(
        options, wrap=first.rules.wrap, empty_waste=first.rules.empty_waste,
        undo=first.undo, undo_penalty_s=first.undo_penalty_s, difficulty=first.difficulty.value,
    )


def ghost_id(index: int) -> str:
    """The player id of the room's ``index``-th ghost (from 0)."""
    return f"{GHOST_PREFIX}{index + 1}"


def ghost_members(runs: Sequence[GhostRun]) -> tuple[Member, ...]:
    """The ghosts as the room's members show them: always ready and connected, marked
    (as ghosts, not guests)."""
    return tuple(
        Member(ghost_id(i), run.name, False, True, True, guest=False, ghost=True)
        for i, run in enumerate(runs)
    )


class Ghosts:
    """The ghosts racing in one race: for each, the next move of its run to make."""

    def __init__(self, runs: Sequence[GhostRun]) -> None:
        self.runs = tuple(runs)
        self.ids = tuple(ghost_id(i) for i in range(len(self.runs)))
        self._next = [0] * len(self.runs)
        self._stopped = [False] * len(self.runs)

    def players(self) -> list[tuple[str, str, bool]]:
        """The ghosts as :class:`~server.race.race.Race` players: (id, name, is_bot)."""
        return [(gid, run.name, False) for gid, run in zip(self.ids, self.runs, strict=True)]

    def due_ms(self, race: Race) -> int | None:
        """Server time of the next ghost event (a move or a stop), or None when none is left."""
        times = [t for t in (self._next_at(i) for i in range(len(self.runs))) if t is not None]
        return race.start_ms + min(times) if times else None

    def step(self, race: Race, now_ms: int) -> list[str]:
        """Make every ghost event due by ``now_ms``; the ids of the ghosts that acted."""
        return self._advance(race, now_ms - race.start_ms)

    def catch_up(self, race: Race) -> list[str]:
        """Make every ghost event left, each at its recorded time."""
        return self._advance(race, None)

    def _advance(self, race: Race, until: int | None) -> list[str]:
        acted: list[str] = []
        for index, gid in enumerate(self.ids):
            at = self._next_at(index)
            while at is not None and (until is None or at <= until):
                if race.over or race.racers[gid].is_done:
                    break
                self._act(race, index, gid)
                if gid not in acted:
                    acted.append(gid)
                at = self._next_at(index)
        return acted

    def _next_at(self, index: int) -> int | None:
        run = self.runs[index]
        if self._stopped[index]:
            return None
        position = self._next[index]
        if position < len(run.moves):
            return run.moves[position].at_ms
        return run.stop_ms

    def _act(self, race: Race, index: int, gid: str) -> None:
        run, position = self.runs[index], self._next[index]
        racer = race.racers[gid]
        if position < len(run.moves):
            move = run.moves[position]
            self._next[index] = position + 1
            race.respond(racer, racer.last_seq + 1, move.action, move.position,
                         race.start_ms + move.at_ms)
            return
        self._stopped[index] = True
        assert run.stop_ms is not None
        race.resign(gid, race.start_ms + run.stop_ms)
