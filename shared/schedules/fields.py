"""The cron field grammar both cron forms share: numbers, names, ranges, steps and lists.

Fields are expanded here into explicit sets, so that croniter only ever sees plain lists of numbers
and none of its own range, step or naming rules (such as "JAN-JAN" meaning the whole year) apply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

MONTH_NAMES: Mapping[str, int] = {
    name: number
    for number, name in enumerate(
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"), start=1
    )
}
DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")

_ITEM = re.compile(r"(?P<start>\*|[A-Za-z0-9]+)(?:-(?P<end>[A-Za-z0-9]+))?(?:/(?P<step>[0-9]+))?")


class FieldError(ValueError):
    """One field of a cron expression is wrong; the caller adds which expression."""


@dataclass(frozen=True)
class FieldSpec:
    name: str
    low: int
    high: int
    names: Mapping[str, int] = field(default_factory=dict)

    @property
    def allowed(self) -> str:
        """What the field accepts, as a message shows it: "1-12 or JAN-DEC"."""
        numbers = f"{self.low}-{self.high}"
        if not self.names:
            return numbers
        ordered = sorted(self.names, key=self.names.__getitem__)
        return f"{numbers} or {ordered[0]}-{ordered[-1]}"

    @property
    def everything(self) -> frozenset[int]:
        return frozenset(range(self.low, self.high + 1))


@dataclass(frozen=True)
class CronPlan:
    """A cron expression reduced to what evaluating it needs, whichever form it was written in."""

    croniter_fields: str  # five croniter fields: minute hour day-of-month month day-of-week (0=SUN)
    years: frozenset[int] | None  # None: every year
    every_hour: bool  # the hour field names all 24 hours: both instants of a repeated hour run


MINUTE = FieldSpec("minute", 0, 59)
HOUR = FieldSpec("hour", 0, 23)
DAY_OF_MONTH = FieldSpec("day-of-month", 1, 31)
MONTH = FieldSpec("month", 1, 12, MONTH_NAMES)
WEEK = frozenset(range(7))  # croniter's days of the week, 0=SUN


def expand(text: str, spec: FieldSpec) -> frozenset[int]:
    """The values a field selects: "1-5,10/20" in a 0-59 field is {1, 2, 3, 4, 5, 10, 30, 50}.

    Raises FieldError when an item is malformed or a value is out of range.
    """
    values: set[int] = set()
    for item in text.split(","):
        values.update(_expand_item(item, spec))
    return frozenset(values)


def _expand_item(item: str, spec: FieldSpec) -> range:
    match = _ITEM.fullmatch(item)
    if match is None:
        raise FieldError(f"{spec.name} '{item}' is not a number, name, range, step or list")
    start, end, step = match.group("start", "end", "step")
    if start == "*":
        if end is not None:
            raise FieldError(f"{spec.name} '{item}' is not a number, name, range, step or list")
        low, high = spec.low, spec.high
    else:
        low = value(start, spec)
        # "5/15" runs from 5 to the end of the field, as in EventBridge and most crons.
        high = value(end, spec) if end is not None else (spec.high if step is not None else low)
    if high < low:
        raise FieldError(f"{spec.name} range '{item}' goes backwards; write it as a list of two ranges")
    return range(low, high + 1, _step(step, spec))


def value(token: str, spec: FieldSpec) -> int:
    """One number or name of a field. Raises FieldError when it is not one the field allows."""
    number = int(token) if token.isdigit() else spec.names.get(token.upper())
    if number is None or not spec.low <= number <= spec.high:
        raise FieldError(f"{spec.name} must be {spec.allowed}")
    return number


def _step(token: str | None, spec: FieldSpec) -> int:
    if token is None:
        return 1
    step = int(token)
    if step < 1:
        raise FieldError(f"{spec.name} step must be at least 1")
    return step


def croniter_list(values: Iterable[int], everything: frozenset[int]) -> str:
    """A set as croniter reads it: "*" when it is the whole field, else an ascending list."""
    chosen = frozenset(values)
    if chosen >= everything:
        return "*"
    return ",".join(str(number) for number in sorted(chosen))
