"""The EventBridge form, cron(minute hour day-of-month month day-of-week year), reduced to a CronPlan.

It differs from plain cron in ways croniter would get wrong if given the text: six fields whose
last is the year (croniter reads a sixth field as seconds), days of the week numbered 1=SUN to
7=SAT (croniter: 0=SUN), "?" in exactly one day field, L, LW and W in the day of the month, L and
# in the day of the week ("6L", the last Friday, is croniter's "L5"), and ranges that wrap past
the end of a field ("FRI-MON", "22-2"), as in Quartz, whose grammar EventBridge follows.

L, W and # are special only where the grammar puts them: a name that contains one of those
letters (WED, JUL) is read as the name, in any case.
"""

from __future__ import annotations

import re

from sundial.shared.schedules.fields import (
    DAY_NAMES,
    DAY_OF_MONTH,
    HOUR,
    MINUTE,
    MONTH,
    WEEK,
    CronPlan,
    FieldError,
    FieldSpec,
    croniter_list,
    expand,
    value,
)
from sundial.shared.schedules.monthdays import (
    LAST_WEEKDAY_CANDIDATES,
    DayFilter,
    NearestWeekday,
    is_last_weekday,
)

DAY_OF_WEEK = FieldSpec("day-of-week", 1, 7, {name: number for number, name in enumerate(DAY_NAMES, 1)})
YEAR = FieldSpec("year", 1970, 2199, cyclic=False)

_DAY_OF_WEEK_VALUE = r"(?P<day>[0-9]+|[A-Za-z]{3})"
_NEAREST_WEEKDAY = re.compile(r"(?P<day>[0-9]+)W", re.IGNORECASE)
_LAST_OF_WEEKDAY = re.compile(_DAY_OF_WEEK_VALUE + "L", re.IGNORECASE)
_NTH_WEEKDAY = re.compile(_DAY_OF_WEEK_VALUE + "#(?P<nth>[0-9]+)")
_FIELDS = "minute hour day-of-month month day-of-week year"


def plan_eventbridge(inner: str) -> CronPlan:
    """The plan for the text between "cron(" and ")". Raises FieldError naming what is wrong."""
    fields = inner.split()
    if len(fields) != 6:
        raise FieldError(f"expected 6 fields ({_FIELDS}), got {len(fields)}")
    minute, hour, day, month, weekday, year = fields
    _check_question_marks(day, weekday)
    hours = expand(hour, HOUR, wrap=True)
    years = expand(year, YEAR)
    days, day_filter = _day_of_month(day)
    croniter_fields = " ".join(
        (
            croniter_list(expand(minute, MINUTE, wrap=True), MINUTE.everything),
            croniter_list(hours, HOUR.everything),
            days,
            croniter_list(expand(month, MONTH, wrap=True), MONTH.everything),
            _day_of_week(weekday),
        )
    )
    return CronPlan(
        croniter_fields=croniter_fields,
        years=None if year == "*" else years,
        every_hour=hours == HOUR.everything,
        day_filter=day_filter,
    )


def _check_question_marks(day: str, weekday: str) -> None:
    # EventBridge cannot combine a day of the month with a day of the week; "?" marks the unused one.
    if day == "?" and weekday == "?":
        raise FieldError("only one of day-of-month and day-of-week can be '?'")
    if day != "?" and weekday != "?":
        raise FieldError("one of day-of-month and day-of-week must be '?'")
    for name, text in (("day-of-month", day), ("day-of-week", weekday)):
        if "?" in text and text != "?":
            raise FieldError(f"{name} '?' must stand alone")


def _day_of_month(text: str) -> tuple[str, DayFilter | None]:
    """croniter's day-of-month field, and the filter that picks among its days for LW and nW."""
    if text in ("?", "*"):
        return "*", None
    if text.upper() == "L":
        return "l", None
    if text.upper() == "LW":
        return croniter_list(LAST_WEEKDAY_CANDIDATES, DAY_OF_MONTH.everything), is_last_weekday
    nearest = _NEAREST_WEEKDAY.fullmatch(text)
    if nearest is not None:
        day_filter = NearestWeekday(value(nearest.group("day"), DAY_OF_MONTH))
        return croniter_list(day_filter.candidates, DAY_OF_MONTH.everything), day_filter
    try:
        return croniter_list(expand(text, DAY_OF_MONTH, wrap=True), DAY_OF_MONTH.everything), None
    except FieldError:
        if re.search("[LW]", text, re.IGNORECASE):
            raise FieldError(
                f"day-of-month '{text}': L, LW and W must stand alone, as in L, LW or 15W"
            ) from None
        raise


def _day_of_week(text: str) -> str:
    if text in ("?", "*"):
        return "*"
    if text.upper() == "L":  # the last day of the week
        return str(DAY_OF_WEEK.names["SAT"] - 1)
    last = _LAST_OF_WEEKDAY.fullmatch(text)
    if last is not None:
        return f"L{value(last.group('day'), DAY_OF_WEEK) - 1}"
    nth = _NTH_WEEKDAY.fullmatch(text)
    if nth is not None:
        return f"{value(nth.group('day'), DAY_OF_WEEK) - 1}#{_nth(nth.group('nth'))}"
    try:
        days = expand(text, DAY_OF_WEEK, wrap=True)
    except FieldError:
        if any(_is_special_weekday(item) for item in text.split(",")):
            raise FieldError(f"day-of-week '{text}': L and # must stand alone, as in 6L or 2#1") from None
        raise
    return croniter_list({number - 1 for number in days}, WEEK)


def _is_special_weekday(item: str) -> bool:
    return item.upper() == "L" or bool(_LAST_OF_WEEKDAY.fullmatch(item) or _NTH_WEEKDAY.fullmatch(item))


def _nth(token: str) -> int:
    nth = int(token)
    if not 1 <= nth <= 5:
        raise FieldError("day-of-week '#' must be followed by 1-5")
    return nth
