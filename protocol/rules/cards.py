"""Cards and their two-character notation (rank then suit, e.g. ``TD``).

A card is an ``int`` from 0 to 51: ``suit * 13 + rank``, with ranks ``A..K``
as 0..12 and suits in the order ``C D H S``.  That integer order is also the
deck order the shuffle starts from (see ``docs/deals.md``).

>>> card_code(parse_card("QH"))
'QH'
>>> is_adjacent(rank_of(parse_card("KS")), rank_of(parse_card("AD")), wrap=True)
True
"""

from __future__ import annotations

from typing import Final

RANKS: Final = "A23456789TJQK"
SUITS: Final = "CDHS"
DECK_SIZE: Final = 52
RANK_COUNT: Final = 13

Card = int

#: Every card code, indexed by card: ``ALL_CODES[card] == card_code(card)``.
ALL_CODES: Final[tuple[str, ...]] = tuple(rank + suit for suit in SUITS for rank in RANKS)
_CODE_TO_CARD: Final[dict[str, Card]] = {code: i for i, code in enumerate(ALL_CODES)}


class CardError(ValueError):
    """A string is not a card code, or a list of codes is not a valid deck part."""


def rank_of(card: Card) -> int:
    """Rank index of ``card``: 0 for an ace up to 12 for a king."""
    return card % RANK_COUNT


def suit_of(card: Card) -> int:
    """Suit index of ``card`` in ``C D H S`` order."""
    return card // RANK_COUNT


def card_code(card: Card) -> str:
    """Two-character code of ``card``.

    >>> card_code(0), card_code(9), card_code(51)
    ('AC', 'TC', 'KS')
    """
    if isinstance(card, bool) or not isinstance(card, int) or not 0 <= card < DECK_SIZE:
        raise CardError(f"card index out of range: {card!r}")
    return ALL_CODES[card]


def parse_card(code: str) -> Card:
    """Card for a two-character code such as ``7C``; raises :class:`CardError`.

    Codes are exact: upper case, ``T`` for ten.

    >>> parse_card("7C"), parse_card("TD")
    (6, 22)
    >>> parse_card("10D")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    protocol.rules.cards.CardError: not a card code: '10D' (expected a rank from A23456789TJQK, ...)
    """
    try:
        return _CODE_TO_CARD[code]
    except (KeyError, TypeError):
        raise CardError(
            f"not a card code: {code!r} (expected a rank from A23456789TJQK, then a suit from CDHS)"
        ) from None


def is_adjacent(rank_a: int, rank_b: int, wrap: bool) -> bool:
    """True when two ranks are one apart; with ``wrap`` a king and an ace are too.

    >>> is_adjacent(12, 0, wrap=True), is_adjacent(12, 0, wrap=False)
    (True, False)
    """
    diff = abs(rank_a - rank_b)
    return diff == 1 or (wrap and diff == RANK_COUNT - 1)
