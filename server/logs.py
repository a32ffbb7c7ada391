"""Structured logging: one JSON object per line on stderr.

Call :func:`event` with a short snake_case name and plain fields.  Events that
matter (connections, rooms, races, storage, shutdown) log at INFO; anything
per move logs at DEBUG only, so the hot path stays quiet in production.

What other code logs (aiohttp, asyncio, warnings) goes out as JSON lines too,
at most :data:`THROTTLE_LINES` per :data:`THROTTLE_WINDOW_S` for each logger,
so a client that sends broken requests cannot flood the log; events a client
can cause at will go through :func:`throttled` for the same reason.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

LOGGER: Final = logging.getLogger("tripeaks.server")

#: Lines a noisy source may write per window; the rest are counted in ``suppressed``.
THROTTLE_LINES: Final = 10
THROTTLE_WINDOW_S: Final = 10.0
#: Longest message or reason kept from another library's record.
_MAX_TEXT: Final = 300
#: The multiprocessing resource tracker's own note, written when a killed server's
#: pool leaves semaphores behind (which the tracker then removes).
_TRACKER_WARNING: Final = "ignore:resource_tracker:UserWarning"


@dataclass(slots=True)
class _Window:
    started: float
    lines: int = 0
    suppressed: int = 0


class Throttle:
    """At most ``lines`` admitted per ``window_s`` for each key; the rest are counted."""

    def __init__(self, lines: int = THROTTLE_LINES, window_s: float = THROTTLE_WINDOW_S) -> None:
        self.lines = lines
        self.window_s = window_s
        self._windows: dict[str, _Window] = {}

    def admit(self, key: str, now: float) -> int | None:
        """None to drop this line; else how many lines of ``key`` were dropped before it."""
        window = self._windows.get(key)
        if window is None or now - window.started >= self.window_s:
            carried = window.suppressed if window is not None else 0
            window = self._windows[key] = _Window(now, suppressed=carried)
        if window.lines >= self.lines:
            window.suppressed += 1
            return None
        window.lines += 1
        dropped, window.suppressed = window.suppressed, 0
        return dropped


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
            traceback = True
        else:
            traceback = _describe_foreign(record, doc)
        suppressed = getattr(record, "suppressed", 0)
        if suppressed:
            doc["suppressed"] = suppressed
        if record.exc_info and traceback:
            doc["error"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, separators=(",", ":"))


def _describe_foreign(record: logging.LogRecord, doc: dict[str, Any]) -> bool:
    """Name another library's record: a client's broken request, or what it said.

    Returns whether the record's traceback is worth keeping."""
    exc = record.exc_info[1] if record.exc_info else None
    status = getattr(exc, "code", None)
    if record.name == "aiohttp.server" and isinstance(status, int) and 400 <= status < 500:
        # aiohttp's parser refused the request: the client's fault, no traceback needed.
        message = getattr(exc, "message", None) or str(exc)
        doc["event"] = "bad_http_request"
        doc["level"] = "warning"
        doc["address"] = record.args[0] if isinstance(record.args, tuple) and record.args else None
        doc["status"] = status
        doc["reason"] = _one_line(str(message))
        return False
    doc["event"] = "library_log"
    doc["logger"] = record.name
    doc["message"] = _one_line(record.getMessage())
    return True


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())[:_MAX_TEXT]


class _ThrottleFilter(logging.Filter):
    def __init__(self, throttle: Throttle) -> None:
        super().__init__()
        self.throttle = throttle

    def filter(self, record: logging.LogRecord) -> bool:
        dropped = self.throttle.admit(record.name, time.monotonic())
        if dropped is None:
            return False
        record.suppressed = dropped
        return True


_THROTTLE: Final = Throttle()
_MARK: Final = "_tripeaks_json"


def setup(level: str = "INFO") -> None:
    """Send the server's log, and every other library's, to stderr as JSON lines."""
    LOGGER.handlers[:] = [_json_handler()]
    LOGGER.setLevel(level.upper())
    LOGGER.propagate = False
    root = logging.getLogger()
    root.handlers[:] = [h for h in root.handlers if not getattr(h, _MARK, False)]
    foreign = _json_handler()
    foreign.addFilter(_ThrottleFilter(_THROTTLE))
    root.addHandler(foreign)
    root.setLevel(max(logging.WARNING, logging.getLevelName(level.upper())))
    # aiohttp's own access log is one line per HTTP request; ours covers what matters.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    # A WebSocket without a known subprotocol: `connected` and `disconnected` say it.
    logging.getLogger("aiohttp.websocket").setLevel(logging.ERROR)
    logging.captureWarnings(True)
    sys.excepthook = _excepthook
    threading.excepthook = _thread_excepthook
    if _TRACKER_WARNING not in sys.warnoptions:
        # Child interpreters (the resource tracker, deal workers) take these flags.
        sys.warnoptions.append(_TRACKER_WARNING)


def _json_handler() -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    setattr(handler, _MARK, True)
    return handler


def _excepthook(
    kind: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    LOGGER.critical("uncaught_exception", exc_info=(kind, exc, tb), extra={"fields": {}})


def _thread_excepthook(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is not None:
        info = (args.exc_type, args.exc_value, args.exc_traceback)
        thread = args.thread.name if args.thread else None
        LOGGER.error("thread_failed", exc_info=info, extra={"fields": {"thread": thread}})


def event(name: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log event ``name`` with ``fields`` (skipped cheaply when the level is off)."""
    if LOGGER.isEnabledFor(level):
        LOGGER.log(level, name, extra={"fields": fields})


def throttled(name: str, level: int = logging.INFO, **fields: Any) -> None:
    """:func:`event` for what a client can cause at will: at most a few lines per window.

    The first line after dropped ones says how many in ``suppressed``.
    """
    if not LOGGER.isEnabledFor(level):
        return
    dropped = _THROTTLE.admit("event:" + name, time.monotonic())
    if dropped is not None:
        LOGGER.log(level, name, extra={"fields": fields, "suppressed": dropped})


def failure(name: str, **fields: Any) -> None:
    """Log an unexpected exception (call from an ``except`` block) with its traceback."""
    LOGGER.error(name, exc_info=True, extra={"fields": fields})


def now_ms() -> int:
    """Wall-clock unix time in ms, for records and log fields."""
    return time.time_ns() // 1_000_000
