"""The plain five-field cron form (minute hour day-of-month month day-of-week), as in crontab(5)."""

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
)

# 0 and 7 are both Sunday.
DAY_OF_WEEK = FieldSpec(
    "day-of-week", 0, 7, {name: number for number, name in enumerate(DAY_NAMES)}, cycle_end=6
)

MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
_FIELDS = "minute hour day-of-month month day-of-week"
# Items of the day fields that only the EventBridge form knows; a name such as WED is not one.
_EVENTBRIDGE_ONLY = re.compile(r".*[?#].*|L|LW|[0-9]+[LW]|L[0-9]+|[A-Za-z]{3}L", re.IGNORECASE)


def plan_plain(text: str) -> CronPlan:
    """The plan for a five-field expression or an @macro. Raises FieldError naming what is wrong."""
    fields = _fields(text)
    minute, hour, day, month, weekday = fields
    hours = expand(hour, HOUR)
    days, weekdays, day_or = _days(day, weekday)
    croniter_fields = " ".join(
        (
            croniter_list(expand(minute, MINUTE), MINUTE.everything),
            croniter_list(hours, HOUR.everything),
            days,
            croniter_list(expand(month, MONTH), MONTH.everything),
            weekdays,
        )
    )
    return CronPlan(
        croniter_fields=croniter_fields, years=None, every_hour=hours == HOUR.everything, day_or=day_or
    )


def _fields(text: str) -> list[str]:
    stripped = text.strip()
    if stripped.startswith("@"):
        macro = MACROS.get(stripped.lower())
        if macro is None:
            raise FieldError(f"{stripped} is not supported; use one of {', '.join(MACROS)}")
        stripped = macro
    fields = stripped.split()
    if len(fields) != 5:
        raise FieldError(
            f"expected 5 fields ({_FIELDS}), got {len(fields)}; the other forms are "
            "cron(m h dom mon dow year), rate(N unit) and at(YYYY-MM-DDThh:mm:ss)"
        )
    for name, field_text in (("day-of-month", fields[2]), ("day-of-week", fields[4])):
        if any(_EVENTBRIDGE_ONLY.fullmatch(item) for item in field_text.split(",")):
            raise FieldError(
                f"{name} '{field_text}': ?, L, W and # need the EventBridge form cron(m h dom mon dow year)"
            )
    return fields


def _days(day: str, weekday: str) -> tuple[str, str, bool]:
    """croniter's day-of-month and day-of-week fields, and whether a day matching either runs.

    crontab(5): only when both day fields are restricted does a day matching either field run;
    otherwise it must match both. A field is unrestricted when it starts with "*" ("*", "*/3"),
    which is how cron's own parser decides.
    """
    days = expand(day, DAY_OF_MONTH)
    weekdays = frozenset(number % 7 for number in expand(weekday, DAY_OF_WEEK))
    either = not day.startswith("*") and not weekday.startswith("*")
    if either and (days == DAY_OF_MONTH.everything or weekdays == WEEK):
        return "*", "*", True
    return croniter_list(days, DAY_OF_MONTH.everything), croniter_list(weekdays, WEEK), either
