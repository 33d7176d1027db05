"""AWS's documented EventBridge cron examples, with the meaning AWS gives each, as literal UTC instants.

The examples and their meanings come from the EventBridge "Cron expressions reference"; a few
everyday schedules follow (Wednesdays, and "*/3" in either day field), in both forms.
1 January 2026 is a Thursday.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from sundial.shared.clock import format_rfc3339
from sundial.shared.schedules import next_runs, parse_schedule

NEW_YEAR = "2026-01-01T00:00:00Z"

DOCUMENTED = [
    # "Run at 10:00 am (UTC+0) every day"
    (
        "cron(0 10 * * ? *)",
        NEW_YEAR,
        ["2026-01-01T10:00:00Z", "2026-01-02T10:00:00Z", "2026-01-03T10:00:00Z"],
    ),
    # "Run at 12:15 pm (UTC+0) every day"
    (
        "cron(15 12 * * ? *)",
        NEW_YEAR,
        ["2026-01-01T12:15:00Z", "2026-01-02T12:15:00Z", "2026-01-03T12:15:00Z"],
    ),
    # "Run at 6:00 pm (UTC+0) every Monday through Friday"
    (
        "cron(0 18 ? * MON-FRI *)",
        NEW_YEAR,
        ["2026-01-01T18:00:00Z", "2026-01-02T18:00:00Z", "2026-01-05T18:00:00Z"],
    ),
    # "Run at 8:00 am (UTC+0) every first day of the month"
    ("cron(0 8 1 * ? *)", NEW_YEAR, ["2026-01-01T08:00:00Z", "2026-02-01T08:00:00Z", "2026-03-01T08:00:00Z"]),
    # "Run every 15 minutes"
    (
        "cron(0/15 * * * ? *)",
        NEW_YEAR,
        ["2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z"],
    ),
    # "Run every 10 minutes Monday through Friday" (from Saturday noon: Monday's first)
    (
        "cron(0/10 * ? * MON-FRI *)",
        "2026-01-03T12:00:00Z",
        ["2026-01-05T00:00:00Z", "2026-01-05T00:10:00Z", "2026-01-05T00:20:00Z"],
    ),
    # "Run every 5 minutes Monday through Friday between 8:00 am and 5:55 pm (UTC+0)"
    (
        "cron(0/5 8-17 ? * MON-FRI *)",
        "2026-01-02T17:52:00Z",
        ["2026-01-02T17:55:00Z", "2026-01-05T08:00:00Z", "2026-01-05T08:05:00Z"],
    ),
    # "Run at 9:00 am (UTC+0) on the first Monday of each month"
    (
        "cron(0 9 ? * 2#1 *)",
        NEW_YEAR,
        ["2026-01-05T09:00:00Z", "2026-02-02T09:00:00Z", "2026-03-02T09:00:00Z"],
    ),
    # The wildcards as AWS describes them. "3#2 would be the second Tuesday of the month"
    (
        "cron(0 9 ? * 3#2 *)",
        NEW_YEAR,
        ["2026-01-13T09:00:00Z", "2026-02-10T09:00:00Z", "2026-03-10T09:00:00Z"],
    ),
    # "1/10 ... every tenth minute, starting from the first minute of the hour"
    (
        "cron(1/10 * * * ? *)",
        NEW_YEAR,
        ["2026-01-01T00:01:00Z", "2026-01-01T00:11:00Z", "2026-01-01T00:21:00Z"],
    ),
    # "3W specifies the weekday closest to the third day of the month" (3 January 2026 is a Saturday)
    (
        "cron(0 9 3W * ? *)",
        NEW_YEAR,
        ["2026-01-02T09:00:00Z", "2026-02-03T09:00:00Z", "2026-03-03T09:00:00Z"],
    ),
    # "JAN,FEB,MAR includes January, February, and March"
    (
        "cron(0 0 1 JAN,FEB,MAR ? *)",
        NEW_YEAR,
        ["2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2027-01-01T00:00:00Z"],
    ),
    # "1-15 includes days 1 through 15 of the specified month"
    (
        "cron(0 0 1-15 2 ? *)",
        NEW_YEAR,
        ["2026-02-01T00:00:00Z", "2026-02-02T00:00:00Z", "2026-02-03T00:00:00Z"],
    ),
    # "L ... specifies the last day of the month or week" (of the week: Saturday)
    ("cron(0 0 L * ? *)", NEW_YEAR, ["2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z"]),
    ("cron(0 0 ? * L *)", NEW_YEAR, ["2026-01-03T00:00:00Z", "2026-01-10T00:00:00Z", "2026-01-17T00:00:00Z"]),
]


EVERYDAY = [
    ("cron(0 9 ? * WED *)", ["2026-01-07T09:00:00Z", "2026-01-14T09:00:00Z", "2026-01-21T09:00:00Z"]),
    ("0 9 * * WED", ["2026-01-07T09:00:00Z", "2026-01-14T09:00:00Z", "2026-01-21T09:00:00Z"]),
    ("cron(0 9 ? * MON-WED *)", ["2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z", "2026-01-07T09:00:00Z"]),
    ("0 9 * * MON-WED", ["2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z", "2026-01-07T09:00:00Z"]),
    ("cron(0 9 ? * TUE,WED *)", ["2026-01-06T09:00:00Z", "2026-01-07T09:00:00Z", "2026-01-13T09:00:00Z"]),
    ("0 9 * * TUE,WED", ["2026-01-06T09:00:00Z", "2026-01-07T09:00:00Z", "2026-01-13T09:00:00Z"]),
    # */3 in the day of the week: 1, 4, 7 in EventBridge and 0, 3, 6 in crontab, both SUN, WED, SAT.
    ("cron(0 9 ? * */3 *)", ["2026-01-03T09:00:00Z", "2026-01-04T09:00:00Z", "2026-01-07T09:00:00Z"]),
    ("0 9 * * */3", ["2026-01-03T09:00:00Z", "2026-01-04T09:00:00Z", "2026-01-07T09:00:00Z"]),
    # */3 in the day of the month: the 1st, 4th, 7th ... 31st.
    ("cron(0 9 */3 * ? *)", ["2026-01-01T09:00:00Z", "2026-01-04T09:00:00Z", "2026-01-07T09:00:00Z"]),
    ("0 9 */3 * *", ["2026-01-01T09:00:00Z", "2026-01-04T09:00:00Z", "2026-01-07T09:00:00Z"]),
    # crontab(5) with */3 in one day field and a restriction in the other: days that match both.
    ("0 9 */3 * MON", ["2026-01-19T09:00:00Z", "2026-02-16T09:00:00Z", "2026-03-16T09:00:00Z"]),
    ("0 9 1-10 * */3", ["2026-01-03T09:00:00Z", "2026-01-04T09:00:00Z", "2026-01-07T09:00:00Z"]),
]


def runs(expression: str, after: str) -> list[str]:
    instant = round(datetime.fromisoformat(after).timestamp() * 1000)
    return [format_rfc3339(run) for run in next_runs(parse_schedule(expression), instant, 3)]


@pytest.mark.parametrize(("expression", "after", "expected"), DOCUMENTED)
def test_documented_examples(expression: str, after: str, expected: list[str]) -> None:
    assert runs(expression, after) == expected


@pytest.mark.parametrize(("expression", "expected"), EVERYDAY)
def test_everyday_schedules(expression: str, expected: list[str]) -> None:
    assert runs(expression, NEW_YEAR) == expected
