"""`sundial jobs create/update` with an alert route and a traceparent, and the typed client's."""

from __future__ import annotations

import json
import time

import pytest

from sundial.client import SundialClient
from tests.client.test_cli import created, sundial

pytestmark = pytest.mark.e2e
TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0736aa-00f067aa0ba902b7-01"


def test_create_and_update_set_and_remove_the_alert_route(local_api: str) -> None:
    job = created(
        local_api,
        "--schedule",
        "rate(1 hour)",
        "--target-python",
        "noop",
        "--on-dead-sns",
        TOPIC,
        "--on-failure-streak",
        "3",
    )
    assert (job["on_dead"], job["on_failure_streak"]) == ({"type": "sns", "topic_arn": TOPIC}, 3)

    hook = json.dumps({"type": "http", "url": "https://alerts.example.com/hook"})
    moved = sundial(local_api, "jobs", "update", str(job["id"]), "--on-dead", hook, "-o", "json")
    assert moved.exit_code == 0, moved.stderr
    assert json.loads(moved.stdout)["on_dead"]["url"] == "https://alerts.example.com/hook"
    removed = sundial(
        local_api,
        "jobs",
        "update",
        str(job["id"]),
        "--on-dead",
        "null",
        "--file",
        "-",
        "-o",
        "json",
        input='{"on_failure_streak": null}',
    )
    assert removed.exit_code == 0, removed.stderr
    assert json.loads(removed.stdout)["on_dead"] is None


def test_a_streak_on_a_one_off_is_refused_naming_the_field(local_api: str) -> None:
    result = sundial(
        local_api,
        "jobs",
        "create",
        "--target-python",
        "noop",
        "--on-dead-sns",
        TOPIC,
        "--on-failure-streak",
        "2",
    )
    assert result.exit_code != 0 and "on_failure_streak" in result.stderr


def test_two_routes_at_once_are_a_usage_error(local_api: str) -> None:
    result = sundial(
        local_api,
        "jobs",
        "create",
        "--target-python",
        "noop",
        "--on-dead-sns",
        TOPIC,
        "--on-dead-url",
        "https://a.example/",
    )
    assert result.exit_code != 0 and "give one alert route" in result.stderr


def test_the_client_sends_a_traceparent_that_the_runs_name(client: SundialClient) -> None:
    job = client.create_job({"target": {"type": "python", "handler": "noop"}}, traceparent=TRACEPARENT)
    for _ in range(100):
        runs = client.list_runs(job.id).runs
        if runs:
            break
        time.sleep(0.1)
    assert [run.trace_id for run in runs] == ["4bf92f3577b34da6a3ce929d0e0736aa"]
