"""The daily deal, pure: UTC days, a daily attempt's options, and the day's leaderboard order.

Each UTC day has one deal for everyone.  The shell (:mod:`server.daily`) draws
the day's seed from a CSPRNG, stores it and publishes its commitment
(:func:`protocol.deals.commitment.commitment`, as a race's); everything here
takes the time (unix ms) and the seed as arguments.  A day is revealed, seed
and deal, once it is over: :func:`is_revealed`.

Days are named ``YYYY-MM-DD`` (proleptic Gregorian, UTC); the arithmetic is
done here on whole days since 1970-01-01 so that no clock module is needed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Final

from protocol.rules.game import Rules
from protocol.wire.errors import ErrorCode, ProtocolError
from protocol.wire.messages import RoomOptions

DAY_MS: Final = 86_400_000
#: The daily deal's rules and options: the defaults, always.
DAILY_RULES: Final = RoomOptions().rules
#: What a daily attempt's room is called.
DAILY_ROOM_NAME: Final = "Daily deal"
#: The two leaderboards of a day: people, and bots (ranked apart).
BOARDS: Final = ("humans", "bots")
_DAY: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
#: The option fields a daily attempt may set; every other one must keep its default.
_FREE_FIELDS: Final = frozenset({"name", "countdown_s", "daily", "max_players", "allow_spectators"})


class DayError(ValueError):
    """A day name that is not a real ``YYYY-MM-DD`` date from 1970 on."""


def day_of(now_ms: int) -> str:
    """The UTC day holding unix time ``now_ms``, as ``YYYY-MM-DD``."""
    year, month, day = _civil(now_ms // DAY_MS)
    return f"{year:04d}-{month:02d}-{day:02d}"


def day_start_ms(day: str) -> int:
    """Unix ms of the day's first millisecond (00:00 UTC); raises :class:`DayError`."""
    match = _DAY.fullmatch(day)
    if match is None:
        raise DayError(f"a day is written YYYY-MM-DD, got {day[:20]!r}")
    year, month, number = (int(part) for part in match.groups())
    days = _days_from_civil(year, month, number)
    if year < 1970 or not 1 <= month <= 12 or _civil(days) != (year, month, number):
        raise DayError(f"{day!r} is not a date from 1970-01-01 on")
    return days * DAY_MS


def day_end_ms(day: str) -> int:
    """Unix ms at which ``day`` is over and its deal is revealed (the next 00:00 UTC)."""
    return day_start_ms(day) + DAY_MS


def is_revealed(day: str, now_ms: int) -> bool:
    """True once ``day`` is over at ``now_ms``: its seed, deal and runs may be shown."""
    return now_ms >= day_end_ms(day)


def next_day(day: str) -> str:
    """The day after ``day``."""
    return day_of(day_end_ms(day))


def daily_options(options: RoomOptions) -> RoomOptions:
    """The options of a daily attempt's room: the defaults, solo, private, unwatched.

    The client may choose only the room's name and countdown; any other option
    set away from its default is refused (the daily is the same for everyone).
    """
    default = RoomOptions()
    for name in RoomOptions.__dataclass_fields__:
        if name not in _FREE_FIELDS and getattr(options, name) != getattr(default, name):
            raise ProtocolError(
                ErrorCode.INVALID_COMBINATION,
                "a daily attempt has the default rules; only name and countdown_s may be set",
                path=name,
            )
    name = options.name if options.name != default.name else DAILY_ROOM_NAME
    return replace(options, name=name, max_players=2, allow_spectators=False, daily=True)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt at a day's deal, as the day's leaderboard ranks it."""

    race_id: str
    name: str
    bot: bool
    ranked: bool
    status: str  # a stored race status; "racing" while (or if) the attempt never ended
    finish_ms: int | None
    cleared: int
    moves: int
    started_at_ms: int


def board_of(attempt: Attempt) -> str:
    """Which of the day's leaderboards an attempt goes on (bots are ranked apart)."""
    return BOARDS[1] if attempt.bot else BOARDS[0]


def leaderboard_key(attempt: Attempt) -> tuple[int, int, int, int, int, str]:
    """Finishers by time, then everyone else by cleared cards, then by fewer moves.

    Ties after that go to the earlier start, then the race id, so the order is total.
    """
    finished = attempt.finish_ms is not None
    return (
        0 if finished else 1,
        attempt.finish_ms if attempt.finish_ms is not None else 0,
        -attempt.cleared,
        attempt.moves,
        attempt.started_at_ms,
        attempt.race_id,
    )


def leaderboard(attempts: Iterable[Attempt], board: str) -> list[Attempt]:
    """The ranked attempts on ``board`` (``"humans"`` or ``"bots"``), best first."""
    return sorted(
        (a for a in attempts if a.ranked and board_of(a) == board), key=leaderboard_key
    )


def rules_text(rules: Rules) -> dict[str, bool]:
    """The rules as the daily API shows them."""
    return {"wrap": rules.wrap, "empty_waste": rules.empty_waste}


# ---- days <-> civil dates ------------------------------------------------------------
def _civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of the day ``days`` after 1970-01-01."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to the given date (any month/day values, for checking)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468
