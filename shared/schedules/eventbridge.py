"""The EventBridge form, cron(minute hour day-of-month month day-of-week year), reduced to a CronPlan.

It differs from plain cron in ways croniter would get wrong if given the text: six fields whose
last is the year (croniter reads a sixth field as seconds), days of the week numbered 1=SUN to
7=SAT (croniter: 0=SUN), "?" in exactly one day field, and L, W and # in the day fields ("6L", the
last Friday, is croniter's "L5").
"""

from __future__ import annotations

import re

from shared.schedules.fields import (
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

DAY_OF_WEEK = FieldSpec("day-of-week", 1, 7, {name: number for number, name in enumerate(DAY_NAMES, 1)})
YEAR = FieldSpec("year", 1970, 2199)

_NEAREST_WEEKDAY = re.compile(r"([0-9]+)W", re.IGNORECASE)
_LAST_WEEKDAY = re.compile(r"([A-Za-z0-9]+)L", re.IGNORECASE)
_NTH_WEEKDAY = re.compile(r"([A-Za-z0-9]+)#([0-9]+)")
_SPECIAL = re.compile(r"[LW#?]", re.IGNORECASE)
_FIELDS = "minute hour day-of-month month day-of-week year"


def plan_eventbridge(inner: str) -> CronPlan:
    """The plan for the text between "cron(" and ")". Raises FieldError naming what is wrong."""
    fields = inner.split()
    if len(fields) != 6:
        raise FieldError(f"expected 6 fields ({_FIELDS}), got {len(fields)}")
    minute, hour, day, month, weekday, year = fields
    _check_question_marks(day, weekday)
    hours = expand(hour, HOUR)
    years = expand(year, YEAR)
    croniter_fields = " ".join(
        (
            croniter_list(expand(minute, MINUTE), MINUTE.everything),
            croniter_list(hours, HOUR.everything),
            _day_of_month(day),
            croniter_list(expand(month, MONTH), MONTH.everything),
            _day_of_week(weekday),
        )
    )
    return CronPlan(
        croniter_fields=croniter_fields,
        years=None if year == "*" else years,
        every_hour=hours == HOUR.everything,
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


def _day_of_month(text: str) -> str:
    if text in ("?", "*"):
        return "*"
    if text.upper() == "L":
        return "l"
    nearest = _NEAREST_WEEKDAY.fullmatch(text)
    if nearest is not None:
        return f"{value(nearest.group(1), DAY_OF_MONTH)}w"
    if _SPECIAL.search(text):
        raise FieldError(f"day-of-month '{text}': L and W must stand alone, as in L or 15W")
    return croniter_list(expand(text, DAY_OF_MONTH), DAY_OF_MONTH.everything)


def _day_of_week(text: str) -> str:
    if text in ("?", "*"):
        return "*"
    if text.upper() == "L":  # the last day of the week
        return str(DAY_OF_WEEK.names["SAT"] - 1)
    last = _LAST_WEEKDAY.fullmatch(text)
    if last is not None:
        return f"L{value(last.group(1), DAY_OF_WEEK) - 1}"
    nth = _NTH_WEEKDAY.fullmatch(text)
    if nth is not None:
        return f"{value(nth.group(1), DAY_OF_WEEK) - 1}#{_nth(nth.group(2))}"
    if _SPECIAL.search(text):
        raise FieldError(f"day-of-week '{text}': L and # must stand alone, as in 6L or 2#1")
    return croniter_list({number - 1 for number in expand(text, DAY_OF_WEEK)}, WEEK)


def _nth(token: str) -> int:
    nth = int(token)
    if not 1 <= nth <= 5:
        raise FieldError("day-of-week '#' must be followed by 1-5")
    return nth
