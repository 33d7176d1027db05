"""Bad input: one InvalidInput whose message names what is wrong and whose field names where."""

from __future__ import annotations

import pytest

from sundial.shared.errors import InvalidInput
from sundial.shared.schedules import Schedule, parse_instant, parse_schedule, parse_timezone

SCHEDULE_ERRORS = [
    ("61 * * * *", "cron expression '61 * * * *': minute must be 0-59"),
    ("* 24 * * *", "cron expression '* 24 * * *': hour must be 0-23"),
    ("* * 0 * *", "cron expression '* * 0 * *': day-of-month must be 1-31"),
    ("* * * 13 *", "cron expression '* * * 13 *': month must be 1-12 or JAN-DEC"),
    ("* * * JANUARY *", "cron expression '* * * JANUARY *': month must be 1-12 or JAN-DEC"),
    ("* * * * 8", "cron expression '* * * * 8': day-of-week must be 0-7 or SUN-SAT"),
    ("* * * * FUNDAY", "cron expression '* * * * FUNDAY': day-of-week must be 0-7 or SUN-SAT"),
    ("*/0 * * * *", "cron expression '*/0 * * * *': minute step must be at least 1"),
    (
        "50-10 * * * *",
        "cron expression '50-10 * * * *': minute range '50-10' goes backwards; write it as 50-59,0-10",
    ),
    ("1,,2 * * * *", "cron expression '1,,2 * * * *': minute '' is not a number, name, range, step or list"),
    ("*-5 * * * *", "cron expression '*-5 * * * *': minute '*-5' is not a number, name, range, step or list"),
    ("0 0 30 2 *", "cron expression '0 0 30 2 *' never fires"),
    ("0 0 31 4,6,9,11 *", "cron expression '0 0 31 4,6,9,11 *' never fires"),
    (
        "* * *",
        "cron expression '* * *': expected 5 fields (minute hour day-of-month month day-of-week), got 3; "
        "the other forms are cron(m h dom mon dow year), rate(N unit) and at(YYYY-MM-DDThh:mm:ss)",
    ),
    (
        "0 9 * * ? *",
        "cron expression '0 9 * * ? *': "
        "expected 5 fields (minute hour day-of-month month day-of-week), got 6; "
        "the other forms are cron(m h dom mon dow year), rate(N unit) and at(YYYY-MM-DDThh:mm:ss)",
    ),
    (
        "0 0 L * *",
        "cron expression '0 0 L * *': day-of-month 'L': ?, L, W and # need the EventBridge form "
        "cron(m h dom mon dow year)",
    ),
    (
        "0 0 * * 5#2",
        "cron expression '0 0 * * 5#2': day-of-week '5#2': ?, L, W and # need the EventBridge form "
        "cron(m h dom mon dow year)",
    ),
    (
        "@reboot",
        "cron expression '@reboot': @reboot is not supported; "
        "use one of @hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually",
    ),
    ("cron(0 0 30 2 ? *)", "cron expression 'cron(0 0 30 2 ? *)' never fires"),
    ("cron(0 0 29 2 ? 2027)", "cron expression 'cron(0 0 29 2 ? 2027)' never fires"),
    ("cron(61 * * * ? *)", "cron expression 'cron(61 * * * ? *)': minute must be 0-59"),
    (
        "cron(0 9 * * *)",
        "cron expression 'cron(0 9 * * *)': expected 6 fields "
        "(minute hour day-of-month month day-of-week year), got 5",
    ),
    (
        "cron(0 9 * * * *)",
        "cron expression 'cron(0 9 * * * *)': one of day-of-month and day-of-week must be '?'",
    ),
    (
        "cron(0 9 1 * MON *)",
        "cron expression 'cron(0 9 1 * MON *)': one of day-of-month and day-of-week must be '?'",
    ),
    (
        "cron(0 9 ? * ? *)",
        "cron expression 'cron(0 9 ? * ? *)': only one of day-of-month and day-of-week can be '?'",
    ),
    ("cron(0 9 ? * 1,? *)", "cron expression 'cron(0 9 ? * 1,? *)': day-of-week '?' must stand alone"),
    ("cron(0 9 ? * 0 *)", "cron expression 'cron(0 9 ? * 0 *)': day-of-week must be 1-7 or SUN-SAT"),
    ("cron(0 9 ? * 8L *)", "cron expression 'cron(0 9 ? * 8L *)': day-of-week must be 1-7 or SUN-SAT"),
    ("cron(0 9 ? * 2#6 *)", "cron expression 'cron(0 9 ? * 2#6 *)': day-of-week '#' must be followed by 1-5"),
    (
        "cron(0 9 ? * 2#1,3 *)",
        "cron expression 'cron(0 9 ? * 2#1,3 *)': day-of-week '2#1,3': "
        "L and # must stand alone, as in 6L or 2#1",
    ),
    (
        "cron(0 9 L,15 * ? *)",
        "cron expression 'cron(0 9 L,15 * ? *)': day-of-month 'L,15': "
        "L, LW and W must stand alone, as in L, LW or 15W",
    ),
    ("cron(0 9 32W * ? *)", "cron expression 'cron(0 9 32W * ? *)': day-of-month must be 1-31"),
    ("cron(0 9 ? * * 1969)", "cron expression 'cron(0 9 ? * * 1969)': year must be 1970-2199"),
    ("rate(0 minutes)", "rate must be at least 1 second"),
    ("rate(0 seconds)", "rate must be at least 1 second"),
    ("rate(3651 days)", "rate must be at most 3650 days"),
    (
        "rate(5 fortnights)",
        "rate expression 'rate(5 fortnights)': "
        "unit 'fortnights' must be second(s), minute(s), hour(s) or day(s)",
    ),
    ("rate(-1 minutes)", "rate expression 'rate(-1 minutes)': '-1' is not a whole number"),
    ("rate(1.5 hours)", "rate expression 'rate(1.5 hours)': '1.5' is not a whole number"),
    (
        "rate(5minutes)",
        "rate expression 'rate(5minutes)': "
        "expected rate(N unit) with unit second(s), minute(s), hour(s) or day(s)",
    ),
    ("at(2026-02-30T09:00:00)", "at expression 'at(2026-02-30T09:00:00)': no such date or time"),
    ("at(2026-02-01T24:00:00)", "at expression 'at(2026-02-01T24:00:00)': no such date or time"),
    ("at(2026-02-01 09:00)", "at expression 'at(2026-02-01 09:00)': expected at(YYYY-MM-DDThh:mm:ss)"),
    (
        "at(2026-02-01T09:00:00Z)",
        "at expression 'at(2026-02-01T09:00:00Z)': expected at(YYYY-MM-DDThh:mm:ss)",
    ),
    ("", "schedule must not be empty"),
    ("   ", "schedule must not be empty"),
    ("x" * 300, "schedule must be at most 256 characters"),
]


@pytest.mark.parametrize(("expression", "message"), SCHEDULE_ERRORS)
def test_schedule_errors(expression: str, message: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_schedule(expression, "UTC")
    assert (raised.value.field, raised.value.message) == ("schedule", message)
    assert str(raised.value) == message


def test_constructing_a_schedule_directly_validates_too() -> None:
    with pytest.raises(InvalidInput, match="minute must be 0-59"):
        Schedule("61 * * * *", "UTC")


def test_a_long_expression_is_shortened_in_the_message() -> None:
    expression = "0 " + "1," * 100 + "61 * * *"
    with pytest.raises(InvalidInput) as raised:
        parse_schedule(expression)
    assert raised.value.message.startswith("cron expression '0 1,1,")
    assert "...': hour must be 0-23" in raised.value.message
    assert len(raised.value.message) < 150


TIMEZONE_ERRORS = [
    ("Mars/Olympus", "unknown time zone 'Mars/Olympus'"),
    ("", "unknown time zone ''"),
    ("America", "unknown time zone 'America'"),
    ("../etc/passwd", "unknown time zone '../etc/passwd'"),
    ("/etc/localtime", "unknown time zone '/etc/localtime'"),
    ("localtime", "unknown time zone 'localtime'"),
    ("Europe/London ", "unknown time zone 'Europe/London ' (did you mean 'Europe/London'?)"),
    ("europe/london", "unknown time zone 'europe/london' (did you mean 'Europe/London'?)"),
    ("utc", "unknown time zone 'utc' (did you mean 'UTC'?)"),
]


@pytest.mark.parametrize(("name", "message"), TIMEZONE_ERRORS)
def test_timezone_errors(name: str, message: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_timezone(name)
    assert (raised.value.field, raised.value.message) == ("timezone", message)
    with pytest.raises(InvalidInput) as raised:
        parse_schedule("@daily", name)
    assert raised.value.field == "timezone"


def test_timezone_is_checked_before_the_expression() -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_schedule("61 * * * *", "Mars/Olympus")
    assert raised.value.field == "timezone"


@pytest.mark.parametrize("name", ["UTC", "Europe/London", "America/Argentina/Buenos_Aires", "Etc/GMT+5"])
def test_known_timezones(name: str) -> None:
    assert parse_timezone(name).key == name


INSTANTS = [
    ("2026-12-01T09:00:00Z", 1_796_115_600_000),
    ("2026-12-01T10:00:00+01:00", 1_796_115_600_000),
    ("2026-12-01T09:00:00.250Z", 1_796_115_600_250),
    ("1969-12-31T23:59:59.999Z", -1),
]


@pytest.mark.parametrize(("text", "expected"), INSTANTS)
def test_parse_instant(text: str, expected: int) -> None:
    assert parse_instant(text) == expected


@pytest.mark.parametrize("text", ["2026-12-01T09:00:00", "tomorrow", "2026-13-01T00:00:00Z", ""])
def test_parse_instant_errors(text: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_instant(text, field="start_at")
    assert raised.value.field == "start_at"
    assert raised.value.message == (
        f"start_at '{text}' is not an RFC 3339 timestamp with an offset, such as 2026-12-01T09:00:00Z"
    )
