"""The DST rule of docs/schedules.md, zone by zone, with the expected UTC instants written out.

2026 transitions (UTC):
- America/New_York: 8 Mar 07:00 (02:00 EST -> 03:00 EDT); 1 Nov 06:00 (02:00 EDT -> 01:00 EST).
- Europe/London: 29 Mar 01:00 (01:00 GMT -> 02:00 BST); 25 Oct 01:00 (02:00 BST -> 01:00 GMT).
- Australia/Sydney: 4 Apr 16:00 (03:00 AEDT -> 02:00 AEST); 3 Oct 16:00 (02:00 AEST -> 03:00 AEDT).
- Australia/Lord_Howe, a 30-minute shift: 4 Apr 15:00 (02:00 +11 -> 01:30 +10:30);
  3 Oct 15:30 (02:00 +10:30 -> 02:30 +11).
- America/Havana, at midnight: 8 Mar 05:00 (00:00 CST -> 01:00 CDT); 1 Nov 05:00 (01:00 CDT -> 00:00 CST).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from sundial.shared.clock import format_rfc3339
from sundial.shared.schedules import next_runs, parse_schedule


def ms(text: str) -> int:
    return round(datetime.fromisoformat(text).timestamp() * 1000)


def runs(expression: str, timezone: str, after: str, count: int) -> list[str]:
    schedule = parse_schedule(expression, timezone)
    return [format_rfc3339(instant) for instant in next_runs(schedule, ms(after), count)]


NEW_YORK = [
    # Spring forward: 02:30 does not exist on 8 March; it runs at 03:00 EDT, the end of the gap.
    (
        "30 2 * * *",
        "2026-03-07T12:00:00Z",
        ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"],
    ),
    # Four times in one gap run once.
    (
        "0,15,30,45 2 * * *",
        "2026-03-08T00:00:00Z",
        ["2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T06:15:00Z"],
    ),
    # Hourly: 01:30 EST, then 02:30 (in the gap) at 03:00 EDT, then 03:30 EDT.
    (
        "30 * * * *",
        "2026-03-08T05:00:00Z",
        ["2026-03-08T05:30:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"],
    ),
    (
        "0 9 * * *",
        "2026-03-07T00:00:00Z",
        ["2026-03-07T14:00:00Z", "2026-03-08T13:00:00Z", "2026-03-09T13:00:00Z"],
    ),
    # Fall back: 01:30 happens twice on 1 November; a fixed hour runs once, at 01:30 EDT.
    (
        "30 1 * * *",
        "2026-10-31T12:00:00Z",
        ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", "2026-11-03T06:30:00Z"],
    ),
    (
        "cron(30 1 * * ? *)",
        "2026-10-31T12:00:00Z",
        ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", "2026-11-03T06:30:00Z"],
    ),
    (
        "*/20 1 * * *",
        "2026-11-01T04:00:00Z",
        ["2026-11-01T05:00:00Z", "2026-11-01T05:20:00Z", "2026-11-01T05:40:00Z", "2026-11-02T06:00:00Z"],
    ),
    # An hour field of "*" runs at both: 01:30 EDT and 01:30 EST.
    (
        "30 * * * *",
        "2026-11-01T04:00:00Z",
        ["2026-11-01T04:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"],
    ),
    (
        "cron(0/30 * * * ? *)",
        "2026-11-01T05:10:00Z",
        ["2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z"],
    ),
    (
        "@hourly",
        "2026-11-01T04:30:00Z",
        ["2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"],
    ),
    # Asked from inside the repeated hour's second pass: the first pass is over, the rest follows.
    ("30 * * * *", "2026-11-01T06:00:00Z", ["2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"]),
    ("30 1 * * *", "2026-11-01T06:00:00Z", ["2026-11-02T06:30:00Z"]),
    (
        "0 9 * * *",
        "2026-10-31T00:00:00Z",
        ["2026-10-31T13:00:00Z", "2026-11-01T14:00:00Z", "2026-11-02T14:00:00Z"],
    ),
    ("at(2026-03-08T02:30:00)", "2026-01-01T00:00:00Z", ["2026-03-08T07:00:00Z"]),
    ("at(2026-11-01T01:30:00)", "2026-01-01T00:00:00Z", ["2026-11-01T05:30:00Z"]),
    # rate() counts elapsed time and ignores the clocks.
    (
        "rate(1 hour)",
        "2026-11-01T04:00:00Z",
        ["2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"],
    ),
]

LONDON = [
    ("30 1 * * *", "2026-03-28T12:00:00Z", ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]),
    # The gap's 01:00 and the real 02:00 BST are the same instant: one run.
    (
        "0 * * * *",
        "2026-03-28T23:30:00Z",
        ["2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"],
    ),
    ("30 1 * * *", "2026-10-24T12:00:00Z", ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]),
    (
        "0 * * * *",
        "2026-10-24T23:30:00Z",
        ["2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z"],
    ),
    ("cron(15 1 ? * SUN *)", "2026-10-20T00:00:00Z", ["2026-10-25T00:15:00Z", "2026-11-01T01:15:00Z"]),
    ("cron(15 1 ? * SUN *)", "2026-03-25T00:00:00Z", ["2026-03-29T01:00:00Z", "2026-04-05T00:15:00Z"]),
]

# Ireland's summer time is its standard time and winter a negative DST; offsets decide, not labels.
DUBLIN = [
    ("30 1 * * *", "2026-03-28T12:00:00Z", ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]),
    ("30 1 * * *", "2026-10-24T12:00:00Z", ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]),
    (
        "30 * * * *",
        "2026-10-24T23:00:00Z",
        ["2026-10-24T23:30:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"],
    ),
]

SYDNEY = [
    (
        "30 2 * * *",
        "2026-10-02T12:00:00Z",
        ["2026-10-02T16:30:00Z", "2026-10-03T16:00:00Z", "2026-10-04T15:30:00Z"],
    ),
    (
        "30 2 * * *",
        "2026-04-03T12:00:00Z",
        ["2026-04-03T15:30:00Z", "2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"],
    ),
    (
        "*/30 * * * *",
        "2026-04-04T14:50:00Z",
        [
            "2026-04-04T15:00:00Z",
            "2026-04-04T15:30:00Z",
            "2026-04-04T16:00:00Z",
            "2026-04-04T16:30:00Z",
            "2026-04-04T17:00:00Z",
        ],
    ),
    (
        "0 9 * * *",
        "2026-04-03T00:00:00Z",
        ["2026-04-03T22:00:00Z", "2026-04-04T23:00:00Z", "2026-04-05T23:00:00Z"],
    ),
]

LORD_HOWE = [
    # The gap is 02:00-02:30 on 4 October.
    (
        "0 2 * * *",
        "2026-10-02T12:00:00Z",
        ["2026-10-02T15:30:00Z", "2026-10-03T15:30:00Z", "2026-10-04T15:00:00Z"],
    ),
    (
        "15 2 * * *",
        "2026-10-02T12:00:00Z",
        ["2026-10-02T15:45:00Z", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"],
    ),
    (
        "0,15 2 * * *",
        "2026-10-03T12:00:00Z",
        ["2026-10-03T15:30:00Z", "2026-10-04T15:00:00Z", "2026-10-04T15:15:00Z"],
    ),
    # 02:30 exists (the gap ends there), so an hourly :30 job sees only a 30-minute step.
    (
        "30 * * * *",
        "2026-10-03T13:00:00Z",
        ["2026-10-03T14:00:00Z", "2026-10-03T15:00:00Z", "2026-10-03T15:30:00Z", "2026-10-03T16:30:00Z"],
    ),
    (
        "0 * * * *",
        "2026-10-03T14:00:00Z",
        ["2026-10-03T14:30:00Z", "2026-10-03T15:30:00Z", "2026-10-03T16:00:00Z"],
    ),
    # 01:30-02:00 repeats on 5 April.
    (
        "45 1 * * *",
        "2026-04-03T12:00:00Z",
        ["2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"],
    ),
    (
        "*/15 * * * *",
        "2026-04-04T14:20:00Z",
        [
            "2026-04-04T14:30:00Z",
            "2026-04-04T14:45:00Z",
            "2026-04-04T15:00:00Z",
            "2026-04-04T15:15:00Z",
            "2026-04-04T15:30:00Z",
            "2026-04-04T15:45:00Z",
        ],
    ),
    ("at(2026-10-04T02:10:00)", "2026-01-01T00:00:00Z", ["2026-10-03T15:30:00Z"]),
]

HAVANA = [
    # Midnight does not exist on 8 March: a daily midnight job runs at 01:00 CDT instead.
    (
        "0 0 * * *",
        "2026-03-06T12:00:00Z",
        ["2026-03-07T05:00:00Z", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"],
    ),
    (
        "30 0 * * *",
        "2026-03-06T12:00:00Z",
        ["2026-03-07T05:30:00Z", "2026-03-08T05:00:00Z", "2026-03-09T04:30:00Z"],
    ),
    # 8 March 2026 is a Sunday: the weekly job still runs that week.
    ("0 0 * * 0", "2026-03-01T12:00:00Z", ["2026-03-08T05:00:00Z", "2026-03-15T04:00:00Z"]),
    ("cron(0 0 ? * 1 *)", "2026-03-01T12:00:00Z", ["2026-03-08T05:00:00Z", "2026-03-15T04:00:00Z"]),
    ("cron(0 0 8 3 ? *)", "2026-01-01T00:00:00Z", ["2026-03-08T05:00:00Z", "2027-03-08T05:00:00Z"]),
    # 00:00-01:00 repeats on 1 November.
    (
        "0 0 * * *",
        "2026-10-30T12:00:00Z",
        ["2026-10-31T04:00:00Z", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"],
    ),
    (
        "30 * * * *",
        "2026-11-01T03:00:00Z",
        ["2026-11-01T03:30:00Z", "2026-11-01T04:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z"],
    ),
    ("at(2026-03-08T00:00:00)", "2026-01-01T00:00:00Z", ["2026-03-08T05:00:00Z"]),
]

CASES = [
    *[("America/New_York", *case) for case in NEW_YORK],
    *[("Europe/London", *case) for case in LONDON],
    *[("Europe/Dublin", *case) for case in DUBLIN],
    *[("Australia/Sydney", *case) for case in SYDNEY],
    *[("Australia/Lord_Howe", *case) for case in LORD_HOWE],
    *[("America/Havana", *case) for case in HAVANA],
]


@pytest.mark.parametrize(("timezone", "expression", "after", "expected"), CASES)
def test_dst_rule(timezone: str, expression: str, after: str, expected: list[str]) -> None:
    assert runs(expression, timezone, after, len(expected)) == expected


def test_a_daily_job_runs_once_every_local_day_through_a_year_of_transitions() -> None:
    # Neither skipped on spring-forward days nor doubled on fall-back days.
    for timezone in ("America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Havana"):
        for expression in ("0 0 * * *", "30 1 * * *", "30 2 * * *"):
            schedule = parse_schedule(expression, timezone)
            instants = next_runs(schedule, ms("2025-12-31T12:00:00Z"), 100)
            instants += next_runs(schedule, instants[-1], 100)
            instants += next_runs(schedule, instants[-1], 100)
            instants += next_runs(schedule, instants[-1], 65)
            zone = ZoneInfo(timezone)
            days = [datetime.fromtimestamp(instant / 1000, zone).date() for instant in instants]
            assert len(set(days)) == len(days) == 365, (timezone, expression)
