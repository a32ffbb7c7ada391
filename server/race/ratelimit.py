"""Credit buckets and the abuse rule: the rate limits, pure and with time passed in.

A bucket holds up to ``burst`` credits and regains ``rate`` credits per
second.  Each frame spends one credit; a frame that finds the bucket empty is
refused.  The bucket also remembers how many frames it saw and refused over
the last one to two windows of ``window_ms`` (:meth:`CreditBucket.note`), and
a sender is abusive when at least ``min_refused`` of them, and at least
``share`` of all of them, were refused (:meth:`CreditBucket.is_abusive`).  A
client that only brushes the limit is never closed; a flood, paced or not, is
within a window or two, however many of its frames still find credit.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The window over which refusals are counted, unless a bucket is given another.
WINDOW_MS = 2000


@dataclass(slots=True)
class CreditBucket:
    """One sender's credit bucket, with its recent refusals."""

    rate: float
    burst: float
    credits: float
    updated_ms: int
    window_ms: int = WINDOW_MS
    #: Start of the current window, and the frames seen and refused in it.
    window_start_ms: int = 0
    seen: int = 0
    refused: int = 0
    #: The same for the window before it (zero when that lies further back).
    seen_before: int = 0
    refused_before: int = 0

    @classmethod
    def full(
        cls, rate: float, burst: float, now_ms: int, window_ms: int = WINDOW_MS
    ) -> CreditBucket:
        """A bucket that starts full."""
        return cls(rate, burst, burst, now_ms, window_ms, window_start_ms=now_ms)

    def refill(self, now_ms: int) -> None:
        """Add the credits earned since the last update."""
        elapsed = max(0, now_ms - self.updated_ms)
        self.credits = min(self.burst, self.credits + elapsed * self.rate / 1000.0)
        self.updated_ms = max(self.updated_ms, now_ms)

    def spend(self, now_ms: int, cost: float = 1.0) -> bool:
        """Spend ``cost`` credits if there are enough; False if not."""
        # :meth:`refill` written out: this runs for every frame a client sends.
        credits = self.credits
        if now_ms > self.updated_ms:
            credits += (now_ms - self.updated_ms) * self.rate / 1000.0
            if credits > self.burst:
                credits = self.burst
            self.updated_ms = now_ms
        if credits >= cost:
            self.credits = credits - cost
            return True
        self.credits = credits
        return False

    def has_credit(self, now_ms: int, cost: float = 1.0) -> bool:
        """True when :meth:`spend` of ``cost`` would succeed now; spends nothing."""
        if self.credits >= cost:  # credit only grows with time: no refill needed
            return True
        self.refill(now_ms)
        return self.credits >= cost

    def note(self, now_ms: int, refused: bool) -> None:
        """Count one frame for the abuse rule: ``refused`` for lack of credit, or handled."""
        if now_ms - self.window_start_ms >= self.window_ms:
            recent = now_ms - self.window_start_ms < 2 * self.window_ms
            self.seen_before = self.seen if recent else 0
            self.refused_before = self.refused if recent else 0
            self.seen = self.refused = 0
            self.window_start_ms = now_ms
        self.seen += 1
        if refused:
            self.refused += 1

    def is_abusive(self, min_refused: int, share: float) -> bool:
        """True when the recent frames hold ``min_refused`` refusals and at least ``share``
        of them were refused."""
        refused = self.refused + self.refused_before
        return refused >= min_refused and refused >= share * (self.seen + self.seen_before)

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
            bucket = self._new(address, now_ms)
        return bucket.spend(now_ms, cost)

    def has_credit(self, address: str, now_ms: int, cost: float = 1.0) -> bool:
        """True when :meth:`allow` of ``cost`` would succeed now; spends nothing."""
        bucket = self._buckets.get(address)
        return bucket is None or bucket.has_credit(now_ms, cost)

    def _new(self, address: str, now_ms: int) -> CreditBucket:
        if len(self._buckets) >= self.max_entries:
            self._prune(now_ms)
        bucket = self._buckets[address] = CreditBucket.full(self.rate, self.burst, now_ms)
        return bucket

    def _prune(self, now_ms: int) -> None:
        # A bucket that has refilled completely carries no information.
        for address, bucket in list(self._buckets.items()):
            bucket.refill(now_ms)
            if bucket.credits >= bucket.burst:
                del self._buckets[address]
        if len(self._buckets) >= self.max_entries:
            self._buckets.clear()
