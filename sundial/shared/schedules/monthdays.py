"""Days of the month that depend on the calendar: LW, the last weekday, and nW, the weekday nearest day n.

croniter has no LW, and where day n is missing from a month it moves nW to the month's end, while
EventBridge does not run that month. So both are decided here: croniter is given the few days
that can ever qualify, and the series keeps the one day that does.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

DayFilter = Callable[[date], bool]

_SATURDAY, _SUNDAY = 5, 6
# The last weekday of the shortest month (28 days, ending on a Sunday) is the 26th.
LAST_WEEKDAY_CANDIDATES = frozenset(range(26, 32))


def last_weekday(year: int, month: int) -> int:
    """The day of the month of its last Monday-to-Friday."""
    last = calendar.monthrange(year, month)[1]
    weekday = calendar.weekday(year, month, last)
    if weekday == _SATURDAY:
        return last - 1
    return last - 2 if weekday == _SUNDAY else last


def is_last_weekday(when: date) -> bool:
    """True on the last weekday of its month (LW)."""
    return when.day == last_weekday(when.year, when.month)


def nearest_weekday(year: int, month: int, day: int) -> int | None:
    """The Monday-to-Friday nearest `day` without leaving the month, or None when the month is shorter.

    A Saturday moves to the Friday before and a Sunday to the Monday after, unless that would
    leave the month: a Saturday 1st moves to Monday the 3rd, a Sunday last day to the Friday before.
    """
    last = calendar.monthrange(year, month)[1]
    if day > last:
        return None
    weekday = calendar.weekday(year, month, day)
    if weekday == _SATURDAY:
        return day - 1 if day > 1 else day + 2
    if weekday == _SUNDAY:
        return day + 1 if day < last else day - 2
    return day


@dataclass(frozen=True)
class NearestWeekday:
    """The day filter of nW."""

    day: int

    @property
    def candidates(self) -> frozenset[int]:
        """Every day of a month that can be the weekday nearest `day`."""
        return frozenset(range(max(1, self.day - 2), min(31, self.day + 2) + 1))

    def __call__(self, when: date) -> bool:
        return when.day == nearest_weekday(when.year, when.month, self.day)
