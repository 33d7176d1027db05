"""The one clock. Everything that needs "now" takes a Clock, so tests move time instead of sleeping."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Current UTC time in epoch milliseconds."""
        ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class FixedClock:
    """A clock that moves only when told to; for tests and simulations."""

    def __init__(self, now_ms: int) -> None:
        self._now_ms = now_ms

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, seconds: float) -> None:
        self._now_ms += round(seconds * 1000)

    def set(self, now_ms: int) -> None:
        self._now_ms = now_ms


def to_datetime(epoch_ms: int) -> datetime:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)


def to_epoch_ms(moment: datetime) -> int:
    if moment.tzinfo is None:
        raise ValueError("naive datetime: attach a time zone")
    return round(moment.timestamp() * 1000)


def format_rfc3339(epoch_ms: int) -> str:
    """UTC with a Z, milliseconds only when there are some: 2026-12-01T09:00:00Z, the year in four digits.

    Never fails: an instant outside years 1-9999, which only data stored before the API's range check
    can hold, is written with ISO 8601's expanded year ("+10000-01-01T10:59:59Z", "-0001-...")."""
    # The Gregorian calendar repeats every 400 years: shift such an instant into datetime's range.
    cycles = 0 if _FIRST_MS <= epoch_ms < _END_MS else (epoch_ms - _Y2000_MS) // _CYCLE_MS
    moment = to_datetime(epoch_ms - cycles * _CYCLE_MS)
    year = moment.year + 400 * cycles
    shown = f"{year:04d}" if 0 <= year <= 9999 else (f"+{year}" if year > 0 else f"-{-year:04d}")
    text = shown + moment.strftime("-%m-%dT%H:%M:%S")
    return text + (f".{epoch_ms % 1000:03d}Z" if epoch_ms % 1000 else "Z")


_DAY_MS = 86_400_000
_CYCLE_MS = 146_097 * _DAY_MS  # 400 Gregorian years
_Y2000_MS = 10_957 * _DAY_MS
_FIRST_MS = -62_135_596_800_000  # 0001-01-01T00:00:00Z, datetime's first instant
_END_MS = 253_402_300_800_000  # 10000-01-01T00:00:00Z
