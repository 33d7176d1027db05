"""rate(N unit): every N seconds, minutes, hours or days of elapsed time, whatever the clocks do.

A rate counts from an anchor: a schedule that becomes active at t first runs at t + period, and
each occurrence after one at t is at t + period. Missed occurrences keep the grid of the previous
one, so skipping ahead does not shift the rhythm.
"""

from __future__ import annotations

import re

from sundial.shared.schedules.messages import bad_schedule, shown
from sundial.shared.schedules.rule import Rule

UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
# Longer periods are more likely a typo than a plan, and would overflow timestamps downstream.
MAX_PERIOD_DAYS = 3650

_RATE = re.compile(r"rate\(\s*(?P<value>[^\s()]+)\s+(?P<unit>[A-Za-z]+)\s*\)", re.IGNORECASE)


class RateRule(Rule):
    def __init__(self, period_ms: int) -> None:
        self.period_ms = period_ms

    def next_after(self, after_ms: int) -> int | None:
        return after_ms + self.period_ms

    def first_when_active(self, active_ms: int) -> int | None:
        return active_ms + self.period_ms

    def first_from(self, anchor_ms: int, at_ms: int) -> int | None:
        periods = max(1, -(-(at_ms - anchor_ms) // self.period_ms))
        return anchor_ms + periods * self.period_ms

    def latest_before(self, anchor_ms: int, before_ms: int) -> int | None:
        periods = (before_ms - 1 - anchor_ms) // self.period_ms
        return anchor_ms + periods * self.period_ms if periods >= 1 else None


def is_rate(expression: str) -> bool:
    return expression.strip()[:5].lower() == "rate("


def compile_rate(expression: str) -> RateRule:
    """The rule for rate(N unit). Raises InvalidInput (field "schedule") naming what is wrong."""
    match = _RATE.fullmatch(expression.strip())
    if match is None:
        raise bad_schedule(
            f"rate expression '{shown(expression)}': expected rate(N unit) with unit "
            "second(s), minute(s), hour(s) or day(s)"
        )
    seconds = _amount(expression, match.group("value")) * _unit_seconds(expression, match.group("unit"))
    if seconds < 1:
        raise bad_schedule("rate must be at least 1 second")
    if seconds > MAX_PERIOD_DAYS * UNIT_SECONDS["day"]:
        raise bad_schedule(f"rate must be at most {MAX_PERIOD_DAYS} days")
    return RateRule(seconds * 1000)


def _amount(expression: str, text: str) -> int:
    if not text.isdigit():
        raise bad_schedule(f"rate expression '{shown(expression)}': '{shown(text)}' is not a whole number")
    return int(text)


def _unit_seconds(expression: str, text: str) -> int:
    unit = text.lower()
    seconds = UNIT_SECONDS.get(unit.removesuffix("s"))
    if seconds is None:
        raise bad_schedule(
            f"rate expression '{shown(expression)}': unit '{shown(text)}' must be "
            "second(s), minute(s), hour(s) or day(s)"
        )
    return seconds
