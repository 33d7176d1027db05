"""Calendars (sundial/shared/schedules/calendars.py): the rule that passes over excluded occurrences,
checked against a brute-force filter of the schedule's own instants; a rate keeps its grid; dates are
read in the schedule's zone, DST included; the search is bounded; and the holidays are the `holidays`
package's own, compared day by day."""

from __future__ import annotations

import pickle
import time
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import holidays
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.contract.calendar import Calendar
from sundial.contract.vocabulary import MisfirePolicy
from sundial.shared.errors import InvalidInput
from sundial.shared.schedules import following_occurrence, next_runs, parse_schedule
from sundial.shared.schedules.calendars import (
    SEARCH_YEARS,
    CalendarRule,
    calendar_excludes,
    check_calendar,
)
from sundial.shared.schedules.cron import CronRule
from sundial.shared.schedules.rate import RateRule

MINUTE = 60_000
HOUR = 60 * MINUTE
DAY = 24 * HOUR


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def utc(instant_ms: int) -> str:
    return datetime.fromtimestamp(instant_ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def local_day(instant_ms: int, zone: str) -> date:
    return datetime.fromtimestamp(instant_ms / 1000, ZoneInfo(zone)).date()


def brute_next(expression: str, zone: str, calendar: Calendar, after_ms: int, count: int) -> list[int]:
    """The schedule's own instants after `after_ms`, one by one, less those on an excluded local date."""
    rule = parse_schedule(expression, zone).rule
    found: list[int] = []
    instant = rule.next_after(after_ms)
    while instant is not None and len(found) < count:
        if not calendar_excludes(calendar, zone, instant):
            found.append(instant)
        instant = rule.next_after(instant)
    return found


# --- the wrapper ------------------------------------------------------------------------------------


def test_without_a_calendar_the_schedule_is_as_it_always_was() -> None:
    plain = parse_schedule("0 9 * * *", "Europe/Berlin")
    empty = parse_schedule("0 9 * * *", "Europe/Berlin", Calendar())

    assert type(plain.rule) is CronRule
    assert plain is parse_schedule("0 9 * * *", "Europe/Berlin")
    assert type(empty.rule) is CronRule  # a calendar that excludes nothing wraps nothing
    assert not plain.excludes(ms("2026-12-25T08:00:00Z"))
    assert type(parse_schedule("0 9 * * *", "Europe/Berlin", Calendar(holidays="DE")).rule) is CalendarRule


def test_the_goal_christmas_week_in_germany() -> None:
    schedule = parse_schedule("0 9 * * *", "UTC", Calendar(holidays="DE"))

    runs = next_runs(schedule, ms("2026-12-22T00:00:00Z"), 4)

    assert [utc(r) for r in runs] == [
        "2026-12-22T09:00:00Z",
        "2026-12-23T09:00:00Z",
        "2026-12-24T09:00:00Z",
        "2026-12-27T09:00:00Z",
    ]
    assert schedule.excludes(ms("2026-12-25T09:00:00Z"))
    assert schedule.excludes(ms("2026-12-26T09:00:00Z"))


@pytest.mark.parametrize("period_minutes", [1, 7, 60, 90, 24 * 60, 25 * 60, 3 * 24 * 60])
@pytest.mark.parametrize("anchor", ["2026-12-24T21:13:00Z", "2026-12-25T00:00:00Z", "2026-12-20T05:00:00Z"])
def test_a_rate_keeps_its_grid_and_passes_over_excluded_days(period_minutes: int, anchor: str) -> None:
    calendar = Calendar(exclude_dates=(date(2026, 12, 25), date(2026, 12, 26), date(2026, 12, 28)))
    expression = f"rate({period_minutes} minutes)"
    period = period_minutes * MINUTE
    schedule = parse_schedule(expression, "UTC", calendar)
    start = ms(anchor)

    runs = next_runs(schedule, start, 30)
    first = schedule.rule.first_when_active(start)
    following = schedule.rule.first_from(start, ms("2026-12-25T12:00:00Z"))

    assert runs == brute_next(expression, "UTC", calendar, start, 30)
    assert all((run - start) % period == 0 for run in runs)
    assert all(local_day(run, "UTC") not in calendar.exclude_dates for run in runs)
    assert first == runs[0]
    assert following is not None and (following - start) % period == 0
    assert following >= ms("2026-12-25T12:00:00Z") and not schedule.excludes(following)


def test_a_rate_of_a_second_passes_a_holiday_in_one_step() -> None:
    schedule = parse_schedule("rate(1 second)", "Europe/Berlin", Calendar(holidays="DE"))
    before = ms("2026-12-24T22:59:59Z")  # 23:59:59 on Christmas Eve in Berlin

    started = time.perf_counter()
    after = schedule.rule.next_after(before)

    assert time.perf_counter() - started < 0.5
    assert after == ms("2026-12-26T23:00:00Z")  # midnight in Berlin after the Second Day of Christmas


# 2026 DST days: New York springs forward on 8 March and falls back on 1 November; Berlin on 29 March
# and 25 October; Auckland falls back on 5 April.
@pytest.mark.parametrize(
    ("expression", "zone", "excluded", "after"),
    [
        ("30 2 * * *", "America/New_York", [date(2026, 3, 8)], "2026-03-06T00:00:00Z"),
        ("30 1 * * *", "America/New_York", [date(2026, 11, 1)], "2026-10-30T00:00:00Z"),
        ("30 * * * *", "America/New_York", [date(2026, 11, 1)], "2026-10-31T22:00:00Z"),
        ("0 0 * * *", "America/New_York", [date(2026, 3, 8), date(2026, 11, 1)], "2026-03-01T00:00:00Z"),
        ("*/20 2 * * *", "Europe/Berlin", [date(2026, 3, 29)], "2026-03-27T00:00:00Z"),
        ("0 23 * * *", "Europe/Berlin", [date(2026, 10, 25)], "2026-10-22T00:00:00Z"),
        ("cron(0 3 ? * SUN *)", "Pacific/Auckland", [date(2026, 4, 5)], "2026-03-20T00:00:00Z"),
        ("rate(45 minutes)", "America/New_York", [date(2026, 11, 1)], "2026-10-31T20:00:00Z"),
        ("0 12 * * *", "America/Santiago", [date(2026, 4, 5), date(2026, 9, 6)], "2026-04-01T00:00:00Z"),
    ],
)
def test_dates_are_read_in_the_zone_through_its_dst_changes(
    expression: str, zone: str, excluded: list[date], after: str
) -> None:
    calendar = Calendar(exclude_dates=tuple(excluded))
    schedule = parse_schedule(expression, zone, calendar)

    runs = next_runs(schedule, ms(after), 60)

    assert runs == brute_next(expression, zone, calendar, ms(after), 60)
    assert not {local_day(run, zone) for run in runs} & set(excluded)


def test_a_date_excluded_in_the_zone_is_another_date_in_utc() -> None:
    # 01:00 on 25 December in Auckland (UTC+13) is 12:00 on the 24th in UTC.
    calendar = Calendar(exclude_dates=(date(2026, 12, 25),))
    schedule = parse_schedule("0 1 * * *", "Pacific/Auckland", calendar)

    runs = next_runs(schedule, ms("2026-12-23T00:00:00Z"), 3)

    assert [utc(r) for r in runs] == ["2026-12-23T12:00:00Z", "2026-12-25T12:00:00Z", "2026-12-26T12:00:00Z"]
    assert calendar_excludes(calendar, "Pacific/Auckland", ms("2026-12-24T12:00:00Z"))
    assert not calendar_excludes(calendar, "UTC", ms("2026-12-24T12:00:00Z"))
    assert calendar_excludes(calendar, "UTC", ms("2026-12-25T12:00:00Z"))


def test_latest_before_passes_back_over_excluded_days() -> None:
    calendar = Calendar(holidays="DE")
    daily = parse_schedule("0 9 * * *", "UTC", calendar).rule
    rate = parse_schedule("rate(5 hours)", "UTC", calendar).rule
    anchor = ms("2026-12-20T00:00:00Z")

    assert daily.latest_before(anchor, ms("2026-12-27T08:00:00Z")) == ms("2026-12-24T09:00:00Z")
    assert daily.latest_before(anchor, ms("2026-12-20T08:00:00Z")) is None
    # Every 5 hours from the 20th at 00:00: 21:00 on the 26th is out, 02:00 on the 27th is in.
    latest = rate.latest_before(anchor, ms("2026-12-27T03:00:00Z"))
    before_that = rate.latest_before(anchor, ms("2026-12-27T02:00:00Z"))
    assert latest is not None and utc(latest) == "2026-12-27T02:00:00Z"
    assert before_that is not None and utc(before_that) == "2026-12-24T19:00:00Z"


def test_the_misfire_policies_run_only_kept_occurrences() -> None:
    schedule = parse_schedule("0 9 * * *", "UTC", Calendar(holidays="DE"))
    previous = ms("2026-12-23T09:00:00Z")
    now = ms("2026-12-26T12:00:00Z")  # down since the 23rd: the 24th was missed, 25th and 26th excluded
    grace = MINUTE

    run_all = following_occurrence(schedule, previous, now, MisfirePolicy.RUN_ALL, None, None, grace)
    run_once = following_occurrence(schedule, previous, now, MisfirePolicy.RUN_ONCE, None, None, grace)
    skip = following_occurrence(schedule, previous, now, MisfirePolicy.SKIP, None, None, grace)

    assert (run_all, run_once, skip) == (ms("2026-12-24T09:00:00Z"),) * 2 + (ms("2026-12-27T09:00:00Z"),)


def test_a_calendar_that_excludes_every_occurrence_ends_the_search_in_bounded_time() -> None:
    schedule = parse_schedule("0 9 25 12 *", "UTC", Calendar(holidays="DE"))
    rate = parse_schedule("rate(1 day)", "UTC", Calendar(holidays="SE"))

    started = time.perf_counter()
    none_left = schedule.rule.next_after(ms("2026-01-01T00:00:00Z"))
    latest = schedule.rule.latest_before(ms("2000-01-01T00:00:00Z"), ms("2026-12-31T00:00:00Z"))

    assert none_left is None
    assert latest is None
    assert next_runs(schedule, ms("2026-01-01T00:00:00Z"), 5) == []
    assert time.perf_counter() - started < 2
    assert rate.rule.next_after(ms("2026-12-24T12:00:00Z")) == ms("2026-12-24T12:00:00Z") + 3 * DAY


def test_the_search_looks_past_excluded_occurrences_up_to_its_bound() -> None:
    # Every 29 February: excluding 2028's leaves 2032's, four years on.
    leap = parse_schedule("0 9 29 2 *", "UTC", Calendar(exclude_dates=(date(2028, 2, 29),)))
    # A year field that jumps further than the bound after an excluded occurrence ends the schedule.
    sparse = parse_schedule(
        f"cron(0 9 1 1 ? 2027,{2027 + SEARCH_YEARS + 2})", "UTC", Calendar(exclude_dates=(date(2027, 1, 1),))
    )

    assert leap.rule.next_after(ms("2026-01-01T00:00:00Z")) == ms("2032-02-29T09:00:00Z")
    # The occurrence far off is not excluded: the search takes it, whatever the distance.
    assert sparse.rule.next_after(ms("2026-01-01T00:00:00Z")) == ms(
        f"{2027 + SEARCH_YEARS + 2}-01-01T09:00:00Z"
    )


def test_a_schedule_with_a_calendar_pickles_with_it() -> None:
    schedule = parse_schedule("0 9 * * *", "UTC", Calendar(holidays="DE", exclude_dates=(date(2026, 1, 2),)))

    copy = pickle.loads(pickle.dumps(schedule))

    assert copy == schedule
    assert next_runs(copy, ms("2026-01-01T00:00:00Z"), 2) == next_runs(
        schedule, ms("2026-01-01T00:00:00Z"), 2
    )


def test_an_at_schedule_keeps_its_one_occurrence() -> None:
    # The API refuses a calendar on a one-off; a schedule read with one is the one-off as it is.
    schedule = parse_schedule("at(2026-12-25T09:00:00)", "UTC", Calendar(holidays="DE"))

    assert schedule.rule.next_after(0) == ms("2026-12-25T09:00:00Z")


EXPRESSIONS = ["0 9 * * *", "*/30 8-10 * * MON-FRI", "cron(0 12 L * ? *)", "0 6 1,15 * *", "rate(5 hours)"]
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Pacific/Chatham"]


@settings(max_examples=80, deadline=None)
@given(
    expression=st.sampled_from(EXPRESSIONS),
    zone=st.sampled_from(ZONES),
    offsets=st.sets(st.integers(0, 120), max_size=60),
    code=st.sampled_from([None, "DE", "US-NY", "GB-SCT", "IN"]),
    after_minutes=st.integers(0, 60 * 24 * 90),
)
def test_the_rule_is_the_schedule_less_the_excluded_dates(
    expression: str, zone: str, offsets: set[int], code: str | None, after_minutes: int
) -> None:
    start = date(2026, 11, 1)
    calendar = Calendar(exclude_dates=tuple(start + timedelta(days=n) for n in offsets), holidays=code)
    schedule = parse_schedule(expression, zone, calendar)
    after = ms("2026-11-01T00:00:00Z") + after_minutes * MINUTE

    runs = next_runs(schedule, after, 20)

    assert runs == brute_next(expression, zone, calendar, after, 20)
    if isinstance(parse_schedule(expression, zone).rule, RateRule):
        assert all((run - after) % (5 * HOUR) == 0 for run in runs)
    if runs:
        assert schedule.rule.first_from(after, runs[0]) == runs[0]
        assert schedule.rule.latest_before(after, runs[-1]) == (runs[-2] if len(runs) > 1 else None)


# --- holidays, compared with the package ------------------------------------------------------------

CODES = ["DE", "DE-BY", "US", "US-CA", "GB-SCT", "FR", "JP", "IN", "BR"]


@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("year", [2025, 2026, 2028])
def test_the_holidays_are_the_package_s_day_by_day(code: str, year: int) -> None:
    country, _, subdivision = code.partition("-")
    expected = holidays.country_holidays(country, subdiv=subdivision or None, years=year)
    calendar = Calendar(holidays=code)
    daily = parse_schedule("0 12 * * *", "UTC", calendar)

    days = [
        date(year, 1, 1) + timedelta(days=n) for n in range((date(year + 1, 1, 1) - date(year, 1, 1)).days)
    ]
    excluded = {day for day in days if calendar_excludes(calendar, "UTC", ms(f"{day.isoformat()}T12:00:00Z"))}
    runs = next_runs(daily, ms(f"{year - 1}-12-31T12:00:00Z"), 100)

    assert excluded == {day for day in days if day in expected}
    assert excluded  # every one of these countries has holidays
    kept = [day for day in days if day not in expected][:100]
    assert [datetime.fromtimestamp(r / 1000, UTC).date() for r in runs] == kept


# --- checks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["DE", "DE-BY", "US-CA", "GB-NIR", "AU-NSW", None])
def test_known_codes_pass(code: str | None) -> None:
    check_calendar(Calendar(holidays=code))


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("XX", "is not a country code"),
        ("DE-ZZ", "DE has no subdivision 'ZZ' (it has Augsburg, BB, BE"),
        ("IT-Nowhere", " more)"),
        ("de", "did you mean 'DE'?"),
        ("us-ca", "did you mean 'US-CA'?"),
        ("DE-", "DE has no subdivision ''"),
        ("", "is not a country code"),
    ],
)
def test_unknown_codes_are_refused_naming_calendar_holidays(code: str, words: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_calendar(Calendar.model_construct(holidays=code, exclude_dates=()))

    assert refused.value.field == "calendar.holidays"
    assert words in refused.value.message
