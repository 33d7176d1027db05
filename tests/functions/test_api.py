"""The API handler driven with API Gateway REST proxy events, end to end through sundial/shared/ on the
emulator."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from sundial.contract.vocabulary import Priority
from sundial.local_stack.resources import Resources
from sundial.shared.clock import SystemClock, to_epoch_ms
from sundial.shared.constants import WRITER_DISPATCH_SECONDS
from sundial.shared.store import JobStore
from tests.functions.conftest import Api, api_event, invoke_api, load_event

NOOP = {"type": "python", "handler": "noop"}
DAILY = {"schedule": "cron(0 9 * * ? *)", "timezone": "Europe/Berlin"}
# Starts long after the test: a status filter must not depend on the time of day the test runs.
LATER = {**DAILY, "start_at": "2099-01-01T00:00:00Z"}
HORIZON_MS = WRITER_DISPATCH_SECONDS * 1000


def create(api: Api, **fields: Any) -> dict[str, Any]:
    answer = api("POST", "/jobs", {"target": NOOP, **fields})
    assert answer.status == 201, answer.body
    body: dict[str, Any] = answer.body
    return body


# --- create, read, idempotency ----------------------------------------------------------------


def test_the_captured_create_event_makes_a_job_and_its_replay_returns_it(env: Resources, stored: Any) -> None:
    before_ms = SystemClock().now_ms()
    first = invoke_api(load_event("apigw_create_job.json"))
    after_ms = SystemClock().now_ms()
    again = invoke_api(load_event("apigw_create_job.json"))

    assert first.status == 201
    assert first.headers["Location"] == f"/v1/jobs/{first.body['id']}"  # behind the v1 stage
    # In the two minutes and a quarter before 09:00 in Berlin its create dispatches it at once.
    first_run_ms = to_epoch_ms(datetime.fromisoformat(first.body["next_run_at"]))
    if first_run_ms > after_ms + HORIZON_MS:
        assert first.body["status"] == "pending"
    elif first_run_ms <= before_ms + HORIZON_MS:
        assert first.body["status"] == "queued"
    assert first.body["schedule"] == "cron(0 9 * * ? *)"
    assert first.body["next_run_at"].endswith(("07:00:00Z", "08:00:00Z"))  # 09:00 in Berlin
    assert (again.status, again.body["id"]) == (200, first.body["id"])
    assert "Location" not in again.headers
    jobs = [item for item in stored() if item["sk"]["S"] == "JOB"]
    assert len(jobs) == 1


def test_the_same_idempotency_key_with_another_body_is_a_conflict(api: Api, stored: Any) -> None:
    key = {"Idempotency-Key": "k-1"}
    first = api("POST", "/jobs", {"target": NOOP, "name": "a"}, headers=key)
    before = stored()

    answer = api("POST", "/jobs", {"target": NOOP, "name": "b"}, headers=key)

    assert first.status == 201
    assert answer.status == 409
    assert (
        answer.body.items()
        >= {
            "message": "Idempotency-Key 'k-1' was used with a different body",
            "field": "Idempotency-Key",
        }.items()
    )
    assert stored() == before


def test_get_answers_the_job_or_404(env: Resources, api: Api) -> None:
    job = create(api, **DAILY)
    event = load_event("apigw_get_job.json")
    missing = invoke_api(event)
    event["path"] = f"/jobs/{job['id']}"
    found = invoke_api(event)

    assert (found.status, found.body) == (200, job)
    assert missing.status == 404
    assert (
        missing.body.items()
        >= {"message": "job '01JD8ZQ3V6X4M7N2P5R8T1W9YB' not found", "field": None}.items()
    )


# --- every create error of docs/api.md: status, message, field, and nothing stored --------------------

CREATE_ERRORS = [
    pytest.param(
        {"target": NOOP, "schedule": "61 * * * *"}, 400, "schedule", "minute must be 0-59", id="bad-schedule"
    ),
    pytest.param(
        {"target": NOOP, **DAILY, "timezone": "Mars/Base"},
        400,
        "timezone",
        "unknown time zone",
        id="bad-zone",
    ),
    pytest.param(
        {"target": NOOP, "schedule": "rate(1 hour)", "run_at": "2030-01-01T00:00:00Z"},
        400,
        "run_at",
        "exclusive",
        id="run_at-and-schedule",
    ),
    pytest.param(
        {"target": NOOP, "run_at": "2030-01-01T00:00:00"}, 400, "run_at", "timezone", id="naive-run_at"
    ),
    pytest.param({"name": "x"}, 400, "target", "Field required", id="no-target"),
    pytest.param(
        {"target": NOOP, "schedule": "rate(1 hour)", "overlap_policy": "allow"},
        400,
        "overlap_policy",
        "use 'buffer'",
        id="overlap-allow",
    ),
    pytest.param({"target": {"type": "ftp"}}, 400, "target", "tag 'ftp'", id="unknown-target-type"),
    pytest.param(
        {"target": {"type": "http", "url": "http://example.com/hook"}},
        400,
        "target.url",
        "must use https",
        id="plain-http",
    ),
    pytest.param(
        {"target": {"type": "http", "url": "https://169.254.169.254/latest"}},
        400,
        "target.url",
        "169.254.169.254",
        id="metadata-address",
    ),
    pytest.param(
        {"target": {"type": "http", "url": "https://10.0.0.8/hook"}},
        400,
        "target.url",
        "public address",
        id="private-address",
    ),
    pytest.param(
        {"target": {"type": "http", "url": "x" * 3000}}, 400, "target.url", "at most 2048", id="long-url"
    ),
    pytest.param(
        {"target": {"type": "python", "handler": "nope"}},
        400,
        "target.handler",
        "not registered",
        id="handler",
    ),
    pytest.param(
        {"target": NOOP, "backoff": [5, -1]}, 400, "backoff[1]", "greater than or equal to 0", id="backoff"
    ),
    pytest.param(
        {"target": NOOP, "max_retries": 21}, 400, "max_retries", "less than or equal to 20", id="retries"
    ),
    pytest.param(
        {"target": NOOP, "timeout_seconds": 0},
        400,
        "timeout_seconds",
        "greater than or equal to 1",
        id="timeout",
    ),
    pytest.param(
        {"target": NOOP, "priority": "urgent"}, 400, "priority", "'high', 'medium' or 'low'", id="priority"
    ),
    pytest.param({"target": NOOP, "name": "n" * 201}, 400, "name", "at most 200", id="long-name"),
    pytest.param(
        {"target": NOOP, "colour": "red"}, 400, "colour", "Extra inputs are not permitted", id="unknown-field"
    ),
    pytest.param(
        {
            "target": NOOP,
            "schedule": "rate(1 day)",
            "start_at": "2030-01-02T00:00:00Z",
            "end_at": "2030-01-01T00:00:00Z",
        },
        400,
        "end_at",
        "after start_at",
        id="window",
    ),
    pytest.param(
        {"target": NOOP, "payload": "x" * (256 * 1024)},
        413,
        "payload",
        "the limit is 256 KiB",
        id="payload-size",
    ),
    pytest.param([NOOP], 400, "body", "must be a JSON object", id="not-an-object"),
]


@pytest.mark.parametrize(("body", "status", "field", "message"), CREATE_ERRORS)
def test_a_bad_create_names_the_field_and_stores_nothing(
    api: Api, stored: Any, body: Any, status: int, field: str, message: str
) -> None:
    answer = api("POST", "/jobs", body, headers={"Idempotency-Key": "same-key"})

    assert answer.status == status
    assert answer.body["field"] == field
    assert message in answer.body["message"]
    assert "Traceback" not in answer.body["message"]
    assert stored() == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"target": ', "the body is not valid JSON"),
        (None, "the request body is required"),
    ],
    ids=["malformed-json", "no-body"],
)
def test_a_body_that_is_not_json_is_a_400(api: Api, stored: Any, raw: str | None, message: str) -> None:
    answer = api("POST", "/jobs", raw_body=raw)

    assert answer.status == 400
    assert answer.body["field"] == "body"
    assert answer.body["message"].startswith(message)
    assert stored() == []


def test_an_idempotency_key_longer_than_128_is_a_400(api: Api, stored: Any) -> None:
    answer = api("POST", "/jobs", {"target": NOOP}, headers={"Idempotency-Key": "k" * 129})

    assert answer.status == 400
    assert (
        answer.body.items()
        >= {
            "message": "Idempotency-Key: String should have at most 128 characters",
            "field": "Idempotency-Key",
        }.items()
    )
    assert stored() == []


# --- listing -----------------------------------------------------------------------------------


def test_the_list_pages_newest_first_with_next_token(api: Api) -> None:
    ids = [create(api, **DAILY, name=f"job-{n}")["id"] for n in range(5)]
    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        query = {"limit": "2"} | ({"next_token": token} if token else {})
        answer = api("GET", "/jobs", query=query)
        assert answer.status == 200
        assert len(answer.body["jobs"]) <= 2
        seen += [job["id"] for job in answer.body["jobs"]]
        token = answer.body["next_token"]
        pages += 1
        if token is None:
            break

    assert seen == list(reversed(ids))
    assert pages >= 3


def test_the_list_filters_by_status_and_priority(api: Api) -> None:
    high = create(api, **LATER, priority="high")
    create(api, **LATER, priority="low")

    answer = api("GET", "/jobs", query={"priority": "high", "status": "pending"})

    assert [job["id"] for job in answer.body["jobs"]] == [high["id"]]


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"status": "sleeping"}, "status", "Input should be 'pending'"),
        ({"priority": "urgent"}, "priority", "Input should be 'high'"),
        ({"limit": "0"}, "limit", "greater than or equal to 1"),
        ({"limit": "101"}, "limit", "less than or equal to 100"),
        ({"limit": "ten"}, "limit", "valid integer"),
        ({"next_token": "not-a-token"}, "next_token", "not one this API issued"),
    ],
    ids=["status", "priority", "limit-low", "limit-high", "limit-text", "token"],
)
def test_a_bad_filter_or_token_is_a_400(api: Api, query: dict[str, str], field: str, message: str) -> None:
    answer = api("GET", "/jobs", query=query)

    assert answer.status == 400
    assert answer.body["field"] == field
    assert message in answer.body["message"]


# --- changes to a job ----------------------------------------------------------------------------


def test_patch_changes_the_job_and_a_bad_patch_changes_nothing(api: Api, stored: Any) -> None:
    job = create(api, **DAILY)
    changed = api("PATCH", f"/jobs/{job['id']}", {"name": "renamed", "priority": "low"})
    before = stored()

    bad = api("PATCH", f"/jobs/{job['id']}", {"schedule": "cron(0 25 * * ? *)"})
    unknown = api("PATCH", f"/jobs/{job['id']}", {"colour": "red"})
    missing = api("PATCH", "/jobs/01JD8ZQ3V6X4M7N2P5R8T1W9YB", {"name": "x"})

    assert (changed.status, changed.body["name"], changed.body["priority"]) == (200, "renamed", "low")
    assert (bad.status, bad.body["field"]) == (400, "schedule")
    assert (unknown.status, unknown.body["field"]) == (400, "colour")
    assert (missing.status, missing.body["field"]) == (404, None)
    assert stored() == before


def test_patch_while_running_is_a_conflict(env: Resources, api: Api, dynamodb: Any, stored: Any) -> None:
    job = create(api)  # due now: queued by its create
    store = JobStore(dynamodb, env.table_name, SystemClock())
    token = store.get(job["id"]).token
    assert token is not None
    store.fence(job["id"], token, "worker-1", SystemClock().now_ms())
    before = stored()

    answer = api("PATCH", f"/jobs/{job['id']}", {"name": "later"})

    assert answer.status == 409
    assert "is running" in answer.body["message"]
    assert stored() == before


def test_delete_cancels_and_an_unknown_job_is_a_404(api: Api) -> None:
    job = create(api, **DAILY)

    cancelled = api("DELETE", f"/jobs/{job['id']}")
    again = api("DELETE", f"/jobs/{job['id']}")
    missing = api("DELETE", "/jobs/01JD8ZQ3V6X4M7N2P5R8T1W9YB")

    assert (cancelled.status, cancelled.body["status"]) == (200, "cancelled")
    assert (again.status, again.body["status"]) == (200, "cancelled")
    assert missing.status == 404


def test_pause_and_resume_a_recurring_job(api: Api) -> None:
    job = create(api, **DAILY)

    paused = api("POST", f"/jobs/{job['id']}/pause")
    resumed = api("POST", f"/jobs/{job['id']}/resume")

    assert (paused.status, paused.body["paused"], paused.body["next_run_at"]) == (200, True, None)
    assert (resumed.status, resumed.body["paused"], resumed.body["next_run_at"]) == (
        200,
        False,
        job["next_run_at"],
    )


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_pause_and_resume_refuse_a_one_off_job(api: Api, stored: Any, action: str) -> None:
    job = create(api, run_at="2030-01-01T00:00:00Z")
    before = stored()

    answer = api("POST", f"/jobs/{job['id']}/{action}")

    assert answer.status == 409
    assert (
        answer.body["message"] == f"job '{job['id']}' is not recurring; only recurring jobs pause and resume"
    )
    assert stored() == before


@pytest.mark.parametrize("action", ["pause", "resume", "trigger", "retry"])
def test_actions_on_an_unknown_job_are_404(api: Api, action: str) -> None:
    answer = api("POST", f"/jobs/01JD8ZQ3V6X4M7N2P5R8T1W9YB/{action}")

    assert answer.status == 404
    assert (
        answer.body.items()
        >= {"message": "job '01JD8ZQ3V6X4M7N2P5R8T1W9YB' not found", "field": None}.items()
    )


def test_trigger_runs_now_unless_cancelled(api: Api, stored: Any) -> None:
    job = create(api, **DAILY)
    triggered = api("POST", f"/jobs/{job['id']}/trigger")
    other = create(api, **DAILY)
    api("DELETE", f"/jobs/{other['id']}")
    before = stored()

    refused = api("POST", f"/jobs/{other['id']}/trigger")

    assert (triggered.status, triggered.body["status"]) == (200, "queued")
    assert refused.status == 409
    assert refused.body["message"] == f"job '{other['id']}' is cancelled; create a new job to run it again"
    assert stored() == before


def test_a_patch_may_not_put_a_one_off_on_the_instant_of_its_triggered_run(api: Api, stored: Any) -> None:
    later = datetime.fromtimestamp(time.time() + 3600, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    job = create(api, run_at=later)
    triggered = api("POST", f"/jobs/{job['id']}/trigger")
    instant = triggered.body["next_run_at"]
    before = stored()

    refused = api("PATCH", f"/jobs/{job['id']}", {"run_at": instant})

    assert refused.status == 409, refused.body
    assert refused.body["field"] == "run_at"
    assert "triggered run at" in refused.body["message"]
    assert stored() == before


def test_retry_refuses_a_job_that_is_not_dead(api: Api, stored: Any) -> None:
    job = create(api, **DAILY)
    before = stored()

    answer = api("POST", f"/jobs/{job['id']}/retry")

    assert answer.status == 409
    assert "not dead" in answer.body["message"]
    assert stored() == before


# --- runs, preview, service routes ---------------------------------------------------------------


def test_runs_of_a_new_job_are_empty_and_of_an_unknown_job_404(api: Api) -> None:
    job = create(api, **DAILY)

    runs = api("GET", f"/jobs/{job['id']}/runs", query={"limit": "10"})
    bad_limit = api("GET", f"/jobs/{job['id']}/runs", query={"limit": "500"})
    missing = api("GET", "/jobs/01JD8ZQ3V6X4M7N2P5R8T1W9YB/runs")

    assert (runs.status, runs.body) == (200, {"runs": [], "next_token": None})
    assert (bad_limit.status, bad_limit.body["field"]) == (400, "limit")
    assert missing.status == 404


def test_preview_lists_the_next_runs_in_utc(api: Api) -> None:
    answer = api(
        "POST",
        "/schedules/preview",
        {
            "schedule": "cron(0 9 * * ? *)",
            "timezone": "Europe/Berlin",
            "count": 2,
            "after": "2026-12-01T00:00:00Z",
        },
    )

    assert answer.status == 200
    instants = ["2026-12-01T08:00:00Z", "2026-12-02T08:00:00Z"]
    assert answer.body == {"next_runs": instants, "starts": instants}


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"schedule": "61 * * * *"}, "schedule", "minute must be 0-59"),
        ({"schedule": "rate(1 day)", "timezone": "Nowhere/Land"}, "timezone", "unknown time zone"),
        ({"schedule": "rate(1 day)", "count": 101}, "count", "less than or equal to 100"),
        ({"timezone": "UTC"}, "schedule", "Field required"),
    ],
    ids=["schedule", "zone", "count", "missing"],
)
def test_a_bad_preview_is_a_400_naming_the_field(api: Api, body: Any, field: str, message: str) -> None:
    answer = api("POST", "/schedules/preview", body)

    assert answer.status == 400
    assert answer.body["field"] == field
    assert message in answer.body["message"]


def test_health_openapi_and_docs(api: Api) -> None:
    health = api("GET", "/health")
    document = api("GET", "/openapi.json")
    docs = api("GET", "/docs")

    assert (health.status, health.body) == (200, {"status": "ok"})
    assert document.status == 200
    assert document.body["openapi"].startswith("3.")
    assert {"/jobs", "/jobs/{job_id}", "/jobs/{job_id}/runs", "/schedules/preview", "/health"} <= set(
        document.body["paths"]
    )
    assert docs.status == 200
    assert docs.headers["Content-Type"].startswith("text/html")


def test_an_unknown_route_is_404_and_a_wrong_method_405(api: Api) -> None:
    unknown = api("GET", "/nowhere")
    wrong = api("PUT", "/jobs")
    wrong_on_a_job = api("PUT", "/jobs/01JD8ZQ3V6X4M7N2P5R8T1W9YB")
    under_a_job = api("GET", "/jobs/01JD8ZQ3V6X4M7N2P5R8T1W9YB/nowhere")

    assert unknown.status == 404
    assert unknown.body.items() >= {"message": "no route for GET /nowhere", "field": None}.items()
    assert wrong.status == 405
    assert wrong.headers["Allow"] == "GET, POST"
    assert wrong.body["field"] is None
    assert (wrong_on_a_job.status, wrong_on_a_job.headers["Allow"]) == (405, "DELETE, GET, PATCH")
    assert (under_a_job.status, under_a_job.body["field"]) == (404, None)


def test_an_unexpected_failure_is_a_500_without_details(env: Resources, api: Api) -> None:
    from sundial.functions import clients

    def broken(**_: Any) -> None:
        raise RuntimeError("secret internals")

    clients.clients().dynamodb().meta.events.register("before-call.dynamodb.GetItem", broken)

    answer = api("GET", "/jobs/01JD8ZQ3V6X4M7N2P5R8T1W9YB")

    assert answer.status == 500
    assert answer.body.items() >= {"message": "internal error; it has been logged", "field": None}.items()


@pytest.mark.parametrize("name", ["timezone", "priority", "max_retries", "schedule"])
def test_patch_refuses_null_for_a_field_that_cannot_be_unset(api: Api, stored: Any, name: str) -> None:
    job = create(api, **DAILY)
    before = stored()

    answer = api("PATCH", f"/jobs/{job['id']}", {name: None})

    assert answer.status == 400
    assert (
        answer.body.items()
        >= {
            "message": f"{name} cannot be null; leave it out to keep it as it is",
            "field": name,
        }.items()
    )
    assert stored() == before


def test_patch_max_retries_to_zero_takes_effect(api: Api) -> None:
    job = create(api, **DAILY)

    answer = api("PATCH", f"/jobs/{job['id']}", {"max_retries": 0})

    assert (answer.status, answer.body["max_retries"]) == (200, 0)


@pytest.mark.parametrize(
    ("method", "path", "shown"),
    [
        ("GET", "/jobs/" + "a" * 3000, '"' + "a" * 40 + '"'),
        ("GET", "/jobs/\n", '"\\n"'),  # "$" anchoring would route this to the list
        ("GET", "/jobs/\n/runs", '"\\n"'),
        ("GET", "/jobs/01jd8zq3v6x4m7n2p5r8t1w9yb", '"01jd8zq3v6x4m7n2p5r8t1w9yb"'),  # not as issued
        ("GET", "/jobs/81JD8ZQ3V6X4M7N2P5R8T1W9YB", '"81JD8ZQ3V6X4M7N2P5R8T1W9YB"'),  # over 128 bits
        ("DELETE", "/jobs/abc", '"abc"'),
        ("PATCH", "/jobs/abc", '"abc"'),
        ("POST", "/jobs//pause", '""'),
        ("POST", "/jobs/abc/trigger", '"abc"'),
    ],
    ids=["long", "newline", "newline-runs", "lower-case", "too-large", "delete", "patch", "empty", "trigger"],
)
def test_a_path_id_that_is_no_job_id_is_a_400_naming_job_id(
    api: Api, stored: Any, method: str, path: str, shown: str
) -> None:
    job = create(api, **DAILY)
    before = stored()

    answer = api(method, path, {"name": "x"} if method == "PATCH" else None)

    assert answer.status == 400
    assert answer.body["field"] == "job_id"
    assert answer.body["message"].startswith(f"job_id {shown} is not a job id: ids are 26-character ULIDs")
    assert "jobs" not in answer.body  # never the list
    assert stored() == before
    assert api("GET", f"/jobs/{job['id']}").status == 200


@pytest.mark.parametrize("queue", ["high", "dead"])
def test_an_sqs_target_may_not_name_sundials_own_queues(
    env: Resources, api: Api, stored: Any, queue: str
) -> None:
    url = env.dead_letter_queue_url if queue == "dead" else env.queue_urls[Priority(queue)]
    before = stored()

    answer = api("POST", "/jobs", {"target": {"type": "sqs", "queue_url": url}})

    assert (answer.status, answer.body["field"]) == (400, "target.queue_url")
    assert stored() == before


@pytest.mark.parametrize(
    ("headers", "raw", "base64"),
    [({"Content-Type": "text/plain"}, "hello", False), ({"Content-Type": "application/json"}, "/w==", True)],
    ids=["text", "not-utf-8"],
)
def test_a_call_that_takes_no_body_ignores_one(
    api: Api, headers: dict[str, str], raw: str, base64: bool
) -> None:
    job = create(api, **DAILY)
    event = api_event("POST", f"/jobs/{job['id']}/pause", headers=headers, raw_body=raw)
    event["isBase64Encoded"] = base64

    answer = invoke_api(event)

    assert (answer.status, answer.body["paused"]) == (200, True)


@pytest.mark.parametrize("path", ["/jobs", "/schedules/preview", "/jobs/01JD8ZQ3V6X4M7N2P5R8T1W9YB"])
def test_a_call_that_takes_a_body_refuses_one_that_is_not_json(api: Api, stored: Any, path: str) -> None:
    method = "PATCH" if path.startswith("/jobs/") else "POST"
    text = invoke_api(api_event(method, path, headers={"Content-Type": "text/plain"}, raw_body="hello"))
    binary = api_event(method, path, raw_body="/w==")
    binary["isBase64Encoded"] = True
    not_utf8 = invoke_api(binary)

    assert (text.status, text.body["field"]) == (415, "Content-Type")
    assert (not_utf8.status, not_utf8.body["field"]) == (400, "body")
    assert stored() == []
