"""Seeded shuffles that any language can reproduce (specified in docs/deals.md).

The generator is SHA-256 in counter mode, chosen because every platform ships
it and its output is fixed by a public standard (FIPS 180-4), unlike Python's
``random``.  For a seed and a candidate number:

1. ``block(i) = SHA-256(DOMAIN || seed_utf8 || 0x00 || candidate_u64be || i_u64be)``
   for ``i = 0, 1, 2, ...``; each 32-byte block yields four unsigned 64-bit
   big-endian words, read in order.
2. ``below(n)``: take the next word ``x``; if ``x >= 2**64 - (2**64 % n)`` discard
   it and take another; else return ``x % n`` (no modulo bias).
3. Fisher-Yates: start from the deck ``AC 2C .. KC AD .. KD AH .. KH AS .. KS``;
   for ``i`` from 51 down to 1, swap positions ``i`` and ``below(i + 1)``.
4. Cards 1-28 of the shuffled deck go to positions 0-27; with the standard
   start card 29 is the waste and 30-52 the stock (next drawn first); with the
   empty-waste start cards 29-52 are the stock.

>>> deck = shuffled_deck("42")
>>> len(deck), sorted(deck) == list(range(52)), deck == shuffled_deck(seed_text(42))
(52, True, True)
>>> shuffled_deck("42", candidate=1) != deck
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final

from protocol.rules.cards import DECK_SIZE, Card, CardError
from protocol.rules.game import Deal, Rules
from protocol.rules.layout import PEAK_CARDS

DOMAIN: Final = b"TriPeaks deal v1\x00"
MAX_SEED_LENGTH: Final = 64
_TWO_64: Final = 1 << 64


class SeedError(ValueError):
    """A seed that is empty, too long, or holds control characters."""


def check_seed(seed: str) -> str:
    """Return ``seed`` unchanged if it is a valid seed, else raise :class:`SeedError`.

    A seed is 1 to 64 printable characters.  An integer seed is simply its
    decimal text, so seed ``42`` and seed ``"42"`` are the same seed.
    """
    if not isinstance(seed, str) or not seed:
        raise SeedError("a seed is a non-empty string")
    if len(seed) > MAX_SEED_LENGTH:
        raise SeedError(f"a seed has at most {MAX_SEED_LENGTH} characters")
    if not seed.isprintable():
        raise SeedError("a seed holds printable characters only")
    return seed


def seed_text(seed: str | int) -> str:
    """The seed string for ``seed``: an integer becomes its decimal text.

    Integers from ``-2**63`` to ``2**64 - 1`` (signed or unsigned 64-bit) are
    accepted; the result is checked with :func:`check_seed`.

    >>> seed_text(42), seed_text("42"), seed_text(-7)
    ('42', '42', '-7')
    """
    if isinstance(seed, bool):
        raise SeedError("a seed is a string or an integer, not a bool")
    if isinstance(seed, int):
        if not -(1 << 63) <= seed < _TWO_64:
            raise SeedError("an integer seed must fit in 64 bits")
        return str(seed)
    return check_seed(seed)


class SeedStream:
    """The deterministic word stream for one seed and candidate."""

    def __init__(self, seed: str, candidate: int) -> None:
        if not 0 <= candidate < _TWO_64:
            raise SeedError("candidate numbers are 0 .. 2**64-1")
        self._prefix = DOMAIN + check_seed(seed).encode("utf-8") + b"\x00"
        self._prefix += candidate.to_bytes(8, "big")
        self._counter = 0
        self._words: list[int] = []

    def next_word(self) -> int:
        """The next unsigned 64-bit word."""
        if not self._words:
            block = hashlib.sha256(self._prefix + self._counter.to_bytes(8, "big")).digest()
            self._counter += 1
            self._words = [int.from_bytes(block[i : i + 8], "big") for i in (24, 16, 8, 0)]
        return self._words.pop()

    def below(self, n: int) -> int:
        """A uniform integer in ``range(n)`` by rejection sampling."""
        if not 1 <= n <= _TWO_64:
            raise ValueError(f"below() needs 1 <= n <= 2**64, got {n}")
        limit = _TWO_64 - (_TWO_64 % n)
        while True:
            word = self.next_word()
            if word < limit:
                return word % n


def shuffled_deck(seed: str, candidate: int = 0) -> list[Card]:
    """The 52 cards in shuffled order for ``seed`` and ``candidate``."""
    stream = SeedStream(seed, candidate)
    deck = list(range(DECK_SIZE))
    for i in range(DECK_SIZE - 1, 0, -1):
        j = stream.below(i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def deal_from_deck(deck: Sequence[Card], rules: Rules) -> Deal:
    """Lay out a shuffled deck: peaks, then the waste card (unless empty), then stock.

    Raises :class:`~protocol.rules.cards.CardError` unless ``deck`` holds the 52 cards once each.
    """
    if len(deck) != DECK_SIZE:
        raise CardError(f"a deck has {DECK_SIZE} cards, got {len(deck)}")
    peaks = tuple(deck[:PEAK_CARDS])
    if rules.empty_waste:
        return Deal(rules, peaks, None, tuple(deck[PEAK_CARDS:]))
    return Deal(rules, peaks, deck[PEAK_CARDS], tuple(deck[PEAK_CARDS + 1 :]))


def candidate_deal(seed: str, candidate: int, rules: Rules) -> Deal:
    """Candidate number ``candidate`` for ``seed``, laid out for ``rules``.

    This is the shuffle only: whether it can be won is the dealer's business.
    """
    return deal_from_deck(shuffled_deck(seed, candidate), rules)
