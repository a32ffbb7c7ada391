"""Exact TriPeaks solver: decides winnability and par with every card known.

A state of play is decided by three things, packed into integers here:

* the 28-bit mask of played peak positions;
* the stock index: cards drawn so far, which is also the number of draws;
* the *rank* of the waste's top card (13 for an empty waste).  Suits never
  affect play, so two states that differ only in the top card's suit have
  the same future.

Two exact methods share that state:

**Depth-first search** (:func:`protocol.deals.depth_first.depth_first`) tries plays before draws and
stops at the first win.  Most deals are won within a few hundred states, so
it runs first: short probes, each with a fixed budget of states and its own
move order.

**Layered search** (:func:`protocol.deals.layered.layered`) expands all states with 0 draws, then
all with 1 draw, and so on: the first layer holding a win gives par.  It
relies on one dominance rule: a state with played mask ``M`` and top rank
``t`` reached after ``s`` draws can do everything the same ``(M, t)`` can do
after more draws, because it can copy that line, drawing extra cards when
the other line first draws, and catch up with the same draw count.  So each
``(M, t)`` is expanded once, in the first layer that reaches it.  Masks
are kept in groups that share their three upper rows, the bottom row of
each group being a 1,024-bit set, so that one integer operation moves a
whole group.  When the probes run out of budget this search decides the
deal; for par it runs after them, limited to the draws of the probes' line
(par is no larger).
When par is not wanted, each layer also starts short depth-first probes
from its most advanced masks, which find the wins of most hard deals many
layers before the breadth-first order would reach them.

Both prune states that provably cannot be won, from one observation: a peak
card of rank ``q`` can only be played right after a card of a rank adjacent
to ``q`` reached the waste, and each card on the waste is followed by at
most one card.  Its counting form (:mod:`protocol.deals.counting`) is one
addition per play on a packed integer: the depth-first search tests every
state with it, the layered search the states right after each draw, whole
groups of masks at a time (:class:`protocol.deals.layered.CountCheck`).

Exactness: every state is expanded, skipped as dominated, or pruned by the
sound rules above, so the answers (winnable, par) never depend on the budget,
the move order or time; they only choose which method finds the line.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.deals.depth_first import EMPTY, FULL, Board, probe
from protocol.deals.layered import layered
from protocol.rules.cards import is_adjacent, rank_of
from protocol.rules.game import DRAW, Deal, Game, Move
from protocol.rules.layout import COVERED_BY, PEAK_CARDS

__all__ = ["EMPTY", "SolveResult", "dfs_baseline", "par_of", "solve", "solve_game", "wins_within"]


@dataclass(frozen=True, slots=True)
class SolveResult:
    """What the solver decided about a deal.

    ``solution`` is a winning line (positions and ``"draw"``) when the deal
    is winnable.  ``par`` is the fewest draws of any win, when asked for and
    the deal is winnable; the solution then uses exactly ``par`` draws.
    ``nodes`` counts the states expanded by both methods.
    """

    winnable: bool
    solution: tuple[Move, ...] | None
    par: int | None
    nodes: int

    def __reduce__(
        self,
    ) -> tuple[type[SolveResult], tuple[bool, tuple[Move, ...] | None, int | None, int]]:
        # Results come back from the deal workers pickled; compiled (tools/native.py), a
        # frozen dataclass has no pickle support of its own.
        return SolveResult, (self.winnable, self.solution, self.par, self.nodes)


def solve(deal: Deal, *, want_par: bool = False) -> SolveResult:
    """Decide exactly whether ``deal`` can be won; with ``want_par`` also find par."""
    return _solve(Board(deal), want_par)


def solve_game(game: Game, *, want_par: bool = False) -> SolveResult:
    """Decide exactly whether the game can still be won from where it stands.

    The solution continues from the current position, and ``par`` counts
    the draws still needed.  The game is not changed.
    """
    mask = sum(1 << p for p in range(PEAK_CARDS) if game.is_removed(p))
    drawn = len(game.deal.stock) - game.stock_left
    return _solve(Board(game.deal, (mask, drawn, game.waste_top)), want_par)


def _solve(board: Board, want_par: bool) -> SolveResult:
    if board.start_mask == FULL:
        return SolveResult(True, (), 0 if want_par else None, 0)
    limit = len(board.stock_ranks)
    failed: dict[int, int] = {}
    line, nodes, complete = probe(board, limit, failed)
    if complete:
        return SolveResult(False, None, None, nodes)
    if line is not None:
        if not want_par:
            return SolveResult(True, tuple(line), None, nodes)
        # Par is at most this line's draws: searching only that far makes
        # the counting rule prune harder, and the answer is the same.
        limit = board.start_drawn + sum(1 for move in line if move == DRAW)
    # Without par any win will do, so the layers may be probed for one.
    last_draw, best, states = layered(board, limit, None if want_par else failed)
    nodes += states
    if best is None or last_draw is None:
        return SolveResult(False, None, None, nodes)
    par = last_draw - board.start_drawn
    return SolveResult(True, tuple(best), par if want_par else None, nodes)


def par_of(deal: Deal) -> tuple[int, tuple[Move, ...]]:
    """Par of a winnable ``deal`` and a win with exactly that many draws.

    Raises :class:`ValueError` when the deal cannot be won.
    """
    result = solve(deal, want_par=True)
    if result.par is None or result.solution is None:
        raise ValueError("the deal cannot be won, so it has no par")
    return result.par, result.solution


def wins_within(deal: Deal, max_draws: int) -> tuple[Move, ...] | None:
    """A win using at most ``max_draws`` draws, or ``None`` when there is none."""
    board = Board(deal)
    limit = max(0, min(max_draws, len(board.stock_ranks)))
    failed: dict[int, int] = {}
    line, _, complete = probe(board, limit, failed)
    if line is None and not complete:
        _, line, _ = layered(board, limit, failed)
    return None if line is None else tuple(line)


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
        if mask == FULL:
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

    won = dfs(0, 0, deal.waste)
    states = len(visited)
    # ``dfs`` refers to itself, a reference cycle that would keep millions of
    # visited states alive until a full garbage collection (seconds, later).
    visited.clear()
    if won:
        line.reverse()
        return SolveResult(True, tuple(line), None, states)
    return SolveResult(False, None, None, states)
