"""Targets through the API handler: AWS names of the forms AWS issues, and header values stored as sent
but answered masked unless their name is on the allow-list."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from sundial.contract.targets import HttpTarget, Sealed, SecretRef
from sundial.functions import clients
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c
from sundial.shared.clock import SystemClock
from sundial.shared.store import JobStore
from sundial.shared.targets import HeaderOpener
from tests.functions.conftest import Api

DAILY = {"schedule": "cron(0 9 * * ? *)", "timezone": "Europe/Berlin"}
ACCOUNT = "123456789012"


@pytest.fixture
def store(env: Resources, dynamodb: Any) -> JobStore:
    return JobStore(dynamodb, env.table_name, SystemClock())


# --- the forms AWS issues ---------------------------------------------------------------------------

ACCEPTED = [
    pytest.param(
        {"type": "lambda", "function_arn": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:f"}, id="lambda"
    ),
    pytest.param(
        {"type": "lambda", "function_arn": f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:my_fn-2:live"},
        id="lambda-alias",
    ),
    pytest.param(
        {"type": "lambda", "function_arn": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:f:7"},
        id="lambda-version",
    ),
    pytest.param(
        {"type": "lambda", "function_arn": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:f:$LATEST"},
        id="lambda-latest",
    ),
    pytest.param(
        {"type": "lambda", "function_arn": f"arn:aws-us-gov:lambda:us-gov-west-1:{ACCOUNT}:function:f"},
        id="lambda-govcloud",
    ),
    pytest.param(
        {"type": "lambda", "function_arn": f"arn:aws-cn:lambda:cn-north-1:{ACCOUNT}:function:f"},
        id="lambda-china",
    ),
    pytest.param({"type": "sqs", "queue_url": f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/q"}, id="sqs"),
    pytest.param(
        {"type": "sqs", "queue_url": f"https://sqs.eu-west-1.amazonaws.com/{ACCOUNT}/orders.fifo"},
        id="sqs-fifo",
    ),
    pytest.param(
        {"type": "sqs", "queue_url": f"https://sqs.cn-north-1.amazonaws.com.cn/{ACCOUNT}/q"}, id="sqs-china"
    ),
    pytest.param(
        {"type": "sqs", "queue_url": f"https://us-west-2.queue.amazonaws.com/{ACCOUNT}/q"},
        id="sqs-legacy-host",
    ),
    pytest.param({"type": "sns", "topic_arn": f"arn:aws:sns:us-east-1:{ACCOUNT}:alerts"}, id="sns"),
    pytest.param({"type": "sns", "topic_arn": f"arn:aws:sns:us-east-1:{ACCOUNT}:alerts.fifo"}, id="sns-fifo"),
    pytest.param(
        {"type": "eventbridge", "detail_type": "tick", "source": "my.app"}, id="eventbridge-default"
    ),
    pytest.param(
        {
            "type": "eventbridge",
            "event_bus_name": f"arn:aws:events:us-east-1:{ACCOUNT}:event-bus/orders",
            "detail_type": "tick",
            "source": "my.app",
        },
        id="eventbridge-bus-arn",
    ),
]


@pytest.mark.parametrize("target", ACCEPTED)
def test_aws_targets_of_the_forms_aws_issues_are_accepted(api: Api, target: dict[str, Any]) -> None:
    answer = api("POST", "/jobs", {"target": target, **DAILY})

    assert answer.status == 201, answer.body
    assert answer.body["target"] == {
        **({"event_bus_name": "default"} if "detail_type" in target else {}),
        **target,
    }


REFUSED = [
    pytest.param(
        {"type": "lambda", "function_arn": "arn:aws:lambda:"}, "function_arn", id="lambda-prefix-only"
    ),
    pytest.param(
        {"type": "lambda", "function_arn": "arn:aws:lambda:us-east-1:12345:function:f"},
        "function_arn",
        id="lambda-short-account",
    ),
    pytest.param(
        {"type": "lambda", "function_arn": f"arn:aws:lambda:{ACCOUNT}:function:f"},
        "function_arn",
        id="lambda-no-region",
    ),
    pytest.param(
        {"type": "lambda", "function_arn": f"arn:aws:lambda:us-east-1:{ACCOUNT}:layer:f"},
        "function_arn",
        id="lambda-layer",
    ),
    pytest.param(
        {"type": "lambda", "function_arn": f"arn:awsx:lambda:us-east-1:{ACCOUNT}:function:f"},
        "function_arn",
        id="lambda-partition",
    ),
    pytest.param(
        {"type": "lambda", "function_arn": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:f:a:b"},
        "function_arn",
        id="lambda-two-qualifiers",
    ),
    pytest.param(
        {"type": "lambda", "function_arn": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:f\n"},
        "function_arn",
        id="lambda-newline",
    ),
    pytest.param({"type": "sqs", "queue_url": "https://example.com/q"}, "queue_url", id="sqs-other-host"),
    pytest.param(
        {"type": "sqs", "queue_url": "https://sqs.us-east-1.amazonaws.com/q"},
        "queue_url",
        id="sqs-no-account",
    ),
    pytest.param(
        {"type": "sqs", "queue_url": f"http://sqs.us-east-1.amazonaws.com/{ACCOUNT}/q"},
        "queue_url",
        id="sqs-plain-http",
    ),
    pytest.param(
        {"type": "sqs", "queue_url": f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/q?x=1"},
        "queue_url",
        id="sqs-query",
    ),
    pytest.param(
        {"type": "sqs", "queue_url": f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/{'q' * 81}"},
        "queue_url",
        id="sqs-long-name",
    ),
    pytest.param({"type": "sns", "topic_arn": "arn:aws:sns:"}, "topic_arn", id="sns-prefix-only"),
    pytest.param(
        {"type": "sns", "topic_arn": f"arn:aws:sqs:us-east-1:{ACCOUNT}:alerts"},
        "topic_arn",
        id="sns-other-service",
    ),
    pytest.param(
        {"type": "eventbridge", "event_bus_name": "arn:aws:events:", "detail_type": "t", "source": "my.app"},
        "event_bus_name",
        id="eventbridge-bad-arn",
    ),
    pytest.param(
        {"type": "eventbridge", "detail_type": "t", "source": "aws.ec2"},
        "source",
        id="eventbridge-aws-source",
    ),
]


@pytest.mark.parametrize(("target", "field"), REFUSED)
def test_a_malformed_aws_name_is_a_400_naming_the_field(
    api: Api, stored: Any, target: dict[str, Any], field: str
) -> None:
    answer = api("POST", "/jobs", {"target": target, **DAILY})

    assert answer.status == 400
    assert answer.body["field"] == f"target.{field}"
    assert answer.body["message"].startswith(f"target {field} ")
    assert " is not " in answer.body["message"]
    assert stored() == []


def test_a_loopback_queue_is_a_target_in_the_local_stack_only(
    api: Api, stored: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(c.ENV_ALLOW_PRIVATE_TARGETS, "true")
    clients.reset()
    local = api(
        "POST", "/jobs", {"target": {"type": "sqs", "queue_url": f"http://127.0.0.1:4566/{ACCOUNT}/q"}}
    )

    assert local.status == 201, local.body


def test_a_loopback_queue_is_refused_outside_the_local_stack(api: Api, stored: Any) -> None:
    answer = api(
        "POST", "/jobs", {"target": {"type": "sqs", "queue_url": f"http://localhost:4566/{ACCOUNT}/q"}}
    )

    assert answer.status == 400
    assert answer.body["field"] == "target.queue_url"
    assert "reachable only in the local stack" in answer.body["message"]
    assert stored() == []


# --- header values -----------------------------------------------------------------------------

HEADERS = {
    "Authorization": "Bearer real-secret",
    "proxy-authorization": "Basic cHJveHk=",
    "Cookie": "session=abc",
    "Set-Cookie": "id=1",
    "X-Api-Key": "k-123",
    "X-Auth-Token": "t-456",
    "X-Client-Secret": "s-789",
    "X-DB-PASSWORD": "p-0",
    "X-Team": "finance",
    "X-Signature": "sha256=abc",
    "X-Shopify-Hmac-Sha256": "hmac-1",
    "X-Pass": "hunter2",
    "Accept": "application/json",
    "content-type": "application/json",
    "Accept-Language": "en",
    "User-Agent": "billing/2",
}
# Only the allow-listed names show their values: no word list finds X-Signature or X-Pass.
SHOWN = ("Accept", "content-type", "Accept-Language", "User-Agent")
MASKED = {name: (value if name in SHOWN else "***") for name, value in HEADERS.items()}
HTTP = {"type": "http", "url": "https://hooks.example.com/run", "headers": HEADERS}


def test_secret_header_values_are_answered_masked_and_stored_sealed(
    api: Api, store: JobStore, aws: dict[str, Any]
) -> None:
    created = api("POST", "/jobs", {"target": HTTP, **DAILY}, headers={"Idempotency-Key": "secret-1"})
    job_id = created.body["id"]
    replay = api("POST", "/jobs", {"target": HTTP, **DAILY}, headers={"Idempotency-Key": "secret-1"})
    got = api("GET", f"/jobs/{job_id}")
    listed = api("GET", "/jobs")
    patched = api("PATCH", f"/jobs/{job_id}", {"name": "renamed", "priority": "low"})
    paused = api("POST", f"/jobs/{job_id}/pause")
    cancelled = api("DELETE", f"/jobs/{job_id}")

    answers = [created, replay, got, patched, paused, cancelled]
    assert [answer.status for answer in answers] == [201, 200, 200, 200, 200, 200]
    for answer in answers:
        assert answer.body["target"]["headers"] == MASKED
    assert listed.body["jobs"][0]["target"]["headers"] == MASKED
    # The stored job holds each masked value sealed for this job, which the worker opens to the
    # real value; an allow-listed one as sent.
    target = store.get(job_id).target
    assert isinstance(target, HttpTarget)
    opener = HeaderOpener(lambda service: boto3.client("kms", **aws))
    assert all(isinstance(target.headers[name], Sealed) for name in HEADERS if name not in SHOWN)
    opened = {
        name: opener.value(name, value, job_id) if isinstance(value, Sealed) else value
        for name, value in target.headers.items()
    }
    assert opened == HEADERS


def test_an_empty_header_value_is_stored_and_sent_as_it_is(api: Api, store: JobStore) -> None:
    # KMS refuses to encrypt nothing, and an empty value hides nothing: it is kept plain.
    target = {**HTTP, "headers": {"X-Api-Key": "", "Authorization": "Bearer real-secret"}}

    created = api("POST", "/jobs", {"target": target, **DAILY})

    assert created.status == 201, created.body
    assert created.body["target"]["headers"] == {"X-Api-Key": "***", "Authorization": "***"}
    stored = store.get(created.body["id"]).target
    assert isinstance(stored, HttpTarget)
    assert stored.headers["X-Api-Key"] == ""
    assert isinstance(stored.headers["Authorization"], Sealed)


def test_the_mask_sent_back_as_a_secret_value_is_refused(api: Api, stored: Any) -> None:
    first = api("POST", "/jobs", {"target": HTTP, **DAILY}, headers={"Idempotency-Key": "secret-2"})
    before = stored()
    echoed = {**HTTP, "headers": first.body["target"]["headers"]}  # the answer, sent back as it came

    replay = api("POST", "/jobs", {"target": echoed, **DAILY}, headers={"Idempotency-Key": "secret-2"})
    fresh = api("POST", "/jobs", {"target": echoed, **DAILY})

    for answer in (replay, fresh):
        assert answer.status == 400
        assert answer.body["field"].startswith("target.headers.")
        assert "the mask the API answers in place of a secret" in answer.body["message"]
    assert stored() == before


def test_a_patch_cannot_send_a_target(api: Api, store: JobStore) -> None:
    job = api("POST", "/jobs", {"target": HTTP, **DAILY}).body
    before = store.get(job["id"]).target

    answer = api("PATCH", f"/jobs/{job['id']}", {"target": {**HTTP, "headers": MASKED}})

    assert (answer.status, answer.body["field"]) == (400, "target")
    assert store.get(job["id"]).target == before


# --- secret references and urls ------------------------------------------------------------------

SECRET = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:billing/token-AbCdEf"
PARAMETER = f"arn:aws:ssm:eu-west-1:{ACCOUNT}:parameter/billing/token"


def test_a_reference_is_stored_and_answered_as_itself(api: Api, store: JobStore) -> None:
    headers = {
        "Authorization": {"secret": SECRET},
        "X-Token": {"secret": SECRET, "json_key": "token"},
        "X-Param": {"secret": PARAMETER},
    }
    target = {"type": "http", "url": "https://hooks.example.com/run", "headers": headers}

    created = api("POST", "/jobs", {"target": target, **DAILY})
    got = api("GET", f"/jobs/{created.body['id']}")

    assert (created.status, got.status) == (201, 200)
    assert got.body["target"]["headers"] == {name: {"json_key": None, **ref} for name, ref in headers.items()}
    # An answer sent back as it came is accepted again: a reference is not a mask.
    again = api("POST", "/jobs", {"target": got.body["target"], **DAILY})
    assert again.status == 201
    stored_target = store.get(created.body["id"]).target
    assert isinstance(stored_target, HttpTarget)
    assert stored_target.headers["X-Param"] == SecretRef(secret=PARAMETER)


@pytest.mark.parametrize(
    ("reference", "field"),
    [
        pytest.param({"secret": "billing/token"}, "target.headers.Authorization.secret", id="a name"),
        pytest.param(
            {"secret": f"arn:aws:s3:::bucket/{ACCOUNT}"}, "target.headers.Authorization.secret", id="s3"
        ),
        pytest.param(
            {"secret": f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:a\n"},
            "target.headers.Authorization.secret",
            id="newline",
        ),
        pytest.param({"secret": SECRET, "extra": 1}, "target.headers.Authorization", id="unknown key"),
        pytest.param({"secret": SECRET, "json_key": ""}, "target.headers.Authorization", id="empty key"),
    ],
)
def test_a_reference_not_of_an_arn_aws_issues_is_refused(
    api: Api, stored: Any, reference: dict[str, Any], field: str
) -> None:
    target = {"type": "http", "url": "https://hooks.example.com/run", "headers": {"Authorization": reference}}

    answer = api("POST", "/jobs", {"target": target, **DAILY})

    assert answer.status == 400
    assert answer.body["field"].startswith(field)
    assert stored() == []


def test_url_query_values_are_answered_masked_stored_sealed_and_the_mask_is_refused(
    api: Api, store: JobStore, aws: dict[str, Any]
) -> None:
    url = "https://hooks.example.com/run?api_key=k-123&team=finance&flag"
    created = api("POST", "/jobs", {"target": {"type": "http", "url": url}, **DAILY})

    assert created.status == 201
    masked_url = "https://hooks.example.com/run?api_key=***&team=***&flag=***"
    assert created.body["target"]["url"] == masked_url
    assert "sealed_query" not in created.body["target"]
    stored_target = store.get(created.body["id"]).target
    assert isinstance(stored_target, HttpTarget) and stored_target.url == masked_url
    assert stored_target.sealed_query is not None
    opener = HeaderOpener(lambda service: boto3.client("kms", **aws))
    assert opener.query(stored_target.sealed_query, created.body["id"]) == "api_key=k-123&team=finance&flag"
    echoed = api("POST", "/jobs", {"target": created.body["target"], **DAILY})
    assert (echoed.status, echoed.body["field"]) == (400, "target.url")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("v" * 4097, "must be at most 4096 characters", id="too long"),
        pytest.param(12, 'must be a string or a reference {"secret": "<ARN>"}', id="a number"),
        pytest.param({"secret": "Bearer pasted-by-mistake"}, "must refer to a Secrets Manager", id="a value"),
    ],
)
def test_a_bad_header_value_is_refused_naming_the_header_and_not_showing_it(
    api: Api, stored: Any, value: Any, message: str
) -> None:
    target = {"type": "http", "url": "https://hooks.example.com/run", "headers": {"X-Pass": value}}

    answer = api("POST", "/jobs", {"target": target, **DAILY})

    assert answer.status == 400
    assert answer.body["field"] in ("target.headers.X-Pass", "target.headers.X-Pass.secret")
    assert message in answer.body["message"]
    assert "pasted-by-mistake" not in answer.body["message"] and "vvvv" not in answer.body["message"]
    assert stored() == []
