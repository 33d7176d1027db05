"""The next UTC instant of a local-time series under the DST rule of docs/schedules.md.

Every matching local time runs at its first placement (zones.place): itself, the first instant
after a spring-forward gap (so several times in one gap run once), or the earlier instant of a
time that a fall-back repeats. When the hour field names every hour, the later instant of a
repeated time runs too, so an hourly job keeps its rhythm through the repeated hour.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from sundial.shared.schedules.series import WallClockSeries
from sundial.shared.schedules.zones import place, wall_time


def next_instant(series: WallClockSeries, zone: ZoneInfo, every_hour: bool, after_s: int) -> int | None:
    """The first occurrence strictly after UTC instant `after_s` (epoch seconds), or None."""
    wall = wall_time(after_s, zone)
    upcoming = _next_first_placement(series, zone, wall, after_s)
    if not every_hour:
        return upcoming
    repeat = _next_repeat(series, zone, wall, after_s)
    if repeat is None or (upcoming is not None and upcoming <= repeat):
        return upcoming
    return repeat


def _next_first_placement(
    series: WallClockSeries, zone: ZoneInfo, wall: datetime, after_s: int
) -> int | None:
    # First placements never decrease as local time advances, so the first local time after the
    # wall clock that lands after `after_s` is the answer. Only during the second pass of a
    # repeated hour do a few land earlier (on the first pass) and get stepped over.
    local = series.next_after(wall)
    while local is not None:
        first, _ = place(local, zone)
        if first > after_s:
            return first
        local = series.next_after(local)
    return None


def _next_repeat(series: WallClockSeries, zone: ZoneInfo, wall: datetime, after_s: int) -> int | None:
    # A second instant can only come next while the wall clock itself is in a repeated stretch;
    # that stretch lies within one fold's width either side of the wall clock.
    first, repeat = place(wall, zone)
    if repeat is None:
        return None
    fold = timedelta(seconds=repeat - first)
    local = series.next_after(wall - fold)
    while local is not None and local < wall + fold:
        _, again = place(local, zone)
        if again is not None and again > after_s:
            return again
        local = series.next_after(local)
    return None
