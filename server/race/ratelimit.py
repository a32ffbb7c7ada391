"""Credit buckets: the rate limits, pure and with time passed in.

A bucket holds up to ``burst`` credits and regains ``rate`` credits per
second.  Each message spends one credit.  A message that finds the bucket
empty is refused and counts as a strike; ``strikes`` consecutive refusals mark
the sender as abusive (the shell then closes with 1008).  Any accepted message
clears the strikes, so a client that only brushes the limit is never closed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class CreditBucket:
    """One sender's credit bucket."""

    rate: float
    burst: float
    credits: float
    updated_ms: int
    strikes: int = 0

    @classmethod
    def full(cls, rate: float, burst: float, now_ms: int) -> CreditBucket:
        """A bucket that starts full."""
        return cls(rate=rate, burst=burst, credits=burst, updated_ms=now_ms)

    def refill(self, now_ms: int) -> None:
        """Add the credits earned since the last update."""
        elapsed = max(0, now_ms - self.updated_ms)
        self.credits = min(self.burst, self.credits + elapsed * self.rate / 1000.0)
        self.updated_ms = max(self.updated_ms, now_ms)

    def spend(self, now_ms: int, cost: float = 1.0) -> bool:
        """Spend ``cost`` credits if there are enough; False (and a strike) if not."""
        # :meth:`refill` written out: this runs for every frame a client sends.
        credits = self.credits
        if now_ms > self.updated_ms:
            credits += (now_ms - self.updated_ms) * self.rate / 1000.0
            if credits > self.burst:
                credits = self.burst
            self.updated_ms = now_ms
        if credits >= cost:
            self.credits = credits - cost
            if self.strikes:
                self.strikes = 0
            return True
        self.credits = credits
        self.strikes += 1
        return False

    def has_credit(self, now_ms: int, cost: float = 1.0) -> bool:
        """True when :meth:`spend` of ``cost`` would succeed now; spends and strikes nothing."""
        if self.credits >= cost:  # credit only grows with time: no refill needed
            return True
        self.refill(now_ms)
        return self.credits >= cost

    def is_abusive(self, limit: int) -> bool:
        """True once ``limit`` consecutive messages were refused."""
        return self.strikes >= limit

    def retune(self, rate: float, burst: float) -> None:
        """Switch budgets (a player who becomes a spectator), keeping the credit share."""
        share = self.credits / self.burst if self.burst else 1.0
        self.rate, self.burst = rate, burst
        self.credits = share * burst


class AddressLimiter:
    """Credit buckets keyed by client address, pruned so memory stays bounded."""

    def __init__(self, rate: float, burst: float, max_entries: int = 50_000) -> None:
        self.rate = rate
        self.burst = burst
        self.max_entries = max_entries
        self._buckets: dict[str, CreditBucket] = {}

    def allow(self, address: str, now_ms: int, cost: float = 1.0) -> bool:
        """Spend ``cost`` credits from ``address``'s bucket."""
        bucket = self._buckets.get(address)
        if bucket is None:
            if len(self._buckets) >= self.max_entries:
                self._prune(now_ms)
            bucket = CreditBucket.full(self.rate, self.burst, now_ms)
            self._buckets[address] = bucket
        return bucket.spend(now_ms, cost)

    def _prune(self, now_ms: int) -> None:
        # A bucket that has refilled completely carries no information.
        for address, bucket in list(self._buckets.items()):
            bucket.refill(now_ms)
            if bucket.credits >= bucket.burst:
                del self._buckets[address]
        if len(self._buckets) >= self.max_entries:
            self._buckets.clear()
