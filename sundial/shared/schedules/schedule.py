"""Schedule: an expression, the time zone it is read in and the calendar it skips, parsed once and cached."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from sundial.contract.calendar import Calendar
from sundial.shared.errors import InvalidInput
from sundial.shared.schedules.at import compile_at, is_at
from sundial.shared.schedules.calendars import CalendarRule, calendar_excludes
from sundial.shared.schedules.cron import compile_cron
from sundial.shared.schedules.rate import compile_rate, is_rate
from sundial.shared.schedules.rule import Rule
from sundial.shared.schedules.zones import parse_timezone

MAX_EXPRESSION_LENGTH = 256


@dataclass(frozen=True)
class Schedule:
    """A validated schedule. Build it with parse_schedule (cached); constructing it directly
    validates too, and raises InvalidInput like parse_schedule."""

    expression: str  # as the user wrote it
    timezone: str  # IANA name
    # the dates it does not run on (calendars.py); only a recurring schedule has one
    calendar: Calendar | None = None
    _rule: Rule = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rule = _compile(self.expression, self.timezone)
        if self.calendar is not None and rule.recurring and _excludes_any(self.calendar):
            rule = CalendarRule(rule, self.calendar, parse_timezone(self.timezone))
        object.__setattr__(self, "_rule", rule)

    def __reduce__(self) -> tuple[type[Schedule], tuple[str, str, Calendar | None]]:
        # Copies and pickles carry the text only; the compiled rule holds a lock and is rebuilt.
        return (Schedule, (self.expression, self.timezone, self.calendar))

    @property
    def is_recurring(self) -> bool:
        """False only for at(...), which has one occurrence."""
        return self._rule.recurring

    @property
    def rule(self) -> Rule:
        """Its occurrences: without those its calendar excludes, when it has one."""
        return self._rule

    def excludes(self, instant_ms: int) -> bool:
        """True when its calendar excludes the occurrence at `instant_ms` (its local date)."""
        return calendar_excludes(self.calendar, self.timezone, instant_ms)

    def next_after(self, after_ms: int) -> int | None:
        """The first occurrence strictly after `after_ms` (UTC epoch ms), or None when there is none.

        For rate(N unit) that is after_ms + the period: a rate counts from the instant it is given.
        """
        return self._rule.next_after(after_ms)


@lru_cache(maxsize=4096)
def parse_schedule(expression: str, timezone: str = "UTC", calendar: Calendar | None = None) -> Schedule:
    """Parse a schedule expression read in an IANA time zone, without the occurrences `calendar`
    excludes (a one-off at(...) keeps its one: the API refuses a calendar on it).

    Forms: cron(m h dom mon dow year) (EventBridge), a plain five-field cron or @macro,
    rate(N unit), at(YYYY-MM-DDThh:mm:ss). Raises InvalidInput with field "timezone" for an unknown
    zone, field "schedule" for anything wrong with the expression, including one that never fires.
    Which holiday codes exist is checked by the API (calendars.check_calendar), not here: a stored
    job's schedule always parses.
    """
    return Schedule(expression, timezone, calendar)


@lru_cache(maxsize=4096)
def _compile(expression: str, timezone: str) -> Rule:
    zone = parse_timezone(timezone)
    _check_text(expression)
    if is_rate(expression):
        return compile_rate(expression)
    if is_at(expression):
        return compile_at(expression, zone)
    return compile_cron(expression, zone)


def _excludes_any(calendar: Calendar) -> bool:
    return bool(calendar.exclude_dates) or calendar.holidays is not None


def _check_text(expression: str) -> None:
    if not expression.strip():
        raise InvalidInput("schedule must not be empty", field="schedule")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise InvalidInput(f"schedule must be at most {MAX_EXPRESSION_LENGTH} characters", field="schedule")
