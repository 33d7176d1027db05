"""The plain five-field cron form (minute hour day-of-month month day-of-week), as in crontab(5)."""

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
)

# 0 and 7 are both Sunday.
DAY_OF_WEEK = FieldSpec("day-of-week", 0, 7, {name: number for number, name in enumerate(DAY_NAMES)})

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
_EVENTBRIDGE_ONLY = re.compile(r"[?#]|^L$|^[0-9]+[LW]$|^L[0-9]*$|^LW$", re.IGNORECASE)


def plan_plain(text: str) -> CronPlan:
    """The plan for a five-field expression or an @macro. Raises FieldError naming what is wrong."""
    fields = _fields(text)
    minute, hour, day, month, weekday = fields
    hours = expand(hour, HOUR)
    days, weekdays = _days(day, weekday)
    croniter_fields = " ".join(
        (
            croniter_list(expand(minute, MINUTE), MINUTE.everything),
            croniter_list(hours, HOUR.everything),
            days,
            croniter_list(expand(month, MONTH), MONTH.everything),
            weekdays,
        )
    )
    return CronPlan(croniter_fields=croniter_fields, years=None, every_hour=hours == HOUR.everything)


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
        if any(_EVENTBRIDGE_ONLY.search(item) for item in field_text.split(",")):
            raise FieldError(
                f"{name} '{field_text}': ?, L, W and # need the EventBridge form cron(m h dom mon dow year)"
            )
    return fields


def _days(day: str, weekday: str) -> tuple[str, str]:
    days = expand(day, DAY_OF_MONTH)
    weekdays = frozenset(number % 7 for number in expand(weekday, DAY_OF_WEEK))
    # crontab(5): when both day fields are restricted (not "*"), a day matching either runs.
    if day != "*" and weekday != "*" and (days == DAY_OF_MONTH.everything or weekdays == WEEK):
        return "*", "*"
    return (
        croniter_list(days, DAY_OF_MONTH.everything) if day != "*" else "*",
        croniter_list(weekdays, WEEK) if weekday != "*" else "*",
    )
