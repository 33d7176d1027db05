"""Local wall-clock times that match a cron expression, in order, computed by croniter.

croniter sees only naive datetimes here, so none of its own DST handling (which fires a fixed-hour
time twice on a fall-back day) is involved: time zones are applied afterwards by dst.py. It also
sees only five fields, since its sixth field means seconds and its seventh years: years are
filtered here instead, and so are the calendar-dependent days of monthdays.py.
"""

from __future__ import annotations

import threading
from datetime import datetime, time, timedelta

from croniter import CroniterBadDateError, croniter

from sundial.shared.schedules.monthdays import DayFilter

# The longest wait between matches of an expression that fires at all: a 29 February that falls
# on a given weekday (a fifth Monday in February, or day 29 of February on Mondays) comes back
# after 28 years as a rule, but after 40 when a century year without a 29 February lies between.
MAX_YEARS_BETWEEN_MATCHES = 40
# datetime ends with year 9999; stop well before croniter would overflow it.
_LAST_YEAR = 9990
_MINUTE = timedelta(minutes=1)
_END_OF_DAY = time(23, 59)


class WallClockSeries:
    """The naive local times a cron expression selects. Safe to share between threads.

    `day_or` is croniter's: when both day fields are restricted, a day matching either runs (else
    it must match both). `day_filter`, when given, must also accept the day.
    """

    def __init__(
        self,
        croniter_fields: str,
        years: frozenset[int] | None,
        day_or: bool = True,
        day_filter: DayFilter | None = None,
    ) -> None:
        self._years = years
        self._ordered_years = () if years is None else tuple(sorted(years))
        self._day_filter = day_filter
        self._croniter = croniter(
            croniter_fields,
            datetime(1970, 1, 1),
            day_or=day_or,
            max_years_between_matches=MAX_YEARS_BETWEEN_MATCHES,
        )
        # A croniter keeps its position between calls; building one per call costs twice as much.
        self._lock = threading.Lock()

    def next_after(self, local: datetime) -> datetime | None:
        """The first matching local time strictly after `local`, or None when none is left."""
        # Counted in years that had candidate days, not in elapsed time: a year field may skip
        # a century between two years that both run.
        years_without_a_match: set[int] = set()
        while (found := self._next_in_years(local)) is not None:
            if self._day_filter is None or self._day_filter(found.date()):
                return found
            years_without_a_match.add(found.year)
            if len(years_without_a_match) > MAX_YEARS_BETWEEN_MATCHES:
                return None
            # A candidate day that is not the one: none of its times match either.
            local = datetime.combine(found.date(), _END_OF_DAY)
        return None

    def _next_in_years(self, local: datetime) -> datetime | None:
        while (found := self._croniter_next(local)) is not None:
            if self._years is None or found.year in self._years:
                return found
            later = next((year for year in self._ordered_years if year > found.year), None)
            if later is None:
                return None
            local = datetime(later, 1, 1) - _MINUTE
        return None

    def _croniter_next(self, local: datetime) -> datetime | None:
        if local.year >= _LAST_YEAR:
            return None
        with self._lock:
            try:
                found: datetime = self._croniter.get_next(datetime, start_time=local)
            except CroniterBadDateError:
                return None
        return found
