"""python targets: the registry, the built-in handlers, and how a handler's failure is reported."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sundial.shared.constants import ERROR_TEXT_LIMIT
from sundial.shared.targets import (
    Delivery,
    PythonTarget,
    TargetError,
    TargetTimedOut,
    deliver,
    python_handler,
)
from sundial.shared.targets.errors import bounded
from sundial.shared.targets.registry import registered_handlers

DELIVERY = Delivery(
    job_id="01JD0000000000000000000000", scheduled_at="2026-12-01T09:00:00Z", attempt=1, idempotency_key="k"
)
received: list[Delivery] = []


@python_handler("tests.record")
def record(delivery: Delivery) -> None:
    received.append(delivery)


@python_handler("tests.slow")
def slow(delivery: Delivery) -> None:
    time.sleep(0.3)


@python_handler("tests.slow-failure")
def slow_failure(delivery: Delivery) -> None:
    time.sleep(0.3)
    raise TimeoutError("gave up waiting for the warehouse")


@python_handler("tests.long-failure")
def long_failure(delivery: Delivery) -> None:
    raise ValueError("x" * 5000)


class NoAws:
    def client(self, service: str, timeout_seconds: float) -> Any:
        raise AssertionError(f"a python delivery asked for an AWS {service} client")


def run(handler: str, timeout_seconds: float = 1) -> None:
    deliver(
        PythonTarget(type="python", handler=handler),
        DELIVERY,
        timeout_seconds=timeout_seconds,
        clients=NoAws(),
        allow_private=False,
    )


def test_the_registered_handler_receives_the_delivery() -> None:
    received.clear()
    run("tests.record")
    assert received == [DELIVERY]


def test_builtin_handlers() -> None:
    assert {"noop", "fail"} <= set(registered_handlers())
    run("noop")
    with pytest.raises(TargetError, match=r"^RuntimeError: fail handler always fails$"):
        run("fail")


def test_a_long_failure_is_cut_to_the_error_text_limit() -> None:
    with pytest.raises(TargetError) as caught:
        run("tests.long-failure")
    assert str(caught.value).startswith("ValueError: xxx")
    assert len(str(caught.value)) == ERROR_TEXT_LIMIT
    assert str(caught.value).endswith("…")


def test_an_unregistered_handler_fails_the_attempt() -> None:
    with pytest.raises(TargetError, match=r"^python handler 'gone' is not registered$"):
        run("gone")


def test_a_name_cannot_be_taken_by_another_function() -> None:
    def impostor(delivery: Delivery) -> None:
        pass

    with pytest.raises(
        ValueError, match=r"'noop' is already registered to sundial\.shared\.targets\.builtin_handlers\.noop"
    ):
        python_handler("noop")(impostor)
    run("noop")  # still the original


def test_re_registering_the_same_function_is_allowed() -> None:
    assert python_handler("tests.record")(record) is record


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [("short", 10, "short"), ("exactly10!", 10, "exactly10!"), ("eleven chars", 10, "eleven ch…")],
)
def test_bounded(text: str, limit: int, expected: str) -> None:
    assert bounded(text, limit) == expected


def test_a_handler_that_returns_after_its_limit_timed_out() -> None:
    with pytest.raises(
        TargetTimedOut, match=r"^python handler 'tests\.slow' ran 0\.3 s, over its 0\.1 s limit$"
    ):
        run("tests.slow", timeout_seconds=0.1)


def test_a_handler_that_fails_after_its_limit_timed_out() -> None:
    with pytest.raises(TargetTimedOut, match=r"over its 0\.1 s limit") as caught:
        run("tests.slow-failure", timeout_seconds=0.1)
    assert isinstance(caught.value.__cause__, TimeoutError)


def test_a_handler_within_its_limit_is_judged_by_what_it_does() -> None:
    run("tests.slow", timeout_seconds=5)
    with pytest.raises(TargetError, match=r"^TimeoutError: gave up waiting") as caught:
        run("tests.slow-failure", timeout_seconds=5)
    assert not isinstance(caught.value, TargetTimedOut)
