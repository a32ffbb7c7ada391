"""Ratings with openskill's Plackett-Luce model, as pure functions of stored records.

A race is rated when it ended on its own (all done or the time limit; not
aborted), was not a practice race, a ghost race or a daily attempt, and had
at least two claimed human players.  Only those players' ratings move,
ranked among themselves in the race's order: bots and guests are left out as
if absent.  The number shown is conservative: ``1000 + 40 * (mu - 3 * sigma)``,
so a new player shows 1000 and a rating rises as much through certainty as
through wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from openskill.models import PlackettLuce

from server.race.records import RaceRecord

#: The model with openskill's defaults: mu 25, sigma 25/3, beta 25/6, tau 25/300.
MODEL: Final = PlackettLuce()
#: How races may end and still be rated (``RaceRecord.ended_by``).
RATED_ENDINGS: Final = frozenset({"all_done", "time_limit"})
#: The display number: ``DISPLAY_BASE + DISPLAY_SCALE * (mu - 3 * sigma)``.
DISPLAY_BASE: Final = 1000
DISPLAY_SCALE: Final = 40


@dataclass(frozen=True, slots=True)
class Rating:
    """One player's skill estimate: mean and uncertainty."""

    mu: float
    sigma: float

    @property
    def display(self) -> int:
        """The conservative number shown on pages and in the API."""
        return display(self.mu, self.sigma)


#: A claimed player's rating before any rated race.
INITIAL: Final = Rating(MODEL.mu, MODEL.sigma)


def display(mu: float, sigma: float) -> int:
    """``1000 + 40 * (mu - 3 * sigma)``, rounded."""
    return round(DISPLAY_BASE + DISPLAY_SCALE * (mu - 3 * sigma))


def rated_players(record: RaceRecord) -> list[tuple[str, int]]:
    """(account, rank) of the race's claimed human players, each account once (best rank)."""
    best: dict[str, int] = {}
    for player in record.players:
        if player.account is not None and not player.is_bot:
            best[player.account] = min(player.rank, best.get(player.account, player.rank))
    return sorted(best.items(), key=lambda item: (item[1], item[0]))


def is_rated(record: RaceRecord) -> bool:
    """True when the race moves ratings."""
    return (
        not record.practice
        and not record.options.get("ghosts")
        and not record.options.get("daily")
        and record.ended_by in RATED_ENDINGS
        and len(rated_players(record)) >= 2
    )


def new_ratings(record: RaceRecord, current: Mapping[str, Rating]) -> dict[str, Rating]:
    """Each rated player's rating after ``record``, from ``current`` (missing: :data:`INITIAL`).

    Empty for an unrated race.
    """
    if not is_rated(record):
        return {}
    players = rated_players(record)
    teams = [
        [MODEL.rating(mu=current.get(a, INITIAL).mu, sigma=current.get(a, INITIAL).sigma)]
        for a, _ in players
    ]
    rated = MODEL.rate(teams, ranks=[float(rank) for _, rank in players])
    return {
        account: Rating(team[0].mu, team[0].sigma)
        for (account, _), team in zip(players, rated, strict=True)
    }
