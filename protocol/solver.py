"""Exact TriPeaks solver: decides winnability and par with every card known.

The search is a depth-first search over the states of one deal.  A state is
everything that decides the future of play, packed into one integer:

* the 28-bit mask of played peak positions,
* the stock index (cards drawn so far, which is also the number of draws),
* the rank of the waste's top card (13 for an empty waste).  Only the rank
  matters: suits never affect play, so two states differing only in the
  suit of the waste card have the same future.

Exactness: every reachable state is either expanded or pruned by a *sound*
rule (one that only removes states from which no win exists), and every
state that failed is remembered, so the answer never depends on move order,
node counts or time.  The only pruning rule is the "dead rank" rule: a peak
card of rank ``q`` can only ever be played onto a card of a rank adjacent to
``q``.  Those cards are the peak and stock cards not yet used, plus the
waste's top card for one move.  When none is left the state is lost.

Par, the fewest draws in any win, is the smallest draw limit ``L`` for which
a search that may draw at most ``L`` cards still wins.  The search first
finds any win, then lowers the limit below the draws of the best win found
until the search fails; failures at a limit stay failures at any lower
limit, so the memo of failed states is kept throughout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from protocol.cards import RANK_COUNT, is_adjacent, rank_of
from protocol.game import DRAW, Deal, Move
from protocol.layout import COVERED_BY, COVERS, PEAK_CARDS

#: The waste-top "rank" of an empty waste: every card fits on it.
EMPTY: Final = RANK_COUNT
_FULL: Final = (1 << PEAK_CARDS) - 1
_STOCK_SHIFT: Final = PEAK_CARDS
_TOP_SHIFT: Final = PEAK_CARDS + 5  # the stock index is at most 24: 5 bits


@dataclass(frozen=True, slots=True)
class SolveResult:
    """What the solver decided about a deal.

    ``solution`` is a winning line (positions and ``"draw"``) when the deal
    is winnable.  ``par`` is the fewest draws of any win, when asked for and
    the deal is winnable.  ``nodes`` counts the states expanded.
    """

    winnable: bool
    solution: tuple[Move, ...] | None
    par: int | None
    nodes: int


class _Board:
    """Deal data precomputed for the search (ranks, covering masks, adjacency)."""

    def __init__(self, deal: Deal) -> None:
        wrap = deal.rules.wrap
        self.peak_ranks = tuple(rank_of(c) for c in deal.peaks)
        self.stock_ranks = tuple(rank_of(c) for c in deal.stock)
        self.start_top = EMPTY if deal.waste is None else rank_of(deal.waste)
        self.cover_masks = tuple(sum(1 << q for q in COVERED_BY[p]) for p in range(PEAK_CARDS))
        adjacent = [
            tuple(b for b in range(RANK_COUNT) if is_adjacent(a, b, wrap))
            for a in range(RANK_COUNT)
        ]
        self.adjacent: tuple[tuple[int, ...], ...] = (*adjacent, tuple(range(RANK_COUNT)))
        # Positions whose card fits on each top rank, most-covering first, so
        # that plays which turn cards face up are tried early.
        order = sorted(range(PEAK_CARDS), key=lambda p: (-len(COVERS[p]), p))
        self.fitting: tuple[tuple[int, ...], ...] = tuple(
            tuple(p for p in order if self.peak_ranks[p] in self.adjacent[top])
            for top in range(RANK_COUNT + 1)
        )


def solve(deal: Deal, *, want_par: bool = False) -> SolveResult:
    """Decide exactly whether ``deal`` can be won; with ``want_par`` also find par.

    With ``want_par`` the returned solution is a win using exactly ``par`` draws.
    """
    board = _Board(deal)
    failed: set[int] = set()
    counter = [0]
    line = _search(board, len(board.stock_ranks), failed, counter)
    if line is None:
        return SolveResult(False, None, None, counter[0])
    if not want_par:
        return SolveResult(True, tuple(line), None, counter[0])
    par, best = _lower_draws(board, line, failed, counter)
    return SolveResult(True, tuple(best), par, counter[0])


def par_of(deal: Deal) -> tuple[int, tuple[Move, ...]]:
    """Par of a winnable ``deal`` and a win with that many draws.

    Raises :class:`ValueError` when the deal cannot be won.
    """
    result = solve(deal, want_par=True)
    if result.par is None or result.solution is None:
        raise ValueError("the deal cannot be won, so it has no par")
    return result.par, result.solution


def wins_within(deal: Deal, max_draws: int) -> tuple[Move, ...] | None:
    """A win using at most ``max_draws`` draws, or ``None`` when there is none."""
    board = _Board(deal)
    limit = max(0, min(max_draws, len(board.stock_ranks)))
    line = _search(board, limit, set(), [0])
    return None if line is None else tuple(line)


def _lower_draws(
    board: _Board, line: list[Move], failed: set[int], counter: list[int]
) -> tuple[int, list[Move]]:
    best = line
    while True:
        draws = sum(1 for move in best if move == DRAW)
        if draws == 0:
            return 0, best
        better = _search(board, draws - 1, failed, counter)
        if better is None:
            return draws, best
        best = better


def _search(board: _Board, limit: int, failed: set[int], counter: list[int]) -> list[Move] | None:
    """Depth-first search for a win drawing at most ``limit`` cards.

    ``failed`` holds keys of states known to lose within ``limit`` draws (or
    any larger limit); it grows as the search proves more states lost.
    """
    peak_ranks = board.peak_ranks
    stock_ranks = board.stock_ranks
    cover_masks = board.cover_masks
    adjacent = board.adjacent
    fitting = board.fitting
    # avail[r]: cards of rank r that could still reach the waste (peak cards
    # not played, stock cards not drawn within the limit).
    avail = [0] * RANK_COUNT
    left = [0] * RANK_COUNT  # peak cards of rank r not yet played
    for r in peak_ranks:
        avail[r] += 1
        left[r] += 1
    for r in stock_ranks[:limit]:
        avail[r] += 1
    start_top = board.start_top
    start_forced = -1
    for q in range(RANK_COUNT):
        if left[q] and not any(avail[a] for a in adjacent[q]):
            # Only the starting waste card can still take this rank, once.
            takes = start_top == EMPTY or start_top in adjacent[q]
            if not takes or left[q] > 1 or start_forced >= 0:
                return None
            start_forced = q
    line: list[Move] = []

    def must_play(r: int) -> int:
        """After rank ``r`` lands on the waste: -2 if lost, a forced rank, or -1."""
        forced = -1
        for q in adjacent[r]:
            if left[q] and not any(avail[a] for a in adjacent[q]):
                if left[q] > 1 or forced >= 0:
                    return -2
                forced = q
        return forced

    def dfs(mask: int, drawn: int, top: int, forced: int) -> bool:
        key = mask | drawn << _STOCK_SHIFT | top << _TOP_SHIFT
        if key in failed:
            return False
        counter[0] += 1
        for p in fitting[top]:
            if mask >> p & 1 or mask & cover_masks[p] != cover_masks[p]:
                continue
            r = peak_ranks[p]
            if forced >= 0 and r != forced:
                continue
            new_mask = mask | 1 << p
            if new_mask == _FULL:
                line.append(p)
                return True
            avail[r] -= 1
            left[r] -= 1
            nxt = must_play(r)
            won = nxt != -2 and dfs(new_mask, drawn, r, nxt)
            avail[r] += 1
            left[r] += 1
            if won:
                line.append(p)
                return True
        if forced < 0 and drawn < limit:
            r = stock_ranks[drawn]
            avail[r] -= 1
            nxt = must_play(r)
            won = nxt != -2 and dfs(mask, drawn + 1, r, nxt)
            avail[r] += 1
            if won:
                line.append(DRAW)
                return True
        failed.add(key)
        return False

    if not dfs(0, 0, start_top, start_forced):
        return None
    line.reverse()
    return line


def dfs_baseline(deal: Deal) -> SolveResult:
    """A plain depth-first search with a visited set, for the benchmark only.

    States are (played positions, cards drawn, waste top card); moves are
    tried in the engine's order (plays by position, then a draw); no pruning.
    """
    peaks = deal.peaks
    stock = deal.stock
    wrap = deal.rules.wrap
    cover_masks = tuple(sum(1 << q for q in COVERED_BY[p]) for p in range(PEAK_CARDS))
    visited: set[tuple[int, int, int | None]] = set()
    line: list[Move] = []

    def dfs(mask: int, drawn: int, top: int | None) -> bool:
        if mask == _FULL:
            return True
        if (mask, drawn, top) in visited:
            return False
        visited.add((mask, drawn, top))
        for p in range(PEAK_CARDS):
            if mask >> p & 1 or mask & cover_masks[p] != cover_masks[p]:
                continue
            card = peaks[p]
            fits = top is None or is_adjacent(rank_of(card), rank_of(top), wrap)
            if fits and dfs(mask | 1 << p, drawn, card):
                line.append(p)
                return True
        if drawn < len(stock) and dfs(mask, drawn + 1, stock[drawn]):
            line.append(DRAW)
            return True
        return False

    if dfs(0, 0, deal.waste):
        line.reverse()
        return SolveResult(True, tuple(line), None, len(visited))
    return SolveResult(False, None, None, len(visited))
