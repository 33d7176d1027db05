"""Sundial's cron against cronsim, an independent implementation that follows cronie, in UTC.

A seeded random grammar writes expressions in both forms: numbers, names in any case, ranges
(some wrapping), steps, lists, "?", L, LW, W, # and years. Sundial's next_runs and cronsim must
give the same instants, or both refuse the expression. cronsim knows only the plain form, so an
EventBridge expression is translated for it (1=SUN becomes 0=SUN, "?" becomes "*", a wrapping
range becomes two ranges) and the parts cronsim lacks, the year and nW, are applied here.
What docs/schedules.md lists as differences is checked for what Sundial does instead and counted,
never skipped. The same grammar drives a Hypothesis test, so a disagreement shrinks.
"""

from __future__ import annotations

import calendar
import random
import re
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from cronsim import CronSim, CronSimError
from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.shared.errors import InvalidInput
from sundial.shared.schedules import next_runs, parse_schedule

SEED = 20260111
RUNS = 5
BUDGET_S = 40.0
EXPRESSIONS = 30000  # per seeded run, unless the budget ends it first
AT_LEAST = 2000  # compared expressions below which the run proves too little
START_S = 1767225600  # 2026-01-01T00:00:00Z
SPAN_S = 5 * 365 * 86400
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")

# docs/schedules.md, "Compared with cronsim": what Sundial does instead, as its message says.
DIFFERENCES = {
    "plain L, W, #": "need the EventBridge form",
    "wrapping range with a step": "wraps past the end of the field with a step",
}
_ITEM = re.compile(r"(?P<start>\*|\w+)(?:-(?P<end>\w+))?(?:/(?P<step>\d+))?")
_SPECIAL_PLAIN = re.compile(r"L|LW|\d+W|\w+L|\w+#\d+", re.IGNORECASE)


@dataclass(frozen=True)
class Field:
    low: int
    high: int
    names: tuple[str, ...] = ()
    first_named: int = 0  # the value of names[0]

    def number(self, token: str) -> int:
        return int(token) if token.isdigit() else self.names.index(token.upper()) + self.first_named


PLAIN = (Field(0, 59), Field(0, 23), Field(1, 31), Field(1, 12, MONTHS, 1), Field(0, 7, DAYS, 0))
EVENTBRIDGE = (Field(0, 59), Field(0, 23), Field(1, 31), Field(1, 12, MONTHS, 1), Field(1, 7, DAYS, 1))
YEAR = Field(1970, 2199)


# The grammar. Hypothesis shrinks each draw towards 0, so the simplest choice always comes first.
def usually(rng: random.Random, percent: int) -> bool:
    return rng.randrange(100) < percent


def rarely(rng: random.Random, percent: int) -> bool:
    return rng.randrange(100) >= 100 - percent


def cased(rng: random.Random, name: str) -> str:
    return rng.choice((name, name.lower(), name.title(), "".join(rng.choice((c, c.lower())) for c in name)))


def token(rng: random.Random, field: Field, number: int) -> str:
    index = number - field.first_named
    if field.names and 0 <= index < len(field.names) and usually(rng, 40):
        return cased(rng, field.names[index])
    return str(number)


def item(rng: random.Random, field: Field, span: tuple[int, int] | None = None) -> str:
    low, high = span or (field.low, field.high)
    kind = rng.choice(("value", "range", "star step", "value step", "range step"))
    first, second = sorted((rng.randint(low, high), rng.randint(low, high)))
    step = f"/{rng.randint(1, field.high - field.low + 1)}"
    if kind == "value":
        return token(rng, field, first)
    if kind == "star step":
        return f"*{step}"
    if kind == "value step":
        return token(rng, field, first) + step
    if span is None and rarely(rng, 6):  # a range that wraps past the end of the field
        first, second = second, first
    return f"{token(rng, field, first)}-{token(rng, field, second)}" + (step if kind == "range step" else "")


def field_text(rng: random.Random, field: Field) -> str:
    if usually(rng, 30):
        return "*"
    return ",".join(item(rng, field) for _ in range(rng.randint(1, 3)))


def plain_expression(rng: random.Random) -> str:
    fields = [field_text(rng, field) for field in PLAIN]
    if rarely(rng, 3):  # a documented difference: EventBridge-only days in the plain form
        fields[rng.choice((2, 4))] = rng.choice(("L", "LW", "15W", "5L", "FRI#2"))
    return " ".join(fields)


def eventbridge_expression(rng: random.Random) -> str:
    minute, hour, _, month, _ = (field_text(rng, field) for field in EVENTBRIDGE)
    day, weekday = ("?", _weekday(rng)) if rng.randrange(2) else (_day(rng), "?")
    years = (item(rng, YEAR, (2024, 2045)) for _ in range(rng.randint(1, 2)))
    year = "*" if usually(rng, 70) else ",".join(years)
    return f"cron({minute} {hour} {day} {month} {weekday} {year})"


def _day(rng: random.Random) -> str:
    if usually(rng, 80):
        return field_text(rng, EVENTBRIDGE[2])
    return cased(rng, rng.choice(("L", "LW", f"{rng.randint(1, 31)}W")))


def _weekday(rng: random.Random) -> str:
    if usually(rng, 75):
        return field_text(rng, EVENTBRIDGE[4])
    day = token(rng, EVENTBRIDGE[4], rng.randint(1, 7))
    return rng.choice(("L", f"{day}L", f"{day}#{rng.randint(1, 5)}", f"{day}l"))


# The reference: cronsim, told the EventBridge form in its own terms.
@dataclass(frozen=True)
class Reference:
    expression: str  # five cronsim fields
    years: frozenset[int] | None = None
    nearest: int | None = None  # nW: cronsim has no W

    def runs(self, after: datetime) -> list[int] | None:
        """The next RUNS instants (epoch seconds), or None when cronsim refuses the expression."""
        try:
            return self._runs(after)
        except CronSimError:
            return None

    def _runs(self, after: datetime) -> list[int]:
        found: list[int] = []
        series = CronSim(self.expression, after)
        while len(found) < RUNS and (moment := next(series, None)) is not None and moment.year <= YEAR.high:
            if self.years is not None and moment.year not in self.years:
                later = [year for year in self.years if year > moment.year]
                if not later:
                    break
                series = CronSim(self.expression, datetime(min(later), 1, 1) - timedelta(seconds=1))
            elif self.nearest is not None and moment.day != nearest_weekday(moment.date(), self.nearest):
                series = CronSim(self.expression, datetime.combine(moment.date(), datetime.max.time()))
            else:
                found.append(calendar.timegm(moment.timetuple()))
        return found


def nearest_weekday(day: date, nth: int) -> int | None:
    """AWS's nW read literally: the Monday-to-Friday of the month closest to day n, if n exists."""
    length = calendar.monthrange(day.year, day.month)[1]
    weekdays = [d for d in range(1, length + 1) if calendar.weekday(day.year, day.month, d) < 5]
    return min(weekdays, key=lambda d: abs(d - nth)) if nth <= length else None


def reference(expression: str) -> Reference:
    if not expression.startswith("cron("):
        fields = expression.split()
        return Reference(
            " ".join(_one_value_ranges(text, field) for text, field in zip(fields, PLAIN, strict=True))
        )
    minute, hour, day, month, weekday, year = expression[5:-1].split()
    nearest = None
    if re.fullmatch(r"\d+W", day, re.IGNORECASE):
        nearest, day = int(day[:-1]), "*"
    fields = (minute, hour, "*" if day == "?" else day, month)
    parts = [
        _one_value_ranges(_split_wraps(text, field), field)
        for text, field in zip(fields, EVENTBRIDGE, strict=False)
    ]
    years = None if year == "*" else frozenset(_expand_years(year))
    return Reference(" ".join((*parts, _weekday_from_sunday_0(weekday))), years, nearest)


def _one_value_ranges(text: str, field: Field) -> str:
    # cronsim reads "32-32/26" as "32/26" (32 and 58); cron, like Sundial, runs at 32 alone.
    def single(match: re.Match[str]) -> str:
        same = field.number(match.group(1)) == field.number(match.group(2))
        return match.group(1) if same else match.group(0)

    return re.sub(r"\b(\w+)-(\w+)/\d+", single, text)


def _split_wraps(text: str, field: Field) -> str:
    def split(match: re.Match[str]) -> str:
        start, end = match.group(1), match.group(2)
        if field.number(start) <= field.number(end):
            return match.group(0)
        return f"{start}-{field.high},{field.low}-{end}"

    return re.sub(r"\b(\w+)-(\w+)\b(?!/)", split, text)


def _weekday_from_sunday_0(text: str) -> str:
    week = EVENTBRIDGE[4]
    if text in ("?", "*"):
        return "*"
    if text.upper() == "L":
        return "6"
    if special := re.fullmatch(r"(\w+?)(L|#\d)", text, re.IGNORECASE):
        return f"{week.number(special.group(1)) - 1}{special.group(2).upper()}"
    return ",".join(_weekday_item(part) for part in text.split(","))


def _weekday_item(text: str) -> str:
    match = _ITEM.fullmatch(text)
    assert match is not None, text
    start, end, step = match.group("start", "end", "step")
    suffix = f"/{step}" if step else ""
    if start == "*":
        return f"0-6{suffix}" if step else "*"
    first = EVENTBRIDGE[4].number(start) - 1
    last = EVENTBRIDGE[4].number(end) - 1 if end else (6 if step else first)
    if first == last:
        return str(first)  # as _one_value_ranges: cronsim would run "0-0/4" on to the end of the week
    return f"{first}-{last}{suffix}" if first < last else f"{first}-6,0-{last}"


def _expand_years(text: str) -> set[int]:
    years: set[int] = set()
    for part in text.split(","):
        match = _ITEM.fullmatch(part)
        assert match is not None, part
        start, end, step = match.group("start", "end", "step")
        first = YEAR.low if start == "*" else int(start)
        last = int(end) if end else (YEAR.high if step or start == "*" else first)
        years.update(range(first, last + 1, int(step or 1)))
    return years


# The comparison.
def documented_difference(expression: str) -> str | None:
    if not expression.startswith("cron("):
        days = expression.split()[2::2]
        plain_only = any(_SPECIAL_PLAIN.fullmatch(part) for field in days for part in field.split(","))
        return "plain L, W, #" if plain_only else None
    fields = expression[5:-1].split()[:5]
    for text, field in zip(fields, EVENTBRIDGE, strict=True):
        for match in re.finditer(r"\b(\w+)-(\w+)/", text):
            if field.number(match.group(1)) > field.number(match.group(2)):
                return "wrapping range with a step"
    return None


def compare(expression: str, after_s: int) -> str:
    """Checks one expression from one instant; returns how it was settled, for the tally."""
    try:
        got: list[int] | str = [
            run // 1000 for run in next_runs(parse_schedule(expression), after_s * 1000, RUNS)
        ]
    except InvalidInput as refused:
        got = refused.message
    difference = documented_difference(expression)
    if difference is not None:
        assert isinstance(got, str) and DIFFERENCES[difference] in got, (expression, got)
        return difference
    after = datetime.fromtimestamp(after_s, UTC).replace(tzinfo=None)
    expected = reference(expression).runs(after)
    shown = f"{expression!r} after {after.isoformat()}Z"
    if isinstance(got, str):
        assert expected is None or (expected == [] and "never fires" in got), (
            f"{shown}: {got}; cronsim {expected}"
        )
        return "refused by both"
    assert expected is not None, f"{shown}: Sundial {got}, cronsim refuses"
    assert got == expected, f"{shown}: Sundial {_iso(got)}, cronsim {_iso(expected)}"
    return f"{len(got)} runs agree"


def _iso(instants: list[int]) -> list[str]:
    return [datetime.fromtimestamp(instant, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") for instant in instants]


def draw(rng: random.Random) -> tuple[str, int]:
    expression = eventbridge_expression(rng) if rng.randrange(2) else plain_expression(rng)
    return expression, START_S + 60 * rng.randrange(SPAN_S // 60) + rng.choice((0, 0, 0, 1, 59))


def test_seeded_expressions_agree_with_cronsim() -> None:
    rng = random.Random(SEED)
    tally: Counter[str] = Counter()
    deadline = time.monotonic() + BUDGET_S
    while sum(tally.values()) < EXPRESSIONS and time.monotonic() < deadline:
        tally[compare(*draw(rng))] += 1
    compared = sum(tally.values())
    runs = sum(int(how.split()[0]) * count for how, count in tally.items() if how.endswith("runs agree"))
    print(f"\n{compared} expressions, {runs} runs compared: {dict(sorted(tally.items()))}")
    assert compared >= AT_LEAST
    assert tally[f"{RUNS} runs agree"] > compared // 2


@settings(max_examples=300, deadline=None)
@given(st.randoms(use_true_random=False))
def test_any_expression_agrees_with_cronsim(rng: random.Random) -> None:
    compare(*draw(rng))
