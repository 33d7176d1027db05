"""window_seconds through the API handler: bounds, next_run_at at the chosen start, PATCH, preview."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from sundial.shared.clock import format_rfc3339, to_epoch_ms
from sundial.shared.schedules import parse_schedule, start_instant
from tests.functions.conftest import Api

NOOP = {"type": "python", "handler": "noop"}
DAILY = {"schedule": "cron(0 9 * * ? *)", "timezone": "Europe/Berlin"}


def ms(text: str) -> int:
    return to_epoch_ms(datetime.fromisoformat(text))


def create(api: Api, **fields: Any) -> dict[str, Any]:
    answer = api("POST", "/jobs", {"target": NOOP, **fields})
    assert answer.status == 201, answer.body
    body: dict[str, Any] = answer.body
    return body


def first_instant(job: dict[str, Any]) -> int:
    """The scheduled instant of a daily job's current occurrence: the one 09:00 its start lies in."""
    start = ms(job["next_run_at"])
    schedule = parse_schedule(DAILY["schedule"], DAILY["timezone"])
    before = schedule.rule.next_after(start - 3_600_001)
    assert before is not None
    return before


@pytest.mark.parametrize("value", [-1, 3601, "60", True, 1.5, None])
def test_a_window_outside_0_to_3600_is_a_400_naming_it_and_stores_nothing(
    api: Api, stored: Any, value: Any
) -> None:
    before = stored()

    answer = api("POST", "/jobs", {"target": NOOP, **DAILY, "window_seconds": value})

    assert (answer.status, answer.body["field"]) == (400, "window_seconds")
    assert stored() == before


def test_next_run_at_is_the_start_the_job_id_and_instant_fix(api: Api) -> None:
    job = create(api, **DAILY, window_seconds=3600)
    instant = first_instant(job)
    schedule = parse_schedule(DAILY["schedule"], DAILY["timezone"])

    assert job["window_seconds"] == 3600
    assert job["next_run_at"] == format_rfc3339(start_instant(job["id"], instant, 3600, schedule))
    assert api("GET", f"/jobs/{job['id']}").body["next_run_at"] == job["next_run_at"]


def test_without_a_window_the_job_starts_on_its_instant(api: Api) -> None:
    job = create(api, **DAILY)

    assert job["window_seconds"] == 0
    assert ms(job["next_run_at"]) % 3_600_000 == 0


def test_a_patched_window_moves_the_waiting_occurrence_to_its_start_and_keeps_its_instant(
    api: Api, stored: Any
) -> None:
    job = create(api, **DAILY)
    instant = ms(job["next_run_at"])

    widened = api("PATCH", f"/jobs/{job['id']}", {"window_seconds": 1800})
    refused = api("PATCH", f"/jobs/{job['id']}", {"window_seconds": 4000})

    schedule = parse_schedule(DAILY["schedule"], DAILY["timezone"])
    assert widened.status == 200
    assert widened.body["next_run_at"] == format_rfc3339(start_instant(job["id"], instant, 1800, schedule))
    assert (refused.status, refused.body["field"]) == (400, "window_seconds")
    assert api("GET", f"/jobs/{job['id']}").body["window_seconds"] == 1800
    narrowed = api("PATCH", f"/jobs/{job['id']}", {"window_seconds": 0})
    assert narrowed.body["next_run_at"] == format_rfc3339(instant)


def test_the_preview_shows_a_job_s_starts_and_says_none_without_its_id(api: Api) -> None:
    job_id = "01JD8ZQ3V6X4M7N2P5R8T1W9YB"
    body = {"schedule": "cron(0 9 * * ? *)", "count": 3, "after": "2026-12-01T00:00:00Z"}

    plain = api("POST", "/schedules/preview", body).body
    spread = api("POST", "/schedules/preview", body | {"window_seconds": 300, "job_id": job_id}).body
    anonymous = api("POST", "/schedules/preview", body | {"window_seconds": 300}).body

    instants = ["2026-12-01T09:00:00Z", "2026-12-02T09:00:00Z", "2026-12-03T09:00:00Z"]
    assert plain == {"next_runs": instants, "starts": instants}
    expected = [format_rfc3339(start_instant(job_id, ms(i), 300)) for i in instants]
    assert spread == {"next_runs": instants, "starts": expected}
    assert anonymous == {"next_runs": instants, "starts": None}
