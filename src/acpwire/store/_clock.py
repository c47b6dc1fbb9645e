"""Timestamps of stores: ISO 8601 UTC text for people, microseconds since the epoch for sorting."""

from __future__ import annotations

import re
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Final

__all__ = ["Clock", "timestamp_key", "utc_now"]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
_NAIVE_EPOCH: Final = datetime(1970, 1, 1)
_ONE_MICROSECOND: Final = timedelta(microseconds=1)
_TIMESTAMP_RE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?"
)


_CANONICAL: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
_second: tuple[int, str] = (-1, "")  # the last second formatted, as (seconds, text)


def _format_key(key: int) -> str:
    global _second
    seconds, micro = divmod(key, 1_000_000)
    cached = _second  # one read: another thread may replace it meanwhile
    if cached[0] != seconds:
        text = (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")
        cached = _second = (seconds, text)
    return f"{cached[1]}.{micro:06d}Z"


def utc_now() -> str:
    """The current time as ISO 8601 UTC with microseconds and a ``Z`` suffix."""
    return _format_key(time.time_ns() // 1000)


def timestamp_key(value: object, what: str) -> int:
    """Microseconds since the Unix epoch of an ISO 8601 timestamp (the sort key)."""
    if isinstance(value, str) and _CANONICAL.fullmatch(value):
        # The form stores write (utc_now): datetime parses it in C.
        try:
            since = datetime.fromisoformat(value[:26]) - _NAIVE_EPOCH
        except ValueError:
            pass
        else:
            return (since.days * 86_400 + since.seconds) * 1_000_000 + since.microseconds
    match = _TIMESTAMP_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{what} must be an ISO 8601 timestamp, got {value!r}")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    micro = int(((match.group(7) or "") + "000000")[:6])
    try:
        moment = datetime(
            year, month, day, hour, minute, min(second, 59), micro, tzinfo=timezone.utc
        )
    except ValueError as exc:
        raise ValueError(f"{what} must be an ISO 8601 timestamp, got {value!r} ({exc})") from None
    if match.group(9):
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        moment = moment - offset if match.group(9) == "+" else moment + offset
    return (moment - _EPOCH) // _ONE_MICROSECOND


class Clock:
    """Strictly increasing UTC timestamps for one store.

    Coarse system clocks (about 16 ms on some Windows versions) would otherwise
    give several sessions the same ``updated_at`` and make "most recently
    updated first" ambiguous. Thread-safe: the SQLite store reads it on its
    worker thread.
    """

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def now(self) -> tuple[int, str]:
        """``(sort key, ISO 8601 text)`` of a moment later than every earlier call."""
        with self._lock:
            key = max(time.time_ns() // 1000, self._last + 1)
            self._last = key
        return key, _format_key(key)
