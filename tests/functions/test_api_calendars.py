"""Calendars through the API handler: the preview's runs and what it excluded, the 400s that name
the calendar's field and store nothing, a job's calendar on create, PATCH and batch, and the
OpenAPI document's fields (docs/api.md, "Calendars")."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from sundial.shared.schedules.calendars import SEARCH_YEARS
from tests.functions.conftest import Api

NOOP = {"type": "python", "handler": "noop"}
DAILY = {"schedule": "0 9 * * *", "timezone": "UTC"}


def create(api: Api, **fields: Any) -> dict[str, Any]:
    answer = api("POST", "/jobs", {"target": NOOP, **fields})
    assert answer.status == 201, answer.body
    body: dict[str, Any] = answer.body
    return body


def days_from_today(*offsets: int) -> list[str]:
    today = datetime.now(UTC).date()
    return [(today + timedelta(days=n)).isoformat() for n in offsets]


# --- preview ----------------------------------------------------------------------------------------


def test_a_preview_over_christmas_with_german_holidays_skips_the_25th_and_26th(api: Api) -> None:
    body = {
        "schedule": "0 9 * * *",
        "timezone": "UTC",
        "calendar": {"holidays": "DE"},
        "after": "2026-12-22T00:00:00Z",
        "count": 4,
        "explain": True,
    }

    answer = api("POST", "/schedules/preview", body)

    assert answer.status == 200, answer.body
    assert answer.body["next_runs"] == [
        "2026-12-22T09:00:00Z",
        "2026-12-23T09:00:00Z",
        "2026-12-24T09:00:00Z",
        "2026-12-27T09:00:00Z",
    ]
    assert answer.body["excluded"] == ["2026-12-25T09:00:00Z", "2026-12-26T09:00:00Z"]


def test_a_preview_answers_excluded_only_when_asked_to_explain(api: Api) -> None:
    body = {"schedule": "0 9 * * *", "calendar": {"holidays": "DE"}, "after": "2026-12-22T00:00:00Z"}

    plain = api("POST", "/schedules/preview", body | {"count": 4})
    nothing_passed_over = api("POST", "/schedules/preview", body | {"count": 2, "explain": True})

    assert plain.status == 200
    assert "excluded" not in plain.body
    assert plain.body["next_runs"][-1] == "2026-12-27T09:00:00Z"
    assert nothing_passed_over.body["excluded"] == []


def test_a_date_is_excluded_in_the_job_s_zone_not_in_utc(api: Api) -> None:
    # 01:00 in Auckland (UTC+13 in December) on the 25th is 12:00 UTC on the 24th.
    body = {
        "schedule": "0 1 * * *",
        "timezone": "Pacific/Auckland",
        "calendar": {"exclude_dates": ["2026-12-25"]},
        "after": "2026-12-23T00:00:00Z",
        "count": 3,
        "explain": True,
    }

    answer = api("POST", "/schedules/preview", body)

    assert answer.body["next_runs"] == [
        "2026-12-23T12:00:00Z",
        "2026-12-25T12:00:00Z",
        "2026-12-26T12:00:00Z",
    ]
    assert answer.body["excluded"] == ["2026-12-24T12:00:00Z"]


def test_a_rate_keeps_its_grid_past_an_excluded_day(api: Api) -> None:
    body = {
        "schedule": "rate(7 hours)",
        "calendar": {"exclude_dates": ["2026-12-25"]},
        "after": "2026-12-24T20:00:00Z",
        "count": 2,
    }

    answer = api("POST", "/schedules/preview", body)

    # From 20:00 on the 24th every 7 hours: 03:00, 10:00, 17:00 on the 25th are out; 00:00 on the 26th.
    assert answer.body["next_runs"] == ["2026-12-26T00:00:00Z", "2026-12-26T07:00:00Z"]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"schedule": "0 9 * * *", "calendar": {"holidays": "XX"}}, "calendar.holidays", "not a country"),
        ({"schedule": "0 9 * * *", "calendar": {"holidays": "DE-ZZ"}}, "calendar.holidays", "no subdivision"),
        ({"schedule": "0 9 * * *", "calendar": {"holidays": "de-by"}}, "calendar.holidays", "'DE-BY'?"),
        (
            {"schedule": "0 9 * * *", "calendar": {"exclude_dates": ["2026-13-01"]}},
            "calendar.exclude_dates",
            "",
        ),
        ({"schedule": "at(2030-01-01T00:00:00)", "calendar": {"holidays": "DE"}}, "calendar", "one-off"),
        ({"schedule": "0 9 25 12 *", "calendar": {"holidays": "DE"}}, "calendar", "never run"),
        ({"schedule": "0 9 * * *", "explain": "yes"}, "explain", ""),
    ],
    ids=["country", "subdivision", "case", "date", "one-off", "excludes-all", "explain"],
)
def test_a_bad_calendar_in_a_preview_is_a_400_naming_its_field(
    api: Api, body: dict[str, Any], field: str, words: str
) -> None:
    answer = api("POST", "/schedules/preview", body)

    assert (answer.status, answer.body["field"]) == (400, field), answer.body
    assert words in answer.body["message"]


def test_a_calendar_that_excludes_everything_is_refused_quickly(api: Api) -> None:
    # Every 25 December is a German holiday: the search gives up after SEARCH_YEARS years.
    started = datetime.now(UTC)
    answer = api("POST", "/schedules/preview", {"schedule": "0 9 25 12 *", "calendar": {"holidays": "DE"}})

    assert answer.status == 400
    assert f"{SEARCH_YEARS} years" in answer.body["message"]
    assert datetime.now(UTC) - started < timedelta(seconds=5)


# --- a job's calendar -------------------------------------------------------------------------------


def test_a_job_skips_its_excluded_dates_and_shows_its_calendar_sorted_once(api: Api, stored: Any) -> None:
    # Today's and the next four days' 09:00 are out, whatever the time: the first run is 5 days ahead.
    excluded = days_from_today(4, 0, 1, 2, 3, 1)

    job = create(api, **DAILY, calendar={"exclude_dates": excluded, "holidays": None})

    assert job["calendar"] == {"exclude_dates": sorted(set(excluded)), "holidays": None}
    assert job["next_run_at"] == f"{days_from_today(5)[0]}T09:00:00Z"
    assert api("GET", f"/jobs/{job['id']}").body["calendar"] == job["calendar"]
    [item] = [i for i in stored() if i["sk"]["S"] == "JOB"]
    assert json.loads(item["calendar"]["S"]) == job["calendar"]


def test_a_job_without_a_calendar_answers_null(api: Api) -> None:
    assert create(api, **DAILY)["calendar"] is None


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({**DAILY, "calendar": {"holidays": "Narnia"}}, "calendar.holidays"),
        ({**DAILY, "calendar": {"holidays": "US-XX"}}, "calendar.holidays"),
        ({**DAILY, "calendar": {"exclude_dates": ["2026-02-30"]}}, "calendar.exclude_dates"),
        ({**DAILY, "calendar": {"exclude_dates": ["1 Jan 2027"]}}, "calendar.exclude_dates"),
        ({**DAILY, "calendar": {"exclude_dates": [20270101]}}, "calendar.exclude_dates"),
        ({**DAILY, "calendar": {"exclude_dates": "2027-01-01"}}, "calendar.exclude_dates"),
        (
            {**DAILY, "calendar": {"exclude_dates": days_from_today(*range(400, 767))}},
            "calendar.exclude_dates",
        ),
        ({**DAILY, "calendar": {"weekends": True}}, "calendar.weekends"),
        ({"run_at": "2030-01-01T00:00:00Z", "calendar": {"holidays": "DE"}}, "calendar"),
        ({"calendar": {"exclude_dates": ["2030-01-01"]}}, "calendar"),
        ({"schedule": "at(2030-01-01T09:00:00)", "calendar": {"holidays": "DE"}}, "calendar"),
        ({"schedule": "0 9 1 1 *", "timezone": "Europe/Berlin", "calendar": {"holidays": "DE"}}, "calendar"),
    ],
    ids=[
        "unknown-country",
        "unknown-subdivision",
        "no-such-date",
        "date-form",
        "date-number",
        "not-a-list",
        "367-dates",
        "unknown-member",
        "one-off-run-at",
        "one-off-now",
        "one-off-at",
        "excludes-every-new-year",
    ],
)
def test_a_bad_calendar_is_a_400_naming_its_field_and_stores_nothing(
    api: Api, stored: Any, fields: dict[str, Any], field: str
) -> None:
    before = stored()

    answer = api("POST", "/jobs", {"target": NOOP, **fields})

    assert (answer.status, answer.body["field"]) == (400, field), answer.body
    assert stored() == before


def test_366_dates_are_accepted(api: Api) -> None:
    job = create(api, **DAILY, calendar={"exclude_dates": days_from_today(*range(400, 766))})

    assert len(job["calendar"]["exclude_dates"]) == 366


def test_a_patch_sets_changes_and_removes_the_calendar(api: Api) -> None:
    job = create(api, **DAILY)
    first = job["next_run_at"]
    path = f"/jobs/{job['id']}"

    excluded = api("PATCH", path, {"calendar": {"exclude_dates": [first[:10]]}})
    removed = api("PATCH", path, {"calendar": None})

    assert excluded.status == 200, excluded.body
    assert excluded.body["calendar"] == {"exclude_dates": [first[:10]], "holidays": None}
    following = date.fromisoformat(first[:10]) + timedelta(days=1)
    assert excluded.body["next_run_at"] == f"{following.isoformat()}T09:00:00Z"
    assert removed.status == 200, removed.body
    assert (removed.body["calendar"], removed.body["next_run_at"]) == (None, first)
    assert api("GET", path).body["calendar"] is None


def test_a_patch_of_other_fields_keeps_the_calendar(api: Api) -> None:
    job = create(api, **DAILY, calendar={"holidays": "DE-BY"})

    answer = api("PATCH", f"/jobs/{job['id']}", {"name": "renamed", "timezone": "Europe/Berlin"})

    assert answer.status == 200, answer.body
    assert answer.body["calendar"] == {"exclude_dates": [], "holidays": "DE-BY"}


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"calendar": {"holidays": "ZZ"}}, "calendar.holidays"),
        ({"calendar": {"exclude_dates": ["2027-04-31"]}}, "calendar.exclude_dates"),
        ({"run_at": "2030-01-01T00:00:00Z"}, "calendar"),
        ({"schedule": "at(2030-01-01T00:00:00)"}, "calendar"),
        ({"schedule": "0 9 25 12 *"}, "calendar"),
    ],
    ids=["holidays", "date", "one-off", "at", "excludes-all"],
)
def test_a_bad_patch_of_a_calendar_is_a_400_and_changes_nothing(
    api: Api, patch: dict[str, Any], field: str
) -> None:
    job = create(api, **DAILY, calendar={"holidays": "DE"})
    path = f"/jobs/{job['id']}"

    answer = api("PATCH", path, patch)

    assert (answer.status, answer.body["field"]) == (400, field), answer.body
    after = api("GET", path).body
    assert {name: after[name] for name in job if name != "updated_at"} == {
        name: job[name] for name in job if name != "updated_at"
    }


def test_a_patch_to_a_one_off_may_remove_the_calendar_with_it(api: Api) -> None:
    job = create(api, **DAILY, calendar={"holidays": "DE"})

    answer = api("PATCH", f"/jobs/{job['id']}", {"run_at": "2030-01-01T00:00:00Z", "calendar": None})

    assert answer.status == 200, answer.body
    assert (answer.body["calendar"], answer.body["schedule"]) == (None, None)


def test_a_batch_creates_calendars_and_refuses_a_bad_one_alone(api: Api) -> None:
    good = {"target": NOOP, **DAILY, "calendar": {"holidays": "FR"}}
    bad = {"target": NOOP, **DAILY, "calendar": {"holidays": "FR-Nowhere"}}
    bad_date = {"target": NOOP, **DAILY, "calendar": {"exclude_dates": ["tomorrow"]}}

    answer = api("POST", "/jobs/batch", {"jobs": [good, bad, bad_date]})

    assert answer.status == 200, answer.body
    statuses = [(r["status"], r["error"]["field"] if r["error"] else None) for r in answer.body["results"]]
    assert statuses == [
        (201, None),
        (400, "jobs[1].calendar.holidays"),
        (400, "jobs[2].calendar.exclude_dates"),
    ]
    assert answer.body["results"][0]["job"]["calendar"] == {"exclude_dates": [], "holidays": "FR"}


# --- the OpenAPI document ---------------------------------------------------------------------------


def test_the_document_shows_the_calendar_fields(api: Api) -> None:
    schemas = api("GET", "/openapi.json").body["components"]["schemas"]

    calendar = schemas["Calendar"]["properties"]
    assert calendar["exclude_dates"]["maxItems"] == 366
    assert calendar["exclude_dates"]["items"] == {"type": "string", "format": "date"}
    assert "holidays" in calendar
    for model in ("JobCreate", "JobUpdate", "JobView", "PreviewRequest"):
        assert "Calendar" in json.dumps(schemas[model]["properties"]["calendar"]), model
    assert schemas["PreviewRequest"]["properties"]["explain"]["type"] == "boolean"
    assert "excluded" in schemas["PreviewResponse"]["properties"]
