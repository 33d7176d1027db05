"""The handlers themselves publish every metric under their stack's name, the series their stage's
alarms read (tests/infra/test_stages_isolated.py checks the alarms' side)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from sundial.contract.vocabulary import Priority
from sundial.functions import clients, scheduler, worker
from sundial.local_stack.lambda_context import new_context
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c
from tests.functions.conftest import load_event
from tests.functions.test_scheduler import SECOND, overdue_job
from tests.functions.test_worker import create, sqs_event, take
from tests.functions.test_worker import run as run_worker

STACK = "Sundial-staging"


@pytest.fixture
def staging(env: Resources, monkeypatch: pytest.MonkeyPatch) -> Iterator[Resources]:
    monkeypatch.setenv(c.ENV_STACK_NAME, STACK)
    clients.reset()
    yield env
    # The handlers' Metrics objects live as long as the module: leave no stack on them for other tests.
    # Clearing the defaults leaves them in the dimensions the last flush set up again: clear those too.
    for handler_module in (scheduler, worker):
        handler_module.metrics.clear_default_dimensions()
        handler_module.metrics.clear_metrics()


def _published_dimensions(stdout: str) -> list[dict[str, str]]:
    published = []
    for line in stdout.splitlines():
        if '"_aws"' in line:
            blob = json.loads(line)
            [names] = blob["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
            published.append({name: blob[name] for name in names})
    return published


def _all_under_the_stack(published: list[dict[str, str]]) -> bool:
    return bool(published) and all(
        dimensions == {"service": c.METRICS_SERVICE, c.METRICS_STACK_DIMENSION: STACK}
        for dimensions in published
    )


# Each handler alone, as in its own function: Powertools' Metrics objects share their default
# dimensions within a process, so one handler's call would name the stack on the other's metrics.


def test_the_tick_publishes_under_its_stack(staging: Resources, capfd: pytest.CaptureFixture[str]) -> None:
    overdue_job(late_ms=90 * SECOND)

    scheduler.handler(load_event("eventbridge_scheduled.json"), new_context("scheduler", "us-east-1"))

    published = _published_dimensions(capfd.readouterr().out)
    assert _all_under_the_stack(published), published


def test_the_worker_publishes_under_its_stack(
    staging: Resources, sqs: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    create()  # due now: the API sends it itself
    [body] = take(sqs, staging.queue_urls[Priority.MEDIUM])
    capfd.readouterr()

    assert run_worker(sqs_event(body)) == {"batchItemFailures": []}

    published = _published_dimensions(capfd.readouterr().out)
    assert _all_under_the_stack(published), published
