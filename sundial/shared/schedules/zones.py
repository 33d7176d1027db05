"""IANA time zones, and where a local wall-clock time falls in UTC.

A local time is placed by the DST rule of docs/schedules.md: a time that exists once is itself; a
time in a spring-forward gap runs at the first instant after the gap; a time that a fall-back
repeats has two instants, and the caller decides whether the second one counts.
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from sundial.shared.errors import InvalidInput
from sundial.shared.schedules.messages import shown

_EPOCH = datetime(1970, 1, 1)
_SECOND = timedelta(seconds=1)
_ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*")
# Present in some zoneinfo directories but not time zones a user could mean; "localtime" would
# silently read whatever the host is set to.
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})


@lru_cache(maxsize=1024)
def parse_timezone(name: str) -> ZoneInfo:
    """The IANA time zone called `name` (case-sensitive, as in the tz database: "Europe/London").

    Raises InvalidInput (field "timezone") when there is no such zone.
    """
    if len(name) > 64 or name in _NOT_ZONES or not _ZONE_NAME.fullmatch(name):
        raise _unknown(name)
    try:
        return ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise _unknown(name) from None


def _unknown(name: str) -> InvalidInput:
    message = f"unknown time zone '{shown(name)}'"
    suggestion = _same_name_other_case(name)
    if suggestion is not None:
        message += f" (did you mean '{suggestion}'?)"
    return InvalidInput(message, field="timezone")


def _same_name_other_case(name: str) -> str | None:
    return _zones_by_folded_name().get(name.strip().casefold())


@lru_cache(maxsize=1)
def _zones_by_folded_name() -> dict[str, str]:
    # Scanning the zone database takes tens of milliseconds: once, and only when a name is wrong.
    return {zone.casefold(): zone for zone in sorted(zoneinfo.available_timezones() - _NOT_ZONES)}


def wall_time(instant_s: int, zone: ZoneInfo) -> datetime:
    """The naive local wall-clock time at UTC instant `instant_s` (epoch seconds)."""
    return datetime.fromtimestamp(instant_s, zone).replace(tzinfo=None, fold=0)


def place(local: datetime, zone: ZoneInfo) -> tuple[int, int | None]:
    """Where naive local time `local` falls in UTC, as (first, repeat) in epoch seconds.

    `first` is the instant the local time runs at: itself, or the first instant after a gap, or
    the earlier of a repeated time. `repeat` is the later instant of a repeated time, else None.
    """
    as_if_utc = (local - _EPOCH) // _SECOND
    # fold=0 reads a time next to a transition with the offset in force before it, fold=1 after.
    before = _offset_s(local.replace(tzinfo=zone))
    after = _offset_s(local.replace(tzinfo=zone, fold=1))
    if before == after:
        return as_if_utc - before, None
    if before > after:
        return as_if_utc - before, as_if_utc - after
    return _gap_end(zone, as_if_utc - after, as_if_utc - before), None


def _offset_s(moment: datetime) -> int:
    offset = moment.utcoffset()
    assert offset is not None  # every ZoneInfo-aware datetime has one
    return offset // _SECOND


@lru_cache(maxsize=256)
def _gap_end(zone: ZoneInfo, low: int, high: int) -> int:
    """The first instant in (low, high] that uses the offset in force at `high`: the gap's end.

    zoneinfo has no public list of transitions, so search: a gap is at most a few hours wide.
    """
    target = _offset_s(datetime.fromtimestamp(high, zone))
    while high - low > 1:
        middle = (low + high) // 2
        if _offset_s(datetime.fromtimestamp(middle, zone)) == target:
            high = middle
        else:
            low = middle
    return high
