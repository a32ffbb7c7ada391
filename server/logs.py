"""Structured logging: one JSON object per line on stderr.

Call :func:`event` with a short snake_case name and plain fields.  Events that
matter (connections, rooms, races, storage, shutdown) log at INFO; anything
per move logs at DEBUG only, so the hot path stays quiet in production.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, Final

LOGGER: Final = logging.getLogger("tripeaks.server")


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line: ts, level, event and the event's fields."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "event": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            doc.update(fields)
        if record.exc_info:
            doc["error"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, separators=(",", ":"))


def setup(level: str = "INFO") -> None:
    """Send the server's log to stderr as JSON lines at ``level``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    LOGGER.handlers[:] = [handler]
    LOGGER.setLevel(level.upper())
    LOGGER.propagate = False
    # aiohttp's own access log is one line per HTTP request; ours covers what matters.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def event(name: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log event ``name`` with ``fields`` (skipped cheaply when the level is off)."""
    if LOGGER.isEnabledFor(level):
        LOGGER.log(level, name, extra={"fields": fields})


def failure(name: str, **fields: Any) -> None:
    """Log an unexpected exception (call from an ``except`` block) with its traceback."""
    LOGGER.error(name, exc_info=True, extra={"fields": fields})


def now_ms() -> int:
    """Wall-clock unix time in ms, for records and log fields."""
    return time.time_ns() // 1_000_000
