"""POST /jobs/{id}/backfill through the API handler: 202 with the instants, 200 for a dry run, 409
for a one-off or cancelled job, 400 above the documented count or for a bad window."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sundial.shared.clock import format_rfc3339
from sundial.shared.lifecycle.backfill import MAX_BACKFILL_OCCURRENCES
from tests.functions.conftest import Api

NOOP = {"type": "python", "handler": "noop"}
HOUR = 3_600_000


def create(api: Api, **fields: Any) -> dict[str, Any]:
    answer = api("POST", "/jobs", {"target": NOOP, **fields})
    assert answer.status == 201, answer.body
    body: dict[str, Any] = answer.body
    return body


def window(hours: int) -> dict[str, str]:
    last = int(time.time() * 1000) // HOUR * HOUR
    return {"from": format_rfc3339(last - (hours - 1) * HOUR), "to": format_rfc3339(last + 1)}


def test_a_backfill_is_accepted_with_its_instants_and_a_repeat_runs_none(api: Api) -> None:
    job = create(api, schedule="0 * * * *", overlap_policy="buffer")
    body = window(3)

    first = api("POST", f"/jobs/{job['id']}/backfill", body)
    again = api("POST", f"/jobs/{job['id']}/backfill", body)

    assert first.status == 202
    assert first.body["from"] == body["from"] and len(first.body["instants"]) == 3
    assert first.body["job"]["status"] == "queued"
    assert (again.status, again.body["instants"], again.body["already"]) == (
        202,
        [],
        first.body["instants"],
    )


def test_a_dry_run_answers_200_and_changes_nothing(api: Api, stored: Any) -> None:
    job = create(api, schedule="0 * * * *", overlap_policy="buffer")
    before = stored()

    dry = api("POST", f"/jobs/{job['id']}/backfill", window(2) | {"dry_run": True})

    assert (dry.status, len(dry.body["instants"]), dry.body["job"]) == (200, 2, None)
    assert stored() == before


def test_one_off_and_cancelled_jobs_are_409(api: Api) -> None:
    one_off = create(api)
    cancelled = create(api, schedule="0 * * * *")
    api("DELETE", f"/jobs/{cancelled['id']}")

    answers = [api("POST", f"/jobs/{job['id']}/backfill", window(2)) for job in (one_off, cancelled)]

    assert [answer.status for answer in answers] == [409, 409]
    assert "one-off" in answers[0].body["message"] and "cancelled" in answers[1].body["message"]


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (window(MAX_BACKFILL_OCCURRENCES + 1), "to", f"holds {MAX_BACKFILL_OCCURRENCES + 1} occurrences"),
        ({"from": "2026-12-01T00:00:00Z", "to": "2026-11-01T00:00:00Z"}, "to", "to must be after from"),
        ({"from": "yesterday", "to": "2026-11-01T00:00:00Z"}, "from", "RFC 3339"),
        ({"to": "2026-11-01T00:00:00Z"}, "from", "Field required"),
    ],
    ids=["count", "reversed", "instant", "missing"],
)
def test_a_bad_backfill_is_a_400_naming_the_field(
    api: Api, stored: Any, body: dict[str, Any], field: str, message: str
) -> None:
    job = create(api, schedule="0 * * * *", overlap_policy="buffer")
    before = stored()

    answer = api("POST", f"/jobs/{job['id']}/backfill", body)

    assert (answer.status, answer.body["field"]) == (400, field)
    assert message in answer.body["message"]
    assert stored() == before


def test_an_unknown_job_is_404(api: Api) -> None:
    assert api("POST", "/jobs/01JD8ZQ3V6X4M7N2P5R8T1W9YB/backfill", window(2)).status == 404
