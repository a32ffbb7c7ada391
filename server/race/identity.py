"""Claimed names, pure: how a key is hashed and checked, and how many wrong keys a
name or an address may send.

A name is claimed under its account (:func:`protocol.wire.names.account_of`).  The
server keeps only :func:`hash_key`'s scrypt hash of the key, never the key.
The salt comes in as an argument (the shell draws it), and the limiter's time
too, so nothing here reads a clock or draws randomness.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from typing import Final

from server.race.ratelimit import AddressLimiter

#: scrypt's cost: 2**14 rounds of 8 blocks, one lane, 16 MiB of memory, about 40 ms
#: of one core here.  A key is 128+ random bits, out of reach of any guessing; the
#: hash only has to make a stolen table useless, and a hello must stay cheap.
SCRYPT_N: Final = 2**14
SCRYPT_R: Final = 8
SCRYPT_P: Final = 1
#: Bytes of salt and of the derived hash.
SALT_BYTES: Final = 16
HASH_BYTES: Final = 32
_MAXMEM: Final = 64 * 1024 * 1024
_SCHEME: Final = "scrypt"


def hash_key(key: str, salt: bytes, *, n: int = SCRYPT_N, r: int = SCRYPT_R,
             p: int = SCRYPT_P) -> str:
    """``scrypt$N$r$p$SALT$HASH`` (base64): what the server stores for a claimed name.

    CPU-bound for tens of milliseconds: the shell runs it off the event loop.
    """
    digest = _scrypt(key, salt, n, r, p)
    return "$".join((_SCHEME, str(n), str(r), str(p), _b64(salt), _b64(digest)))


def key_matches(key: str, stored: str) -> bool:
    """True when ``key`` is the key ``stored`` was made from (compared in constant time).

    The parameters come from ``stored``, so raising them later keeps old claims valid.
    """
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != _SCHEME:
            return False
        expected = base64.b64decode(digest)
        found = _scrypt(key, base64.b64decode(salt), int(n), int(r), int(p))
    except ValueError:
        return False
    return hmac.compare_digest(found, expected)


def _scrypt(key: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        key.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=_MAXMEM, dklen=HASH_BYTES
    )


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


@dataclass(frozen=True, slots=True)
class GuessLimits:
    """Wrong keys allowed: a budget per account and per address, refilled over a window."""

    per_name: int = 5
    per_address: int = 10
    window_ms: int = 60_000


class GuessLimiter:
    """Counts wrong keys per account and per address; a spent budget stops the checks.

    Each budget refills evenly over the window (5 per name: one more try every
    12 s).  While either is spent, a key for that name or from that address is
    refused without hashing it, so guessing costs the server nothing.
    """

    def __init__(self, limits: GuessLimits = GuessLimits()) -> None:
        per_s = 1000.0 / limits.window_ms
        self._names = AddressLimiter(limits.per_name * per_s, limits.per_name)
        self._addresses = AddressLimiter(limits.per_address * per_s, limits.per_address)

    def may_guess(self, account: str, address: str, now_ms: int) -> bool:
        """True when a key for ``account`` from ``address`` may be checked now."""
        return self._names.has_credit(account, now_ms) and self._addresses.has_credit(
            address, now_ms
        )

    def wrong(self, account: str, address: str, now_ms: int) -> None:
        """A wrong key for ``account`` came from ``address``."""
        self._names.allow(account, now_ms)
        self._addresses.allow(address, now_ms)
