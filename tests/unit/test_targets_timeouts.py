"""Timeouts nest: the AWS clients a delivery asks for fit their calls, retries included, in the limit."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.config import Config

from sundial.shared.targets import (
    Delivery,
    EventBridgeTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
    Target,
    TargetError,
    TargetTimedOut,
    aws_client_config,
    deliver,
)
from sundial.shared.targets.timeouts import timeout_bucket

DELIVERY = Delivery(
    job_id="01JD0000000000000000000000", scheduled_at="2026-12-01T09:00:00Z", attempt=1, idempotency_key="k"
)
SERVICES = ["lambda", "sqs", "sns", "events"]
LIMITS = [0.1, 0.25, 0.9, 1, 1.5, 2, 3, 5, 7.5, 10, 29.9, 30, 60, 123, 300, 300.7, 899.99, 900]


def worst_case_seconds(config: Config) -> float:
    """The longest botocore may spend on one call: every attempt connecting and reading to its
    timeout, and between attempts the standard mode's longest backoff (throttling base of 1 s,
    doubling, at most 20 s) plus the most an x-amz-retry-after header may add (5 s)."""
    attempts = config.retries["total_max_attempts"]
    per_attempt = config.connect_timeout + config.read_timeout
    backoff = sum(min(2.0**i, 20.0) + 5.0 for i in range(attempts - 1))
    return float(attempts * per_attempt + backoff)


@pytest.mark.parametrize("service", SERVICES)
@pytest.mark.parametrize("limit", LIMITS)
def test_a_call_and_all_its_retries_fit_in_the_limit(service: str, limit: float) -> None:
    config = aws_client_config(service, limit)
    assert config.retries["mode"] == "standard"
    assert worst_case_seconds(config) <= limit + 1e-9


@pytest.mark.parametrize("limit", LIMITS)
def test_an_invoke_is_never_retried_and_waits_for_nearly_all_of_the_limit(limit: float) -> None:
    # A retried Invoke runs the function a second time; the function may use its whole limit.
    config = aws_client_config("lambda", limit)
    assert config.retries["total_max_attempts"] == 1
    assert config.read_timeout >= 0.75 * limit
    assert config.read_timeout >= limit - 2


@pytest.mark.parametrize("service", ["sqs", "sns", "events"])
def test_a_send_reads_briefly_and_retries_when_the_limit_allows(service: str) -> None:
    config = aws_client_config(service, 300)
    assert config.read_timeout <= 5
    assert config.retries["total_max_attempts"] == 3
    assert aws_client_config(service, 1).retries["total_max_attempts"] == 1


@pytest.mark.parametrize(
    ("limit", "bucket"),
    [(900, 900), (300.7, 300), (123, 123), (59.99, 59), (1, 1), (0.95, 0.9), (0.1, 0.1)],
)
def test_limits_fall_on_a_grid_at_or_below_them(limit: float, bucket: float) -> None:
    assert timeout_bucket(limit) == bucket


def test_too_little_time_for_a_call_is_a_timeout() -> None:
    with pytest.raises(TargetTimedOut):
        timeout_bucket(0.05)


class RecordingClients:
    """Records what deliver asks for; the client it answers fails every call."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, float]] = []

    def client(self, service: str, timeout_seconds: float) -> Any:
        self.asked.append((service, timeout_seconds))
        raise RuntimeError("no AWS here")


@pytest.mark.parametrize(
    ("target", "service"),
    [
        (
            LambdaTarget(type="lambda", function_arn="arn:aws:lambda:us-east-1:123456789012:function:f"),
            "lambda",
        ),
        (SqsTarget(type="sqs", queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/q"), "sqs"),
        (SnsTarget(type="sns", topic_arn="arn:aws:sns:us-east-1:123456789012:t"), "sns"),
        (EventBridgeTarget(type="eventbridge", detail_type="d", source="s"), "events"),
    ],
)
def test_every_aws_target_asks_for_a_client_within_its_limit(target: Target, service: str) -> None:
    clients = RecordingClients()
    with pytest.raises(TargetError):
        deliver(target, DELIVERY, timeout_seconds=300.7, clients=clients, allow_private=False)
    with pytest.raises(TargetTimedOut):
        deliver(target, DELIVERY, timeout_seconds=0.01, clients=clients, allow_private=False)
    assert clients.asked == [(service, 300)]


def test_a_timeout_is_a_target_error() -> None:
    assert issubclass(TargetTimedOut, TargetError)
    assert str(TargetTimedOut("x" * 5000)).endswith("…")
