"""The handlers wired to the emulator through their own settings, and sample events to drive them."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from sundial.contract.vocabulary import Priority
from sundial.functions import clients
from sundial.local_stack.emulator import Emulator
from sundial.local_stack.lambda_context import new_context
from sundial.local_stack.resources import Resources, ensure_header_key
from sundial.shared import constants as c

EVENTS = Path(__file__).parent.parent / "events"


def load_event(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return loaded


@pytest.fixture(scope="session")
def header_key(aws: dict[str, Any]) -> str:
    """The emulator's key that seals inline header values, as the local stack makes it."""
    return ensure_header_key(boto3.client("kms", **aws))


@pytest.fixture
def env(
    resources: Resources, emulator: Emulator, header_key: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Resources]:
    """The functions' environment pointed at this test's table and queues; caches start empty."""
    values = {
        c.ENV_TABLE_NAME: resources.table_name,
        c.ENV_QUEUE_URL_HIGH: resources.queue_urls[Priority.HIGH],
        c.ENV_QUEUE_URL_MEDIUM: resources.queue_urls[Priority.MEDIUM],
        c.ENV_QUEUE_URL_LOW: resources.queue_urls[Priority.LOW],
        c.ENV_DEAD_LETTER_QUEUE_URL: resources.dead_letter_queue_url,
        c.ENV_ENDPOINT_URL: emulator.endpoint_url,
        c.ENV_HEADER_KEY_ARN: header_key,
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(c.ENV_ALLOW_PRIVATE_TARGETS, raising=False)
    clients.reset()
    yield resources
    clients.reset()


@dataclass
class Answer:
    status: int
    headers: dict[str, Any]
    body: Any


def api_event(
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    raw_body: str | None = None,
) -> dict[str, Any]:
    """A REST proxy event shaped like the captured one, for another method, path, body and query."""
    event = copy.deepcopy(load_event("apigw_create_job.json"))
    sent = {k: v for k, v in event["headers"].items() if k != "Idempotency-Key"} | (headers or {})
    event.update(
        path=path,
        httpMethod=method,
        headers=sent,
        multiValueHeaders={k: [v] for k, v in sent.items()},
        queryStringParameters=query or None,
        multiValueQueryStringParameters={k: [v] for k, v in query.items()} if query else None,
        pathParameters={"proxy": path.lstrip("/")},
        body=raw_body if raw_body is not None else (json.dumps(body) if body is not None else None),
    )
    event["requestContext"].update(httpMethod=method, path=f"/v1{path}")
    return event


def invoke_api(event: dict[str, Any]) -> Answer:
    from sundial.functions.api import handler

    result = handler(event, new_context("api", "us-east-1"))
    multi = {name: ", ".join(values) for name, values in (result.get("multiValueHeaders") or {}).items()}
    headers = dict(result.get("headers") or {}) | multi
    text = result.get("body") or ""
    body = json.loads(text) if text and text.lstrip()[:1] in ("{", "[") else text
    return Answer(int(result["statusCode"]), headers, body)


def table_items(dynamodb: Any, table_name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=table_name):
        items += page["Items"]
    return items


Api = Callable[..., "Answer"]


@pytest.fixture
def api(env: Resources) -> Api:
    """The api handler called with an API Gateway event, as API Gateway calls it."""

    def call(method: str, path: str, body: Any = None, **kwargs: Any) -> Answer:
        return invoke_api(api_event(method, path, body, **kwargs))

    return call


@pytest.fixture
def stored(env: Resources, dynamodb: Any) -> Callable[[], list[dict[str, Any]]]:
    """Every item of the table, as a test's check of what a call changed."""
    return lambda: table_items(dynamodb, env.table_name)


def emf_metrics(stdout: str) -> dict[str, float]:
    """Sums of every metric in the EMF lines a handler printed."""
    totals: dict[str, float] = {}
    for line in stdout.splitlines():
        if '"_aws"' not in line:
            continue
        blob = json.loads(line)
        for definition in blob["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
            name = definition["Name"]
            values = blob[name] if isinstance(blob[name], list) else [blob[name]]
            totals[name] = totals.get(name, 0) + sum(values)
    return totals
