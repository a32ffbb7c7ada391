"""What a finished race leaves: the ``race_over`` message and the stored record.

Pure: both are built from the race, its deal and the room options.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import asdict, fields, replace

from protocol.deals.commitment import commitment
from protocol.deals.dealer import DealtGame
from protocol.wire.messages import DealCodes, RaceEnd, RaceOver, RoomOptions, Standing
from server.race.race import Race, Racer
from server.race.records import RaceRecord


def race_outcome(
    race: Race,
    dealt: DealtGame,
    race_id: str,
    ended_by: RaceEnd,
    room_code: str,
    options: RoomOptions,
    now_ms: int,
    accounts: Mapping[str, str] | None = None,
    *,
    ghosts: frozenset[str] = frozenset(),
    daily: str | None = None,
) -> tuple[RaceOver, RaceRecord]:
    """The ``race_over`` frame and the record to store, for a race that just ended.

    ``accounts`` are the claimed names of the players who proved one, by player id;
    ``ghosts`` are the racers replaying stored runs; for a ``daily`` attempt the frame
    keeps the day's seed, deal and winning line back (the record holds them).
    """
    claimed = accounts or {}
    results = tuple(
        replace(r, account=claimed.get(r.player_id), ghost=r.player_id in ghosts)
        for r in race.results()
    )
    standings = tuple(
        Standing(
            player_id=r.player_id,
            name=r.name,
            bot=r.is_bot,
            rank=r.rank,
            status=race.racers[r.player_id].status,
            time_ms=standing_time(race.racers[r.player_id]),
            cleared=r.cleared,
            moves=r.moves,
            undos=r.undos,
            penalty_ms=r.penalty_ms,
            ghost=r.ghost,
        )
        for r in results
    )
    deal = DealCodes.from_deal(dealt.deal)
    over = RaceOver(
        race_id=race_id,
        ended_by=ended_by,
        standings=standings,
        seed=None if daily else dealt.seed,
        candidate=None if daily else dealt.candidate,
        wrap=dealt.rules.wrap,
        empty_waste=dealt.rules.empty_waste,
        difficulty=dealt.difficulty.value,
        practice=options.practice,
        commitment=commitment(dealt.seed, dealt.rules),
        deal=None if daily else deal,
        solution=None if daily else dealt.solution,
        par=None if daily else dealt.par,
        daily=daily,
    )
    record = RaceRecord(
        race_id=race_id,
        room_code=room_code,
        room_name=options.name,
        options=options_json(options),
        practice=options.practice,
        seed=dealt.seed,
        commitment=over.commitment,
        wrap=dealt.rules.wrap,
        empty_waste=dealt.rules.empty_waste,
        candidate=dealt.candidate,
        peaks=deal.peaks,
        waste=deal.waste,
        stock=deal.stock,
        solution=tuple(dealt.solution),
        par=dealt.par,
        started_at_ms=race.start_ms,
        ended_at_ms=now_ms,
        players=results,
        ended_by=ended_by.value,
    )
    return over, record


def standing_time(racer: Racer) -> int:
    """Finish time for finishers; otherwise when the final cleared count was reached."""
    return racer.finish_ms if racer.finish_ms is not None else racer.cleared_at_ms


def options_json(options: RoomOptions) -> dict[str, object]:
    """The room options as a plain JSON-able dict (enums as their values)."""
    doc: dict[str, object] = {}
    for spec in fields(options):
        value = getattr(options, spec.name)
        if isinstance(value, tuple):  # the ghosts: a list of plain maps
            value = [asdict(item) for item in value]
        doc[spec.name] = value.value if isinstance(value, enum.Enum) else value
    return doc
