"""Depth-first search for the exact solver, and the deal data all searches share.

See :mod:`protocol.deals.solver` for the method as a whole.  A state is a 28-bit
mask of played positions, the number of cards drawn, and the rank of the
waste's top card (:data:`EMPTY` for an empty waste).
"""

from __future__ import annotations

import functools
from typing import Final

from protocol.deals.counting import Counting
from protocol.rules.cards import RANK_COUNT, Card, is_adjacent, rank_of
from protocol.rules.game import DRAW, Deal, Move
from protocol.rules.layout import COVERED_BY, COVERS, PEAK_CARDS, ROWS, row_of

#: The waste-top "rank" of an empty waste: every card fits on it.
EMPTY: Final = RANK_COUNT
FULL: Final = (1 << PEAK_CARDS) - 1
#: States each depth-first probe may expand before the next one (or the
#: layered search) takes over.
PROBE_BUDGET: Final = 150
def _order(row_first: bool, key: str) -> tuple[int, ...]:
    """A static order of positions for one depth-first probe."""
    middle = {row: (r.start + r.stop - 1) / 2 for row, r in enumerate(ROWS)}

    def rank(p: int) -> tuple[float, ...]:
        row = row_of(p) if row_first else -row_of(p)
        tie = {"left": p, "right": -p, "middle": abs(p - middle[row_of(p)])}[key]
        return (row, tie)

    return tuple(sorted(range(PEAK_CARDS), key=rank))


#: Move orders of the successive probes.  Backtracking search has a heavy
#: tail: a deal one order gets lost on is often quick in another, so several
#: short probes find more wins per state than one long one (measured).  Since
#: the layered search probes its own layers, fewer and shorter probes here do
#: best (4 x 150 states against 7 x 500: dealer p99 49 -> 42 ms, measured).
_PROBE_ORDERS: Final = (
    _order(False, "left"),
    _order(False, "right"),
    tuple(sorted(range(PEAK_CARDS), key=lambda p: (-len(COVERS[p]), p))),
    _order(True, "left"),
)
_NEVER: Final = 1 << 30


class Board:
    """Deal data precomputed for the searches: ranks, covering masks, adjacency."""

    def __init__(self, deal: Deal, start: tuple[int, int, Card | None] | None = None) -> None:
        wrap = deal.rules.wrap
        self.peak_ranks = tuple(rank_of(c) for c in deal.peaks)
        self.stock_ranks = tuple(rank_of(c) for c in deal.stock)
        mask, drawn, top = (0, 0, deal.waste) if start is None else start
        #: The state the search starts from: played mask, cards drawn, top rank.
        self.start_mask = mask
        self.start_drawn = drawn
        self.start_top = EMPTY if top is None else rank_of(top)
        self.cover_masks = _COVER_MASKS
        #: ``mask & needs[p] == cover_masks[p]`` when position ``p`` is free and not played
        self.needs = _NEEDS
        #: ``adjacent[t]``: ranks that may go on top rank ``t`` (all, on an empty waste).
        self.adjacent = _adjacent(wrap)
        #: ``fitting[t]``: positions whose card may go on top rank ``t``.
        self.fitting = self.fitting_in(_PROBE_ORDERS[0])
        self._counting: dict[int, Counting] = {}

    def counting(self, limit: int) -> Counting:
        """The counting rule with at most ``limit`` cards drawn (made once per limit)."""
        if limit not in self._counting:
            wrap = RANK_COUNT - 1 in self.adjacent[0]
            self._counting[limit] = Counting(self.peak_ranks, self.stock_ranks, wrap, limit)
        return self._counting[limit]

    def fitting_in(self, order: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
        """Per top rank, the positions whose card fits on it, in ``order``."""
        by_rank: list[list[int]] = [[] for _ in range(RANK_COUNT)]
        for p in order:
            by_rank[self.peak_ranks[p]].append(p)
        place = _PLACES[order]
        return tuple(
            tuple(sorted([p for a in ranks for p in by_rank[a]], key=place.__getitem__))
            for ranks in self.adjacent
        )


_COVER_MASKS: Final = tuple(sum(1 << q for q in COVERED_BY[p]) for p in range(PEAK_CARDS))
_NEEDS: Final = tuple(c | 1 << p for p, c in enumerate(_COVER_MASKS))
#: per probe order: each position's place in it
_PLACES: Final = {order: {p: i for i, p in enumerate(order)} for order in _PROBE_ORDERS}


@functools.cache
def _adjacent(wrap: bool) -> tuple[tuple[int, ...], ...]:
    """Per top rank, the ranks that may go on it; the empty waste takes every rank."""
    adjacent = [
        tuple(b for b in range(RANK_COUNT) if is_adjacent(a, b, wrap)) for a in range(RANK_COUNT)
    ]
    return (*adjacent, tuple(range(RANK_COUNT)))


def probe(
    board: Board, limit: int, failed: dict[int, int]
) -> tuple[list[Move] | None, int, bool]:
    """Short depth-first searches in each probe order: ``(line, states, complete)``.

    ``complete`` is true when a search ran to its end without a win, which
    proves that no win draws at most ``limit`` cards.  States proved lost are
    shared between the probes through ``failed``: that knowledge does not
    depend on the order (nor on where a search started).
    """
    nodes = 0
    for index, order in enumerate(_PROBE_ORDERS):
        fitting = board.fitting if index == 0 else board.fitting_in(order)
        line, count = depth_first(board, limit, PROBE_BUDGET, fitting, failed)
        nodes += count
        if line is not None or count < PROBE_BUDGET:
            return line, nodes, line is None
    return None, nodes, False


def depth_first(
    board: Board,
    limit: int,
    budget: int,
    fitting: tuple[tuple[int, ...], ...],
    failed: dict[int, int],
    start: tuple[int, int, int] | None = None,
) -> tuple[list[Move] | None, int]:
    """Look for a win drawing at most ``limit`` cards, expanding at most ``budget`` states.

    The search starts from the board's start state, or from ``start``
    (played mask, cards drawn, top rank) when given.

    Returns a winning line or ``None``, and the number of states expanded; a
    ``None`` with fewer than ``budget`` states expanded proves there is no win.
    ``failed[mask | top << 28]`` is the fewest draws with which that state
    was proved lost; the same state with as many draws or more is lost too
    (see the module doc).  The search reads and extends it.

    Every state is tested with the counting rule before it is expanded.  With
    a card on the waste that also covers the *dead rank* rule (a rank no card
    left can go before but the waste's top card must be played next): a play
    or draw of anything else leaves that rank's set with more cards to play
    than predecessors.
    """
    peak_ranks = board.peak_ranks
    stock_ranks = board.stock_ranks
    cover_masks = board.cover_masks
    needs = board.needs
    counting = board.counting(limit)
    weights = counting.weights
    credit = counting.credit
    biases = counting.biases
    mask, drawn, top = (
        (board.start_mask, board.start_drawn, board.start_top) if start is None else start
    )
    total = counting.mask_sum(mask)
    if counting.lost(total, drawn, top):
        return None, 0
    line: list[Move] = []
    count = [0]

    def dfs(mask: int, drawn: int, top: int, total: int) -> bool:
        key = mask | top << PEAK_CARDS
        if failed.get(key, _NEVER) <= drawn or count[0] >= budget:
            return False
        count[0] += 1
        bias, lost = biases[drawn]
        for p in fitting[top]:
            if mask & needs[p] != cover_masks[p]:  # played already, or still covered
                continue
            new_mask = mask | 1 << p
            if new_mask == FULL:
                line.append(p)
                return True
            r = peak_ranks[p]
            new_total = total + weights[p]
            if not (new_total + bias - credit[r]) & lost and dfs(new_mask, drawn, r, new_total):
                line.append(p)
                return True
        if drawn < limit:
            r = stock_ranks[drawn]
            bias, lost = biases[drawn + 1]
            if not (total + bias - credit[r]) & lost and dfs(mask, drawn + 1, r, total):
                line.append(DRAW)
                return True
        if count[0] < budget:  # a state cut short by the budget is not known lost
            failed[key] = drawn
        return False

    won = dfs(mask, drawn, top, total)
    line.reverse()
    return (line if won else None), count[0]
