"""No secret value leaves where it belongs: after deliveries with references and inline values through
the API and worker handlers on the emulator, the table, the logs and every answer are scanned for them.

A referenced value belongs in Secrets Manager or SSM only. An inline value, and a url's query, are kept
in the job item's target sealed with the stage's KMS key, which the worker alone opens: no item holds
either in clear.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from standardwebhooks.webhooks import Webhook

from sundial.contract.vocabulary import Priority
from sundial.functions import clients, worker
from sundial.local_stack.resources import Resources, ensure_signing_secret
from sundial.shared import constants as c
from tests.functions.conftest import Answer, api_event, invoke_api, table_items
from tests.functions.test_worker import run, sqs_event, take
from tests.support.receivers import Receiver, references

REFERENCED = {"sm": "sm-value-1f7c9a", "json": "json-value-82be04", "ssm": "ssm-value-c3d5e1"}
INLINE = {"X-Pass": "inline-pass-5a91", "X-Signature": "inline-sig-77d0"}
QUERY_SECRET = "query-key-e4a2b8"


@pytest.fixture
def signing(env: Resources, aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> str:
    """The worker's signing secret, as the local stack makes it; its value."""
    secretsmanager = boto3.client("secretsmanager", **aws)
    arn = ensure_signing_secret(secretsmanager, prefix=f"{env.table_name}-")
    monkeypatch.setenv(c.ENV_SIGNING_SECRET_ARN, arn)
    monkeypatch.setenv(c.ENV_ALLOW_PRIVATE_TARGETS, "true")
    clients.reset()
    return str(secretsmanager.get_secret_value(SecretId=arn)["SecretString"])


@pytest.fixture
def headers_referring(aws: dict[str, Any]) -> dict[str, dict[str, str]]:
    return references(aws, REFERENCED["sm"], REFERENCED["json"], REFERENCED["ssm"])


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[], str]]:
    """Every log record at the deployed level (INFO), and the worker's JSON lines as Lambda ships them."""
    caplog.set_level(logging.INFO)
    stream = io.StringIO()
    shipped = logging.StreamHandler(stream)
    shipped.setFormatter(worker.logger.registered_formatter)
    worker.logger.addHandler(shipped)

    def read() -> str:
        records = [f"{r.getMessage()} {json.dumps(r.__dict__, default=str)}" for r in caplog.records]
        return "\n".join([stream.getvalue(), *records])

    yield read
    worker.logger.removeHandler(shipped)


def test_no_secret_value_is_in_any_answer_log_line_history_row_or_table_item(
    env: Resources,
    sqs: Any,
    dynamodb: Any,
    receiver: Receiver,
    signing: str,
    headers_referring: dict[str, dict[str, str]],
    logs: Callable[[], str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    answers: list[Answer] = []

    def api(method: str, path: str, body: Any = None) -> Answer:
        answers.append(invoke_api(api_event(method, path, body)))
        return answers[-1]

    headers = {**headers_referring, **INLINE}
    ids = [
        api(
            "POST",
            "/jobs",
            {
                "target": {
                    "type": "http",
                    "url": receiver.url(f"{path}?key={QUERY_SECRET}"),
                    "headers": headers,
                },
                "max_retries": 0,
            },
        ).body["id"]
        for path in ("/ok", "/fail")
    ]
    run(sqs_event(*take(sqs, env.queue_urls[Priority.MEDIUM])))
    for job_id in ids:
        api("GET", f"/jobs/{job_id}")
        api("GET", f"/jobs/{job_id}/runs")
    api("GET", "/jobs")
    worker_logs = capsys.readouterr()

    # The deliveries happened, with the real values, signed.
    assert sorted(answer.body["status"] for answer in answers[2:6:2]) == ["dead", "succeeded"]
    assert len(receiver.received) == 2
    for sent in receiver.received:
        assert [sent.headers[name] for name in ("Authorization", "X-Token", "X-Param")] == list(
            REFERENCED.values()
        )
        assert sent.headers["X-Pass"] == INLINE["X-Pass"]
        assert sent.path.endswith(f"?key={QUERY_SECRET}")  # sent as created
        Webhook(signing).verify(sent.body, sent.headers)
    failed_run = next(
        answer for answer in answers if answer.body.get("runs") and "HTTP 500" in json.dumps(answer.body)
    )
    assert "X-Pass" in json.dumps(failed_run.body)  # the echo reached the history, scrubbed

    items = table_items(dynamodb, env.table_name)
    job_targets = [json.loads(item["target"]["S"]) for item in items if "target" in item]
    seen = {
        "answers": json.dumps([answer.body for answer in answers]),
        "logs": "\n".join([logs(), worker_logs.out, worker_logs.err]),
        "table items": json.dumps(items),
    }
    secrets = [*REFERENCED.values(), *INLINE.values(), QUERY_SECRET, signing, signing.removeprefix("whsec_")]
    assert "HTTP 500 from" in seen["logs"]  # the failure was logged, so the scan covers its text
    found = [(secret, where) for secret in secrets for where, text in seen.items() if secret in text]
    assert found == []
    assert len(job_targets) == 2
    for target in job_targets:
        assert all(set(target["headers"][name]) == {"sealed"} for name in INLINE)
        assert target["url"].endswith("?key=***") and set(target["sealed_query"]) == {"sealed"}


@pytest.mark.parametrize(
    ("sent", "field"),
    [
        ({"headers": {"X-Pass": {"sealed": "AAAA"}}}, "target.headers.X-Pass"),
        ({"sealed_query": {"sealed": "AAAA"}}, "target.sealed_query"),
    ],
)
def test_a_client_cannot_send_a_sealed_value(
    api: Any, stored: Callable[[], list[dict[str, Any]]], sent: dict[str, Any], field: str
) -> None:
    before = stored()
    target = {"type": "http", "url": "https://example.com/hook?key=value", **sent}

    answer = api("POST", "/jobs", {"target": target})

    assert answer.status == 400
    assert answer.body["field"] == field
    assert stored() == before
