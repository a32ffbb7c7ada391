"""Sets of masks kept in groups, and the counting rule on them: the layered search's inner loops.

The layered search (:mod:`protocol.deals.layered`) keeps a set of masks as groups: a dict
from the mask of the 18 cards of the three upper rows to the set of bottom-row masks that
go with it, an int whose bit ``b`` stands for the bottom-row mask ``b`` (up to 1,024
bits).  :func:`grow` plays one card in whole groups at once; :func:`take_new`,
:func:`met_first` and :func:`merge` are its set operations.

:class:`GroupTest` holds one deal's packed counting rule (:mod:`protocol.deals.counting`)
split where the layered search splits a mask (:mod:`protocol.deals.layered`): tables of
the packed sums of the ten cards of the two top rows, of the eight of the third row and of
the ten of the bottom row, so that a mask's sum is three table reads.  :meth:`GroupTest.keep`
leaves out of a set of groups the masks already seen, those with no card to play on the
top, and those the rule proves lost.

The native build (``tools/native.py``) compiles ``groups.c`` beside this file into
an extension module of the same name, which Python then imports in its place (as it does the
modules mypyc compiles).  That one does the same work on fixed-width words instead of
CPython's integers: the packed sums mod 2**512, whose bits under the lost bits are the same
as these, and the bottom-row sets as sixteen 64-bit words.  It gives the same results in the
same order (``tests/protocol/deals/test_groups.py`` holds the two to each other);
this module is the definition, and what runs with ``TRIPEAKS_PURE=1`` or without a build.
"""

from __future__ import annotations

from typing import Any

#: A set of bottom-row masks (bit ``b`` for the mask ``b``): a Python int of up to 1,024
#: bits.  ``Any`` for the reason given at :data:`protocol.deals.layered.Bits`.
Bits = Any
#: Upper-row mask (the 18 cards of the three upper rows) -> its bottom-row masks.
Groups = dict[int, Bits]
#: The moves on one top, split by kind (``layered._playable``): the bottom-row masks with a
#: bottom-row card to play; per second-row card its position bit and the bottom-row masks
#: where it is free; per higher card the upper-row bits of its covers and itself, and what
#: they must hold (its covers played, itself not).
#: How one fitting position moves a group (``layered._group_moves``): ``(kind, a, b, c,
#: rank)``.  Kind 0, a bottom-row card: ``a`` its bit in the bottom-row mask, ``b`` the
#: bottom-row masks lacking it.  Kind 1, a second-row card: ``a`` its upper-row bit, ``b``
#: the bottom-row masks holding its covers.  Kind 2, a higher card: ``a`` its upper-row bit,
#: ``b`` the bits of its covers and itself, ``c`` those of its covers.  ``rank`` is its rank.
GroupMove = tuple[int, int, Bits, int, int]
Playable = tuple[Bits, tuple[tuple[int, Bits], ...], tuple[tuple[int, int], ...]]

_BOTTOM_SUBSETS = 1024
_ONE: tuple[Bits, ...] = tuple(1 << b for b in range(_BOTTOM_SUBSETS))


class GroupTest:
    """The counting rule of one deal and draw limit, for groups of masks.

    ``weights`` are the 28 positions' packed weights, ``most`` and ``least`` the largest
    and smallest packed sums of the bottom row, ``biases`` per number of cards drawn the
    packed bias and the bits meaning lost, and ``credits`` per top rank (and the empty
    waste) the placement it gives: :class:`protocol.deals.counting.Counting`'s fields.
    """

    def __init__(
        self,
        weights: tuple[int, ...],
        most: int,
        least: int,
        biases: list[tuple[int, int]],
        credits: tuple[int, ...],
    ) -> None:
        if len(weights) != 28:
            raise ValueError(f"28 weights expected, got {len(weights)}")
        self.tables = (_sums(weights[0:10]), _sums(weights[10:18]), _sums(weights[18:28]))
        self.most = most
        self.least = least
        self.biases = biases
        self.credits = credits

    def keep(
        self,
        groups: Groups,
        drawn: int,
        top: int,
        seen: Groups | None,
        playable: Playable | None,
    ) -> Groups:
        """The masks of ``groups`` not in ``seen``, with a card to play (when ``playable``
        is given) and not lost with ``drawn`` cards drawn and this top, in their order."""
        bias, lost = self.biases[drawn]
        bias -= self.credits[top]
        low, mid, bottom = self.tables
        most, least = self.most, self.least
        kept: Groups = {}
        for upper, bits in groups.items():
            if seen:
                bits &= ~seen.get(upper, 0)
                if not bits:
                    continue
            if playable is not None:
                can = bits & playable[0]  # a bottom-row card to play
                if can != bits:
                    for needed, played in playable[2]:
                        if upper & needed == played:
                            can = bits  # a higher card, free in the whole group
                            break
                    else:
                        for position, holding in playable[1]:
                            if not upper & position:
                                can |= bits & holding
                if not can:
                    continue
                bits = can
            base = low[upper & 1023] + mid[upper >> 10] + bias
            if not (base + most) & lost:
                kept[upper] = bits  # passes whatever its bottom row holds
                continue
            if (base + least) & lost:
                continue  # fails whatever its bottom row holds
            rest = bits
            while rest:  # from the highest bit down, so that ``rest`` shrinks
                b = rest.bit_length() - 1
                one = _ONE[b]
                rest ^= one
                if (base + bottom[b]) & lost:
                    bits ^= one
            if bits:
                kept[upper] = bits
        return kept


def grow(front: dict[int, Groups], fit: tuple[tuple[GroupMove, ...], ...]) -> dict[int, Groups]:
    """Every state one play away from ``front`` (top rank -> groups), per new top rank.

    Each play moves a whole group at once: one shift of its bottom-row set for a
    bottom-row card, one mask of it for a card of the row above, nothing at all for the
    rows higher up.
    """
    grown: dict[int, Groups] = {}
    for top, groups in front.items():
        for kind, a, b, c, rank in fit[top]:
            into = grown.setdefault(rank, {})
            if kind == 0:  # bottom-row card: shift the masks lacking it
                for upper, bits in groups.items():
                    moved = bits & b
                    if moved:
                        moved <<= a
                        into[upper] = into.get(upper, 0) | moved
            elif kind == 1:  # second-row card: keep the masks where it is free
                for upper, bits in groups.items():
                    if not upper & a:
                        moved = bits & b
                        if moved:
                            key = upper | a
                            into[key] = into.get(key, 0) | moved
            else:  # higher card: free or not for the whole group
                free: int = b  # its covers and itself: an upper-row mask, a machine word
                for upper, bits in groups.items():
                    if upper & free == c:
                        key = upper | a
                        into[key] = into.get(key, 0) | bits
    return grown


def take_new(seen: Groups, groups: Groups) -> tuple[Groups, int]:
    """The masks of ``groups`` not in ``seen``, added to it; and how many."""
    new: Groups = {}
    count = 0
    for upper, bits in groups.items():
        old = seen.get(upper)
        if old:
            bits &= ~old
            if not bits:
                continue
            seen[upper] = old | bits
        else:
            seen[upper] = bits
        new[upper] = bits
        count += bits.bit_count()
    return new, count


def met_first(met: Groups, pieces: list[tuple[int, Groups]]) -> Groups:
    """The masks of the ``(top rank, groups)`` pieces not in ``met``, added to it."""
    new: Groups = {}
    for _, groups in pieces:
        for upper, bits in groups.items():
            old = met.get(upper, 0)
            bits &= ~old
            if bits:
                met[upper] = old | bits
                new[upper] = new.get(upper, 0) | bits
    return new


def merge(into: Groups, groups: Groups) -> None:
    """Add ``groups`` to ``into``."""
    for upper, bits in groups.items():
        into[upper] = into.get(upper, 0) | bits


def _sums(weights: tuple[int, ...]) -> list[Bits]:
    """Table of the sums of every subset of ``weights``, indexed by bit pattern."""
    table = [0]
    for weight in weights:
        table += [value + weight for value in table]
    return table
