"""The cron field grammar both cron forms share: numbers, names, ranges, steps and lists.

Fields are expanded here into explicit sets, so that croniter only ever sees plain lists of numbers
and none of its own range, step or naming rules (such as "JAN-JAN" meaning the whole year) apply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sundial.shared.schedules.monthdays import DayFilter

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
    # The last value before the field starts over, when that is not `high`: plain cron's day of the
    # week runs 0-7 but 7 is Sunday again, so a range wrapping past Saturday continues at 0.
    cycle_end: int | None = None
    cyclic: bool = True  # after its last value the field starts over (not so for years)

    @property
    def last(self) -> int:
        """The value after which a wrapping range continues at `low`."""
        return self.high if self.cycle_end is None else self.cycle_end

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
    day_or: bool = True  # croniter's: both day fields restricted, a day matching either runs
    day_filter: DayFilter | None = None  # LW and nW: which of the candidate days runs


MINUTE = FieldSpec("minute", 0, 59)
HOUR = FieldSpec("hour", 0, 23)
DAY_OF_MONTH = FieldSpec("day-of-month", 1, 31)
MONTH = FieldSpec("month", 1, 12, MONTH_NAMES)
WEEK = frozenset(range(7))  # croniter's days of the week, 0=SUN


def expand(text: str, spec: FieldSpec, wrap: bool = False) -> frozenset[int]:
    """The values a field selects: "1-5,10/20" in a 0-59 field is {1, 2, 3, 4, 5, 10, 30, 50}.

    With `wrap`, a range whose end comes before its start runs past the end of the field and on
    from its start ("22-2" in hours is 22, 23, 0, 1, 2). Raises FieldError when an item is
    malformed, a value is out of range, or a range goes backwards where it may not wrap.
    """
    values: set[int] = set()
    for item in text.split(","):
        values.update(_expand_item(item, spec, wrap))
    return frozenset(values)


def _expand_item(item: str, spec: FieldSpec, wrap: bool) -> Iterable[int]:
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
    if high >= low:
        return range(low, high + 1, _step(step, spec))
    if not (wrap and spec.cyclic) or step is not None:
        raise _backwards(item, spec, wrap and spec.cyclic, (start, end, step))
    return (*range(low, spec.last + 1), *range(spec.low, high + 1))


def _backwards(item: str, spec: FieldSpec, wrap: bool, parts: tuple[str, str, str | None]) -> FieldError:
    start, end, step = parts
    problem = "wraps past the end of the field with a step" if wrap else "goes backwards"
    if not spec.cyclic:
        advice = f"write the smaller {spec.name} first, as in {end}-{start}" + (f"/{step}" if step else "")
    elif step is None:
        advice = f"write it as {_split(start, end, spec)}"
    else:
        # Where a step lands after the wrap is a guess either way, so the values are left to the user.
        advice = "write it as a list of two ranges, each with its own step"
    return FieldError(f"{spec.name} range '{item}' {problem}; {advice}")


def _split(start: str, end: str, spec: FieldSpec) -> str:
    """A backwards range as the two ranges it would wrap into: "FRI-MON" is "FRI-SAT,SUN-MON"."""
    low, high = value(start, spec), value(end, spec)
    named = {number: name for name, number in spec.names.items()} if start.isalpha() else {}

    def token(number: int) -> str:
        if number == low:
            return start
        if number == high:
            return end
        name = named.get(number, str(number))
        return name.lower() if start.islower() else name.title() if start.istitle() else name

    def piece(first: int, last: int) -> str:
        return token(first) if first == last else f"{token(first)}-{token(last)}"

    if low > spec.last:  # plain cron's 7, Sunday again: the range starts over at 0
        return piece(spec.low, high)
    return f"{piece(low, spec.last)},{piece(spec.low, high)}"


def value(token: str, spec: FieldSpec) -> int:
    """One number or name of a field. Raises FieldError when it is not one the field allows."""
    number = int(token) if token.isascii() and token.isdigit() else spec.names.get(token.upper())
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
