"""The figures of a player's profile, from their stored results (pure)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Outcome:
    """One race of a player: their rank among how many, and their time if they finished."""

    rank: int
    players: int
    finished: bool
    finish_ms: int | None


@dataclass(frozen=True, slots=True)
class Figures:
    """What a profile counts over every stored race of the player."""

    races: int
    wins: int
    finish_rate: float | None
    best_finish_ms: int | None
    median_finish_ms: int | None


def figures(outcomes: Sequence[Outcome]) -> Figures:
    """Races; wins (first of two or more); the share finished; best and median finish."""
    times = sorted(o.finish_ms for o in outcomes if o.finished and o.finish_ms is not None)
    finished = sum(1 for o in outcomes if o.finished)
    return Figures(
        races=len(outcomes),
        wins=sum(1 for o in outcomes if o.rank == 1 and o.players >= 2),
        finish_rate=finished / len(outcomes) if outcomes else None,
        best_finish_ms=times[0] if times else None,
        median_finish_ms=round(statistics.median(times)) if times else None,
    )
