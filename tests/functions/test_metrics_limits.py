"""Waits per limit key: the worker publishes LimitWaitMs and LimitHeldBack with the key as a dimension
besides its stack's, the series the dashboard's SEARCH and the wait alarm's query read
(tests/infra/test_limit_alarms.py checks their side)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sundial.contract.vocabulary import Priority
from sundial.functions import clients, worker
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c
from sundial.shared.dispatch import JobMessage
from tests.functions.conftest import api_event, invoke_api
from tests.functions.test_worker import create, job, sqs_event, take
from tests.functions.test_worker import run as run_worker

STACK = "Sundial-staging"
KEY = "payments-api"
KEYED_DIMENSIONS = {"service", c.METRICS_STACK_DIMENSION, c.METRICS_LIMIT_KEY_DIMENSION}
# How long the second delivery claims its occurrence has waited: far beyond the test's own run time.
CLAIMED_WAIT_MS = 400_000


@pytest.fixture
def staging(env: Resources, monkeypatch: pytest.MonkeyPatch) -> Iterator[Resources]:
    monkeypatch.setenv(c.ENV_STACK_NAME, STACK)
    clients.reset()
    yield env
    # The worker's Metrics object lives as long as the module: leave no stack on it for other tests.
    worker.metrics.clear_default_dimensions()
    worker.metrics.clear_metrics()


def _keyed_lines(stdout: str) -> list[dict[str, Any]]:
    """The EMF blobs that name a limit key, each checked to be one whole line of its own."""
    found = []
    for line in stdout.splitlines():
        if '"_aws"' not in line or c.METRICS_LIMIT_KEY_DIMENSION not in line:
            continue
        blob: dict[str, Any] = json.loads(line)
        [directive] = blob["_aws"]["CloudWatchMetrics"]
        [names] = directive["Dimensions"]
        assert set(names) == KEYED_DIMENSIONS, names
        assert directive["Namespace"] == c.METRICS_NAMESPACE
        found.append(blob)
    return found


def _values(blobs: list[dict[str, Any]], metric: c.Metric) -> list[float]:
    values: list[float] = []
    for blob in blobs:
        units = {m["Name"]: m["Unit"] for m in blob["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
        if metric.value in units:
            expected = "Milliseconds" if metric is c.Metric.LIMIT_WAIT_MS else "Count"
            assert units[metric.value] == expected
            value = blob[metric.value]
            values.extend(value if isinstance(value, list) else [value])
    return values


def _limit(key: str, **fields: Any) -> None:
    answer = invoke_api(api_event("PUT", f"/limits/{key}", fields))
    assert answer.status in (200, 201), answer.body


def _held_again(sqs: Any, url: str, job_id: str) -> str:
    """The message a hold sent back for later (a second or so of SQS delay)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        for message in batch.get("Messages", []):
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            if json.loads(message["Body"])["job_id"] == job_id:
                return str(message["Body"])
    raise AssertionError(f"no message came back for job {job_id}")


def test_a_held_delivery_and_the_start_after_it_are_published_under_the_key(
    staging: Resources, sqs: Any, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _limit(KEY, max_concurrent=1)
    busy, waiting = create(limit_key=KEY), create(limit_key=KEY)
    bodies = {json.loads(b)["job_id"]: b for b in take(sqs, staging.queue_urls[Priority.MEDIUM])}
    running, release = threading.Event(), threading.Event()
    deliver = worker._deliver

    def hold_the_slot(job: Any, delivery: Any, limit_seconds: float) -> None:
        if job.id == busy:
            running.set()
            release.wait(20)
        else:
            deliver(job, delivery, limit_seconds)

    monkeypatch.setattr(worker, "_deliver", hold_the_slot)
    # The busy job's invocation holds the key's one slot while the other's is held back.
    first = threading.Thread(target=run_worker, args=(sqs_event(bodies[busy]),))
    first.start()
    try:
        assert running.wait(20)
        capfd.readouterr()
        assert run_worker(sqs_event(bodies[waiting])) == {"batchItemFailures": []}
        held = _keyed_lines(capfd.readouterr().out)
    finally:
        release.set()
        first.join(30)

    assert len(held) == 1  # one line, whole, for the one hold
    [blob] = held
    assert (blob[c.METRICS_LIMIT_KEY_DIMENSION], blob[c.METRICS_STACK_DIMENSION]) == (KEY, STACK)
    assert blob["service"] == c.METRICS_SERVICE
    assert _values(held, c.Metric.LIMIT_HELD_BACK) == [1]
    assert _values(held, c.Metric.LIMIT_WAIT_MS) == [0]  # its first hold: the wait starts here

    # Its next look, as if it had first been held CLAIMED_WAIT_MS ago: the slot is free now.
    again = JobMessage.model_validate_json(_held_again(sqs, staging.queue_urls[Priority.MEDIUM], waiting))
    assert again.held_since is not None and again.holds == 1
    longer = again.model_copy(update={"held_since": again.held_since - CLAIMED_WAIT_MS})
    capfd.readouterr()
    assert run_worker(sqs_event(longer.model_dump_json())) == {"batchItemFailures": []}

    assert job(waiting)["status"] == "succeeded"
    started = _keyed_lines(capfd.readouterr().out)
    assert _values(started, c.Metric.LIMIT_HELD_BACK) == []
    [wait] = _values(started, c.Metric.LIMIT_WAIT_MS)
    assert CLAIMED_WAIT_MS <= wait < CLAIMED_WAIT_MS + 60_000
    named = {(blob[c.METRICS_LIMIT_KEY_DIMENSION], blob[c.METRICS_STACK_DIMENSION]) for blob in started}
    assert named == {(KEY, STACK)}


def test_an_attempt_that_waited_on_no_key_publishes_nothing_per_key(
    staging: Resources, sqs: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    _limit(KEY, max_concurrent=5)
    keyed, plain = create(limit_key=KEY), create()
    bodies = take(sqs, staging.queue_urls[Priority.MEDIUM])
    capfd.readouterr()

    assert run_worker(sqs_event(*bodies)) == {"batchItemFailures": []}

    assert job(keyed)["status"] == job(plain)["status"] == "succeeded"
    # Neither waited: a key that let its occurrence straight through has no wait to tell.
    assert _keyed_lines(capfd.readouterr().out) == []
