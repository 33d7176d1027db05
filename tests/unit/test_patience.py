"""The worker's patience: which AWS errors it waits out, how long it waits, and when it stops."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from sundial.shared.clock import FixedClock
from sundial.shared.engine.patience import (
    FIRST_WAIT_SECONDS,
    LONGEST_WAIT_SECONDS,
    Patience,
    passes_with_time,
)

START_MS = 1_796_000_000_000


def _error(code: str, status: int = 400) -> ClientError:
    response = {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "UpdateItem")  # type: ignore[arg-type]


def _failing(errors: list[Exception], answer: str = "written") -> Callable[[], str]:
    def call() -> str:
        if errors:
            raise errors.pop(0)
        return answer

    return call


@pytest.mark.parametrize(
    "error",
    [
        _error("ThrottlingException"),
        _error("ProvisionedThroughputExceededException"),
        _error("TransactionConflictException"),
        _error("InternalServerError", 500),
        _error("ServiceUnavailable", 503),
        EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com"),
    ],
)
def test_errors_that_pass_with_time_are_waited_out(error: Exception) -> None:
    assert passes_with_time(error)


@pytest.mark.parametrize(
    "error",
    [_error("ValidationException"), _error("AccessDeniedException"), _error("ResourceNotFoundException")],
)
def test_a_refused_request_is_not_repeated(error: ClientError) -> None:
    clock = FixedClock(START_MS)
    waits: list[float] = []
    patience = Patience(clock, waits.append, START_MS + 20_000, jitter=lambda: 1.0)

    with pytest.raises(ClientError) as raised:
        patience.call(_failing([error]), "a write")

    assert raised.value is error and waits == []


def test_waits_double_up_to_the_longest_and_the_call_goes_on() -> None:
    clock = FixedClock(START_MS)
    waits: list[float] = []
    patience = Patience(clock, waits.append, START_MS + 60_000, jitter=lambda: 1.0)

    answer = patience.call(_failing([_error("ThrottlingException") for _ in range(7)]), "a write")

    assert answer == "written"
    expected = [min(LONGEST_WAIT_SECONDS, FIRST_WAIT_SECONDS * 2**n) for n in range(7)]
    assert waits == pytest.approx(expected)
    assert waits[-1] == LONGEST_WAIT_SECONDS


def test_it_stops_before_a_wait_would_pass_its_end_and_raises_the_last_error() -> None:
    clock = FixedClock(START_MS)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        clock.advance(seconds)

    patience = Patience(clock, sleep, START_MS + 2_000, jitter=lambda: 1.0)
    errors: list[Exception] = [_error("ThrottlingException") for _ in range(20)]
    fourth = errors[3]

    with pytest.raises(ClientError) as raised:
        patience.call(_failing(errors), "a write")

    assert waits == pytest.approx([0.2, 0.4, 0.8])  # 1.4 s waited; the next 1.6 s would pass 2 s
    assert raised.value is fourth  # four tries were made, and the last one's error stands
    assert len(errors) == 16
