"""check_target: what a job's target is refused for at create time (docs/api.md: 400 naming the field)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from sundial.shared.errors import InvalidInput
from sundial.shared.targets import Target, check_target

TARGET: TypeAdapter[Target] = TypeAdapter(Target)


def http(url: str, **fields: Any) -> Target:
    return TARGET.validate_python({"type": "http", "url": url, **fields})


@pytest.mark.parametrize(
    ("url", "allow_private"),
    [
        ("https://example.com/hook", False),
        ("https://example.com:8443/hook?x=1", False),
        ("https://93.184.216.34/hook", False),
        ("https://[2606:2800:220:1:248:1893:25c8:1946]/hook", False),
        ("https://10.0.0.5/hook", True),
        ("http://127.0.0.1:8080/hook", True),
        ("http://[::1]:8080/hook", True),
        ("http://localhost:8080/hook", True),
        ("https://internal.example/hook", False),  # a name is judged when it is resolved, at delivery
    ],
)
def test_accepted_urls(url: str, allow_private: bool) -> None:
    check_target(http(url), allow_private=allow_private)


@pytest.mark.parametrize(
    ("url", "allow_private", "message"),
    [
        ("http://example.com/hook", False, "must use https"),
        ("http://example.com/hook", True, "must use https"),
        ("http://10.0.0.5/hook", True, "must use https"),
        ("http://127.0.0.1/hook", False, "loopback address"),
        ("http://localhost/hook", False, "must use https"),
        ("ftp://example.com/file", False, "must be https://host/"),
        ("https:///path-only", False, "must be https://host/"),
        ("https://[::1/hook", False, "not a valid url"),
        ("https://example.com:99999/hook", False, "not a valid url"),
        ("https://user:secret@example.com/hook", False, "must not carry credentials"),
        ("https://169.254.169.254/latest/meta-data", True, "link-local address"),
        ("https://[fe80::1]/hook", True, "link-local address"),
        ("https://[fd00:ec2::254]/hook", True, "metadata address"),
        ("https://[::ffff:169.254.169.254]/hook", True, "link-local address"),
        ("https://10.0.0.5/hook", False, "private address"),
        ("https://127.0.0.1/hook", False, "loopback address"),
        ("https://127.1/hook", False, "loopback address"),
        ("https://0.0.0.0/hook", False, "unspecified address"),
        ("https://224.0.0.1/hook", False, "multicast address"),
        ("https://240.0.0.1/hook", False, "reserved address"),
    ],
)
def test_refused_urls(url: str, allow_private: bool, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as caught:
        check_target(http(url), allow_private=allow_private)
    assert caught.value.field == "target.url"


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"Bad Name": "x"}, "not a valid HTTP token"),
        ({"X-Ok": "a\r\nInjected: yes"}, "must not contain CR, LF or NUL"),
        ({"Host": "evil.example"}, "set by Sundial"),
        ({"content-length": "0"}, "set by Sundial"),
        ({"Idempotency-Key": "mine"}, "set by Sundial"),
        ({"Sundial-Attempt": "9"}, "set by Sundial"),
    ],
)
def test_refused_headers(headers: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as caught:
        check_target(http("https://example.com/", headers=headers), allow_private=False)
    assert caught.value.field == "target.headers"


def test_ordinary_headers_are_accepted() -> None:
    headers = {"Authorization": "Bearer t", "X-Trace": "1", "Content-Type": "application/vnd+json"}
    check_target(http("https://example.com/", headers=headers), allow_private=False)


def test_python_handler_must_be_registered() -> None:
    check_target(TARGET.validate_python({"type": "python", "handler": "noop"}), allow_private=False)
    with pytest.raises(
        InvalidInput, match=r"'nope' is not registered \(registered: .*fail, .*noop"
    ) as caught:
        check_target(TARGET.validate_python({"type": "python", "handler": "nope"}), allow_private=False)
    assert caught.value.field == "target.handler"


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "lambda", "function_arn": "arn:aws:lambda:us-east-1:123456789012:function:f"},
        {"type": "sqs", "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/q"},
        {"type": "sns", "topic_arn": "arn:aws:sns:us-east-1:123456789012:t"},
        {"type": "eventbridge", "detail_type": "tick", "source": "app"},
    ],
)
def test_aws_targets_need_nothing_beyond_their_model(raw: dict[str, Any]) -> None:
    check_target(TARGET.validate_python(raw), allow_private=False)


# --- sqs targets that name Sundial's own queues ----------------------------------------------------

OWN_QUEUES = frozenset(
    {
        "https://sqs.us-east-1.amazonaws.com/123456789012/sundial-high",
        "https://sqs.us-east-1.amazonaws.com/123456789012/sundial-medium",
        "https://sqs.us-east-1.amazonaws.com/123456789012/sundial-low",
        "https://sqs.us-east-1.amazonaws.com/123456789012/sundial-dead-letters",
    }
)
EMULATOR_QUEUES = frozenset({"http://127.0.0.1:4566/000000000000/sundial-high"})


def sqs(queue_url: str) -> Target:
    return TARGET.validate_python({"type": "sqs", "queue_url": queue_url})


@pytest.mark.parametrize(
    ("queue_url", "own"),
    [
        ("https://sqs.us-east-1.amazonaws.com/123456789012/sundial-high", OWN_QUEUES),
        ("https://sqs.us-east-1.amazonaws.com/123456789012/sundial-dead-letters", OWN_QUEUES),
        ("https://queue.amazonaws.com/123456789012/sundial-medium", OWN_QUEUES),
        ("https://us-east-1.queue.amazonaws.com/123456789012/sundial-low", OWN_QUEUES),
        ("http://127.0.0.1:4566/123456789012/sundial-high", OWN_QUEUES),
        ("https://SQS.US-EAST-1.AMAZONAWS.COM/123456789012/sundial-high", OWN_QUEUES),
        ("https://sqs.us-east-1.amazonaws.com/123456789012/sundial-high/", OWN_QUEUES),
        ("https://sqs.us-east-1.amazonaws.com//123456789012//sundial-high", OWN_QUEUES),
        ("https://sqs.us-east-1.amazonaws.com/123456789012/sundial%2Dhigh", OWN_QUEUES),
        ("https://sqs.us-east-1.amazonaws.com/123456789012/sundial-high?x=1#f", OWN_QUEUES),
        ("https://sqs.us-east-1.amazonaws.com:443/123456789012/sundial-high", OWN_QUEUES),
        ("https://sqs.us-east-1.amazonaws.com/123456789012/Sundial-High", OWN_QUEUES),
        ("https://sqs.us-east-1.amazonaws.com/000000000000/sundial-high", EMULATOR_QUEUES),
        ("http://localhost:4566/000000000000/sundial-high", EMULATOR_QUEUES),
    ],
)
def test_an_sqs_target_may_not_name_a_queue_of_sundial(queue_url: str, own: frozenset[str]) -> None:
    with pytest.raises(InvalidInput, match="one of Sundial's own queues") as caught:
        check_target(sqs(queue_url), allow_private=False, forbidden_queue_urls=own)
    assert caught.value.field == "target.queue_url"


@pytest.mark.parametrize(
    "queue_url",
    [
        "https://sqs.us-east-1.amazonaws.com/123456789012/sundial-high-reports",
        "https://sqs.us-east-1.amazonaws.com/123456789012/my-sundial-high",
        "https://sqs.us-east-1.amazonaws.com/999999999999/sundial-high",
        "https://sqs.us-east-1.amazonaws.com/123456789012/sundial-high.fifo",
        "https://sqs.us-east-1.amazonaws.com/123456789012/reports",
    ],
)
def test_other_queues_are_accepted(queue_url: str) -> None:
    check_target(sqs(queue_url), allow_private=False, forbidden_queue_urls=OWN_QUEUES)


def test_without_forbidden_queues_every_queue_is_accepted() -> None:
    check_target(sqs("https://sqs.us-east-1.amazonaws.com/123456789012/sundial-high"), allow_private=False)
