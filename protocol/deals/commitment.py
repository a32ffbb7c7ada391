"""The seed commitment sent at race start and checked after race over.

At race start every player gets ``commitment(seed, rules)``: the lowercase
hex SHA-256 (FIPS 180-4) of this UTF-8 byte string, with ``\\n`` a single
line feed (0x0A) and no trailing newline::

    tripeaks-commit-v1
    seed=<seed>
    wrap=<1 or 0>
    empty_waste=<1 or 0>

A seed is 1 to 64 printable characters (so it holds no line feed) and server
seeds carry at least 128 random bits, so nobody can find the seed from the
commitment before the race ends.  ``race_over`` reveals the seed; anyone can
then recompute the hash, and recompute the deal from the seed and the
revealed candidate number (docs/deals.md).

>>> commitment("42", Rules())
'9120f6b39263d7d9325244d8f590ab3fc7c370314f6393d7a6dd93de8e0ac8bf'
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

from protocol.deals.shuffle import candidate_deal, check_seed
from protocol.rules.game import Deal, Rules

COMMITMENT_DOMAIN: Final = "tripeaks-commit-v1"


def commitment_text(seed: str, rules: Rules) -> str:
    """The exact text that is hashed (see the module docstring)."""
    check_seed(seed)
    return (
        f"{COMMITMENT_DOMAIN}\nseed={seed}\nwrap={int(rules.wrap)}"
        f"\nempty_waste={int(rules.empty_waste)}"
    )


def commitment(seed: str, rules: Rules) -> str:
    """Lowercase hex SHA-256 of :func:`commitment_text`; raises ``SeedError`` on a bad seed."""
    return hashlib.sha256(commitment_text(seed, rules).encode("utf-8")).hexdigest()


def verify_commitment(digest: str, seed: str, rules: Rules) -> bool:
    """True when ``digest`` is the commitment of ``seed`` under ``rules``.

    False (never an exception) for a malformed digest or an invalid seed.
    """
    try:
        expected = commitment(seed, rules)
    except ValueError:
        return False
    return hmac.compare_digest(expected, digest.lower()) if digest.isascii() else False


def verify_deal(deal: Deal, seed: str, candidate: int) -> bool:
    """True when ``deal`` is candidate ``candidate`` of ``seed`` under its own rules."""
    try:
        return candidate_deal(seed, candidate, deal.rules) == deal
    except ValueError:
        return False
