"""The cron grammar at its edges: names against wildcard letters, the two day fields, LW and wraps.

Expected UTC instants are written out; 1 January 2026 is a Thursday.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from sundial.shared.clock import format_rfc3339
from sundial.shared.errors import InvalidInput
from sundial.shared.schedules import next_runs, parse_schedule

AFTER = "2026-01-01T00:00:00Z"


def runs(expression: str, after: str = AFTER, count: int = 4) -> list[str]:
    instant = round(datetime.fromisoformat(after).timestamp() * 1000)
    return [format_rfc3339(run) for run in next_runs(parse_schedule(expression), instant, count)]


def refusal(expression: str) -> str:
    with pytest.raises(InvalidInput) as raised:
        parse_schedule(expression)
    assert raised.value.field == "schedule"
    return raised.value.message


WEDNESDAYS = ["2026-01-07T09:00:00Z", "2026-01-14T09:00:00Z", "2026-01-21T09:00:00Z", "2026-01-28T09:00:00Z"]
MONDAY_TO_WEDNESDAY = [
    "2026-01-05T09:00:00Z",
    "2026-01-06T09:00:00Z",
    "2026-01-07T09:00:00Z",
    "2026-01-12T09:00:00Z",
]
TUESDAY_AND_WEDNESDAY = [
    "2026-01-06T09:00:00Z",
    "2026-01-07T09:00:00Z",
    "2026-01-13T09:00:00Z",
    "2026-01-14T09:00:00Z",
]
JULY_FIRSTS = ["2026-07-01T09:00:00Z", "2027-07-01T09:00:00Z", "2028-07-01T09:00:00Z", "2029-07-01T09:00:00Z"]

# A W or an L inside a name (WED, JUL) is part of the name, in any case and in any field.
NAMES = [
    ("cron(0 9 ? * WED *)", WEDNESDAYS),
    ("cron(0 9 ? * wed *)", WEDNESDAYS),
    ("cron(0 9 ? * Wed *)", WEDNESDAYS),
    ("cron(0 9 ? * MON-WED *)", MONDAY_TO_WEDNESDAY),
    ("cron(0 9 ? * mon-Wed *)", MONDAY_TO_WEDNESDAY),
    ("cron(0 9 ? * TUE,WED *)", TUESDAY_AND_WEDNESDAY),
    ("cron(0 9 ? * WED,tue *)", TUESDAY_AND_WEDNESDAY),
    ("cron(0 9 ? * 2-WED *)", MONDAY_TO_WEDNESDAY),
    # The last Wednesday, and the second Wednesday, of each month.
    (
        "cron(0 9 ? * WEDL *)",
        ["2026-01-28T09:00:00Z", "2026-02-25T09:00:00Z", "2026-03-25T09:00:00Z", "2026-04-29T09:00:00Z"],
    ),
    (
        "cron(0 9 ? * wedl *)",
        ["2026-01-28T09:00:00Z", "2026-02-25T09:00:00Z", "2026-03-25T09:00:00Z", "2026-04-29T09:00:00Z"],
    ),
    (
        "cron(0 9 ? * WED#2 *)",
        ["2026-01-14T09:00:00Z", "2026-02-11T09:00:00Z", "2026-03-11T09:00:00Z", "2026-04-08T09:00:00Z"],
    ),
    ("cron(0 9 1 JUL ? *)", JULY_FIRSTS),
    ("cron(0 9 1 jul ? *)", JULY_FIRSTS),
    (
        "cron(0 9 1 jul-aug ? *)",
        ["2026-07-01T09:00:00Z", "2026-08-01T09:00:00Z", "2027-07-01T09:00:00Z", "2027-08-01T09:00:00Z"],
    ),
    ("0 9 * * WED", WEDNESDAYS),
    ("0 9 * * wed", WEDNESDAYS),
    ("0 9 * * MON-wed", MONDAY_TO_WEDNESDAY),
    ("0 9 * * tue,WED", TUESDAY_AND_WEDNESDAY),
    ("0 9 1 Jul *", JULY_FIRSTS),
]


@pytest.mark.parametrize(("expression", "expected"), NAMES)
def test_names_are_names(expression: str, expected: list[str]) -> None:
    assert runs(expression) == expected


# crontab(5): the day fields are ORed only when both are restricted; a field that starts with "*"
# (as "*/3" does) is unrestricted, and then a day must match both.
CRONTAB_DAYS = [
    # The 11th-13th that fall on a Sunday, Wednesday or Saturday.
    (
        "0 6 11-13 * */3",
        ["2026-01-11T06:00:00Z", "2026-02-11T06:00:00Z", "2026-03-11T06:00:00Z", "2026-04-11T06:00:00Z"],
    ),
    # Odd days that are Mondays.
    (
        "0 6 */2 * MON",
        ["2026-01-05T06:00:00Z", "2026-01-19T06:00:00Z", "2026-02-09T06:00:00Z", "2026-02-23T06:00:00Z"],
    ),
    # The first Sunday of each month: days 1-7 that are Sundays (*/7 is 0 and 7, both Sunday).
    (
        "0 6 1-7 * */7",
        ["2026-01-04T06:00:00Z", "2026-02-01T06:00:00Z", "2026-03-01T06:00:00Z", "2026-04-05T06:00:00Z"],
    ),
    # Both restricted: the 1st and the 15th, plus every Friday.
    (
        "0 6 1,15 * 5",
        ["2026-01-01T06:00:00Z", "2026-01-02T06:00:00Z", "2026-01-09T06:00:00Z", "2026-01-15T06:00:00Z"],
    ),
    # A "*" later in a list leaves the field restricted, as in cron's parser: the 13th, Fridays, Sundays.
    (
        "0 6 13 * 5,*/7",
        ["2026-01-02T06:00:00Z", "2026-01-04T06:00:00Z", "2026-01-09T06:00:00Z", "2026-01-11T06:00:00Z"],
    ),
    # One field "*": only the other counts.
    (
        "0 6 * * */3",
        ["2026-01-03T06:00:00Z", "2026-01-04T06:00:00Z", "2026-01-07T06:00:00Z", "2026-01-10T06:00:00Z"],
    ),
    (
        "0 6 */3 * *",
        ["2026-01-01T06:00:00Z", "2026-01-04T06:00:00Z", "2026-01-07T06:00:00Z", "2026-01-10T06:00:00Z"],
    ),
]


@pytest.mark.parametrize(("expression", "expected"), CRONTAB_DAYS)
def test_crontab_day_fields(expression: str, expected: list[str]) -> None:
    assert runs(expression) == expected


def test_crontab_day_fields_from_the_issue() -> None:
    # Odd days that are Thursdays or Saturdays: after Sunday 4 January, Thursday the 15th is next.
    assert runs("12-48 * */2 * 4/2", "2026-01-04T00:00:00Z") == [
        "2026-01-15T00:12:00Z",
        "2026-01-15T00:13:00Z",
        "2026-01-15T00:14:00Z",
        "2026-01-15T00:15:00Z",
    ]


CALENDAR_DAYS = [
    # LW: the last weekday (31 January and 28 February 2026 are Saturdays).
    (
        "cron(0 9 LW * ? *)",
        ["2026-01-30T09:00:00Z", "2026-02-27T09:00:00Z", "2026-03-31T09:00:00Z", "2026-04-30T09:00:00Z"],
    ),
    (
        "cron(0 9 lw * ? *)",
        ["2026-01-30T09:00:00Z", "2026-02-27T09:00:00Z", "2026-03-31T09:00:00Z", "2026-04-30T09:00:00Z"],
    ),
    # 31W runs only in months with a 31st: 31 May 2026 is a Sunday and the month's last day, so Friday.
    (
        "cron(0 9 31W * ? *)",
        ["2026-01-30T09:00:00Z", "2026-03-31T09:00:00Z", "2026-05-29T09:00:00Z", "2026-07-31T09:00:00Z"],
    ),
    # 29 February 2032 is a Sunday and the month's last day: Friday the 27th.
    (
        "cron(0 9 29W 2 ? *)",
        ["2028-02-29T09:00:00Z", "2032-02-27T09:00:00Z", "2036-02-29T09:00:00Z", "2040-02-29T09:00:00Z"],
    ),
    # Years a century apart: the search for the weekday nearest the 31st goes on to the next one.
    ("cron(0 9 31W 1 ? */102)", ["2072-01-29T09:00:00Z", "2174-01-31T09:00:00Z"]),
    # A fifth Monday in February comes back after 28 years, or 40 across 2100 (not a leap year).
    (
        "cron(0 0 ? 2 2#5 *)",
        ["2044-02-29T00:00:00Z", "2072-02-29T00:00:00Z", "2112-02-29T00:00:00Z", "2140-02-29T00:00:00Z"],
    ),
]


@pytest.mark.parametrize(("expression", "expected"), CALENDAR_DAYS)
def test_calendar_dependent_days(expression: str, expected: list[str]) -> None:
    assert runs(expression) == expected


# EventBridge reads a range whose end comes first as wrapping past the end of its field.
WRAPS = [
    (
        "cron(0 9 ? * SAT-SUN *)",
        ["2026-01-03T09:00:00Z", "2026-01-04T09:00:00Z", "2026-01-10T09:00:00Z", "2026-01-11T09:00:00Z"],
    ),
    (
        "cron(0 9 ? * 7-1 *)",
        ["2026-01-03T09:00:00Z", "2026-01-04T09:00:00Z", "2026-01-10T09:00:00Z", "2026-01-11T09:00:00Z"],
    ),
    (
        "cron(0 9 ? * fri-mon *)",
        ["2026-01-02T09:00:00Z", "2026-01-03T09:00:00Z", "2026-01-04T09:00:00Z", "2026-01-05T09:00:00Z"],
    ),
    (
        "cron(0 22-2 * * ? *)",
        ["2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T22:00:00Z", "2026-01-01T23:00:00Z"],
    ),
    (
        "cron(0 0 28-3 * ? *)",
        ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-28T00:00:00Z", "2026-01-29T00:00:00Z"],
    ),
    (
        "cron(0 0 1 NOV-FEB ? *)",
        ["2026-02-01T00:00:00Z", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"],
    ),
    (
        "cron(58-1 0 1 1 ? *)",
        ["2026-01-01T00:01:00Z", "2026-01-01T00:58:00Z", "2026-01-01T00:59:00Z", "2027-01-01T00:00:00Z"],
    ),
]


@pytest.mark.parametrize(("expression", "expected"), WRAPS)
def test_eventbridge_ranges_wrap(expression: str, expected: list[str]) -> None:
    assert runs(expression) == expected


REFUSED = [
    # crontab(5) has no wrapping ranges: the message spells out the list to write instead.
    (
        "0 9 * * SAT-SUN",
        "day-of-week range 'SAT-SUN' goes backwards; write it as SAT,SUN",
    ),
    (
        "0 9 * * fri-mon",
        "day-of-week range 'fri-mon' goes backwards; write it as fri-sat,sun-mon",
    ),
    ("0 9 * * 5-0", "day-of-week range '5-0' goes backwards; write it as 5-6,0"),
    ("0 9 * * 7-Mon", "day-of-week range '7-Mon' goes backwards; write it as 0-Mon"),
    ("0 22-2 * * *", "hour range '22-2' goes backwards; write it as 22-23,0-2"),
    (
        "0 0 1 Nov-Feb *",
        "month range 'Nov-Feb' goes backwards; write it as Nov-Dec,Jan-Feb",
    ),
    (
        "0 22-2/2 * * *",
        "hour range '22-2/2' goes backwards; write it as a list of two ranges, each with its own step",
    ),
    # Where a step lands after a wrap is not documented by AWS: refused rather than guessed.
    (
        "cron(0 22-2/2 * * ? *)",
        "hour range '22-2/2' wraps past the end of the field with a step; "
        "write it as a list of two ranges, each with its own step",
    ),
    (
        "cron(0 0 1 1 ? 2030-2027)",
        "year range '2030-2027' goes backwards; write the smaller year first, as in 2027-2030",
    ),
    # Only the EventBridge form has LW, L and #.
    (
        "0 9 LW * *",
        "day-of-month 'LW': ?, L, W and # need the EventBridge form cron(m h dom mon dow year)",
    ),
    (
        "0 9 * * fril",
        "day-of-week 'fril': ?, L, W and # need the EventBridge form cron(m h dom mon dow year)",
    ),
    (
        "cron(0 9 LW,15 * ? *)",
        "day-of-month 'LW,15': L, LW and W must stand alone, as in L, LW or 15W",
    ),
    (
        "cron(0 9 ? * WED#2,FRI *)",
        "day-of-week 'WED#2,FRI': L and # must stand alone, as in 6L or 2#1",
    ),
    ("cron(0 9 ? * WEDS *)", "day-of-week must be 1-7 or SUN-SAT"),
    ("cron(0 9 30W 2 ? *)", "never fires"),
    ("cron(0 9 29W 2 ? 2025-2027)", "never fires"),
]


@pytest.mark.parametrize(("expression", "message"), REFUSED)
def test_refused_with_what_to_write_instead(expression: str, message: str) -> None:
    assert refusal(expression).endswith(message)
