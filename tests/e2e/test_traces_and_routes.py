"""Traces and alert routes on `sundial local`: an http target receives the traceparent of the create
that scheduled it, and its retry the same trace with a span of its own; a job's http route hears of
its dead occurrence once, signed, and of a failure streak once, at its length."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from standardwebhooks.webhooks import Webhook

from sundial.shared import constants as c
from sundial.shared import tracing
from tests.e2e.api import wait_until
from tests.e2e.conftest import Stack
from tests.support.receivers import Received, Receiver

pytestmark = pytest.mark.e2e

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"


def test_the_create_s_trace_reaches_each_attempt_with_a_new_span(stack: Stack, receiver: Receiver) -> None:
    body = {
        "name": "traced",
        "target": {"type": "http", "url": receiver.url("/fail")},
        "max_retries": 1,
        "backoff": [1],
    }
    status, job = stack.api.call(
        "POST", "/jobs", body, headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"}
    )
    assert status == 201, job

    stack.api.wait_for_status(job["id"], {"dead"}, timeout=60)

    parents = [tracing.parse(sent.headers.get("traceparent")) for sent in receiver.received]
    assert [parent.trace_id if parent else None for parent in parents] == [TRACE_ID, TRACE_ID]
    spans = [parent.span_id for parent in parents if parent]
    assert len(set(spans)) == 2 and CALLER_SPAN not in spans
    runs = stack.api.runs(job["id"])
    assert [(run["attempt"], run["trace_id"]) for run in runs] == [(2, TRACE_ID), (1, TRACE_ID)]


def test_an_alert_route_gets_a_dead_occurrence_s_summary_once_signed(
    stack: Stack, receiver: Receiver
) -> None:
    aws = {"endpoint_url": stack.endpoint_url, "region_name": "us-east-1"}
    signing = boto3.client("secretsmanager", **aws).get_secret_value(SecretId=c.SIGNING_SECRET_NAME)
    job = stack.api.create(
        name="routed",
        target={"type": "http", "url": receiver.url("/fail")},
        max_retries=1,
        backoff=[1],
        on_dead={"type": "http", "url": receiver.url("/alert")},
    )

    stack.api.wait_for_status(job["id"], {"dead"}, timeout=60)
    wait_until(lambda: _alerts(receiver), 30, "the route heard of nothing")
    time.sleep(2)  # a second alert would come from the same worker, right after the first

    [alert] = _alerts(receiver)
    summary = Webhook(signing["SecretString"]).verify(alert.body, alert.headers)
    [last, _] = stack.api.runs(job["id"])
    assert summary == {
        "kind": "dead",
        "job_id": job["id"],
        "name": "routed",
        "scheduled_at": last["scheduled_at"],
        "attempts": 2,
        "error": last["error"],
        "consecutive_failures": 1,
        "trace_id": last["trace_id"],
    }


def test_a_failure_streak_is_heard_of_once_at_its_length(stack: Stack, receiver: Receiver) -> None:
    job = stack.api.create(
        name="streaky",
        schedule="rate(2 seconds)",
        target={"type": "http", "url": receiver.url("/fail")},
        max_retries=0,
        on_dead={"type": "http", "url": receiver.url("/alert")},
        on_failure_streak=3,
    )

    wait_until(lambda: stack.api.job(job["id"])["consecutive_failures"] >= 5, 60, "fewer than 5 deaths")
    stack.api.call("DELETE", f"/jobs/{job['id']}")
    time.sleep(2)

    [alert] = _alerts(receiver)
    assert json.loads(alert.body)["consecutive_failures"] == 3


def _alerts(receiver: Receiver) -> list[Received]:
    return [sent for sent in receiver.received if sent.path == "/alert"]
