"""next_runs windows, a new job's first occurrence, and the misfire policies of following_occurrence."""

from __future__ import annotations

from datetime import datetime

import pytest

from sundial.contract.vocabulary import MisfirePolicy
from sundial.shared.clock import format_rfc3339
from sundial.shared.errors import InvalidInput
from sundial.shared.schedules import first_occurrence, following_occurrence, next_runs, parse_schedule

MINUTE = 60_000
GRACE = 60_000


def ms(text: str) -> int:
    return round(datetime.fromisoformat(text).timestamp() * 1000)


def iso(instant: int | None) -> str | None:
    return None if instant is None else format_rfc3339(instant)


def optional_ms(text: str | None) -> int | None:
    return None if text is None else ms(text)


# --- next_runs --------------------------------------------------------------------------------------


def test_next_runs_stops_before_end_at() -> None:
    hourly = parse_schedule("0 * * * *")
    instants = next_runs(hourly, ms("2026-01-01T00:00:00Z"), 10, end_at_ms=ms("2026-01-01T03:00:00Z"))
    assert [iso(i) for i in instants] == ["2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"]


def test_next_runs_starts_at_start_at() -> None:
    hourly = parse_schedule("0 * * * *")
    instants = next_runs(hourly, ms("2026-01-01T00:00:00Z"), 2, start_at_ms=ms("2026-01-01T05:00:00Z"))
    assert [iso(i) for i in instants] == ["2026-01-01T05:00:00Z", "2026-01-01T06:00:00Z"]
    every_ten = parse_schedule("rate(10 minutes)")
    instants = next_runs(every_ten, ms("2026-01-01T00:00:00Z"), 2, start_at_ms=ms("2026-01-01T05:00:00Z"))
    assert [iso(i) for i in instants] == ["2026-01-01T05:10:00Z", "2026-01-01T05:20:00Z"]


def test_next_runs_ignores_a_start_at_in_the_past() -> None:
    hourly = parse_schedule("0 * * * *")
    instants = next_runs(hourly, ms("2026-01-01T00:30:00Z"), 1, start_at_ms=ms("2025-01-01T00:00:00Z"))
    assert [iso(i) for i in instants] == ["2026-01-01T01:00:00Z"]


@pytest.mark.parametrize("count", [0, -1, 101])
def test_next_runs_count_is_bounded(count: int) -> None:
    with pytest.raises(InvalidInput) as raised:
        next_runs(parse_schedule("@hourly"), 0, count)
    assert raised.value.field == "count"
    assert raised.value.message == "count must be 1-100"


def test_next_runs_returns_up_to_100() -> None:
    assert len(next_runs(parse_schedule("* * * * *"), 0, 100)) == 100


@pytest.mark.parametrize("end", ["2026-01-01T00:00:00Z", "2025-12-31T00:00:00Z"])
def test_end_at_must_follow_start_at(end: str) -> None:
    schedule = parse_schedule("@hourly")
    start = ms("2026-01-01T00:00:00Z")
    calls = [
        lambda: next_runs(schedule, 0, 1, start, ms(end)),
        lambda: first_occurrence(schedule, 0, start, ms(end)),
        lambda: following_occurrence(schedule, 0, 0, MisfirePolicy.RUN_ONCE, start, ms(end), GRACE),
    ]
    for call in calls:
        with pytest.raises(InvalidInput) as raised:
            call()
        assert (raised.value.field, raised.value.message) == ("end_at", "end_at must be after start_at")


# --- first_occurrence ----------------------------------------------------------------------------------

FIRST = [
    # (expression, timezone, now, start_at, end_at, expected)
    ("0 * * * *", "UTC", "2026-01-01T00:30:00Z", None, None, "2026-01-01T01:00:00Z"),
    # An occurrence exactly now is the first: at or after now.
    ("0 * * * *", "UTC", "2026-01-01T01:00:00Z", None, None, "2026-01-01T01:00:00Z"),
    ("0 * * * *", "UTC", "2026-01-01T00:30:00Z", "2026-01-01T05:00:00Z", None, "2026-01-01T05:00:00Z"),
    ("0 * * * *", "UTC", "2026-01-01T00:30:00Z", "2026-01-01T04:30:00Z", None, "2026-01-01T05:00:00Z"),
    ("0 * * * *", "UTC", "2026-01-01T00:30:00Z", "2025-01-01T00:00:00Z", None, "2026-01-01T01:00:00Z"),
    ("0 * * * *", "UTC", "2026-01-01T00:30:00Z", None, "2026-01-01T01:00:00Z", None),
    ("0 * * * *", "UTC", "2026-01-01T00:30:00Z", None, "2026-01-01T01:00:01Z", "2026-01-01T01:00:00Z"),
    ("cron(0 9 * * ? *)", "Europe/Berlin", "2026-11-30T12:00:00Z", None, None, "2026-12-01T08:00:00Z"),
    ("30 2 * * *", "America/New_York", "2026-03-08T01:00:00Z", None, None, "2026-03-08T07:00:00Z"),
    # A rate runs one period after the job becomes active.
    ("rate(5 minutes)", "UTC", "2026-01-01T00:00:00Z", None, None, "2026-01-01T00:05:00Z"),
    ("rate(5 minutes)", "UTC", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", None, "2026-01-02T00:05:00Z"),
    ("rate(1 day)", "UTC", "2026-01-01T00:00:00Z", None, "2026-01-01T12:00:00Z", None),
    ("at(2026-06-01T12:00:00)", "Europe/London", "2026-01-01T00:00:00Z", None, None, "2026-06-01T11:00:00Z"),
    # An at() in the past, or outside the window, has no first occurrence: the caller decides.
    ("at(2026-06-01T12:00:00)", "UTC", "2026-07-01T00:00:00Z", None, None, None),
    ("at(2026-06-01T12:00:00)", "UTC", "2026-01-01T00:00:00Z", "2026-06-02T00:00:00Z", None, None),
    ("at(2026-06-01T12:00:00)", "UTC", "2026-01-01T00:00:00Z", None, "2026-06-01T00:00:00Z", None),
    ("cron(0 0 1 1 ? 2020)", "UTC", "2026-01-01T00:00:00Z", None, None, None),
]


@pytest.mark.parametrize(("expression", "timezone", "now", "start", "end", "expected"), FIRST)
def test_first_occurrence(
    expression: str, timezone: str, now: str, start: str | None, end: str | None, expected: str | None
) -> None:
    schedule = parse_schedule(expression, timezone)
    assert iso(first_occurrence(schedule, ms(now), optional_ms(start), optional_ms(end))) == expected


# --- following_occurrence ---------------------------------------------------------------------------------

RUN_ONCE, SKIP, RUN_ALL = MisfirePolicy.RUN_ONCE, MisfirePolicy.SKIP, MisfirePolicy.RUN_ALL

FOLLOWING = [
    # (expression, previous, now, policy, expected); grace 60 s, no window.
    # On time: every policy takes the next occurrence.
    *[
        ("0 * * * *", "2026-01-01T00:00:00Z", "2026-01-01T00:59:30Z", p, "2026-01-01T01:00:00Z")
        for p in MisfirePolicy
    ],
    # 30 s late is within the grace: not missed.
    *[
        ("0 * * * *", "2026-01-01T00:00:00Z", "2026-01-01T01:00:30Z", p, "2026-01-01T01:00:00Z")
        for p in MisfirePolicy
    ],
    # Down from 00:00 to 05:30: 01:00 to 05:00 were missed.
    ("0 * * * *", "2026-01-01T00:00:00Z", "2026-01-01T05:30:00Z", RUN_ALL, "2026-01-01T01:00:00Z"),
    ("0 * * * *", "2026-01-01T00:00:00Z", "2026-01-01T05:30:00Z", RUN_ONCE, "2026-01-01T05:00:00Z"),
    ("0 * * * *", "2026-01-01T00:00:00Z", "2026-01-01T05:30:00Z", SKIP, "2026-01-01T06:00:00Z"),
    # At 05:00:30, 05:00 is late but within the grace: run_once runs 04:00 (missed) and 05:00 next.
    ("0 * * * *", "2026-01-01T00:00:00Z", "2026-01-01T05:00:30Z", RUN_ONCE, "2026-01-01T04:00:00Z"),
    ("0 * * * *", "2026-01-01T04:00:00Z", "2026-01-01T05:00:31Z", RUN_ONCE, "2026-01-01T05:00:00Z"),
    ("0 * * * *", "2026-01-01T00:00:00Z", "2026-01-01T05:00:30Z", SKIP, "2026-01-01T05:00:00Z"),
    # Two months down, daily at 09:00.
    ("0 9 * * *", "2026-01-01T09:00:00Z", "2026-03-01T12:00:00Z", RUN_ALL, "2026-01-02T09:00:00Z"),
    ("0 9 * * *", "2026-01-01T09:00:00Z", "2026-03-01T12:00:00Z", RUN_ONCE, "2026-03-01T09:00:00Z"),
    ("0 9 * * *", "2026-01-01T09:00:00Z", "2026-03-01T12:00:00Z", SKIP, "2026-03-02T09:00:00Z"),
    # Every minute, a week down: the latest missed one is found without walking every minute.
    ("* * * * *", "2026-01-01T00:00:00Z", "2026-01-08T00:00:30Z", RUN_ONCE, "2026-01-07T23:59:00Z"),
    ("* * * * *", "2026-01-01T00:00:00Z", "2026-01-08T00:00:30Z", SKIP, "2026-01-08T00:00:00Z"),
    # A rate keeps its grid: 00:10 to 00:50 missed, 01:00 is the first not missed.
    ("rate(10 minutes)", "2026-01-01T00:00:00Z", "2026-01-01T00:55:00Z", RUN_ALL, "2026-01-01T00:10:00Z"),
    ("rate(10 minutes)", "2026-01-01T00:00:00Z", "2026-01-01T00:55:00Z", RUN_ONCE, "2026-01-01T00:50:00Z"),
    ("rate(10 minutes)", "2026-01-01T00:00:00Z", "2026-01-01T00:55:00Z", SKIP, "2026-01-01T01:00:00Z"),
    ("rate(10 minutes)", "2026-01-01T00:00:00Z", "2026-01-01T00:09:00Z", RUN_ONCE, "2026-01-01T00:10:00Z"),
    # 1:30 in New York, missed on the fall-back day: run_once runs the first 01:30, not the repeat.
    ("30 1 * * *", "2026-10-31T05:30:00Z", "2026-11-01T08:00:00Z", RUN_ONCE, "2026-11-01T05:30:00Z"),
    ("30 1 * * *", "2026-10-31T05:30:00Z", "2026-11-01T08:00:00Z", SKIP, "2026-11-02T06:30:00Z"),
    # A one-off has nothing after its occurrence.
    *[
        ("at(2026-01-01T00:00:00)", "2026-01-01T00:00:00Z", "2026-01-01T00:00:05Z", p, None)
        for p in MisfirePolicy
    ],
]


@pytest.mark.parametrize(("expression", "previous", "now", "policy", "expected"), FOLLOWING)
def test_following_occurrence(
    expression: str, previous: str, now: str, policy: MisfirePolicy, expected: str | None
) -> None:
    timezone = "America/New_York" if expression == "30 1 * * *" else "UTC"
    schedule = parse_schedule(expression, timezone)
    found = following_occurrence(schedule, ms(previous), ms(now), policy, None, None, GRACE)
    assert iso(found) == expected


WINDOWED = [
    # (policy, now, start_at, end_at, expected); hourly, previous 00:00.
    # end_at passed during a downtime: run_all and run_once still run what fell inside the window.
    (RUN_ALL, "2026-01-01T05:30:00Z", None, "2026-01-01T03:30:00Z", "2026-01-01T01:00:00Z"),
    (RUN_ONCE, "2026-01-01T05:30:00Z", None, "2026-01-01T03:30:00Z", "2026-01-01T03:00:00Z"),
    (SKIP, "2026-01-01T05:30:00Z", None, "2026-01-01T03:30:00Z", None),
    # The window closes before the next occurrence.
    (RUN_ALL, "2026-01-01T00:10:00Z", None, "2026-01-01T00:30:00Z", None),
    (RUN_ONCE, "2026-01-01T00:10:00Z", None, "2026-01-01T01:00:00Z", None),
    # A window that opens later (start_at moved ahead): the first occurrence inside it.
    (RUN_ONCE, "2026-01-01T00:10:00Z", "2026-01-01T03:00:00Z", None, "2026-01-01T03:00:00Z"),
    (SKIP, "2026-01-01T00:10:00Z", "2026-01-01T02:30:00Z", None, "2026-01-01T03:00:00Z"),
    (RUN_ONCE, "2026-01-01T05:30:00Z", "2026-01-01T03:00:00Z", None, "2026-01-01T05:00:00Z"),
]


@pytest.mark.parametrize(("policy", "now", "start", "end", "expected"), WINDOWED)
def test_following_occurrence_in_a_window(
    policy: MisfirePolicy, now: str, start: str | None, end: str | None, expected: str | None
) -> None:
    hourly = parse_schedule("0 * * * *")
    previous = ms("2026-01-01T00:00:00Z")
    found = following_occurrence(
        hourly, previous, ms(now), policy, optional_ms(start), optional_ms(end), GRACE
    )
    assert iso(found) == expected


def test_misfire_policy_values() -> None:
    assert [policy.value for policy in MisfirePolicy] == ["run_once", "skip", "run_all"]
    assert MisfirePolicy("skip") is MisfirePolicy.SKIP
