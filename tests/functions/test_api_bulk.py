"""POST /jobs/batch and POST/GET /jobs/actions through the api handler, as API Gateway calls it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from sundial.contract.vocabulary import Priority
from sundial.functions import clients
from sundial.functions.scheduler import handler as tick
from sundial.local_stack.lambda_context import new_context
from sundial.shared.clock import SystemClock, format_rfc3339
from tests.functions.conftest import Api, load_event

NOOP = {"type": "python", "handler": "noop"}
LATER = {"schedule": "rate(1 day)", "start_at": "2099-01-01T00:00:00Z"}


def _job(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "target": NOOP, **LATER, **fields}


def _names(api: Api, **query: str) -> list[str]:
    answer = api("GET", "/jobs", query={"limit": "100", **query})
    assert answer.status == 200
    return sorted(job["name"] for job in answer.body["jobs"])


def test_a_batch_answers_each_item_in_order_and_a_bad_item_refuses_only_itself(api: Api) -> None:
    jobs = [
        _job("first", idempotency_key="k-1"),
        _job("bad", target={"type": "http", "url": "ftp://example.com"}),
        {"name": "no-target"},
        "not an object",
        _job("last"),
    ]
    answer = api("POST", "/jobs/batch", {"jobs": jobs})

    assert answer.status == 200
    results = answer.body["results"]
    assert [r["index"] for r in results] == [0, 1, 2, 3, 4]
    assert [r["status"] for r in results] == [201, 400, 400, 400, 201]
    assert results[0]["job"]["name"] == "first" and results[4]["job"]["name"] == "last"
    assert results[1]["error"]["field"] == "jobs[1].target.url"
    assert results[2]["error"]["field"] == "jobs[2].target"
    assert results[3]["error"]["field"] == "jobs[3]"
    assert (answer.body["created"], answer.body["existing"], answer.body["refused"]) == (2, 0, 3)
    assert _names(api) == ["first", "last"]


def test_a_repeated_batch_answers_the_jobs_its_keys_made(api: Api) -> None:
    jobs = [_job("a", idempotency_key="batch-a"), _job("b", idempotency_key="batch-b")]
    first = api("POST", "/jobs/batch", {"jobs": jobs}).body
    changed = [jobs[0], {**jobs[1], "name": "b2"}]
    again = api("POST", "/jobs/batch", {"jobs": changed}).body

    assert [r["status"] for r in again["results"]] == [200, 409]
    assert again["results"][0]["job"]["id"] == first["results"][0]["job"]["id"]
    assert again["results"][1]["error"]["field"] == "jobs[1].idempotency_key"
    assert _names(api) == ["a", "b"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"jobs": [_job(f"j{i}") for i in range(101)]}, "jobs"),
        ({"jobs": []}, "jobs"),
        ({"jobs": {"name": "x"}}, "jobs"),
        ({"jobs": "x"}, "jobs"),
        ({}, "jobs"),
        ([_job("in-a-list")], "body"),
        ({"jobs": [_job("x")], "extra": 1}, "extra"),
    ],
    ids=["101 items", "none", "an object", "a string", "no jobs", "a bare list", "an unknown member"],
)
def test_a_batch_that_is_not_a_list_of_up_to_100_is_refused_whole(api: Api, body: Any, field: str) -> None:
    answer = api("POST", "/jobs/batch", body)
    assert answer.status == 400, answer.body
    assert answer.body["field"] == field
    assert _names(api) == []


class _Raw:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data


def _throttle_puts_of(name: str) -> Any:
    """Every PutItem of the job named `name` answered ThrottlingException, unapplied, past the
    SDK's own retries: a table over its throughput."""

    def before_send(request: Any, **_: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        target = target.decode() if isinstance(target, bytes) else target
        if not target.endswith(".PutItem") or json.loads(request.body)["Item"].get("name") != {"S": name}:
            return None
        body = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException"})
        return AWSResponse(request.url, 400, {"x-amzn-ErrorType": "ThrottlingException"}, _Raw(body.encode()))

    return before_send


def test_a_throttled_item_is_a_429_to_send_again_and_the_items_made_stand(api: Api) -> None:
    """The request is no 5xx: the items made are answered as made, the throttled one and any not yet
    begun are 429s naming their index, and sending those again with their keys makes each once."""
    assert api("GET", "/jobs").status == 200  # the api's clients built, to hook the table's
    hook = _throttle_puts_of("busy")
    dynamodb = clients.clients().dynamodb()
    dynamodb.meta.events.register("before-send.dynamodb", hook)
    jobs = [_job(f"job-{n}", idempotency_key=f"key-{n}") for n in range(20)]
    jobs[3] = _job("busy", idempotency_key="key-busy")
    try:
        answer = api("POST", "/jobs/batch", {"jobs": jobs})
    finally:
        dynamodb.meta.events.unregister("before-send.dynamodb", hook)

    assert answer.status == 200, answer.body
    results = answer.body["results"]
    statuses = {r["index"]: r["status"] for r in results}
    assert statuses[3] == 429 and set(statuses.values()) <= {201, 429}
    assert results[3]["error"]["field"] == "jobs[3]"
    assert "throttling" in results[3]["error"]["message"]
    made = sorted(jobs[i]["name"] for i, status in statuses.items() if status == 201)
    assert _names(api) == made
    again = [jobs[i] for i, status in statuses.items() if status == 429]
    resent = api("POST", "/jobs/batch", {"jobs": again}).body
    assert [r["status"] for r in resent["results"]] == [201] * len(again)
    assert _names(api) == sorted(job["name"] for job in jobs)


def test_an_item_key_of_the_wrong_kind_refuses_its_item(api: Api) -> None:
    answer = api("POST", "/jobs/batch", {"jobs": [_job("a", idempotency_key=7), _job("b")]})
    assert [r["status"] for r in answer.body["results"]] == [400, 201]
    assert answer.body["results"][0]["error"]["field"] == "jobs[0].idempotency_key"


def test_a_bulk_action_by_filter_acts_on_the_matches_and_records_who(api: Api) -> None:
    jobs = [_job(f"drop-{i}") for i in range(5)] + [_job(f"stay-{i}") for i in range(3)]
    assert api("POST", "/jobs/batch", {"jobs": jobs}).body["created"] == 8

    answer = api("POST", "/jobs/actions", {"action": "pause", "filter": {"name_prefix": "drop-"}})

    assert answer.status == 202, answer.body
    operation = answer.body
    assert answer.headers["Location"] == f"/v1/jobs/actions/{operation['id']}"
    assert (operation["state"], operation["done"], operation["refused"], operation["left"]) == (
        "done",
        5,
        0,
        0,
    )
    identity = load_event("apigw_create_job.json")["requestContext"]["identity"]
    assert operation["who"] == identity["userArn"]
    listed = api("GET", "/jobs", query={"limit": "100"}).body["jobs"]
    assert sorted(job["name"] for job in listed if job["paused"]) == [f"drop-{i}" for i in range(5)]
    again = api("GET", f"/jobs/actions/{operation['id']}")
    assert again.status == 200 and again.body == operation


def test_a_bulk_action_by_ids_reports_each_refusal(api: Api) -> None:
    made = api("POST", "/jobs/batch", {"jobs": [_job("r"), _job("once", schedule=None, start_at=None)]})
    recurring, one_off = (result["job"]["id"] for result in made.body["results"])

    answer = api("POST", "/jobs/actions", {"action": "retry", "ids": [recurring, one_off]})

    assert answer.status == 202
    assert (answer.body["done"], answer.body["refused"]) == (0, 2)
    assert {refusal["job_id"] for refusal in answer.body["refusals"]} == {recurring, one_off}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "explode", "ids": ["01JD0000000000000000000000"]}, "action"),
        ({"action": "cancel"}, "filter"),
        ({"action": "cancel", "filter": {}, "ids": ["01JD0000000000000000000000"]}, "filter"),
        ({"action": "cancel", "filter": {"status": "asleep"}}, "filter.status"),
        ({"action": "cancel", "filter": {"name_prefix": "ab"}}, "filter.name_prefix"),
        ({"action": "cancel", "filter": {"name": "x"}}, "filter.name"),
        ({"action": "cancel", "ids": []}, "ids"),
        ({"action": "cancel", "ids": ["01JD0000000000000000000000", "x" * 5000]}, "ids[1]"),
        ({"action": "cancel", "ids": "01JD0000000000000000000000"}, "ids"),
    ],
)
def test_a_bad_bulk_action_is_a_400_naming_its_field(api: Api, body: Any, field: str) -> None:
    answer = api("POST", "/jobs/actions", body)
    assert answer.status == 400, answer.body
    assert answer.body["field"] == field


def test_an_unknown_operation_is_a_404_and_a_malformed_id_a_400(api: Api) -> None:
    assert api("GET", "/jobs/actions/01JD0000000000000000000000").status == 404
    answer = api("GET", "/jobs/actions/nope")
    assert answer.status == 400 and answer.body["field"] == "operation_id"


def test_the_tick_finishes_what_the_api_started(api: Api) -> None:
    for start in (0, 100):
        jobs = [_job(f"many-{n}") for n in range(start, start + 100)]
        assert api("POST", "/jobs/batch", {"jobs": jobs}).body["created"] == 100
    started = api("POST", "/jobs/actions", {"action": "trigger", "filter": {"name_prefix": "many-"}}).body
    assert (started["state"], started["done"], started["left"]) == ("running", 100, 100)

    tick(load_event("eventbridge_scheduled.json"), new_context("scheduler", "us-east-1"))

    finished = api("GET", f"/jobs/actions/{started['id']}").body
    assert (finished["state"], finished["done"], finished["refused"], finished["left"]) == ("done", 200, 0, 0)
    assert clients.store().running_operations() == []
    listed = api("GET", "/jobs", query={"limit": "100", "name_prefix": "many-"}).body["jobs"]
    assert {job["status"] for job in listed} == {"queued"}


def test_a_create_the_table_throttles_is_a_503_to_send_again_and_makes_nothing(api: Api) -> None:
    """Not a 500 "internal error": the answer says the table is busy and when to come back, and the
    same create sent again, with its key, makes the job once."""
    assert api("GET", "/jobs").status == 200
    hook = _throttle_puts_of("busy")
    dynamodb = clients.clients().dynamodb()
    dynamodb.meta.events.register("before-send.dynamodb", hook)
    try:
        answer = api("POST", "/jobs", _job("busy"), headers={"Idempotency-Key": "busy-1"})
    finally:
        dynamodb.meta.events.unregister("before-send.dynamodb", hook)

    assert answer.status == 503, answer.body
    assert answer.headers["Retry-After"] == "1"
    assert "throttling" in answer.body["message"]
    assert _names(api) == []
    again = api("POST", "/jobs", _job("busy"), headers={"Idempotency-Key": "busy-1"})
    assert again.status == 201, again.body
    assert _names(api) == ["busy"]


def _delayed(api: Api) -> int:
    medium = clients.settings().queue_urls[Priority.MEDIUM]
    attributes = (
        clients.clients()
        .sqs()
        .get_queue_attributes(QueueUrl=medium, AttributeNames=["ApproximateNumberOfMessagesDelayed"])[
            "Attributes"
        ]
    )
    return int(attributes["ApproximateNumberOfMessagesDelayed"])


def _sends_counted(counted: list[int], fail: bool = False) -> Any:
    """Counts the api's SendMessageBatch requests; with `fail`, answers each a 500 unsent."""

    def before_send(request: Any, **_: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        target = target.decode() if isinstance(target, bytes) else target
        if not target.endswith(".SendMessageBatch"):
            return None
        counted.append(len(json.loads(request.body)["Entries"]))
        if not fail:
            return None
        body = json.dumps({"__type": "com.amazonaws.sqs#InternalError", "message": "unavailable"})
        return AWSResponse(
            request.url, 500, {"x-amzn-query-error": "InternalError;Receiver"}, _Raw(body.encode())
        )

    return before_send


def _due_in_a_minute(n: int) -> dict[str, Any]:
    run_at = format_rfc3339(SystemClock().now_ms() + 60_000 + n * 10)
    return {"name": f"soon-{n:03}", "target": NOOP, "run_at": run_at}


def _batch_counting_sends(api: Api, jobs: int, fail: bool = False) -> tuple[Any, list[int]]:
    """POST /jobs/batch of `jobs` one-offs due in a minute; its answer and the entries of each of
    the api's SendMessageBatch requests (each answered a 500 with `fail`)."""
    assert api("GET", "/jobs").status == 200  # the api's clients built, to hook the queues'
    sent: list[int] = []
    hook = _sends_counted(sent, fail)
    sqs = clients.clients().sqs()
    sqs.meta.events.register("before-send.sqs", hook)
    try:
        return api("POST", "/jobs/batch", {"jobs": [_due_in_a_minute(n) for n in range(jobs)]}), sent
    finally:
        sqs.meta.events.unregister("before-send.sqs", hook)


def test_a_batch_s_messages_go_ten_to_a_request(api: Api) -> None:
    answer, sent = _batch_counting_sends(api, 100)

    assert answer.body["created"] == 100
    assert sent == [10] * 10  # 100 messages in 10 requests, not 100
    assert _delayed(api) == 100
    listed = api("GET", "/jobs", query={"limit": "100", "name_prefix": "soon-"}).body["jobs"]
    assert [job["status"] for job in listed] == ["queued"] * 100


def test_a_batch_s_messages_that_could_not_be_sent_are_left_to_the_next_tick(api: Api) -> None:
    answer, sent = _batch_counting_sends(api, 25, fail=True)
    assert answer.body["created"] == 25 and sent and _delayed(api) == 0

    tick(load_event("eventbridge_scheduled.json"), new_context("scheduler", "us-east-1"))

    assert _delayed(api) == 25  # each released job resent by the tick, none lost
