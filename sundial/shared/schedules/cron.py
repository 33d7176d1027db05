"""Cron schedules in either form, evaluated in a time zone.

Plain five-field cron (plain.py) and EventBridge cron(...) (eventbridge.py) are both reduced to a
CronPlan; croniter walks its local times (series.py) and dst.py places them in UTC.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from zoneinfo import ZoneInfo

from sundial.shared.errors import InvalidInput
from sundial.shared.schedules.dst import next_instant
from sundial.shared.schedules.eventbridge import plan_eventbridge
from sundial.shared.schedules.fields import CronPlan, FieldError
from sundial.shared.schedules.messages import bad_schedule, shown
from sundial.shared.schedules.plain import plan_plain
from sundial.shared.schedules.rule import Rule
from sundial.shared.schedules.series import WallClockSeries

_BEFORE_ANY_YEAR = datetime(1969, 12, 31, 23, 59)


class CronRule(Rule):
    """A cron expression in a time zone. Occurrences fall on whole seconds."""

    def __init__(self, plan: CronPlan, zone: ZoneInfo) -> None:
        self.series = WallClockSeries(plan.croniter_fields, plan.years, plan.day_or, plan.day_filter)
        self.zone = zone
        self.every_hour = plan.every_hour

    def next_after(self, after_ms: int) -> int | None:
        found = _next_after_s(self, after_ms // 1000)
        return None if found is None else found * 1000

    def ever_fires(self) -> bool:
        return self.series.next_after(_BEFORE_ANY_YEAR) is not None


# Many jobs share a schedule and a previous occurrence (every daily 09:00 job in a zone), so the
# scheduler asks the same question many times per tick.
@lru_cache(maxsize=8192)
def _next_after_s(rule: CronRule, after_s: int) -> int | None:
    return next_instant(rule.series, rule.zone, rule.every_hour, after_s)


def is_eventbridge(expression: str) -> bool:
    text = expression.strip()
    return text[:5].lower() == "cron(" and text.endswith(")")


def compile_cron(expression: str, zone: ZoneInfo) -> CronRule:
    """The rule for a plain or an EventBridge cron expression.

    Raises InvalidInput (field "schedule") when a field is malformed or out of range, or when the
    expression can never fire (such as 30 February).
    """
    rule = CronRule(_plan(expression), zone)
    if not rule.ever_fires():
        raise bad_schedule(f"cron expression '{shown(expression)}' never fires")
    return rule


def _plan(expression: str) -> CronPlan:
    text = expression.strip()
    try:
        if text[:5].lower() == "cron(" and not text.endswith(")"):
            raise FieldError("the EventBridge form is cron(minute hour day-of-month month day-of-week year)")
        return plan_eventbridge(text[5:-1]) if is_eventbridge(text) else plan_plain(text)
    except FieldError as exc:
        raise _invalid(expression, exc) from None


def _invalid(expression: str, exc: FieldError) -> InvalidInput:
    return bad_schedule(f"cron expression '{shown(expression)}': {exc}")
