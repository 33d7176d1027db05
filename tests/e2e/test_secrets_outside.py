"""Secrets from outside, on `sundial local`: references resolved against the emulator's Secrets Manager
and SSM, deliveries that `standardwebhooks` verifies with the stack's signing secret, and no secret
value in the emulator's table (an inline value and a url's query are sealed there), the stack's log or
any answer, while the target still gets every value in plain."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from standardwebhooks.webhooks import Webhook

from sundial.shared import constants as c
from tests.e2e.conftest import Stack
from tests.support.receivers import Receiver, references

pytestmark = pytest.mark.e2e

REFERENCED = {"sm": "outside-sm-0b6d2f", "json": "outside-json-9a41ce", "ssm": "outside-ssm-27f3b0"}
INLINE = {"X-Pass": "outside-inline-c81e", "Cookie": "outside-cookie-5d0a"}
QUERY_SECRET = "outside-query-4e7a"


def test_references_resolve_deliveries_verify_and_no_secret_is_shown_or_stored(
    stack: Stack, receiver: Receiver
) -> None:
    aws = {"endpoint_url": stack.endpoint_url, "region_name": "us-east-1"}
    signing = boto3.client("secretsmanager", **aws).get_secret_value(SecretId=c.SIGNING_SECRET_NAME)[
        "SecretString"
    ]
    headers = {**references(aws, *REFERENCED.values()), **INLINE}
    answers: list[Any] = []
    ids = []
    for path in ("/ok", "/fail"):
        target = {"type": "http", "url": receiver.url(f"{path}?token={QUERY_SECRET}"), "headers": headers}
        created = stack.api.create(
            name=f"secrets-{path.strip('/')}", target=target, max_retries=0, payload={"path": path}
        )
        answers.append(created)
        ids.append(created["id"])
    answers.append(stack.api.wait_for_status(ids[0], {"succeeded"}, timeout=60))
    answers.append(stack.api.wait_for_status(ids[1], {"dead"}, timeout=60))
    answers += [stack.api.runs(job_id) for job_id in ids]
    answers.append(stack.api.all_jobs())

    assert len(receiver.received) == 2
    for sent in receiver.received:
        names = ("Authorization", "X-Token", "X-Param", "X-Pass", "Cookie")
        assert [sent.headers[name] for name in names] == [*REFERENCED.values(), *INLINE.values()]
        assert Webhook(signing).verify(sent.body, sent.headers) == {"path": sent.path.split("?")[0]}
        assert sent.path.endswith(f"?token={QUERY_SECRET}")  # sent as created
    assert "HTTP 500" in json.dumps(answers[-2])

    items = boto3.client("dynamodb", **aws).scan(TableName=c.TABLE_NAME)["Items"]
    mine = [item for item in items if any(job_id in json.dumps(item) for job_id in ids)]
    assert mine, "the jobs' items were not found"
    seen = {"answers": json.dumps(answers), "log": stack.local.output(), "table": json.dumps(mine)}
    assert "HTTP 500 from" in seen["log"]  # the echo was logged: the scan covers what it said
    secrets = [*REFERENCED.values(), *INLINE.values(), QUERY_SECRET, signing]
    assert [(secret, where) for secret in secrets for where, text in seen.items() if secret in text] == []
    targets = [json.loads(item["target"]["S"]) for item in mine if "target" in item]
    assert [target["url"].split("?")[1] for target in targets] == ["token=***"] * 2
    assert all(set(target["sealed_query"]) == {"sealed"} for target in targets)
