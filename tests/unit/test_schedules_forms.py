"""Each schedule form, evaluated: expected UTC instants are written out."""

from __future__ import annotations

import copy
import pickle
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest

from sundial.shared.clock import format_rfc3339
from sundial.shared.schedules import Schedule, next_runs, parse_schedule


def ms(text: str) -> int:
    return round(datetime.fromisoformat(text).timestamp() * 1000)


def runs(expression: str, after: str, count: int = 3, timezone: str = "UTC") -> list[str]:
    schedule = parse_schedule(expression, timezone)
    return [format_rfc3339(instant) for instant in next_runs(schedule, ms(after), count)]


PLAIN = [
    # (expression, after, expected); 2026-01-01 is a Thursday.
    (
        "*/15 * * * *",
        "2026-01-01T00:07:00Z",
        ["2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z"],
    ),
    (
        "0 9 * * 1-5",
        "2026-01-02T10:00:00Z",
        ["2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z", "2026-01-07T09:00:00Z"],
    ),
    (
        "0 9 * * MON-FRI",
        "2026-01-02T10:00:00Z",
        ["2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z", "2026-01-07T09:00:00Z"],
    ),
    (
        "0 9 * * mon,wed",
        "2026-01-01T00:00:00Z",
        ["2026-01-05T09:00:00Z", "2026-01-07T09:00:00Z", "2026-01-12T09:00:00Z"],
    ),
    (
        "5-10/5 3 * * *",
        "2026-01-01T00:00:00Z",
        ["2026-01-01T03:05:00Z", "2026-01-01T03:10:00Z", "2026-01-02T03:05:00Z"],
    ),
    (
        "50/5 23 * * *",
        "2026-01-01T00:00:00Z",
        ["2026-01-01T23:50:00Z", "2026-01-01T23:55:00Z", "2026-01-02T23:50:00Z"],
    ),
    (
        "0 0 1 JAN,JUL *",
        "2026-01-01T00:00:00Z",
        ["2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z", "2027-07-01T00:00:00Z"],
    ),
    (
        "0 0 1 nov-dec/1 *",
        "2026-01-01T00:00:00Z",
        ["2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", "2027-11-01T00:00:00Z"],
    ),
    # 0 and 7 are both Sunday.
    (
        "0 12 * * 0",
        "2026-01-01T00:00:00Z",
        ["2026-01-04T12:00:00Z", "2026-01-11T12:00:00Z", "2026-01-18T12:00:00Z"],
    ),
    (
        "0 12 * * 7",
        "2026-01-01T00:00:00Z",
        ["2026-01-04T12:00:00Z", "2026-01-11T12:00:00Z", "2026-01-18T12:00:00Z"],
    ),
    (
        "0 12 * * 5-7",
        "2026-01-01T00:00:00Z",
        ["2026-01-02T12:00:00Z", "2026-01-03T12:00:00Z", "2026-01-04T12:00:00Z"],
    ),
    # Both day fields restricted: either matches (Fridays, and the 13th, a Tuesday).
    (
        "0 0 13 * FRI",
        "2026-01-08T00:00:00Z",
        ["2026-01-09T00:00:00Z", "2026-01-13T00:00:00Z", "2026-01-16T00:00:00Z"],
    ),
    (
        "0 0 1-31 * MON",
        "2026-01-01T00:00:00Z",
        ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"],
    ),
    # One restricted, the other "*": only the restricted one counts.
    (
        "0 0 13 * *",
        "2026-01-01T00:00:00Z",
        ["2026-01-13T00:00:00Z", "2026-02-13T00:00:00Z", "2026-03-13T00:00:00Z"],
    ),
    (
        "0 0 29 2 *",
        "2026-01-01T00:00:00Z",
        ["2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z", "2036-02-29T00:00:00Z"],
    ),
    (
        "0 0 31 * *",
        "2026-01-31T00:00:00Z",
        ["2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z"],
    ),
    (
        "@hourly",
        "2026-01-01T00:30:00Z",
        ["2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z"],
    ),
    (
        "@daily",
        "2026-01-01T00:30:00Z",
        ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"],
    ),
    (
        "@weekly",
        "2026-01-01T00:30:00Z",
        ["2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z"],
    ),
    (
        "@monthly",
        "2026-01-01T00:30:00Z",
        ["2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"],
    ),
    (
        "@yearly",
        "2026-01-01T00:30:00Z",
        ["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", "2029-01-01T00:00:00Z"],
    ),
    (
        "@ANNUALLY",
        "2026-01-01T00:30:00Z",
        ["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", "2029-01-01T00:00:00Z"],
    ),
    (
        "  0   9 * * *  ",
        "2026-01-01T00:00:00Z",
        ["2026-01-01T09:00:00Z", "2026-01-02T09:00:00Z", "2026-01-03T09:00:00Z"],
    ),
]


@pytest.mark.parametrize(("expression", "after", "expected"), PLAIN)
def test_plain_cron(expression: str, after: str, expected: list[str]) -> None:
    assert runs(expression, after) == expected


EVENTBRIDGE = [
    # 2 January 2026 is a Friday: its last runs, then Monday's.
    (
        "cron(0/10 * ? * MON-FRI *)",
        "2026-01-02T23:45:00Z",
        ["2026-01-02T23:50:00Z", "2026-01-05T00:00:00Z", "2026-01-05T00:10:00Z"],
    ),
    (
        "cron(0 18 ? * MON-FRI *)",
        "2026-01-02T19:00:00Z",
        ["2026-01-05T18:00:00Z", "2026-01-06T18:00:00Z", "2026-01-07T18:00:00Z"],
    ),
    (
        "cron(0 8 1 * ? *)",
        "2026-01-01T09:00:00Z",
        ["2026-02-01T08:00:00Z", "2026-03-01T08:00:00Z", "2026-04-01T08:00:00Z"],
    ),
    # 1=SUN ... 7=SAT, unlike croniter's 0=SUN.
    (
        "cron(0 0 ? * 1 *)",
        "2026-01-01T00:00:00Z",
        ["2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z"],
    ),
    (
        "cron(0 0 ? * 7 *)",
        "2026-01-01T00:00:00Z",
        ["2026-01-03T00:00:00Z", "2026-01-10T00:00:00Z", "2026-01-17T00:00:00Z"],
    ),
    (
        "cron(30 6 ? * 2-6 *)",
        "2026-01-02T07:00:00Z",
        ["2026-01-05T06:30:00Z", "2026-01-06T06:30:00Z", "2026-01-07T06:30:00Z"],
    ),
    (
        "cron(0 0 ? * 1,7 *)",
        "2026-01-01T00:00:00Z",
        ["2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-10T00:00:00Z"],
    ),
    # L alone in day-of-week: the last day of the week, Saturday.
    (
        "cron(0 0 ? * L *)",
        "2026-01-01T00:00:00Z",
        ["2026-01-03T00:00:00Z", "2026-01-10T00:00:00Z", "2026-01-17T00:00:00Z"],
    ),
    # 6L: the last Friday of the month (croniter would call it L5).
    (
        "cron(15 10 ? * 6L *)",
        "2026-01-01T00:00:00Z",
        ["2026-01-30T10:15:00Z", "2026-02-27T10:15:00Z", "2026-03-27T10:15:00Z"],
    ),
    (
        "cron(15 10 ? * FRIL *)",
        "2026-01-01T00:00:00Z",
        ["2026-01-30T10:15:00Z", "2026-02-27T10:15:00Z", "2026-03-27T10:15:00Z"],
    ),
    # The year field ends the series: the last Fridays of 2026 after November.
    ("cron(15 10 ? * 6L 2026)", "2026-11-01T00:00:00Z", ["2026-11-27T10:15:00Z", "2026-12-25T10:15:00Z"]),
    (
        "cron(0 10 ? * 2#1 *)",
        "2026-01-01T00:00:00Z",
        ["2026-01-05T10:00:00Z", "2026-02-02T10:00:00Z", "2026-03-02T10:00:00Z"],
    ),
    (
        "cron(0 10 ? * MON#3 *)",
        "2026-01-01T00:00:00Z",
        ["2026-01-19T10:00:00Z", "2026-02-16T10:00:00Z", "2026-03-16T10:00:00Z"],
    ),
    (
        "cron(0 12 L * ? *)",
        "2026-01-01T00:00:00Z",
        ["2026-01-31T12:00:00Z", "2026-02-28T12:00:00Z", "2026-03-31T12:00:00Z"],
    ),
    # 15W: the weekday nearest the 15th (15 Feb and 15 Mar 2026 are Sundays).
    (
        "cron(0 12 15W * ? *)",
        "2026-01-01T00:00:00Z",
        ["2026-01-15T12:00:00Z", "2026-02-16T12:00:00Z", "2026-03-16T12:00:00Z"],
    ),
    # 1 Aug 2026 is a Saturday; the nearest weekday may not leave the month, so Monday the 3rd.
    (
        "cron(0 12 1W * ? *)",
        "2026-07-15T00:00:00Z",
        ["2026-08-03T12:00:00Z", "2026-09-01T12:00:00Z", "2026-10-01T12:00:00Z"],
    ),
    ("cron(0 0 1 1 ? 2027-2028)", "2026-01-01T00:00:00Z", ["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"]),
    (
        "cron(0 0 1 1 ? 2030/10)",
        "2026-01-01T00:00:00Z",
        ["2030-01-01T00:00:00Z", "2040-01-01T00:00:00Z", "2050-01-01T00:00:00Z"],
    ),
    # Beyond croniter's own year range (1970-2099): years are handled before croniter sees the fields.
    ("cron(0 0 1 1 ? 2150)", "2026-01-01T00:00:00Z", ["2150-01-01T00:00:00Z"]),
    ("cron(0 0 1 1 ? 2020)", "2026-01-01T00:00:00Z", []),
    (
        "CRON( 0 9 * JAN ? * )",
        "2026-01-30T12:00:00Z",
        ["2026-01-31T09:00:00Z", "2027-01-01T09:00:00Z", "2027-01-02T09:00:00Z"],
    ),
]


@pytest.mark.parametrize(("expression", "after", "expected"), EVENTBRIDGE)
def test_eventbridge_cron(expression: str, after: str, expected: list[str]) -> None:
    assert runs(expression, after) == expected


def test_eventbridge_cron_is_read_in_its_time_zone() -> None:
    # The example of the API reference.
    assert runs("cron(0 9 * * ? *)", "2026-11-30T12:00:00Z", 1, "Europe/Berlin") == ["2026-12-01T08:00:00Z"]
    assert runs("0 9 * * *", "2026-06-30T12:00:00Z", 1, "Europe/Berlin") == ["2026-07-01T07:00:00Z"]
    assert runs("0 9 * * *", "2026-06-30T12:00:00Z", 1, "Asia/Kolkata") == ["2026-07-01T03:30:00Z"]


RATES = [
    ("rate(1 second)", ["2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"]),
    ("rate(30 seconds)", ["2026-01-01T00:00:30Z", "2026-01-01T00:01:00Z", "2026-01-01T00:01:30Z"]),
    ("rate(1 minute)", ["2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z"]),
    ("rate(5 minutes)", ["2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z", "2026-01-01T00:15:00Z"]),
    ("rate(1 hours)", ["2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z"]),
    ("rate(2 days)", ["2026-01-03T00:00:00Z", "2026-01-05T00:00:00Z", "2026-01-07T00:00:00Z"]),
    ("RATE( 12 Hours )", ["2026-01-01T12:00:00Z", "2026-01-02T00:00:00Z", "2026-01-02T12:00:00Z"]),
]


@pytest.mark.parametrize(("expression", "expected"), RATES)
def test_rate_counts_from_after(expression: str, expected: list[str]) -> None:
    assert runs(expression, "2026-01-01T00:00:00Z") == expected


def test_rate_keeps_milliseconds_of_its_anchor() -> None:
    assert runs("rate(1 minute)", "2026-01-01T00:00:00.250Z", 2) == [
        "2026-01-01T00:01:00.250Z",
        "2026-01-01T00:02:00.250Z",
    ]


AT = [
    ("at(2026-12-01T09:00:00)", "Europe/Berlin", "2026-11-01T00:00:00Z", ["2026-12-01T08:00:00Z"]),
    ("at(2026-12-01T09:00:00)", "UTC", "2026-11-01T00:00:00Z", ["2026-12-01T09:00:00Z"]),
    ("at(2026-07-04T12:30:15)", "America/New_York", "2026-01-01T00:00:00Z", ["2026-07-04T16:30:15Z"]),
    # Past, or exactly now: nothing left.
    ("at(2026-12-01T09:00:00)", "UTC", "2026-12-01T09:00:00Z", []),
    ("at(2020-01-01T00:00:00)", "UTC", "2026-01-01T00:00:00Z", []),
]


@pytest.mark.parametrize(("expression", "timezone", "after", "expected"), AT)
def test_at(expression: str, timezone: str, after: str, expected: list[str]) -> None:
    assert runs(expression, after, 3, timezone) == expected


def test_cron_after_a_fraction_of_a_second() -> None:
    assert runs("0 * * * *", "2026-01-01T00:59:59.999Z", 1) == ["2026-01-01T01:00:00Z"]
    assert runs("0 * * * *", "2026-01-01T01:00:00.001Z", 1) == ["2026-01-01T02:00:00Z"]


def test_schedule_properties_and_caching() -> None:
    schedule = parse_schedule("0 9 * * *", "Europe/London")
    assert schedule.expression == "0 9 * * *"
    assert schedule.timezone == "Europe/London"
    assert schedule.is_recurring
    assert parse_schedule("0 9 * * *", "Europe/London") is schedule
    assert Schedule("0 9 * * *", "Europe/London") == schedule
    assert hash(Schedule("0 9 * * *", "Europe/London")) == hash(schedule)
    assert parse_schedule("rate(1 day)").is_recurring
    assert not parse_schedule("at(2030-01-01T00:00:00)").is_recurring
    assert parse_schedule("0 9 * * *").timezone == "UTC"


def test_next_after() -> None:
    schedule = parse_schedule("cron(0 9 * * ? *)", "Europe/Berlin")
    assert schedule.next_after(ms("2026-11-30T12:00:00Z")) == ms("2026-12-01T08:00:00Z")
    assert schedule.next_after(ms("2026-12-01T08:00:00Z")) == ms("2026-12-02T08:00:00Z")
    assert parse_schedule("rate(5 minutes)").next_after(1_000) == 301_000
    assert parse_schedule("at(2026-01-01T00:00:00)").next_after(ms("2026-06-01T00:00:00Z")) is None


def test_schedules_copy_and_pickle() -> None:
    schedule = parse_schedule("cron(0 9 * * ? *)", "Europe/Berlin")
    for clone in (copy.copy(schedule), copy.deepcopy(schedule), pickle.loads(pickle.dumps(schedule))):
        assert clone == schedule
        assert clone.next_after(ms("2026-11-30T12:00:00Z")) == ms("2026-12-01T08:00:00Z")


def test_one_schedule_is_safe_to_share_between_threads() -> None:
    schedule = parse_schedule("*/7 9-17 * * MON-FRI", "America/New_York")
    starts = [ms("2026-01-01T00:00:00Z") + index * 3_600_017 for index in range(400)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        shared_answers = list(pool.map(lambda after: next_runs(schedule, after, 5), starts))
    alone = parse_schedule("*/7 9-17 * * 1-5", "America/New_York")
    assert shared_answers == [next_runs(alone, after, 5) for after in starts]
