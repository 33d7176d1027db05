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
    """UTC with a Z, milliseconds only when there are some: 2026-12-01T09:00:00Z."""
    moment = to_datetime(epoch_ms)
    if epoch_ms % 1000:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
