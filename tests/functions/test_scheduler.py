"""The scheduler handler driven with the EventBridge scheduled event: one tick per event."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest
from pydantic import ValidationError

from sundial.contract.jobs import JobCreate
from sundial.contract.vocabulary import JobStatus, Priority
from sundial.functions import clients
from sundial.functions.scheduler import handler
from sundial.local_stack.lambda_context import new_context
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c
from sundial.shared.clock import FixedClock, format_rfc3339
from sundial.shared.service.service import JobService
from sundial.shared.store import items
from tests.functions.conftest import emf_metrics, load_event

SECOND = 1000


def overdue_job(late_ms: int) -> str:
    """A one-off job created ten minutes ago to run `late_ms` ago, which no tick has claimed yet."""
    now = int(time.time() * SECOND)
    clock = FixedClock(now - 600 * SECOND)
    service = JobService(clients.store(), clients.dispatcher(), clock, allow_private_targets=False)
    spec = JobCreate.model_validate(
        {"target": {"type": "python", "handler": "noop"}, "run_at": format_rfc3339(now - late_ms)}
    )
    view, _ = service.create(spec)
    assert view.status is JobStatus.PENDING
    return view.id


def test_a_tick_claims_and_dispatches_what_is_due(
    env: Resources, sqs: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    job_id = overdue_job(late_ms=90 * SECOND)  # past the misfire grace: claimed, not sent as it is

    result = handler(load_event("eventbridge_scheduled.json"), new_context("scheduler", "us-east-1"))

    assert result == {"claimed": 1, "reclaimed": 0, "dispatched": 1}
    assert clients.store().get(job_id).status is JobStatus.QUEUED
    [message] = sqs.receive_message(QueueUrl=env.queue_urls[Priority.MEDIUM])["Messages"]
    assert json.loads(message["Body"])["job_id"] == job_id
    metrics = emf_metrics(capfd.readouterr().out)
    assert metrics[c.Metric.CLAIMED] == 1
    assert metrics[c.Metric.DISPATCHED] == 1
    assert metrics[c.Metric.OLDEST_DUE_LATENESS_MS] >= 30 * SECOND
    # Only what happened is published: nothing was reclaimed and nothing died.
    assert c.Metric.RECLAIMED not in metrics
    assert c.Metric.DEAD not in metrics


def test_an_idle_tick_publishes_no_custom_metric(env: Resources, capfd: pytest.CaptureFixture[str]) -> None:
    # Each custom metric with a value in an hour is billed for it: an idle stage's ticks keep none.
    result = handler(load_event("eventbridge_scheduled.json"), new_context("scheduler", "us-east-1"))

    assert result == {"claimed": 0, "reclaimed": 0, "dispatched": 0}
    assert emf_metrics(capfd.readouterr().out) == {}


def test_a_tick_without_time_left_claims_nothing(env: Resources) -> None:
    job_id = overdue_job(late_ms=5 * SECOND)

    # Less time left than the safety margin: the deadline has already passed.
    result = handler(
        load_event("eventbridge_scheduled.json"),
        replace(new_context("scheduler", "us-east-1"), timeout_seconds=2),
    )

    assert result == {"claimed": 0, "reclaimed": 0, "dispatched": 0}
    assert clients.store().get(job_id).status is JobStatus.PENDING


def test_a_claimer_event_takes_only_the_shards_it_names(env: Resources) -> None:
    job_id = overdue_job(late_ms=90 * SECOND)
    shard = items.shard_number(job_id)
    context = new_context("scheduler", "us-east-1")

    elsewhere = handler({"shards": [(shard + 1) % c.DUE_SHARDS]}, context)
    assert elsewhere == {"claimed": 0, "reclaimed": 0, "dispatched": 0}
    assert handler({"shards": [shard]}, context) == {"claimed": 1, "reclaimed": 0, "dispatched": 1}
    assert clients.store().get(job_id).status is JobStatus.QUEUED


def test_a_claimer_event_without_shards_is_refused(env: Resources) -> None:
    with pytest.raises(ValidationError, match="shards"):
        handler({"shards": []}, new_context("scheduler", "us-east-1"))
