"""The counters the hot path bumps (frames sent, moves answered, moves timed), compiled.

:mod:`server.metrics` publishes them at scrape time.  They live apart from it
because that module subclasses prometheus-client's collectors, which a compiled
module may not (tools/native.py); compiled here, a counter the hub bumps per
move and per flush is a native attribute, not a Python object's.
"""

from __future__ import annotations

from typing import Final

from protocol.rules.refusals import Reason

#: The bounds (seconds) of ``tripeaks_move_seconds``' buckets.
MOVE_BUCKETS: Final = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1)


class HotCounts:
    """Counters bumped on the hot path: plain ints, published at scrape time.

    prometheus-client takes a lock per ``inc()`` and per ``observe()`` (a Python
    function each: the sampled moves' timing alone was 0.5% of the server's core at
    10,000 players); a plain ``+= 1`` costs far less.
    """

    __slots__ = ("frames_sent", "move_buckets", "move_seconds", "moves", "rejected")

    def __init__(self) -> None:
        self.frames_sent = 0
        self.moves = 0
        self.rejected: dict[str, int] = {}
        #: The timed moves: how many fell in each bucket of :data:`MOVE_BUCKETS` (not
        #: cumulative; the last one past them all), and their seconds in all.
        self.move_buckets = [0] * (len(MOVE_BUCKETS) + 1)
        self.move_seconds = 0.0

    def time_move(self, seconds: float) -> None:
        """One timed move took ``seconds``."""
        at = 0
        for bound in MOVE_BUCKETS:
            if seconds <= bound:
                break
            at += 1
        self.move_buckets[at] += 1
        self.move_seconds += seconds

    def count_move(self, reason: int | None) -> None:
        """One move answered: accepted (``reason`` is None) or refused for ``reason`` (a
        :class:`~protocol.rules.refusals.Reason` or its number, as the race's answers hold it)."""
        if reason is None:
            self.moves += 1
        else:
            name = _REASON_LABELS[reason]
            self.rejected[name] = self.rejected.get(name, 0) + 1


#: A refusal's label in the metrics, by reason (an IntEnum: its number finds it too).
_REASON_LABELS: Final[dict[int, str]] = {reason: reason.name.lower() for reason in Reason}
