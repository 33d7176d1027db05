"""Traces through the handlers: the API's traceparent in the queue message, each attempt's delivery
and its history row; X-Ray is off here, and the code paths that annotate run all the same."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sundial.contract.vocabulary import Priority
from sundial.local_stack.resources import Resources
from sundial.shared import tracing
from sundial.shared.targets import Delivery, python_handler
from tests.functions.conftest import api_event, invoke_api
from tests.functions.test_worker import run, sqs_event, take

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0736aa"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_SPAN}-01"
delivered: list[Delivery] = []


@python_handler("tests.traced-failure")
def _traced_failure(delivery: Delivery) -> None:
    delivered.append(delivery)
    raise RuntimeError("refused")


@pytest.fixture(autouse=True)
def _fresh() -> None:
    delivered.clear()


def create(headers: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    body = {"target": {"type": "python", "handler": "tests.traced-failure"}, "backoff": [0], **fields}
    answer = invoke_api(api_event("POST", "/jobs", body, headers=headers))
    assert answer.status == 201, answer.body
    return dict(answer.body)


def test_every_attempt_carries_the_create_s_trace_with_a_span_of_its_own(env: Resources, sqs: Any) -> None:
    job = create({"traceparent": TRACEPARENT}, max_retries=1)
    [first] = take(sqs, env.queue_urls[Priority.MEDIUM])
    assert json.loads(first)["traceparent"] == TRACEPARENT

    run(sqs_event(first))
    [second] = take(sqs, env.queue_urls[Priority.MEDIUM])  # the retry, dispatched by the settle
    run(sqs_event(second))

    parents = [tracing.parse(delivery.traceparent) for delivery in delivered]
    assert [(p.trace_id if p else None) for p in parents] == [TRACE_ID, TRACE_ID]
    spans = {p.span_id for p in parents if p}
    assert len(spans) == 2 and CALLER_SPAN not in spans
    runs = invoke_api(api_event("GET", f"/jobs/{job['id']}/runs")).body["runs"]
    assert [(r["attempt"], r["trace_id"]) for r in runs] == [(2, TRACE_ID), (1, TRACE_ID)]


@pytest.mark.parametrize(
    "header",
    [
        "not a traceparent",
        f"ff-{TRACE_ID}-{CALLER_SPAN}-01",
        f"00-{'0' * 32}-{CALLER_SPAN}-01",
        f"00-{TRACE_ID}-{'0' * 16}-01",
        f"00-{TRACE_ID.upper()}-{CALLER_SPAN}-01",
    ],
)
def test_a_malformed_traceparent_is_ignored_and_a_trace_started(
    env: Resources, sqs: Any, header: str
) -> None:
    create({"traceparent": header}, max_retries=0)
    [body] = take(sqs, env.queue_urls[Priority.MEDIUM])

    started = tracing.parse(json.loads(body)["traceparent"])

    assert started is not None and started.trace_id != TRACE_ID


def test_a_trigger_s_trace_goes_with_the_run_it_schedules(env: Resources, sqs: Any) -> None:
    job = create({"traceparent": TRACEPARENT}, schedule="rate(1 day)", max_retries=0)
    other = f"00-{'ab' * 16}-{CALLER_SPAN}-01"

    answer = invoke_api(api_event("POST", f"/jobs/{job['id']}/trigger", headers={"traceparent": other}))

    assert answer.status == 200, answer.body
    [body] = take(sqs, env.queue_urls[Priority.MEDIUM])
    run(sqs_event(body))
    assert tracing.trace_id_of(delivered[0].traceparent) == "ab" * 16


def test_a_batch_create_s_trace_goes_with_each_job(env: Resources, sqs: Any) -> None:
    jobs = [{"target": {"type": "python", "handler": "noop"}} for _ in range(2)]

    answer = invoke_api(
        api_event("POST", "/jobs/batch", {"jobs": jobs}, headers={"traceparent": TRACEPARENT})
    )

    assert [item["status"] for item in answer.body["results"]] == [201, 201]
    bodies = take(sqs, env.queue_urls[Priority.MEDIUM])
    assert [json.loads(body)["traceparent"] for body in bodies] == [TRACEPARENT, TRACEPARENT]
