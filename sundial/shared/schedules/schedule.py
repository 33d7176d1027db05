"""Schedule: an expression and the time zone it is read in, parsed once and cached."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from sundial.shared.errors import InvalidInput
from sundial.shared.schedules.at import compile_at, is_at
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
    _rule: Rule = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_rule", _compile(self.expression, self.timezone))

    def __reduce__(self) -> tuple[type[Schedule], tuple[str, str]]:
        # Copies and pickles carry the text only; the compiled rule holds a lock and is rebuilt.
        return (Schedule, (self.expression, self.timezone))

    @property
    def is_recurring(self) -> bool:
        """False only for at(...), which has one occurrence."""
        return self._rule.recurring

    @property
    def rule(self) -> Rule:
        return self._rule

    def next_after(self, after_ms: int) -> int | None:
        """The first occurrence strictly after `after_ms` (UTC epoch ms), or None when there is none.

        For rate(N unit) that is after_ms + the period: a rate counts from the instant it is given.
        """
        return self._rule.next_after(after_ms)


@lru_cache(maxsize=4096)
def parse_schedule(expression: str, timezone: str = "UTC") -> Schedule:
    """Parse a schedule expression read in an IANA time zone.

    Forms: cron(m h dom mon dow year) (EventBridge), a plain five-field cron or @macro,
    rate(N unit), at(YYYY-MM-DDThh:mm:ss). Raises InvalidInput with field "timezone" for an unknown
    zone, field "schedule" for anything wrong with the expression, including one that never fires.
    """
    return Schedule(expression, timezone)


@lru_cache(maxsize=4096)
def _compile(expression: str, timezone: str) -> Rule:
    zone = parse_timezone(timezone)
    _check_text(expression)
    if is_rate(expression):
        return compile_rate(expression)
    if is_at(expression):
        return compile_at(expression, zone)
    return compile_cron(expression, zone)


def _check_text(expression: str) -> None:
    if not expression.strip():
        raise InvalidInput("schedule must not be empty", field="schedule")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise InvalidInput(f"schedule must be at most {MAX_EXPRESSION_LENGTH} characters", field="schedule")
