"""`sundial jobs create/update` with an alert route (its streak and its notices of missed instants)
and a traceparent, and the typed client's."""

from __future__ import annotations

import json
import time

import pytest

from sundial.client import SundialClient
from tests.client.test_cli import created, sundial
from tests.client.test_signing import JOB, JOB_ID
from tests.support.sigv4_stub import Reply, StubApi

TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0736aa-00f067aa0ba902b7-01"


@pytest.mark.e2e
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


@pytest.mark.e2e
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


@pytest.mark.e2e
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


@pytest.mark.e2e
def test_the_client_sends_a_traceparent_that_the_runs_name(client: SundialClient) -> None:
    job = client.create_job({"target": {"type": "python", "handler": "noop"}}, traceparent=TRACEPARENT)
    for _ in range(100):
        runs = client.list_runs(job.id).runs
        if runs:
            break
        time.sleep(0.1)
    assert [run.trace_id for run in runs] == ["4bf92f3577b34da6a3ce929d0e0736aa"]


@pytest.mark.e2e
def test_missed_instants_are_turned_on_shown_refused_without_the_route_and_turned_off(
    local_api: str,
) -> None:
    job = created(
        local_api,
        *("--schedule", "rate(1 hour)", "--target-python", "noop", "--on-dead-sns", TOPIC),
        "--alert-on-missed",
    )
    assert job["alert_on_missed"] is True
    shown = sundial(local_api, "jobs", "get", str(job["id"]))
    assert shown.exit_code == 0, shown.stderr
    fields = dict(line.split(None, 1) for line in shown.stdout.splitlines()[1:] if " " in line.strip())
    assert fields["alert_on_missed"].strip() == "true", shown.stdout

    # Its notices go to the route: removing the route alone is refused, naming the option.
    routeless = sundial(local_api, "jobs", "update", str(job["id"]), "--on-dead", "null")
    assert routeless.exit_code == 1, routeless.stderr
    assert routeless.stderr.startswith(
        "error: alert_on_missed: "
    ) and "(field alert_on_missed, HTTP 400)" in (routeless.stderr)
    off = sundial(local_api, "jobs", "update", str(job["id"]), "--no-alert-on-missed", "-o", "json")
    assert off.exit_code == 0, off.stderr
    assert json.loads(off.stdout)["alert_on_missed"] is False
    assert json.loads(off.stdout)["on_dead"] == {"type": "sns", "topic_arn": TOPIC}
    on = sundial(local_api, "jobs", "update", str(job["id"]), "--alert-on-missed", "-o", "json")
    assert json.loads(on.stdout)["alert_on_missed"] is True
    removed = sundial(
        local_api, "jobs", "update", str(job["id"]), "--on-dead", "null", "--no-alert-on-missed", "-o", "json"
    )
    assert removed.exit_code == 0, removed.stderr
    assert (json.loads(removed.stdout)["on_dead"], json.loads(removed.stdout)["alert_on_missed"]) == (
        None,
        False,
    )


@pytest.mark.e2e
@pytest.mark.parametrize("route", [("--on-dead-sns", TOPIC), ()], ids=["one-off", "no-route"])
def test_missed_instants_on_a_one_off_or_without_a_route_are_refused_naming_the_field(
    local_api: str, route: tuple[str, ...]
) -> None:
    timing = ("--in", "1h") if route else ("--schedule", "rate(1 hour)")
    result = sundial(
        local_api, "jobs", "create", *timing, "--target-python", "noop", *route, "--alert-on-missed"
    )
    assert result.exit_code == 1, result.stderr
    assert "(field alert_on_missed, HTTP 400)" in result.stderr, result.stderr


def test_the_flags_send_alert_on_missed_only_when_given() -> None:
    sent = {}
    for flag in ("--alert-on-missed", "--no-alert-on-missed", None):
        with StubApi(default=Reply(200, JOB)) as stub:
            result = sundial(stub.url, "jobs", "update", JOB_ID, "--name", "n", *([flag] if flag else []))
        assert result.exit_code == 0, result.stderr
        sent[flag] = stub.received[0].json()
    assert sent["--alert-on-missed"] == {"name": "n", "alert_on_missed": True}
    assert sent["--no-alert-on-missed"] == {"name": "n", "alert_on_missed": False}
    assert sent[None] == {"name": "n"}
