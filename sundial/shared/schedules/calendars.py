"""Calendars: the local dates on which a recurring job's schedule does not run (docs/api.md, "Calendars").

An occurrence is excluded when its date in the job's time zone is one of the calendar's
`exclude_dates` or a public holiday of its `holidays` country (and subdivision), as the `holidays`
package lists them (for the years it covers: 2100 at the latest for most countries).

CalendarRule wraps a schedule's rule and passes over the occurrences its calendar excludes. An
excluded occurrence moves the search to the start of the next local day, through the wrapped rule's
`first_from`, so a rate keeps its grid (the occurrence after an excluded one is the grid's next point
on a later day) and a rate(1 second) passes a whole holiday in one step.

A calendar may exclude every occurrence of a schedule (`0 9 25 12 *` and Germany's holidays). The
search is bounded: it gives up after passing over MAX_PASSED_OVER excluded occurrences in a row, or
excluded occurrences spanning SEARCH_YEARS years, and answers that none is left (None, as a
schedule that has ended). The API refuses a calendar that leaves a schedule nothing within that
bound, naming `calendar`.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from sundial.contract.bounds import in_range
from sundial.contract.calendar import Calendar
from sundial.shared.errors import InvalidInput
from sundial.shared.schedules.messages import shown
from sundial.shared.schedules.rule import Rule
from sundial.shared.schedules.zones import parse_timezone, place

MAX_PASSED_OVER = 5_000
SEARCH_YEARS = 10
_DAY_MS = 86_400_000
_SEARCH_MS = SEARCH_YEARS * 366 * _DAY_MS
_SUBDIVISION = "-"
_LISTED = 20  # subdivisions named in a refusal


def calendar_excludes(calendar: Calendar | None, timezone: str, instant_ms: int) -> bool:
    """True when the date of `instant_ms` in `timezone` is one the calendar excludes: one of its
    `exclude_dates`, or a public holiday of its `holidays`. False without a calendar."""
    if calendar is None:
        return False
    day = local_date(instant_ms, parse_timezone(timezone))
    return day is not None and _excluded_day(calendar, _dates_of(calendar), day)


def local_date(instant_ms: int, zone: ZoneInfo) -> date | None:
    """The date at `instant_ms` in `zone`; None outside the range of instants Sundial keeps."""
    if not in_range(instant_ms):
        return None
    return datetime.fromtimestamp(instant_ms / 1000, zone).date()


def holiday_code(code: str) -> tuple[str, str | None]:
    """`DE-BY` → ("DE", "BY"), `DE` → ("DE", None); `DE-` names the subdivision "", which none is."""
    country, separator, subdivision = code.partition(_SUBDIVISION)
    return country, subdivision if separator else None


def holidays_on(code: str, year: int) -> frozenset[date]:
    """The public holidays of a country (or subdivision) code in one year."""
    country, subdivision = holiday_code(code)
    return _holidays(country, subdivision, year)


@lru_cache(maxsize=4096)
def _holidays(country: str, subdivision: str | None, year: int) -> frozenset[date]:
    import holidays  # noqa: PLC0415 (imported when a calendar first needs it: a cold start without one skips it)

    try:
        return frozenset(holidays.country_holidays(country, subdiv=subdivision, years=year))
    except NotImplementedError:
        # A code the API accepted that a later version of the package no longer knows excludes nothing
        # rather than stopping the job's schedule.
        return frozenset()


def check_calendar(calendar: Calendar) -> None:
    """Raises InvalidInput (field "calendar.holidays") unless the `holidays` package knows the country
    and the subdivision the calendar names."""
    code = calendar.holidays
    if code is None:
        return
    country, subdivision = holiday_code(code)
    known = _known_codes()
    if country in known and (subdivision is None or subdivision in known[country]):
        return
    message = f"holidays '{shown(code)}' is not a country code (ISO 3166-1, such as DE) or one with a "
    message += "subdivision (DE-BY)"
    if country in known:
        message = f"holidays '{shown(code)}': {country} has no subdivision '{shown(subdivision or '')}' "
        message += f"({_listed(known[country])})"
    suggestion = _same_code_other_case(code)
    if suggestion is not None:
        message += f" (did you mean '{suggestion}'?)"
    raise InvalidInput(message, field="calendar.holidays")


@lru_cache(maxsize=1)
def _known_codes() -> dict[str, frozenset[str]]:
    import holidays  # noqa: PLC0415 (see _holidays)

    return {country: frozenset(subs) for country, subs in holidays.list_supported_countries().items()}


def _listed(subdivisions: frozenset[str]) -> str:
    if not subdivisions:
        return "it has none: give the country alone"
    names = sorted(subdivisions)
    more = f" and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
    return "it has " + ", ".join(names[:_LISTED]) + more


def _same_code_other_case(code: str) -> str | None:
    folded = code.strip().casefold()
    for country, subdivisions in _known_codes().items():
        for candidate in (country, *(f"{country}{_SUBDIVISION}{sub}" for sub in subdivisions)):
            if candidate.casefold() == folded:
                return candidate
    return None


def calendar_refusal(expression: str, timezone: str) -> InvalidInput:
    """The 400 for a calendar that leaves a schedule no occurrence within the search's bound."""
    return InvalidInput(
        f"the calendar excludes every occurrence of schedule '{shown(expression)}' in {timezone} that is "
        f"left (Sundial looks {SEARCH_YEARS} years ahead): the job would never run",
        field="calendar",
    )


def calendar_on_one_off() -> InvalidInput:
    """The 400 for a calendar on a one-off job, or a one-off schedule's preview."""
    return InvalidInput(
        "calendar skips occurrences of a recurring schedule; a one-off job (run_at, or a schedule "
        "at(...)) has none: leave it out (a PATCH that makes a job one-off sends calendar: null)",
        field="calendar",
    )


class CalendarRule(Rule):
    """A schedule's rule without the occurrences its calendar excludes."""

    def __init__(self, inner: Rule, calendar: Calendar, zone: ZoneInfo) -> None:
        self.inner = inner
        self.calendar = calendar
        self.zone = zone
        self.recurring = inner.recurring
        self._dates = _dates_of(calendar)

    def excludes(self, instant_ms: int) -> bool:
        day = local_date(instant_ms, self.zone)
        return day is not None and _excluded_day(self.calendar, self._dates, day)

    def next_after(self, after_ms: int) -> int | None:
        return self._kept_from(self.inner.next_after(after_ms))

    def first_when_active(self, active_ms: int) -> int | None:
        return self._kept_from(self.inner.first_when_active(active_ms))

    def first_from(self, anchor_ms: int, at_ms: int) -> int | None:
        return self._kept_from(self.inner.first_from(anchor_ms, at_ms))

    def latest_before(self, anchor_ms: int, before_ms: int) -> int | None:
        candidate = self.inner.latest_before(anchor_ms, before_ms)
        if candidate is None:
            return None
        first, passed_over = candidate, 0
        while self.excludes(candidate):
            passed_over += 1
            if passed_over > MAX_PASSED_OVER or first - candidate > _SEARCH_MS:
                return None
            earlier = self.inner.latest_before(anchor_ms, min(candidate, self._day_start_ms(candidate)))
            if earlier is None:
                return None
            candidate = earlier
        return candidate

    def _kept_from(self, candidate: int | None) -> int | None:
        """The first occurrence at or after `candidate` (one of the wrapped rule's) that is kept."""
        if candidate is None:
            return None
        first, passed_over = candidate, 0
        while self.excludes(candidate):
            passed_over += 1
            next_day = self._next_day_ms(candidate)
            if passed_over > MAX_PASSED_OVER or candidate - first > _SEARCH_MS or next_day is None:
                return None
            later = self.inner.first_from(candidate, max(candidate + 1, next_day))
            if later is None:
                return None
            candidate = later
        return candidate

    def _next_day_ms(self, instant_ms: int) -> int | None:
        """The first instant of the local day after the one `instant_ms` falls on."""
        day = local_date(instant_ms, self.zone)
        if day is None or day == date.max:
            return None
        return _day_start_ms(day + timedelta(days=1), self.zone)

    def _day_start_ms(self, instant_ms: int) -> int:
        day = local_date(instant_ms, self.zone)
        return instant_ms if day is None else _day_start_ms(day, self.zone)


def _day_start_ms(day: date, zone: ZoneInfo) -> int:
    # Midnight, or the first instant after it when the clocks skip it.
    first, _ = place(datetime.combine(day, time()), zone)
    return first * 1000


@lru_cache(maxsize=1024)
def _dates_of(calendar: Calendar) -> frozenset[date]:
    return frozenset(calendar.exclude_dates)


def _excluded_day(calendar: Calendar, dates: frozenset[date], day: date) -> bool:
    return day in dates or (calendar.holidays is not None and day in holidays_on(calendar.holidays, day.year))
