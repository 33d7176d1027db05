"""No secret value leaves where it belongs: after deliveries with references and inline values through
the API and worker handlers on the emulator, the table, the logs and every answer are scanned for them.

A referenced value belongs in Secrets Manager or SSM only. An inline value is kept in the job item's
target sealed with the stage's KMS key, which the worker alone opens: no item holds it in clear. A url's
query is the job's own, kept in its target's url and nowhere else.
"""

from __future__ import annotations

import io
import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from standardwebhooks.webhooks import Webhook

from functions import clients, worker
from local_stack.resources import Resources, ensure_signing_secret
from shared import constants as c
from tests.functions.conftest import Answer, api_event, invoke_api, table_items
from tests.functions.test_worker import run, sqs_event, take

REFERENCED = {"sm": "sm-value-1f7c9a", "json": "json-value-82be04", "ssm": "ssm-value-c3d5e1"}
INLINE = {"X-Pass": "inline-pass-5a91", "X-Signature": "inline-sig-77d0"}
QUERY_SECRET = "query-key-e4a2b8"


class _Echo(BaseHTTPRequestHandler):
    """/fail answers 500 with every header it was sent; anything else answers 204."""

    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append((dict(self.headers.items()), body))
        text = json.dumps(dict(self.headers.items())).encode() if self.path.startswith("/fail") else b""
        self.send_response(500 if text else 204)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    requests: list[tuple[dict[str, str], bytes]]


@pytest.fixture
def server() -> Iterator[_Server]:
    made = _Server(("127.0.0.1", 0), _Echo)
    made.requests = []
    thread = threading.Thread(target=made.serve_forever, daemon=True)
    thread.start()
    yield made
    made.shutdown()
    made.server_close()


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
def references(aws: dict[str, Any]) -> dict[str, dict[str, str]]:
    secretsmanager = boto3.client("secretsmanager", **aws)
    ssm = boto3.client("ssm", **aws)
    name = uuid.uuid4().hex
    plain = secretsmanager.create_secret(Name=f"plain-{name}", SecretString=REFERENCED["sm"])["ARN"]
    keyed = secretsmanager.create_secret(
        Name=f"keyed-{name}", SecretString=json.dumps({"token": REFERENCED["json"]})
    )["ARN"]
    ssm.put_parameter(Name=f"/scan/{name}", Value=REFERENCED["ssm"], Type="SecureString")
    parameter = ssm.get_parameter(Name=f"/scan/{name}")["Parameter"]["ARN"]
    return {
        "Authorization": {"secret": plain},
        "X-Token": {"secret": keyed, "json_key": "token"},
        "X-Param": {"secret": parameter},
    }


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
    server: _Server,
    signing: str,
    references: dict[str, dict[str, str]],
    logs: Callable[[], str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = server.server_address[1]
    answers: list[Answer] = []

    def api(method: str, path: str, body: Any = None) -> Answer:
        answers.append(invoke_api(api_event(method, path, body)))
        return answers[-1]

    headers = {**references, **INLINE}
    ids = [
        api(
            "POST",
            "/jobs",
            {
                "target": {
                    "type": "http",
                    "url": f"http://127.0.0.1:{port}{path}?key={QUERY_SECRET}",
                    "headers": headers,
                },
                "max_retries": 0,
            },
        ).body["id"]
        for path in ("/ok", "/fail")
    ]
    run(sqs_event(*take(sqs, env.queue_urls[c.Priority.MEDIUM])))
    for job_id in ids:
        api("GET", f"/jobs/{job_id}")
        api("GET", f"/jobs/{job_id}/runs")
    api("GET", "/jobs")
    worker_logs = capsys.readouterr()

    # The deliveries happened, with the real values, signed.
    assert sorted(answer.body["status"] for answer in answers[2:6:2]) == ["dead", "succeeded"]
    assert len(server.requests) == 2
    for sent, body in server.requests:
        assert (sent["Authorization"], sent["X-Token"], sent["X-Param"]) == tuple(REFERENCED.values())
        assert sent["X-Pass"] == INLINE["X-Pass"]
        Webhook(signing).verify(body, sent)
    failed_run = next(
        answer for answer in answers if answer.body.get("runs") and "HTTP 500" in json.dumps(answer.body)
    )
    assert "X-Pass" in json.dumps(failed_run.body)  # the echo reached the history, scrubbed

    items = table_items(dynamodb, env.table_name)
    outside_job_targets = json.dumps([{k: v for k, v in item.items() if k != "target"} for item in items])
    job_targets = [json.loads(item["target"]["S"]) for item in items if "target" in item]
    seen = {
        "answers": json.dumps([answer.body for answer in answers]),
        "logs": "\n".join([logs(), worker_logs.out, worker_logs.err]),
        "table items": outside_job_targets,
        "job targets' headers": json.dumps([target["headers"] for target in job_targets]),
    }
    secrets = [*REFERENCED.values(), *INLINE.values(), QUERY_SECRET, signing, signing.removeprefix("whsec_")]
    assert "HTTP 500 from" in seen["logs"]  # the failure was logged, so the scan covers its text
    found = [(secret, where) for secret in secrets for where, text in seen.items() if secret in text]
    assert found == []
    assert len(job_targets) == 2
    for target in job_targets:
        assert all(set(target["headers"][name]) == {"sealed"} for name in INLINE)
        assert QUERY_SECRET not in json.dumps(target["headers"]) and QUERY_SECRET in target["url"]


def test_a_client_cannot_send_a_sealed_value(api: Any, stored: Callable[[], list[dict[str, Any]]]) -> None:
    before = stored()
    target = {"type": "http", "url": "https://example.com/hook", "headers": {"X-Pass": {"sealed": "AAAA"}}}

    answer = api("POST", "/jobs", {"target": target})

    assert answer.status == 400
    assert "target.headers.X-Pass" in json.dumps(answer.body)
    assert stored() == before
