"""The dealer: turns a seed into a provably winnable deal (docs/deals.md).

Candidates ``0, 1, 2, ...`` of the seed's shuffle are tried in that order and
the first one that the exact solver can win (and, when a difficulty is asked
for, whose par lies in that difficulty's range) is the deal.  Both decisions
are exact, so the deal depends only on the seed, the rules and the
difficulty: never on node counts, time limits or the solver's search order.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from protocol.deals.shuffle import candidate_deal, check_seed
from protocol.deals.solver import par_of, solve, wins_within
from protocol.rules.game import DRAW, Deal, Move, Rules


class Difficulty(enum.StrEnum):
    """How many draws the best win needs (see :data:`PAR_RANGES`)."""

    ANY = "any"
    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"


#: Inclusive par range of each difficulty; ``None`` leaves a side open.
PAR_RANGES: Final[dict[Difficulty, tuple[int | None, int | None]]] = {
    Difficulty.ANY: (None, None),
    Difficulty.EASY: (None, 11),
    Difficulty.MEDIUM: (12, 15),
    Difficulty.HARD: (16, None),
}

#: A safety net against a bug looping forever; no real seed comes near it
#: (about one candidate in ten thousand would have to be rejected in a row).
MAX_CANDIDATES: Final = 100_000


class DealerError(RuntimeError):
    """No candidate was accepted within :data:`MAX_CANDIDATES` (never expected)."""


@dataclass(frozen=True, slots=True)
class DealtGame:
    """A winnable deal for a seed, the candidate it came from and a winning line.

    ``solution`` wins with exactly ``par`` draws when ``par`` was computed.
    """

    seed: str
    rules: Rules
    candidate: int
    deal: Deal
    solution: tuple[Move, ...]
    par: int | None
    difficulty: Difficulty


def deal_for_seed(
    seed: str,
    rules: Rules,
    difficulty: Difficulty = Difficulty.ANY,
    with_par: bool = True,
) -> DealtGame:
    """The deal for ``seed``: the first winnable candidate within ``difficulty``.

    Pure and CPU-bound; run it off the event loop.
    """
    check_seed(seed)
    difficulty = Difficulty(difficulty)
    for candidate in range(MAX_CANDIDATES):
        deal = candidate_deal(seed, candidate, rules)
        line = _accepts(deal, difficulty)
        if line is None:
            continue
        par: int | None = None
        if with_par:
            par, line = par_of(deal)
        return DealtGame(seed, rules, candidate, deal, line, par, difficulty)
    raise DealerError(f"no deal accepted for seed {seed!r} in {MAX_CANDIDATES} candidates")


def in_range(par: int, difficulty: Difficulty) -> bool:
    """True when a deal with this ``par`` belongs to ``difficulty``."""
    low, high = PAR_RANGES[Difficulty(difficulty)]
    return (low is None or par >= low) and (high is None or par <= high)


def _accepts(deal: Deal, difficulty: Difficulty) -> tuple[Move, ...] | None:
    """A winning line if ``deal`` is winnable with par in range, else ``None``.

    Bounds on par are decided with draw-limited exact searches, which is
    cheaper than computing par itself.
    """
    low, high = PAR_RANGES[difficulty]
    if high is not None:
        line = wins_within(deal, high)
    else:
        result = solve(deal)
        line = result.solution
    if line is None:
        return None
    if low is not None and low > 0:
        if sum(1 for move in line if move == DRAW) < low:
            return None  # this win already beats the range's lowest par
        if wins_within(deal, low - 1) is not None:
            return None
    return line
