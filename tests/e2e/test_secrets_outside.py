"""Secrets from outside, on `sundial local`: references resolved against the emulator's Secrets Manager
and SSM, deliveries that `standardwebhooks` verifies with the stack's signing secret, and no secret
value in the emulator's table (an inline value is sealed there; only a url's query is its own job's),
the stack's log or any answer, while the target still gets every value in plain."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from standardwebhooks.webhooks import Webhook

from shared import constants as c
from tests.e2e.conftest import Stack

pytestmark = pytest.mark.e2e

REFERENCED = {"sm": "outside-sm-0b6d2f", "json": "outside-json-9a41ce", "ssm": "outside-ssm-27f3b0"}
INLINE = {"X-Pass": "outside-inline-c81e", "Cookie": "outside-cookie-5d0a"}


class _Echo(BaseHTTPRequestHandler):
    """/fail answers 500 with the headers it got, as a target that echoes its request might."""

    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append((self.path, dict(self.headers.items()), body))
        text = json.dumps(dict(self.headers.items())).encode() if self.path.startswith("/fail") else b""
        self.send_response(500 if text else 204)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    requests: list[tuple[str, dict[str, str], bytes]]


@pytest.fixture
def receiver() -> Iterator[_Server]:
    made = _Server(("127.0.0.1", 0), _Echo)
    made.requests = []
    threading.Thread(target=made.serve_forever, daemon=True).start()
    yield made
    made.shutdown()
    made.server_close()


def _references(endpoint_url: str) -> dict[str, dict[str, str]]:
    aws = {"endpoint_url": endpoint_url, "region_name": "us-east-1"}
    secretsmanager, ssm = boto3.client("secretsmanager", **aws), boto3.client("ssm", **aws)
    name = uuid.uuid4().hex
    plain = secretsmanager.create_secret(Name=f"plain-{name}", SecretString=REFERENCED["sm"])["ARN"]
    keyed = secretsmanager.create_secret(
        Name=f"keyed-{name}", SecretString=json.dumps({"t": REFERENCED["json"]})
    )
    ssm.put_parameter(Name=f"/outside/{name}", Value=REFERENCED["ssm"], Type="SecureString")
    parameter = ssm.get_parameter(Name=f"/outside/{name}")["Parameter"]["ARN"]
    return {
        "Authorization": {"secret": plain},
        "X-Token": {"secret": keyed["ARN"], "json_key": "t"},
        "X-Param": {"secret": parameter},
    }


def test_references_resolve_deliveries_verify_and_no_secret_is_shown_or_stored(
    stack: Stack, receiver: _Server
) -> None:
    aws = {"endpoint_url": stack.endpoint_url, "region_name": "us-east-1"}
    signing = boto3.client("secretsmanager", **aws).get_secret_value(SecretId=c.SIGNING_SECRET_NAME)[
        "SecretString"
    ]
    base = f"http://127.0.0.1:{receiver.server_address[1]}"
    headers = {**_references(stack.endpoint_url), **INLINE}
    answers: list[Any] = []
    ids = []
    for path in ("/ok", "/fail"):
        target = {"type": "http", "url": f"{base}{path}?token=outside-query-4e7a", "headers": headers}
        created = stack.api.create(
            name=f"secrets-{path.strip('/')}", target=target, max_retries=0, payload={"path": path}
        )
        answers.append(created)
        ids.append(created["id"])
    answers.append(stack.api.wait_for_status(ids[0], {"succeeded"}, timeout=60))
    answers.append(stack.api.wait_for_status(ids[1], {"dead"}, timeout=60))
    answers += [stack.api.runs(job_id) for job_id in ids]
    answers.append(stack.api.all_jobs())

    assert len(receiver.requests) == 2
    for path, sent, body in receiver.requests:
        assert [sent["Authorization"], sent["X-Token"], sent["X-Param"]] == list(REFERENCED.values())
        assert [sent["X-Pass"], sent["Cookie"]] == list(INLINE.values())
        assert Webhook(signing).verify(body, sent) == {"path": path.split("?")[0]}
    assert "HTTP 500" in json.dumps(answers[-2])

    items = boto3.client("dynamodb", **aws).scan(TableName=c.TABLE_NAME)["Items"]
    mine = [item for item in items if any(job_id in json.dumps(item) for job_id in ids)]
    assert mine, "the jobs' items were not found"
    seen = {
        "answers": json.dumps(answers),
        "log": stack.local.output(),
        "table": json.dumps([{k: v for k, v in item.items() if k != "target"} for item in mine]),
        "targets' headers": json.dumps(
            [json.loads(item["target"]["S"])["headers"] for item in mine if "target" in item]
        ),
    }
    assert "HTTP 500 from" in seen["log"]  # the echo was logged: the scan covers what it said
    secrets = [*REFERENCED.values(), *INLINE.values(), "outside-query-4e7a", signing]
    assert [(secret, where) for secret in secrets for where, text in seen.items() if secret in text] == []
    targets = json.dumps([item["target"] for item in mine if "target" in item])
    assert [secret for secret in [*REFERENCED.values(), signing] if secret in targets] == []
