"""The layered search of the exact solver (see :mod:`protocol.deals.solver`).

All states with 0 draws, then all with 1 draw, and so on, with masks kept in
groups that share their upper rows; the counting rule prunes whole groups.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

from protocol.deals.depth_first import FULL, Board, depth_first
from protocol.deals.groups import GroupTest, grow, merge, met_first, take_new
from protocol.rules.cards import RANK_COUNT
from protocol.rules.game import DRAW, Move
from protocol.rules.layout import COVERED_BY, PEAK_CARDS

if TYPE_CHECKING:  # type aliases only: the compiled twin of groups.py has none
    from protocol.deals.groups import GroupMove as _GroupMove
    from protocol.deals.groups import Playable

#: Masks probed depth-first at the start of each layer of a search without
#: par, and the states each of those probes may expand (see :func:`layered`).
LAYER_PROBES: Final = 2
LAYER_PROBE_BUDGET: Final = 100


def layered(
    board: Board, limit: int, probe_memo: dict[int, int] | None = None
) -> tuple[int | None, list[Move] | None, int]:
    """Breadth-first over draws: ``(cards drawn at the win, a line, states)``.

    The first two are ``None`` when no win draws at most ``limit`` cards.
    States are kept in groups (:data:`_Groups`), and each play moves a whole
    group at once: one shift of its bottom-row bitset for a bottom-row card,
    one mask of it for a card of the row above, nothing at all for the rows
    higher up.  That does the same work as a search mask by mask, about
    twice as fast in Python (measured).

    Without ``probe_memo`` the line is a fewest-draws one.  With it (the
    depth-first probes' memo of lost states), any win will do: the
    :data:`LAYER_PROBES` masks with the most cards played at the start of
    each layer are probed depth-first (:data:`LAYER_PROBE_BUDGET` states
    each) before the layer is expanded.  Winning lines of hard deals are
    rarely greedy early on, but from some layer on they usually run through
    the most advanced masks, so a probe there finds the win many layers
    before the breadth-first search would (measured).  Probes only ever
    find wins, so the verdict is still the layered search's.
    """
    if board.start_mask == FULL:
        return board.start_drawn, [], 0
    stock_ranks = board.stock_ranks
    fit = _group_moves(board)
    seen: list[_Groups] = [{} for _ in range(RANK_COUNT + 1)]
    layers: list[_Layer] = []  # per layer: (top rank, groups) kept there
    fresh: list[_Groups] = []  # per layer: masks never met in an earlier layer
    met: _Groups = {}
    next_start = [0] * RANK_COUNT  # first layer whose fresh masks have not drawn to rank r
    counts = CountCheck(board, limit)
    top = board.start_top
    start: _Groups = {board.start_mask & _UPPER_MASK: 1 << (board.start_mask >> _UPPER)}
    states = 0
    for drawn in range(board.start_drawn, limit + 1):
        # A start state with no card to play leads on only by drawing again, and
        # its mask, met in an earlier layer, gets that start state later on.
        moves = fit[top] if drawn > board.start_drawn else None
        start = counts.keep_groups(start, drawn, top, seen[top], moves)
        merge(seen[top], start)
        states += sum(bits.bit_count() for bits in start.values())
        found: _Layer = [(top, start)]
        layers.append(found)
        if probe_memo is not None:
            for mask in _most_played(start):
                line, count = depth_first(
                    board, limit, LAYER_PROBE_BUDGET, board.fitting, probe_memo, (mask, drawn, top)
                )
                states += count
                if line is not None:
                    won_at = drawn + line.count(DRAW)
                    return won_at, _line_back(board, layers, (mask, top, drawn)) + line, states
        front = {top: start} if start else {}
        while front:
            grown = grow(front, fit)
            front = {}
            for r, groups in grown.items():
                groups, count = take_new(seen[r], groups)
                if not groups:
                    continue
                states += count
                found.append((r, groups))
                if groups.get(_UPPER_MASK, 0) & _FULL_BOTTOM:
                    return drawn, _line_back(board, layers, (FULL, r, drawn)), states
                front[r] = groups
        fresh.append(met_first(met, found))
        if drawn < limit:
            # Masks that already drew to this rank in an earlier layer were
            # expanded with it then; only masks met since need a start state.
            top = stock_ranks[drawn]
            start = _union(fresh[next_start[top] :])
            next_start[top] = len(fresh)
    return None, None, states


#: Masks split at this position: the 18 cards of the three upper rows, and the
#: 10 cards of the bottom row (positions 18 to 27, which nothing covers).
_UPPER: Final = 18
_UPPER_MASK: Final = (1 << _UPPER) - 1
_BOTTOM_SUBSETS: Final = 1 << (PEAK_CARDS - _UPPER)
_FULL_BOTTOM: Final = 1 << (_BOTTOM_SUBSETS - 1)
#: A set of bottom-row masks, bit ``b`` for the mask ``b``: a Python int of up to 1,024
#: bits.  Typed ``Any`` on purpose: compiled (tools/native.py), an ``int`` is checked
#: after every operation for whether it fits a machine word, which these never do; as
#: ``Any`` each operation goes straight to CPython's integers (the slow candidates'
#: search about 15% faster, measured).  The packed sums of the counting rule are such
#: ints too (:class:`CountCheck`).
Bits = Any
#: A set of masks: upper-row mask -> bitset over the bottom-row masks, whose
#: bit ``b`` stands for the mask ``upper | b << 18``.  Masks that differ only
#: in the bottom row (about eight per group here) share one entry.
_Groups = dict[int, Bits]
#: The states one layer of the layered search kept: (top rank, groups) pieces,
#: in the order they were found.
_Layer = list[tuple[int, _Groups]]


def _bottom_set(member: Callable[[int], bool]) -> Bits:
    """The bitset of the bottom-row masks ``b`` for which ``member(b)``."""
    bits = "".join("1" if member(b) else "0" for b in range(_BOTTOM_SUBSETS - 1, -1, -1))
    return int(bits, 2)


@functools.cache
def _lacking(position: int) -> Bits:
    """Bottom-row masks in which bottom ``position`` is still to play."""
    bit = 1 << (position - _UPPER)
    return _bottom_set(lambda b: not b & bit)


@functools.cache
def _holding(bits: int) -> Bits:
    """Bottom-row masks in which every card of ``bits`` is played."""
    return _bottom_set(lambda b: b & bits == bits)


@functools.cache
def _at_least_played() -> tuple[Bits, ...]:
    """Per count ``n``: the bottom-row masks with at least ``n`` cards played."""
    return tuple(
        _bottom_set(functools.partial(_played_at_least, n)) for n in range(PEAK_CARDS - _UPPER + 1)
    )


def _played_at_least(count: int, bottom: int) -> bool:
    return bottom.bit_count() >= count




def _group_moves(board: Board) -> tuple[tuple[_GroupMove, ...], ...]:
    """Per top rank, how each position that fits it moves a group."""
    per_top = []
    for top in range(RANK_COUNT + 1):
        moves: list[_GroupMove] = []
        for p in board.fitting[top]:
            rank = board.peak_ranks[p]
            covers = COVERED_BY[p]
            if p >= _UPPER:  # free once, in the masks still lacking it
                moves.append((0, 1 << (p - _UPPER), _lacking(p), 0, rank))
            elif covers and min(covers) >= _UPPER:  # needs its bottom-row cards played
                needed = sum(1 << (q - _UPPER) for q in covers)
                moves.append((1, 1 << p, _holding(needed), 0, rank))
            else:  # covered only by upper cards: the group's key decides
                needed = sum(1 << q for q in covers)
                moves.append((2, 1 << p, needed | 1 << p, needed, rank))
        per_top.append(tuple(moves))
    return tuple(per_top)


def _union(pieces: list[_Groups]) -> _Groups:
    """The masks of all ``pieces``: the largest copied whole, the others added to it."""
    if not pieces:
        return {}
    largest = max(range(len(pieces)), key=lambda i: len(pieces[i]))
    union = dict(pieces[largest])
    for i, groups in enumerate(pieces):
        if i != largest:
            merge(union, groups)
    return union


def _most_played(groups: _Groups) -> list[int]:
    """Up to :data:`LAYER_PROBES` masks of ``groups``, most cards played first.

    At most one mask per group: masks of one group share their upper rows,
    so probing two of them would mostly repeat the same search.  Groups are
    visited by their upper rows' count, and the visit stops once no later
    group can beat the masks already picked, even with a full bottom row.
    """
    at_least = _at_least_played()
    bottom_cards = len(at_least) - 1
    by_count: dict[int, list[int]] = {}
    for upper in groups:  # bucketed, not sorted: only the first buckets are visited
        by_count.setdefault(upper.bit_count(), []).append(upper)
    ranked: list[tuple[int, int]] = []
    for upper in _by_count_then_key(by_count):
        played = upper.bit_count()
        if len(ranked) >= LAYER_PROBES and (not ranked or played + bottom_cards <= ranked[-1][0]):
            break
        bits = groups[upper]
        most = next(n for n in range(bottom_cards, -1, -1) if bits & at_least[n])
        best = bits & at_least[most]
        bottom = (best & -best).bit_length() - 1
        ranked.append((played + most, upper | bottom << _UPPER))
        ranked.sort(key=lambda item: -item[0])  # stable: earlier groups first on ties
        del ranked[LAYER_PROBES:]
    return [mask for _, mask in ranked]


def _by_count_then_key(by_count: dict[int, list[int]]) -> Iterator[int]:
    """The keys of ``by_count``'s lists, highest count first, then in ascending order."""
    for count in sorted(by_count, reverse=True):
        yield from sorted(by_count[count])


def _contains(groups: _Groups, mask: int) -> bool:
    """True when ``mask`` is one of the masks of ``groups``."""
    return bool(groups.get(mask & _UPPER_MASK, 0) >> (mask >> _UPPER) & 1)


def _holds(layer: _Layer, top: int, mask: int) -> bool:
    """True when ``layer`` kept the state ``(mask, top)``."""
    return any(t == top and _contains(groups, mask) for t, groups in layer)


class CountCheck:
    """The counting rule (:mod:`protocol.deals.counting`) on whole groups of masks.

    It is applied to the states right after each draw only: testing the
    states that plays reach too removed more states but cost more time than
    it saved (measured).  A group of masks is often decided whole: when its
    upper rows pass even with the bottom row's worst sums, or fail even with
    its best ones (:class:`protocol.deals.groups.GroupTest`, compiled
    by the native build).
    """

    def __init__(self, board: Board, limit: int) -> None:
        self.counting = counting = board.counting(limit)
        most, least = counting.bottom_range
        self.test = GroupTest(counting.weights, most, least, counting.biases, counting.credit)

    def keep(self, masks: set[int], drawn: int, top: int) -> set[int]:
        """The masks that pass the counting rule with ``drawn`` draws and this top.

        The rule mask by mask: the search itself uses :meth:`keep_groups`,
        and the tests hold that one to this plain form.
        """
        counting = self.counting
        return {m for m in masks if not counting.lost(counting.mask_sum(m), drawn, top)}

    def keep_groups(
        self,
        groups: _Groups,
        drawn: int,
        top: int,
        seen: _Groups | None = None,
        moves: tuple[_GroupMove, ...] | None = None,
    ) -> _Groups:
        """:meth:`keep` for groups of masks (see :func:`layered`).

        With ``seen``, its masks are left out first; with ``moves`` (the
        group moves of the top rank), so are the masks that have no card to
        play on that top.  All in one pass, since the layered search does
        all three to every start state.
        """
        playable = None if moves is None else _playable(moves)
        kept: _Groups = self.test.keep(groups, drawn, top, seen, playable)
        return kept


def _playable(
    moves: tuple[_GroupMove, ...],
) -> Playable:
    """The group moves of one top split by kind: the bottom-row masks with a
    bottom-row card to play, the second-row moves and the higher ones."""
    bottom: Bits = 0
    for kind, _, b, _, _ in moves:
        if kind == 0:
            bottom |= b
    second = tuple((a, b) for kind, a, b, _, _ in moves if kind == 1)
    higher: tuple[tuple[int, int], ...] = tuple((b, c) for kind, _, b, c, _ in moves if kind == 2)
    return bottom, second, higher


def _line_back(board: Board, layers: list[_Layer], state: tuple[int, int, int]) -> list[Move]:
    """Walk back from a state the layered search reached to the start.

    Every state kept in ``layers`` was reached from another kept state (or
    from the start), so some predecessor is always found.
    """
    mask, top, drawn = state
    base = board.start_drawn  # layers[i] holds the states after base + i draws
    backwards: list[Move] = []
    while not (mask == board.start_mask and drawn == base and top == board.start_top):
        if drawn > base and top == board.stock_ranks[drawn - 1]:
            earlier = _earlier_layer(layers, mask, drawn, base)
            if earlier is not None:
                backwards.extend([DRAW] * (drawn - earlier[0]))
                drawn, top = earlier
                continue
        position, top = _play_before(board, layers[drawn - base], mask, top, drawn)
        mask &= ~(1 << position)
        backwards.append(position)
    backwards.reverse()
    return backwards


def _earlier_layer(
    layers: list[_Layer], mask: int, drawn: int, base: int
) -> tuple[int, int] | None:
    """The latest layer before ``drawn`` holding ``mask``, and a top it had there."""
    for layer in range(drawn - 1, base - 1, -1):
        for top, groups in layers[layer - base]:
            if _contains(groups, mask):
                return layer, top
    return None


def _play_before(
    board: Board, layer: _Layer, mask: int, top: int, drawn: int
) -> tuple[int, int]:
    """A position just played to reach ``(mask, top)`` and the top before it."""
    for p in range(PEAK_CARDS):
        if not mask >> p & 1 or board.peak_ranks[p] != top:
            continue
        before = mask & ~(1 << p)
        if before & board.cover_masks[p] != board.cover_masks[p]:
            continue
        at_start = before == board.start_mask and drawn == board.start_drawn
        if at_start and top in board.adjacent[board.start_top]:
            return p, board.start_top
        for previous in board.adjacent[top]:
            if _holds(layer, previous, before):
                return p, previous
    raise AssertionError("the layered search kept a state with no predecessor")
