"""The counting rule of the exact solver, packed into integers (docs/deals.md).

Every peak card still to play needs a card of an adjacent rank placed on
the waste *immediately* before it, and each placement comes right before at
most one card.  So for a set ``Q`` of ranks, the peak cards of ranks in
``Q`` still to play cannot outnumber the cards of ranks adjacent to ``Q``
that may still reach the waste (peak cards left, stock cards within the
draw limit) plus one for the waste's top if it is adjacent (Hall's
condition for that matching).  A state breaking it for some ``Q`` is lost.

Checked for ``Q`` = one rank, and two or three ranks two apart (which share
neighbours).  Each set gets a 10-bit field of one packed integer, holding
``HALF - 1 - spare + (played near Q) - (played in Q) - (top adjacent)``
with ``spare`` what the set has to spare before anything is played; the
field's high bit is set exactly when the set is broken.  All fields move
together: a played card of rank ``r`` adds ``near[r] - inside[r]``, the
packed indicators of the sets ``r`` is adjacent to and the sets ``r`` is
in.  Fields stay between 0 and 1,023 (at most 52 cards take part), so they
never borrow from each other.
"""

from __future__ import annotations

import functools
from typing import Final

from protocol.rules.cards import RANK_COUNT, is_adjacent

WIDTH: Final = 10
HALF: Final = 1 << (WIDTH - 1)


@functools.cache
def rank_sets(wrap: bool) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """Per rank its packed ``near`` and ``inside`` indicators, and a 1 in every field.

    No rank is both in a set and adjacent to it (the ranks of a set are two
    apart, so their neighbours have the other parity; with wrap the 13
    ranks would need ``2 * k = 1 (mod 13)`` for a gap ``k`` of at most
    three), which :class:`Counting` relies on for the bottom row's range.
    """
    sets: list[tuple[int, ...]] = []
    for size in (1, 2, 3):
        for q in range(RANK_COUNT):
            ranks = tuple((q + 2 * k) % RANK_COUNT if wrap else q + 2 * k for k in range(size))
            if max(ranks) < RANK_COUNT:
                sets.append(ranks)
    near = [0] * RANK_COUNT
    inside = [0] * RANK_COUNT
    for i, ranks in enumerate(sets):
        for r in range(RANK_COUNT):
            if r in ranks:
                inside[r] |= 1 << (WIDTH * i)
            if any(is_adjacent(r, q, wrap) for q in ranks):
                near[r] |= 1 << (WIDTH * i)
    assert not any(n & i for n, i in zip(near, inside, strict=True))
    ones = sum(1 << (WIDTH * i) for i in range(len(sets)))
    return tuple(near), tuple(inside), ones


class Counting:
    """The packed counting rule for one deal and one draw limit.

    A state ``(mask, drawn, top)`` is lost when
    ``(sum of weights[p] over played p) + biases[drawn][0] - credit[top]``
    has a bit of ``biases[drawn][1]`` set (see :meth:`lost`).
    """

    def __init__(
        self, peak_ranks: tuple[int, ...], stock_ranks: tuple[int, ...], wrap: bool, limit: int
    ) -> None:
        near, inside, ones = rank_sets(wrap)
        #: per position: what playing its card adds to the packed sum
        self.weights = tuple(near[r] - inside[r] for r in peak_ranks)
        #: per top rank (and the empty waste): one placement more for the sets it is adjacent to
        self.credit = (*near, ones)
        #: the sums the bottom row (positions 18 to 27) adds at most and at least, per set
        self.bottom_range = (
            sum([near[r] for r in peak_ranks[18:]]),
            -sum([inside[r] for r in peak_ranks[18:]]),
        )
        peaks_near = sum([near[r] for r in peak_ranks])
        # what each set has to spare with every stock card within the limit to come
        spare = peaks_near + sum([near[r] for r in stock_ranks[:limit]])
        spare -= sum([inside[r] for r in peak_ranks])
        top_bits = HALF * ones
        start = (HALF - 1) * ones
        #: per number of cards drawn: the packed bias with no top, and the bits that
        #: mean lost (only sets that can fail at all, where playing the cards
        #: adjacent to them can use up their spare; 0 when nothing can fail)
        self.biases: list[tuple[int, int]] = []
        for drawn in range(limit + 1):
            if drawn:
                spare -= near[stock_ranks[drawn - 1]]
            self.biases.append((start - spare, (start + peaks_near - spare) & top_bits))

    def mask_sum(self, mask: int) -> int:
        """The sum of :attr:`weights` over the positions played in ``mask``."""
        return sum(w for p, w in enumerate(self.weights) if mask >> p & 1)

    def lost(self, mask_sum: int, drawn: int, top: int) -> bool:
        """True when the counting rule proves the state lost."""
        bias, lost = self.biases[drawn]
        return bool((mask_sum + bias - self.credit[top]) & lost)
