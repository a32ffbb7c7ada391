"""The shell's side of claimed names: a new session's ``hello`` checked against the claims.

A ``hello`` that does not resume a session may name a claimed name; whether
it may use it takes a database read and, with a key, a slow hash, so the hub
hands it here and holds the connection's later messages until it is decided
(:class:`Claims` keeps them in order).  :meth:`Claims.account_for` answers
with the account the hello proved, ``None`` for a guest, or raises the
refusal:

* a claimed name without ``key``: 119 ``NAME_CLAIMED``;
* a key that does not match: 120 ``WRONG_KEY`` (a guess, counted per name and
  per address);
* too many wrong keys lately: 121 ``TOO_MANY_GUESSES``, before any hashing;
* the database cannot be read: 201 ``SERVER_BUSY``.

A key with a name nobody claimed claims it.  The key itself is never logged
nor kept: only its scrypt hash is stored.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import secrets
from typing import Final

from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode, ProtocolError
from protocol.wire.names import account_of
from server.race.identity import SALT_BYTES, GuessLimiter, hash_key, key_matches
from server.storage.players import Claim, Players
from server.storage.store import StorageError

#: Most messages held behind a hello being checked; more are refused as rate-limited.
MAX_HELD: Final = 64
#: Keys hashed at once (each takes 16 MiB and a core for ~50 ms), so that hellos leave
#: the deal pool's other workers to deals.
HASHERS: Final = 2


class Claims:
    """Decides which account a new session's ``hello`` proves."""

    def __init__(
        self,
        players: Players,
        executor: concurrent.futures.Executor | None = None,
        limiter: GuessLimiter | None = None,
    ) -> None:
        self.players = players
        #: Where keys are hashed: the deal process pool.  hashlib.scrypt holds the GIL
        #: while it runs (a thread would stall the event loop for the whole hash).
        self.executor = executor
        self.limiter = limiter or GuessLimiter()
        self._hashing = asyncio.Semaphore(HASHERS)

    async def account_for(self, hello: m.Hello, address: str, now_ms: int) -> str | None:
        """The account ``hello`` proves (None: a guest), or :class:`ProtocolError`."""
        account = account_of(hello.name)
        try:
            claim = await self.players.claim_of(account)
        except StorageError as exc:
            raise _unavailable() from exc
        if claim is None:
            if hello.key is None:
                return None
            return await self._claim(hello, account, address, now_ms)
        if hello.key is None:
            raise ProtocolError(ErrorCode.NAME_CLAIMED, f"the name {hello.name!r} is claimed: "
                                "send its key in hello, or choose another name")
        if not self.limiter.may_guess(account, address, now_ms):
            raise ProtocolError(ErrorCode.TOO_MANY_GUESSES)
        if not await self._matches(hello.key, claim.key_hash):
            self.limiter.wrong(account, address, now_ms)
            raise ProtocolError(ErrorCode.WRONG_KEY)
        return account

    async def _claim(
        self, hello: m.Hello, account: str, address: str, now_ms: int
    ) -> str | None:
        assert hello.key is not None
        salt = secrets.token_bytes(SALT_BYTES)
        async with self._hashing:
            loop = asyncio.get_running_loop()
            key_hash = await loop.run_in_executor(self.executor, hash_key, hello.key, salt)
        try:
            if await self.players.claim(Claim(account, hello.name, key_hash), now_ms):
                return account
        except StorageError as exc:
            raise _unavailable() from exc
        # Claimed by someone else a moment ago: check the key against that claim.
        return await self.account_for(hello, address, now_ms)

    async def _matches(self, key: str, key_hash: str) -> bool:
        async with self._hashing:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self.executor, key_matches, key, key_hash)


class Held:
    """The messages a connection sent while its ``hello`` is checked, in order."""

    def __init__(self) -> None:
        self.messages: list[m.ClientMessage] = []

    def add(self, message: m.ClientMessage) -> bool:
        """Keep ``message``; False when too many are held already."""
        if len(self.messages) >= MAX_HELD:
            return False
        self.messages.append(message)
        return True


def _unavailable() -> ProtocolError:
    return ProtocolError(
        ErrorCode.SERVER_BUSY,
        "names cannot be checked now (the database is unavailable); try again shortly",
    )
