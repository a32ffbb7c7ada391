"""Unguessable identifiers from the operating system's CSPRNG.

Room codes are short enough to read aloud: six characters from an alphabet
without look-alikes (no 0/O, 1/I/L, 2/Z, 5/S, 8/B, U/V), giving 23**6, about
148 million codes.
"""

from __future__ import annotations

import secrets
from collections.abc import Container
from typing import Final

ROOM_CODE_ALPHABET: Final = "34679ACDEFGHJKMNPQRTWXY"
ROOM_CODE_LENGTH: Final = 6


def room_code(taken: Container[str] = ()) -> str:
    """A fresh room code not in ``taken``."""
    while True:
        code = "".join(secrets.choice(ROOM_CODE_ALPHABET) for _ in range(ROOM_CODE_LENGTH))
        if code not in taken:
            return code


def normalize_room_code(text: str) -> str:
    """A typed code in canonical form: upper case, no spaces or dashes."""
    return text.strip().upper().replace("-", "").replace(" ", "")


def player_id() -> str:
    """A public player id (shown to others)."""
    return "p" + secrets.token_hex(6)


def reconnect_token() -> str:
    """A secret bearer token that reclaims a seat after a drop."""
    return secrets.token_urlsafe(24)


def race_id() -> str:
    """A stored race's id: 16 hex characters."""
    return secrets.token_hex(8)


def seed() -> str:
    """A fresh race seed nobody can predict: 128 bits as 32 hex characters."""
    return secrets.token_hex(16)
