"""Properties of next_runs and following_occurrence, against a brute-force reading of docs/schedules.md.

The reference walks UTC minute by minute and decides each one from the rule as written: a minute
runs when its local time matches (the second pass of a repeated hour only when the hour field is
"*"), and the first instant after a gap runs when a matching local time fell into the gap.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.contract.vocabulary import MisfirePolicy
from sundial.shared.schedules import following_occurrence, next_runs, parse_schedule

# 2026 transitions (UTC epoch seconds), so that generated instants often straddle one.
TRANSITIONS = {
    "America/New_York": [1772953200, 1793512800],  # 8 Mar 07:00Z, 1 Nov 06:00Z
    "Europe/London": [1774746000, 1792890000],  # 29 Mar 01:00Z, 25 Oct 01:00Z
    "Australia/Sydney": [1775318400, 1790956800],  # 4 Apr 16:00Z, 3 Oct 16:00Z
    "Australia/Lord_Howe": [1775314800, 1790955000],  # 4 Apr 15:00Z, 3 Oct 15:30Z
    "America/Havana": [1772946000, 1793509200],  # 8 Mar 05:00Z, 1 Nov 05:00Z
}
ZONES = ["UTC", *TRANSITIONS]
HORIZON_S = 2 * 86400
MINUTE_S = 60
SETTINGS = settings(max_examples=60, deadline=None)


@dataclass(frozen=True)
class Spec:
    """A generated plain cron expression and the sets it stands for."""

    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    weekdays: frozenset[int]  # 0=SUN
    every_hour: bool

    def matches(self, local: datetime) -> bool:
        weekday = local.isoweekday() % 7
        return local.minute in self.minutes and local.hour in self.hours and weekday in self.weekdays


def _field(values: frozenset[int], low: int, high: int, step: int | None) -> str:
    if step is not None:
        return f"{low}/{step}" if low else f"*/{step}"
    if values == frozenset(range(low, high + 1)):
        return "*"
    return ",".join(str(value) for value in sorted(values))


@st.composite
def specs(draw: st.DrawFn, likely_hours: frozenset[int] = frozenset()) -> Spec:
    minute_step = draw(st.one_of(st.none(), st.integers(5, 30)))
    minutes = (
        frozenset(range(0, 60, minute_step))
        if minute_step
        else draw(st.frozensets(st.integers(0, 59), min_size=1, max_size=3))
    )
    every_hour = draw(st.booleans())
    hours = draw(st.frozensets(st.integers(0, 23), min_size=1, max_size=4))
    if draw(st.integers(0, 3)):
        hours |= likely_hours
    hours = frozenset(range(24)) if every_hour else hours
    all_days = draw(st.booleans())
    weekdays = (
        frozenset(range(7)) if all_days else draw(st.frozensets(st.integers(0, 6), min_size=1, max_size=6))
    )
    expression = " ".join(
        (
            _field(minutes, 0, 59, minute_step),
            "*" if every_hour else _field(hours, 0, 23, None),
            "*",
            "*",
            "*" if all_days else _field(weekdays, 0, 6, None),
        )
    )
    return Spec(expression, minutes, hours, weekdays, every_hour)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Spec, str, int]:
    """An expression, a zone and an `after`, usually up to two days before one of the zone's transitions,
    with the hours around the transition often in the expression."""
    timezone = draw(st.sampled_from(ZONES))
    if timezone == "UTC" or draw(st.integers(0, 3)) == 0:
        return draw(specs()), timezone, draw(st.integers(1577836800, 2082758400))  # 2020-2036
    transition = draw(st.sampled_from(TRANSITIONS[timezone]))
    hour = datetime.fromtimestamp(transition - 1, ZoneInfo(timezone)).hour
    spec = draw(specs(frozenset({hour, (hour + 1) % 24})))
    return spec, timezone, transition - draw(st.integers(-3600, 44 * 3600))


def offset_s(instant_s: int, zone: ZoneInfo) -> int:
    offset = datetime.fromtimestamp(instant_s, zone).utcoffset()
    assert offset is not None
    return int(offset.total_seconds())


def local_time(instant_s: int, zone: ZoneInfo) -> datetime:
    return datetime.fromtimestamp(instant_s, zone).replace(tzinfo=None)


def gap_times(instant_s: int, zone: ZoneInfo) -> list[datetime]:
    """The local minutes skipped by a spring-forward gap that ends at `instant_s`, if one does."""
    jump = offset_s(instant_s, zone) - offset_s(instant_s - MINUTE_S, zone)
    local = datetime.fromtimestamp(instant_s, zone).replace(tzinfo=None)
    return [local - timedelta(seconds=back) for back in range(MINUTE_S, jump + 1, MINUTE_S)]


def occurs(spec: Spec, zone: ZoneInfo, instant_s: int) -> bool:
    if any(spec.matches(local) for local in gap_times(instant_s, zone)):
        return True
    here = datetime.fromtimestamp(instant_s, zone)
    if not spec.matches(here.replace(tzinfo=None, fold=0)):
        return False
    return here.fold == 0 or spec.every_hour


def reference(spec: Spec, zone: ZoneInfo, after_s: int) -> list[int]:
    first = (after_s // MINUTE_S + 1) * MINUTE_S
    return [u for u in range(first, after_s + HORIZON_S + 1, MINUTE_S) if occurs(spec, zone, u)]


@SETTINGS
@given(scenario=scenarios())
def test_next_runs_equal_the_brute_force_reading_of_the_rule(scenario: tuple[Spec, str, int]) -> None:
    spec, timezone, after_s = scenario
    expected = [u * 1000 for u in reference(spec, ZoneInfo(timezone), after_s)][:99]
    actual = next_runs(parse_schedule(spec.expression, timezone), after_s * 1000, len(expected) + 1)
    assert actual[: len(expected)] == expected
    beyond = actual[len(expected) :]
    assert not beyond or beyond[0] > (after_s + HORIZON_S) * 1000 or len(expected) == 99


@SETTINGS
@given(scenario=scenarios(), after_ms=st.integers(0, 999))
def test_runs_increase_follow_after_and_match_local_time(
    scenario: tuple[Spec, str, int], after_ms: int
) -> None:
    spec, timezone, after_s = scenario
    zone = ZoneInfo(timezone)
    after = after_s * 1000 + after_ms
    runs = next_runs(parse_schedule(spec.expression, timezone), after, 50)
    assert runs == sorted(set(runs))
    assert all(run > after for run in runs)
    for run in runs:
        local = datetime.fromtimestamp(run / 1000, zone).replace(tzinfo=None)
        in_gap = any(spec.matches(time) for time in gap_times(run // 1000, zone))
        assert spec.matches(local) or in_gap


def narrowest_step_s(spec: Spec) -> int:
    """The shortest distance between two matching local times, in a week and across its end."""
    week = sorted(
        (day * 1440 + hour * 60 + minute) * MINUTE_S
        for day in spec.weekdays
        for hour in spec.hours
        for minute in spec.minutes
    )
    return min(b - a for a, b in itertools.pairwise([*week, week[0] + 7 * 86400]))


@SETTINGS
@given(scenario=scenarios())
def test_no_two_runs_closer_than_the_expression_allows_outside_transitions(
    scenario: tuple[Spec, str, int],
) -> None:
    spec, timezone, after_s = scenario
    zone = ZoneInfo(timezone)
    runs = [run // 1000 for run in next_runs(parse_schedule(spec.expression, timezone), after_s * 1000, 40)]
    if len(runs) < 2:
        return
    narrowest = narrowest_step_s(spec)
    for earlier, later in itertools.pairwise(runs):
        # A run at the end of a gap is not at its local time; elsewhere equal offsets mean that no
        # transition lies between the two (they are at most weeks apart).
        exact = all(spec.matches(local_time(run, zone)) for run in (earlier, later))
        if exact and offset_s(earlier, zone) == offset_s(later, zone):
            assert later - earlier >= narrowest


@SETTINGS
@given(scenario=scenarios())
def test_eventbridge_days_are_numbered_from_one(scenario: tuple[Spec, str, int]) -> None:
    spec, timezone, after_s = scenario
    minute, hour, _, _, weekday = spec.expression.split()
    if weekday == "*":
        eventbridge_weekday = "?"
        day = "*"
    else:
        eventbridge_weekday = ",".join(str(day + 1) for day in sorted(spec.weekdays))
        day = "?"
    eventbridge = f"cron({minute} {hour} {day} * {eventbridge_weekday} *)"
    plain = next_runs(parse_schedule(spec.expression, timezone), after_s * 1000, 20)
    assert next_runs(parse_schedule(eventbridge, timezone), after_s * 1000, 20) == plain


@SETTINGS
@given(
    amount=st.integers(1, 500),
    unit=st.sampled_from([("second", 1), ("minutes", 60), ("hour", 3600), ("days", 86400)]),
    timezone=st.sampled_from(ZONES),
    after=st.integers(0, 4_000_000_000_000),
)
def test_rate_runs_are_evenly_spaced_in_elapsed_time(
    amount: int, unit: tuple[str, int], timezone: str, after: int
) -> None:
    period = amount * unit[1] * 1000
    runs = next_runs(parse_schedule(f"rate({amount} {unit[0]})", timezone), after, 10)
    assert runs == [after + period * n for n in range(1, 11)]


def reference_following(
    expression: str, timezone: str, previous: int, now: int, policy: MisfirePolicy, grace: int
) -> int | None:
    """Walk every occurrence after `previous` one by one, then apply the policy as the docs word it."""
    schedule = parse_schedule(expression, timezone)
    upcoming = schedule.next_after(previous)
    missed: list[int] = []
    while upcoming is not None and upcoming < now - grace:
        missed.append(upcoming)
        upcoming = schedule.next_after(upcoming)
    if not missed:
        return upcoming
    if policy is MisfirePolicy.RUN_ALL:
        return missed[0]
    if policy is MisfirePolicy.RUN_ONCE:
        return missed[-1]
    return upcoming


@SETTINGS
@given(
    scenario=scenarios(),
    rate_minutes=st.one_of(st.none(), st.integers(1, 180)),
    delay_s=st.integers(0, 2 * 86400),
    grace_s=st.integers(0, 600),
    policy=st.sampled_from(MisfirePolicy),
)
def test_following_occurrence_applies_the_misfire_policy(
    scenario: tuple[Spec, str, int],
    rate_minutes: int | None,
    delay_s: int,
    grace_s: int,
    policy: MisfirePolicy,
) -> None:
    spec, timezone, after_s = scenario
    expression = spec.expression if rate_minutes is None else f"rate({rate_minutes} minutes)"
    schedule = parse_schedule(expression, timezone)
    previous = schedule.next_after(after_s * 1000)
    assert previous is not None
    now, grace = previous + delay_s * 1000, grace_s * 1000
    expected = reference_following(expression, timezone, previous, now, policy, grace)
    assert following_occurrence(schedule, previous, now, policy, None, None, grace) == expected
