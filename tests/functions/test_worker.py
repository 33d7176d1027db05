"""The worker handler driven with SQS batch events: one attempt per record, partial batch failures."""

from __future__ import annotations

import copy
import io
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from sundial.contract.vocabulary import Priority
from sundial.functions import clients, worker
from sundial.functions.worker import handler
from sundial.local_stack.lambda_context import new_context
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c
from sundial.shared import dispatch
from tests.functions.conftest import api_event, emf_metrics, invoke_api, load_event

NOOP = {"type": "python", "handler": "noop"}


def create(**fields: Any) -> str:
    answer = invoke_api(api_event("POST", "/jobs", {"target": NOOP, **fields}))
    assert answer.status == 201, answer.body
    return str(answer.body["id"])


def take(sqs: Any, url: str) -> list[str]:
    """Every message body visible on a queue, deleted as read (the event source mapping's part)."""
    bodies: list[str] = []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        for message in batch:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            bodies.append(message["Body"])
    return bodies


def sqs_event(*bodies: str) -> dict[str, Any]:
    """The captured batch, its records repeated with these bodies and their own message ids."""
    template = load_event("sqs_batch.json")["Records"][0]
    records = []
    for n, body in enumerate(bodies):
        record = copy.deepcopy(template)
        record.update(body=body, messageId=f"message-{n}")
        records.append(record)
    return {"Records": records}


def run(event: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = handler(event, new_context("worker", "us-east-1"))
    return result


def job(job_id: str) -> dict[str, Any]:
    body: dict[str, Any] = invoke_api(api_event("GET", f"/jobs/{job_id}")).body
    return body


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """The worker's JSON log lines, as Lambda would ship them."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(worker.logger.registered_formatter)
    worker.logger.addHandler(handler)
    yield stream
    worker.logger.removeHandler(handler)


def test_a_batch_runs_each_job_and_sends_an_unparsable_record_to_the_dead_letter_queue(
    env: Resources, sqs: Any, capfd: pytest.CaptureFixture[str], log_lines: io.StringIO
) -> None:
    job_id = create()
    [body] = take(sqs, env.queue_urls[Priority.MEDIUM])

    result = run(sqs_event(body, "this is not a job message"))

    assert result == {"batchItemFailures": []}
    assert job(job_id)["status"] == "succeeded"
    [dead] = take(sqs, env.dead_letter_queue_url)
    assert json.loads(dead)["body"] == "this is not a job message"
    assert json.loads(dead)["error"].startswith("not a job message")
    metrics = emf_metrics(capfd.readouterr().out)
    assert metrics[c.Metric.STARTED] == 1
    assert metrics[c.Metric.SUCCEEDED] == 1
    assert metrics["UnparsableMessages"] == 1
    assert c.Metric.START_LATENESS_MS in metrics
    finished = [json.loads(line) for line in log_lines.getvalue().splitlines() if "attempt finished" in line]
    assert [(line["job_id"], line["attempt"]) for line in finished] == [(job_id, 1)]


def test_one_failing_record_is_reported_alone_and_logged_with_its_job(
    env: Resources, sqs: Any, log_lines: io.StringIO
) -> None:
    ok, broken = create(), create()
    bodies = take(sqs, env.queue_urls[Priority.MEDIUM])
    ordered = sorted(bodies, key=lambda b: json.loads(b)["job_id"] != ok)

    def fault(params: dict[str, Any], **_: Any) -> None:
        # The table is unreachable for one job: its record must come back, the other's must not.
        if params["Key"]["pk"]["S"].endswith(broken):
            raise ConnectionError("dynamodb unreachable")

    clients.clients().dynamodb().meta.events.register("provide-client-params.dynamodb.UpdateItem", fault)

    result = run(sqs_event(*ordered))

    assert result == {"batchItemFailures": [{"itemIdentifier": "message-1"}]}
    assert job(ok)["status"] == "succeeded"
    assert job(broken)["status"] == "queued"
    failed = [json.loads(line) for line in log_lines.getvalue().splitlines() if "delivery failed" in line]
    assert [(line["level"], line["job_id"]) for line in failed] == [("ERROR", broken)]
    assert "dynamodb unreachable" in failed[0]["exception"]


def test_a_duplicate_delivery_is_dropped_and_counted(
    env: Resources, sqs: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    job_id = create()
    [body] = take(sqs, env.queue_urls[Priority.MEDIUM])

    result = run(sqs_event(body, body))

    assert result == {"batchItemFailures": []}
    runs = invoke_api(api_event("GET", f"/jobs/{job_id}/runs")).body["runs"]
    assert [run["status"] for run in runs] == ["succeeded"]
    metrics = emf_metrics(capfd.readouterr().out)
    assert metrics[c.Metric.DUPLICATES_DROPPED] == 1
    assert metrics[c.Metric.STARTED] == 1


def test_a_job_that_dies_is_dead_lettered_and_the_api_revives_it(
    env: Resources, sqs: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    job_id = create(target={"type": "python", "handler": "fail"}, max_retries=0)
    [body] = take(sqs, env.queue_urls[Priority.MEDIUM])

    result = run(sqs_event(body))

    assert result == {"batchItemFailures": []}
    assert job(job_id)["status"] == "dead"
    [dead] = take(sqs, env.dead_letter_queue_url)
    assert json.loads(dead)["job_id"] == job_id
    assert emf_metrics(capfd.readouterr().out)[c.Metric.DEAD] == 1
    runs = invoke_api(api_event("GET", f"/jobs/{job_id}/runs")).body["runs"]
    assert [(run["status"], run["attempt"]) for run in runs] == [("dead", 1)]

    revived = invoke_api(api_event("POST", f"/jobs/{job_id}/retry"))

    # attempt numbers go on after a retry, so its run is a row of its own
    assert (revived.status, revived.body["status"], revived.body["attempt"]) == (200, "queued", 1)


def test_the_records_of_a_batch_run_side_by_side_each_settled_on_its_own(
    env: Resources, sqs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each target waits for all the others: run one after another, the first would wait alone and
    # fail on the barrier's timeout.
    count = c.WORKER_BATCH_SIZE
    together = threading.Barrier(count, timeout=10)
    threads: set[str] = set()

    def deliver(job: Any, delivery: Any, limit_seconds: float) -> None:
        threads.add(threading.current_thread().name)
        if job.name == "fails":
            together.wait()
            raise RuntimeError("this one fails")
        together.wait()

    monkeypatch.setattr(worker, "_deliver", deliver)
    ids = [create(name="fails" if n == 0 else f"ok-{n}", max_retries=0) for n in range(count)]
    bodies = take(sqs, env.queue_urls[Priority.MEDIUM])

    result = run(sqs_event(*bodies))

    assert result == {"batchItemFailures": []}
    assert len(threads) == count
    statuses = {job_id: job(job_id)["status"] for job_id in ids}
    assert statuses == {job_id: "dead" if n == 0 else "succeeded" for n, job_id in enumerate(ids)}


def test_a_batch_of_recurring_jobs_sends_their_next_occurrences_in_one_request(
    env: Resources, sqs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A window no loaded test machine outlasts; ten messages fill a request and leave at once.
    monkeypatch.setattr(dispatch, "SHARED_SEND_WINDOW_SECONDS", 5.0)
    ids = [create(name=f"every-minute-{n}", schedule="rate(1 minute)") for n in range(c.WORKER_BATCH_SIZE)]
    take(sqs, env.queue_urls[Priority.MEDIUM])  # the first occurrences, a minute away
    for job_id in ids:
        assert invoke_api(api_event("POST", f"/jobs/{job_id}/trigger")).status == 200
    bodies = take(sqs, env.queue_urls[Priority.MEDIUM])
    sends: list[int] = []
    clients.clients().sqs().meta.events.register(
        "provide-client-params.sqs.SendMessageBatch", lambda params, **_: sends.append(len(params["Entries"]))
    )

    result = run(sqs_event(*bodies))

    assert result == {"batchItemFailures": []}
    assert sends == [c.WORKER_BATCH_SIZE]  # ten next occurrences, one request
    assert all(job(job_id)["status"] == "queued" for job_id in ids)
