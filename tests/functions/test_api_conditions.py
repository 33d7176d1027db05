"""Client-side conditions and problem details (docs/api.md, "ETag and If-Match", "Errors"): every answer
that carries one job carries its ETag; a change sent with a stale If-Match is a 412 that changes
nothing, also when the job changes between the service's read and its write; and every error answer
is application/problem+json."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import boto3
import pytest
from werkzeug.test import Client

from sundial.client import InvalidInput as ClientInvalidInput
from sundial.client import PreconditionFailed, SundialClient
from sundial.client.transport import NO_RETRIES
from sundial.client.transport import Answer as ClientAnswer
from sundial.commands.exits import STALE, exit_code
from sundial.contract.vocabulary import JobStatus, RunStatus
from sundial.functions import clients
from sundial.local_stack.emulator import Emulator
from sundial.local_stack.gateway import Gateway
from sundial.local_stack.lambda_context import new_context
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c
from sundial.shared import lifecycle
from sundial.shared.clock import SystemClock
from sundial.shared.models import RunSummary
from sundial.shared.store import JobStore
from tests.functions.conftest import Answer, Api, api_event, invoke_api

NOOP = {"type": "python", "handler": "noop"}
LATER = {"schedule": "cron(0 9 * * ? *)", "timezone": "Europe/Berlin", "start_at": "2099-01-01T00:00:00Z"}
PROBLEM_MEMBERS = {"type", "title", "status", "detail", "message", "field"}


def create(api: Api, **fields: Any) -> Answer:
    answer = api("POST", "/jobs", {"target": NOOP, **fields})
    assert answer.status == 201, answer.body
    return answer


def job_items(stored: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [item for item in stored() if item["sk"]["S"] == "JOB"]


def dead_job(api: Api, env: Resources, dynamodb: Any) -> str:
    """A one-off whose only attempt failed: dead, as the worker leaves it."""
    job_id: str = create(api, max_retries=0).body["id"]  # due now: queued by its create
    clock = SystemClock()
    store = JobStore(dynamodb, env.table_name, clock)
    token = store.get(job_id).token
    assert token is not None
    running = store.fence(job_id, token, "worker-1", clock.now_ms())
    now = clock.now_ms()
    placement = lifecycle.after_failure(running, now, now)
    assert placement.status is JobStatus.DEAD
    run = RunSummary(scheduled_at=running.scheduled_at or now, attempt=1, status=RunStatus.DEAD, error="no")
    store.fail(running, token, placement, run, None)
    return job_id


# --- ETag ------------------------------------------------------------------------------------------


def test_every_answer_that_carries_one_job_carries_its_etag(api: Api, env: Resources, dynamodb: Any) -> None:
    key = {"Idempotency-Key": "etag-1"}
    made = api("POST", "/jobs", {"target": NOOP, **LATER}, headers=key)
    again = api("POST", "/jobs", {"target": NOOP, **LATER}, headers=key)
    job = f"/jobs/{made.body['id']}"
    dead = f"/jobs/{dead_job(api, env, dynamodb)}"

    answers = {
        "create": made,
        "create again": again,
        "get": api("GET", job),
        "patch": api("PATCH", job, {"name": "renamed"}),
        "pause": api("POST", f"{job}/pause"),
        "resume": api("POST", f"{job}/resume"),
        "trigger": api("POST", f"{job}/trigger"),
        "retry": api("POST", f"{dead}/retry"),
        "cancel": api("DELETE", job),
    }

    assert {name: answer.status for name, answer in answers.items()} == {
        "create": 201,
        "create again": 200,
        "get": 200,
        "patch": 200,
        "pause": 200,
        "resume": 200,
        "trigger": 200,
        "retry": 200,
        "cancel": 200,
    }
    tags = {name: answer.headers.get("ETag") for name, answer in answers.items()}
    # The job's revision: 0 as created, one more for each change a call made.
    assert tags == {
        "create": '"0"',
        "create again": '"0"',
        "get": '"0"',
        "patch": '"1"',
        "pause": '"2"',
        "resume": '"3"',
        "trigger": '"4"',
        "retry": '"1"',
        "cancel": '"5"',
    }
    assert api("GET", job).headers["ETag"] == '"5"'


def test_answers_that_carry_no_single_job_carry_no_etag(api: Api) -> None:
    create(api, **LATER)

    assert "ETag" not in api("GET", "/jobs").headers
    assert "ETag" not in api("GET", "/jobs/01JD8ZQ3V6X4M7N2P5R8T1W9YB").headers  # a 404


def test_the_progress_of_an_attempt_leaves_the_etag_as_it_is(api: Api, env: Resources, dynamodb: Any) -> None:
    """A heartbeat writes the job every half minute while it runs: an ETag made of every write would
    go stale under a client that reads the job and then cancels it."""
    job_id = create(api).body["id"]  # due now: queued by its create
    clock = SystemClock()
    store = JobStore(dynamodb, env.table_name, clock)
    read = api("GET", f"/jobs/{job_id}").headers["ETag"]
    token = store.get(job_id).token
    assert token is not None
    store.fence(job_id, token, "worker-1", clock.now_ms())
    store.heartbeat(job_id, token, clock.now_ms() + 300_000, clock.now_ms())

    cancelled = api("DELETE", f"/jobs/{job_id}", headers={"If-Match": read})

    assert cancelled.status == 200, cancelled.body
    assert cancelled.body["status"] == "running"  # it is cancelled once its attempt ends


# --- If-Match ----------------------------------------------------------------------------------------

ACTIONS: dict[str, tuple[str, str, Any]] = {
    "patch": ("PATCH", "", {"name": "changed"}),
    "pause": ("POST", "/pause", None),
    "resume": ("POST", "/resume", None),
    "trigger": ("POST", "/trigger", None),
    "retry": ("POST", "/retry", None),
    "cancel": ("DELETE", "", None),
}


@pytest.mark.parametrize("action", list(ACTIONS))
def test_a_stale_if_match_is_a_412_and_changes_nothing(
    api: Api, env: Resources, dynamodb: Any, stored: Any, action: str
) -> None:
    method, suffix, body = ACTIONS[action]
    job_id = dead_job(api, env, dynamodb) if action == "retry" else create(api, **LATER).body["id"]
    if action == "resume":
        api("POST", f"/jobs/{job_id}/pause")
    read = api("GET", f"/jobs/{job_id}")
    api("PATCH", f"/jobs/{job_id}", {"name": "someone else's"})  # another caller's change
    before = stored()

    answer = api(method, f"/jobs/{job_id}{suffix}", body, headers={"If-Match": read.headers["ETag"]})

    assert answer.status == 412, answer.body
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert answer.body["field"] == "If-Match"
    assert answer.body["title"] == "Precondition Failed"
    assert "has changed" in answer.body["message"]
    assert stored() == before
    assert api("GET", f"/jobs/{job_id}").body["name"] == "someone else's"


@pytest.mark.parametrize("action", list(ACTIONS))
def test_a_current_if_match_or_a_star_lets_the_change_through(
    api: Api, env: Resources, dynamodb: Any, action: str
) -> None:
    method, suffix, body = ACTIONS[action]
    for condition in ("current", "*"):
        job_id = dead_job(api, env, dynamodb) if action == "retry" else create(api, **LATER).body["id"]
        if action == "resume":
            api("POST", f"/jobs/{job_id}/pause")
        tag = api("GET", f"/jobs/{job_id}").headers["ETag"] if condition == "current" else "*"

        answer = api(method, f"/jobs/{job_id}{suffix}", body, headers={"If-Match": tag})

        assert answer.status == 200, (condition, answer.body)
        assert answer.headers["ETag"] == api("GET", f"/jobs/{job_id}").headers["ETag"]


def test_if_match_takes_a_list_and_compares_strongly(api: Api) -> None:
    job_id = create(api, **LATER).body["id"]

    weak = api("POST", f"/jobs/{job_id}/pause", headers={"If-Match": 'W/"0"'})
    listed = api("POST", f"/jobs/{job_id}/pause", headers={"If-Match": '"9", "0"'})

    assert weak.status == 412  # a weak tag never matches (RFC 9110, section 13.1.1)
    assert listed.status == 200


@pytest.mark.parametrize(
    "header", ["0", "'0'", '"0', "W/0", '"0" "1"', "", " ", '*, "0"', '"a b"', f'"{"0" * 1030}"']
)
def test_a_malformed_if_match_is_a_400_naming_it(api: Api, stored: Any, header: str) -> None:
    job_id = create(api, **LATER).body["id"]
    before = stored()

    answer = api("POST", f"/jobs/{job_id}/pause", headers={"If-Match": header})

    assert answer.status == 400, answer.body
    assert answer.body["field"] == "If-Match"
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert stored() == before


def test_if_match_on_a_job_that_does_not_exist_is_a_404(api: Api) -> None:
    answer = api("POST", "/jobs/01JD8ZQ3V6X4M7N2P5R8T1W9YB/pause", headers={"If-Match": "*"})

    assert answer.status == 404


# --- races: the job changes between the service's read and its write ---------------------------------


@pytest.fixture
def meanwhile(env: Resources, emulator: Emulator, aws: dict[str, Any]) -> Iterator[Callable[..., None]]:
    """Makes one change to a job's item just before the API's next write to it: what another caller
    (or the worker) could do between the service's read and its write. The change goes through a
    client of its own, so the hook does not see it."""
    other = boto3.client("dynamodb", **aws)
    hooked = clients.clients().dynamodb()
    registered: list[Callable[..., None]] = []

    def arm(job_id: str, change: str, values: dict[str, Any] | None = None) -> None:
        fired: list[bool] = []

        def before_write(params: dict[str, Any], **_: Any) -> None:
            if fired or job_id not in params.get("Key", {}).get(c.PARTITION_KEY, {}).get("S", ""):
                return
            fired.append(True)
            expression = f"{change}, #version = if_not_exists(#version, :zero) + :one"
            names = {f"#{name}": name for name in ("version", "name", "revision") if f"#{name}" in expression}
            other.update_item(
                TableName=env.table_name,
                Key=params["Key"],
                UpdateExpression=expression,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={":one": {"N": "1"}, ":zero": {"N": "0"}, **(values or {})},
            )

        hooked.meta.events.register("before-parameter-build.dynamodb.UpdateItem", before_write)
        registered.append(before_write)

    yield arm
    for hook in registered:
        hooked.meta.events.unregister("before-parameter-build.dynamodb.UpdateItem", hook)


def test_a_change_between_the_read_and_the_write_is_a_412_and_nothing_is_written(
    api: Api, stored: Any, meanwhile: Callable[..., None]
) -> None:
    made = create(api, **LATER)
    job_id = made.body["id"]
    # Another caller renames the job after this call read it: its revision moves on.
    meanwhile(job_id, "SET #name = :name, #revision = #revision + :one", {":name": {"S": "theirs"}})

    answer = invoke_api(api_event("PATCH", f"/jobs/{job_id}", {"name": "mine"}, headers={"If-Match": '"0"'}))

    assert answer.status == 412, answer.body
    [item] = job_items(stored)
    assert item["name"] == {"S": "theirs"}
    assert item["revision"] == {"N": "1"}  # their change alone: this call wrote nothing


def test_a_write_that_changes_nothing_the_client_sees_meanwhile_is_decided_again_and_applied(
    api: Api, stored: Any, meanwhile: Callable[..., None]
) -> None:
    made = create(api, **LATER)
    job_id = made.body["id"]
    # A write that moves only the item's version, as a heartbeat does: the tag still holds.
    meanwhile(job_id, "SET #revision = #revision")

    answer = invoke_api(api_event("PATCH", f"/jobs/{job_id}", {"name": "mine"}, headers={"If-Match": '"0"'}))

    assert answer.status == 200, answer.body
    assert answer.headers["ETag"] == '"1"'
    [item] = job_items(stored)
    assert item["name"] == {"S": "mine"}


# --- problem details -----------------------------------------------------------------------------------


def _problem(answer: Answer, status: int) -> dict[str, Any]:
    assert answer.status == status, answer.body
    assert answer.headers["Content-Type"] == "application/problem+json"
    body: dict[str, Any] = answer.body
    assert set(body) == PROBLEM_MEMBERS
    assert body["status"] == status
    assert body["type"] == "about:blank"
    assert body["title"] and body["detail"] == body["message"]
    return body


def test_every_kind_of_error_is_problem_details(api: Api) -> None:
    job_id = create(api, **LATER).body["id"]
    one_off = create(api, run_at="2099-01-01T00:00:00Z").body["id"]

    field = _problem(api("POST", "/jobs", {"target": NOOP, "schedule": "61 * * * *"}), 400)
    not_json = _problem(api("POST", "/jobs", raw_body="{"), 400)
    missing = _problem(api("GET", "/jobs/01JD8ZQ3V6X4M7N2P5R8T1W9YB"), 404)
    no_route = _problem(api("GET", "/nowhere"), 404)
    wrong_method = _problem(api("PUT", f"/jobs/{job_id}"), 405)
    conflict = _problem(api("POST", f"/jobs/{one_off}/pause"), 409)
    stale = _problem(api("POST", f"/jobs/{job_id}/pause", headers={"If-Match": '"7"'}), 412)
    too_large = _problem(api("POST", "/jobs", {"target": NOOP, "payload": "x" * 300_000}), 413)
    not_as_json = _problem(
        api("POST", "/jobs", raw_body="name=x", headers={"Content-Type": "text/plain"}), 415
    )

    assert (field["field"], field["title"]) == ("schedule", "Bad Request")
    assert not_json["field"] == "body"
    assert (missing["title"], no_route["title"]) == ("Not Found", "Not Found")
    assert wrong_method["title"] == "Method Not Allowed"
    assert conflict["title"] == "Conflict"
    assert stale["title"] == "Precondition Failed"
    assert (too_large["field"], too_large["title"]) == ("payload", HTTPStatus(413).phrase)
    assert not_as_json["field"] == "Content-Type"


def test_a_batch_item_refused_carries_problem_details_of_its_own_status(api: Api) -> None:
    answer = api("POST", "/jobs/batch", {"jobs": [{"target": NOOP}, {"name": "no target"}]})

    assert answer.status == 200
    refused = answer.body["results"][1]
    assert refused["status"] == 400
    assert set(refused["error"]) == PROBLEM_MEMBERS
    assert (refused["error"]["status"], refused["error"]["title"]) == (400, "Bad Request")
    assert refused["error"]["detail"] == refused["error"]["message"]


# --- the local gateway ----------------------------------------------------------------------------------


def test_the_local_gateway_carries_if_match_in_and_etag_out() -> None:
    seen: list[dict[str, Any]] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(event)
        return {"statusCode": 200, "headers": {"ETag": '"3"'}, "body": "{}"}

    response = Client(Gateway(handler, console=False)).post("/jobs/x/pause", headers={"If-Match": '"2"'})

    assert seen[0]["headers"]["If-Match"] == '"2"'
    assert response.headers["ETag"] == '"3"'


def test_the_local_gateways_own_errors_are_problem_details() -> None:
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("boom")

    client = Client(Gateway(handler, console=False))
    failed = client.get("/health")
    other_host = client.get("/health", headers={"Host": "elsewhere.example:8000"})
    foreign = client.options(
        "/jobs", headers={"Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST"}
    )

    for response, status in ((failed, 502), (other_host, 421), (foreign, 403)):
        assert response.status_code == status
        assert response.headers["Content-Type"] == "application/problem+json"
        assert set(response.get_json()) == PROBLEM_MEMBERS
        assert response.get_json()["status"] == status


# --- the client ---------------------------------------------------------------------------------------


def handler_transport(
    method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float
) -> ClientAnswer:
    """The client's requests served by the API handler in this process, as API Gateway serves them."""
    from sundial.functions.api import handler

    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query)) or None
    event = api_event(
        method, parts.path, headers=dict(headers), query=query, raw_body=body.decode() if body else None
    )
    result = handler(event, new_context("api", "us-east-1"))
    multi = {name: ", ".join(values) for name, values in (result.get("multiValueHeaders") or {}).items()}
    answered = {name.lower(): value for name, value in {**(result.get("headers") or {}), **multi}.items()}
    return ClientAnswer(int(result["statusCode"]), answered, (result.get("body") or "").encode())


@pytest.fixture
def client(env: Resources) -> SundialClient:
    return SundialClient(transport=handler_transport, retries=NO_RETRIES)


def test_the_client_reads_etags_and_a_stale_if_match_raises_precondition_failed(
    client: SundialClient,
) -> None:
    job = client.create_job({"target": NOOP, **LATER})
    client.update_job(job.id, {"name": "someone else's"})

    with pytest.raises(PreconditionFailed) as stale:
        client.pause_job(job.id, if_match=job.etag)
    current = client.get_job(job.id)
    paused = client.pause_job(job.id, if_match=current.etag)
    by_revision = client.update_job(job.id, {"name": "mine"}, if_match="2")  # quoted for the caller

    assert job.etag == '"0"'
    assert (stale.value.status, stale.value.field) == (412, "If-Match")
    assert "has changed" in stale.value.message
    assert (current.name, current.paused, current.etag) == ("someone else's", False, '"1"')
    assert (paused.paused, paused.etag) == (True, '"2"')
    assert (by_revision.name, by_revision.etag) == ("mine", '"3"')
    assert exit_code(stale.value) == STALE


@pytest.mark.parametrize("action", ["update", "cancel", "pause", "resume", "trigger", "retry"])
def test_every_change_of_the_client_takes_if_match(client: SundialClient, action: str) -> None:
    job = client.create_job({"target": NOOP, **LATER})
    client.update_job(job.id, {"name": "moved on"})
    calls: dict[str, Callable[[], Any]] = {
        "update": lambda: client.update_job(job.id, {"name": "x"}, if_match=job.etag),
        "cancel": lambda: client.cancel_job(job.id, if_match=job.etag),
        "pause": lambda: client.pause_job(job.id, if_match=job.etag),
        "resume": lambda: client.resume_job(job.id, if_match=job.etag),
        "trigger": lambda: client.trigger_job(job.id, if_match=job.etag),
        "retry": lambda: client.retry_job(job.id, if_match=job.etag),
    }

    with pytest.raises(PreconditionFailed):
        calls[action]()


def test_the_client_reads_message_and_field_from_problem_details(client: SundialClient) -> None:
    with pytest.raises(ClientInvalidInput) as refused:
        client.create_job({"target": NOOP, "schedule": "61 * * * *"})

    assert (refused.value.status, refused.value.field) == (400, "schedule")
    assert "minute" in refused.value.message
