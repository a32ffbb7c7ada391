"""The counters the hot path bumps (frames sent, moves answered), compiled.

:mod:`server.metrics` publishes them at scrape time.  They live apart from it
because that module subclasses prometheus-client's collectors, which a compiled
module may not (tools/native.py); compiled here, a counter the hub bumps per
move and per flush is a native attribute, not a Python object's.
"""

from __future__ import annotations

from typing import Final

from protocol.rules.refusals import Reason


class HotCounts:
    """Counters bumped on the hot path: plain ints, published at scrape time.

    prometheus-client takes a lock per ``inc()``; a plain ``+= 1`` costs far less.
    """

    __slots__ = ("frames_sent", "moves", "rejected")

    def __init__(self) -> None:
        self.frames_sent = 0
        self.moves = 0
        self.rejected: dict[str, int] = {}

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
