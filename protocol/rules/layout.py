"""The three-peak layout: positions 0..27 and which positions cover which.

Positions are numbered row by row from the top, left to right (docs/rules.md)::

            0               1               2
          3   4           5   6           7   8
        9  10  11      12  13  14      15  16  17
      18  19  20  21  22  23  24  25  26  27

>>> COVERED_BY[0], COVERED_BY[4], COVERED_BY[13], COVERED_BY[18]
((3, 4), (10, 11), (22, 23), ())
>>> COVERS[22]
(12, 13)
"""

from __future__ import annotations

from typing import Final

PEAK_CARDS: Final = 28
ROWS: Final[tuple[range, ...]] = (range(0, 3), range(3, 9), range(9, 18), range(18, 28))
BOTTOM_ROW: Final = ROWS[3]


def _covering(position: int) -> tuple[int, ...]:
    if position >= 18:
        return ()
    if position >= 9:
        k = position - 9
        return (18 + k, 19 + k)
    if position >= 3:
        m = position - 3
        k = 3 * (m // 2) + (m % 2)
        return (9 + k, 10 + k)
    return (3 + 2 * position, 4 + 2 * position)


#: ``COVERED_BY[p]`` are the positions whose cards lie on top of ``p``.
COVERED_BY: Final[tuple[tuple[int, ...], ...]] = tuple(_covering(p) for p in range(PEAK_CARDS))

#: ``COVERS[p]`` are the positions that the card at ``p`` lies on.
COVERS: Final[tuple[tuple[int, ...], ...]] = tuple(
    tuple(q for q in range(PEAK_CARDS) if p in COVERED_BY[q]) for p in range(PEAK_CARDS)
)


def row_of(position: int) -> int:
    """Row (0 at the top, 3 at the bottom) of a peak position.

    >>> row_of(0), row_of(8), row_of(9), row_of(27)
    (0, 1, 2, 3)
    """
    for index, row in enumerate(ROWS):
        if position in row:
            return index
    raise ValueError(f"no such position: {position}")
