"""Local wall-clock times that match a cron expression, in order, computed by croniter.

croniter sees only naive datetimes here, so none of its own DST handling (which fires a fixed-hour
time twice on a fall-back day) is involved: time zones are applied afterwards by dst.py. It also
sees only five fields, since its sixth field means seconds and its seventh years: years are
filtered here instead.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from croniter import CroniterBadDateError, croniter

# The longest wait between matches of an expression that fires at all: a fifth Sunday in February
# comes every 28 years, a 29 February as rarely as every 8.
MAX_YEARS_BETWEEN_MATCHES = 30
# datetime ends with year 9999; stop well before croniter would overflow it.
_LAST_YEAR = 9990
_MINUTE = timedelta(minutes=1)


class WallClockSeries:
    """The naive local times a cron expression selects. Safe to share between threads."""

    def __init__(self, croniter_fields: str, years: frozenset[int] | None) -> None:
        self._years = years
        self._ordered_years = () if years is None else tuple(sorted(years))
        self._croniter = croniter(
            croniter_fields,
            datetime(1970, 1, 1),
            day_or=True,
            max_years_between_matches=MAX_YEARS_BETWEEN_MATCHES,
        )
        # A croniter keeps its position between calls; building one per call costs twice as much.
        self._lock = threading.Lock()

    def next_after(self, local: datetime) -> datetime | None:
        """The first matching local time strictly after `local`, or None when none is left."""
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
