"""The alert route through the handlers: what the API refuses (a 400 naming the field, nothing
stored), what it answers, and a dead occurrence's summary on an sqs route."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from sundial.contract.vocabulary import Priority
from sundial.functions import clients
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c
from tests.functions.conftest import Api
from tests.functions.test_worker import run, sqs_event, take

FAIL = {"type": "python", "handler": "fail"}
TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
HOOK = {
    "type": "http",
    "url": "https://alerts.example.com/hook",
    "headers": {"Authorization": "Bearer s3cret"},
}


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        (
            {
                "on_dead": {
                    "type": "lambda",
                    "function_arn": "arn:aws:lambda:us-east-1:123456789012:function:f",
                }
            },
            "on_dead",
        ),
        ({"on_dead": {"type": "sns", "topic_arn": "not-an-arn"}}, "on_dead.topic_arn"),
        ({"on_dead": {"type": "http", "url": "ftp://alerts.example.com/"}}, "on_dead.url"),
        ({"on_dead": {**HOOK, "method": "GET"}}, "on_dead.method"),
        ({"on_dead": {"type": "sns", "topic_arn": TOPIC}, "on_failure_streak": 3}, "on_failure_streak"),
        ({"schedule": "rate(1 hour)", "on_failure_streak": 3}, "on_failure_streak"),
        (
            {
                "schedule": "rate(1 hour)",
                "on_dead": {"type": "sns", "topic_arn": TOPIC},
                "on_failure_streak": 0,
            },
            "on_failure_streak",
        ),
        (
            {
                "schedule": "rate(1 hour)",
                "on_dead": {"type": "sns", "topic_arn": TOPIC},
                "on_failure_streak": True,
            },
            "on_failure_streak",
        ),
    ],
)
def test_a_bad_alert_route_is_refused_naming_its_field(
    api: Api, stored: Any, fields: dict[str, Any], field: str
) -> None:
    before = len(stored())

    answer = api("POST", "/jobs", {"target": FAIL, **fields})

    assert (answer.status, answer.body["field"]) == (400, field), answer.body
    assert len(stored()) == before


def test_the_own_queues_are_no_route(api: Api, env: Resources) -> None:
    route = {"type": "sqs", "queue_url": env.dead_letter_queue_url}

    answer = api("POST", "/jobs", {"target": FAIL, "on_dead": route})

    assert (answer.status, answer.body["field"]) == (400, "on_dead.queue_url"), answer.body


def test_a_route_is_answered_masked_stored_sealed_and_changed_by_patch(api: Api, stored: Any) -> None:
    created = api("POST", "/jobs", {"target": FAIL, "schedule": "rate(1 hour)", "on_dead": HOOK})
    assert created.status == 201, created.body
    job_id = created.body["id"]
    assert created.body["on_dead"]["headers"] == {"Authorization": "***"}
    assert "s3cret" not in json.dumps(stored())

    streak = api("PATCH", f"/jobs/{job_id}", {"on_failure_streak": 2})
    assert (streak.status, streak.body["on_failure_streak"]) == (200, 2), streak.body
    one_off = api("PATCH", f"/jobs/{job_id}", {"run_at": "2099-01-01T00:00:00Z"})
    assert (one_off.status, one_off.body["field"]) == (400, "on_failure_streak")
    removed = api("PATCH", f"/jobs/{job_id}", {"on_dead": None, "on_failure_streak": None})
    assert (removed.status, removed.body["on_dead"], removed.body["on_failure_streak"]) == (200, None, None)


def test_a_dead_occurrence_s_summary_reaches_an_sqs_route(
    api: Api, env: Resources, sqs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(c.ENV_ALLOW_PRIVATE_TARGETS, "true")  # the emulator's queue is on loopback
    clients.reset()
    route_url = sqs.create_queue(QueueName=f"route-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    created = api(
        "POST",
        "/jobs",
        {
            "name": "reports",
            "target": FAIL,
            "max_retries": 0,
            "on_dead": {"type": "sqs", "queue_url": route_url},
        },
    )
    assert created.status == 201, created.body
    [body] = take(sqs, env.queue_urls[Priority.MEDIUM])

    run(sqs_event(body))

    [message] = take(sqs, route_url)
    summary = json.loads(message)
    [last] = api("GET", f"/jobs/{created.body['id']}/runs").body["runs"]
    assert {k: summary[k] for k in ("job_id", "name", "scheduled_at", "attempts", "trace_id")} == {
        "job_id": created.body["id"],
        "name": "reports",
        "scheduled_at": last["scheduled_at"],
        "attempts": 1,
        "trace_id": last["trace_id"],
    }
    assert summary["error"] == last["error"] and summary["consecutive_failures"] == 1
    assert take(sqs, env.dead_letter_queue_url) != []  # the stack's alert too
