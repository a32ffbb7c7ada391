"""How player names compare: the one rule the server's claims and every client share.

A name's *account* is the name after Unicode NFKC normalisation and case
folding, with runs of white space made one space and the ends trimmed, so
``Ann``, ``ann`` and ``ＡＮＮ`` are one name (docs/players.md).
"""

from __future__ import annotations

import unicodedata


def account_of(name: str) -> str:
    """The form names are compared in: NFKC, case folded, white space collapsed."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return " ".join(folded.split())
